"""One page model: the text, Markdown and HTML sections are the same classes, and the text and
Markdown drawers draw what they can of a section built for the page."""

from __future__ import annotations

from profcompare.render import html_model, sections
from profcompare.render.markdown import render_document as render_markdown_document
from profcompare.render.page import Cell, Column, Row, Section, Table
from profcompare.render.text import render_document


def test_the_text_and_the_html_sections_are_one_model() -> None:
    for name in ("Cell", "Column", "Section", "Table"):
        assert getattr(sections, name) is getattr(html_model, name) is globals()[name]
    assert html_model.Row is Row


def test_a_row_reads_as_its_cells_and_a_text_table_gets_rows() -> None:
    table = Table.of((Column("name"), Column("bytes", True)), [(Cell("w"), Cell("1.0 KiB", tone="bad"))])
    row = table.rows[0]
    assert isinstance(row, Row) and row.data == {}
    assert [c.text for c in row] == ["w", "1.0 KiB"] and row[-1].tone == "bad" and len(row) == 2
    section = Section("Weights", (table,), ("a note",), ("a line",))
    assert section.table is table and section.lines == ("a line",)
    assert Section("Empty").table is None


def test_text_and_markdown_draw_every_table_and_ignore_what_they_cannot_show() -> None:
    first = Table((Column("name", key="name"),), (Row((Cell("alpha", sort="a", title="tip"),), {"name": "alpha"}),),
                  id="first", note="a table note", sortable=False, footer=(Row((Cell("total"),)),))
    second = Table.of((Column("count", True),), [(Cell("12"),)])
    empty = Table((Column("x"),), (), empty="nothing recorded")
    page_section = Section("Both", (first, second, empty), ("under",), ("item",), id="both", text="lead")
    document = sections.Document("title", (), (), (page_section,))
    text = render_document(document, width=None)
    # the lead text, items, each table with its footer and note, an empty table's word, the notes
    assert text.splitlines()[2:] == ["Both", "----", "lead", "- item", "name", "─────", "alpha", "total",
                                     "a table note", "", "count", "─────", "   12", "", "(nothing recorded)", "under"]
    markdown = render_markdown_document(document)
    assert "| alpha |" in markdown and "| 12 |" in markdown and "| _total_ |" in markdown
    assert "_a table note_" in markdown and "lead" in markdown and "_(nothing recorded)_" in markdown
    # sort keys and tooltips are the page's alone
    assert "tip" not in text + markdown


def test_a_page_shows_the_notes_of_a_notes_on_table_section_as_its_tables_note() -> None:
    from profcompare.render.page.model import placed_for_page

    table = Table.of((Column("a"),), [(Cell("1"),)])
    section = Section("S", (table,), ("One.", "Two."), notes_on_table=True)
    placed = placed_for_page(section)
    assert placed.notes == () and placed.tables[0].note == "One. Two." and placed.tables[1:] == ()
    noted = Section("S", (Table(table.columns, table.rows, note="First."),), ("One.",), notes_on_table=True)
    assert placed_for_page(noted).tables[0].note == "First. One."
    assert placed_for_page(Section("S", (table,), ("One.",))).notes == ("One.",)
    # text draws them as the section's notes, one paragraph each, after the table
    text = render_document(sections.Document("t", (), (), (section,)), width=None)
    assert text.splitlines()[-2:] == ["One.", "Two."]
