"""The "Code by program" section of a report and of a comparison, drawn alike by the terminal,
the Markdown and the HTML page (which adds its bar chart): the code bytes of each program, the
largest (or largest changes) first, and an "other" row summing the rest."""

from __future__ import annotations

from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.html_model import bytes_cell, diff_cells, text_cell
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.page.notes import cut_note
from profcompare.render.sections.document import _missing_sides, limit
from profcompare.render.sections.listing import DIFF_COLUMNS, empty_word, other_diff_row, other_label

#: the title of the section in every medium, and its anchor on a page
CODE_TITLE = "Code by program"
CODE_ID = "code"
_TABLE_ID = "code-table"


def report_code_section(report: Report, top: int | None = None) -> Section:
    """Return the "Code by program" section of one report: its ``top`` programs of the most code
    bytes (None: all), an "other" footer row summing the rest and a note saying what was cut."""
    code = analysis.code_by_program(report)
    view = analysis.top_n(code, limit(top), "code_bytes", label_column="name", sum_columns=("code_bytes",))
    rows = tuple(
        Row((text_cell(r.name), text_cell(r.type), bytes_cell(r.code_bytes)))
        for r in view.shown_rows.itertuples(index=False)
    )
    columns = (Column("Program", key="name"), Column("Type", key="type"), Column("Code bytes", True, key="code_bytes"))
    footer: tuple[Row, ...] = ()
    if view.has_other:
        assert view.other is not None
        footer = (Row((Cell(other_label(view, "programs")), Cell(""), bytes_cell(view.other["code_bytes"]))),)
    table = Table(columns, rows, id=_TABLE_ID, footer=footer,
                  empty=empty_word(report.meta, "code", "No code attribution in this report."))
    notes = (cut_note(view, "programs"),) if len(code) else ()
    return Section(CODE_TITLE, (table,), notes, id=CODE_ID, notes_on_table=True)


def comparison_code_section(cmp: Comparison, top: int | None = None) -> Section:
    """Return the "Code by program" section of a comparison: the ``top`` programs whose code
    bytes changed most (None: all) with base, new, delta and status, an "other" footer row
    summing the rest, and notes saying what was cut and which report records no code."""
    view = cmp.top("code", limit(top))
    rows = tuple(
        Row((text_cell(r["name"]), text_cell(r["type"]), *diff_cells(r, "code_")), {"status": str(r["status"])})
        for r in view.shown_rows.to_dict("records")
    )
    columns = (Column("Program", key="name"), Column("Type", key="type"), *DIFF_COLUMNS)
    footer = other_diff_row(view, "programs", leading=1, trailing=0, value="code_bytes")
    table = Table(columns, rows, id=_TABLE_ID, footer=footer, empty="no code attribution in either report")
    notes = ((cut_note(view, "programs"),) if len(cmp.code) else ()) + _missing_sides(cmp, "code")
    return Section(CODE_TITLE, (table,), notes, id=CODE_ID, notes_on_table=True)


__all__ = ["CODE_ID", "CODE_TITLE", "comparison_code_section", "report_code_section"]
