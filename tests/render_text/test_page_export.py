"""The page model's tables as exports: a figure exports as its exact value, aggregates apart."""

from __future__ import annotations

from profcompare.render.page import Cell, Column, Row, Section, Table
from profcompare.render.page.export import find_table, sections_data, table_ids, table_rows


def _section() -> Section:
    columns = (Column("Program", key="name"), Column("Code bytes", True, key="code_bytes"),
               Column("Share", True, key="pct"))
    rows = (Row((Cell("main"), Cell("1.5 KiB", 1536.0), Cell("75.0%", 75.0))),
            Row((Cell("copy"), Cell("n/a"), Cell("", None))))
    footer = (Row((Cell("other (3 programs)"), Cell("512 B", 512), Cell("25.0%", 25.0))),)
    table = Table(columns, rows, id="code-table", footer=footer, note="Top 2 of 5 programs shown.")
    return Section("Code by program", (table,), ("a note",), id="code", text="lead")


def test_sections_export_every_table_with_exact_figures_and_footers_apart() -> None:
    [data] = sections_data((_section(),))
    assert (data["id"], data["title"], data["text"], data["notes"]) == ("code", "Code by program", "lead", ["a note"])
    [table] = data["tables"]
    assert table["id"] == "code-table" and table["columns"] == ["Program", "Code bytes", "Share"]
    assert table["keys"] == ["name", "code_bytes", "pct"] and table["numeric"] == [False, True, True]
    # 1536.0 exports as the integer it is; "n/a" and a blank figure as null
    assert table["rows"] == [["main", 1536, 75.0], ["copy", None, None]]
    assert table["footer"] == [["other (3 programs)", 512, 25.0]]
    assert table["note"] == "Top 2 of 5 programs shown."


def test_a_table_is_found_by_id_and_written_as_csv_rows_with_its_footer_last() -> None:
    sections = (_section(), Section("Empty"))
    assert table_ids(sections) == ("code-table",)
    table = find_table(sections, "code-table")
    assert table is not None and find_table(sections, "nope") is None
    header, rows = table_rows(table)
    assert header == ["Program", "Code bytes", "Share"]
    assert rows == [["main", 1536, 75.0], ["copy", None, None], ["other (3 programs)", 512, 25.0]]
