"""The Memory by category section of every medium: a report's memory by Poplar category (and the
category's group), or both reports' side by side with the delta, closed by a total row.

The page's chart of the categories is attached by the page, not here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profcompare.analysis import views as analysis
from profcompare.model import Report
from profcompare.render.html_model import bytes_cell, diff_cells, pct_cell, text_cell
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.sections.document import _missing_sides
from profcompare.render.sections.listing import DIFF_COLUMNS

if TYPE_CHECKING:
    from profcompare.comparison import Comparison

#: The section's title and page anchor.
CATEGORIES_TITLE = "Memory by category"
CATEGORIES_ID = "memory"

_NAME_COLUMNS = (Column("Category", key="category"), Column("Group", key="group"))


def report_categories_section(report: Report) -> Section:
    """Memory by category of one report: Category, Group, Bytes, Share (of the total), largest
    first as :func:`profcompare.analysis.views.category_breakdown` orders them, and a total row."""
    frame = analysis.category_breakdown(report)
    rows = tuple(
        Row((text_cell(r.category), text_cell(r.group), bytes_cell(r.bytes), pct_cell(r.pct, signed=False)))
        for r in frame.itertuples(index=False)
    )
    columns = (*_NAME_COLUMNS, Column("Bytes", True, key="bytes"), Column("Share", True, key="pct"))
    footer = (Row((Cell("total"), Cell(""), bytes_cell(int(frame["bytes"].sum())), Cell(""))),) if len(frame) else ()
    recorded = "categories" in report.meta.capabilities
    empty = "no memory categories in this report" if recorded else "this report does not record memory categories"
    table = Table(columns, rows, id="categories-table", footer=footer, empty=empty)
    return Section(CATEGORIES_TITLE, (table,), id=CATEGORIES_ID)


def comparison_categories_section(cmp: Comparison) -> Section:
    """Memory by category of a comparison: Category, Group, then base, new, delta and status
    (categories empty in both reports left out), and a total row; notes for a report that does
    not record categories (its side reads 0)."""
    frame = cmp.categories
    if len(frame):
        frame = frame[(frame["base_bytes"] != 0) | (frame["new_bytes"] != 0)]
    rows = tuple(
        Row((text_cell(r["category"]), text_cell(r["group"]), *diff_cells(r)), {"status": str(r["status"])})
        for r in frame.to_dict("records")
    )
    footer: tuple[Row, ...] = ()
    if len(frame):
        base, new = int(frame["base_bytes"].sum()), int(frame["new_bytes"].sum())
        footer = (Row((Cell("total"), Cell(""), bytes_cell(base), bytes_cell(new), bytes_cell(new - base, signed=True),
                       pct_cell(100.0 * (new - base) / base if base else None), Cell(""))),)
    table = Table((*_NAME_COLUMNS, *DIFF_COLUMNS), rows, id="categories-table", footer=footer,
                  empty="no memory categories in either report")
    return Section(CATEGORIES_TITLE, (table,), _missing_sides(cmp, "categories"), id=CATEGORIES_ID)


__all__ = ["CATEGORIES_ID", "CATEGORIES_TITLE", "comparison_categories_section", "report_categories_section"]
