"""What the tables listing rows of a report or a comparison (variables, programs, remote buffers)
share in every medium: the base/new/delta columns, the "other" footer row that sums the rows a
cut left out, the word of an empty table and the cells saying one value of each side."""

from __future__ import annotations

from typing import Any

from profcompare.analysis.views import TopN
from profcompare.model import ReportMeta
from profcompare.render.html_model import bytes_cell, pct_cell
from profcompare.render.page.model import Cell, Column, Row
from profcompare.render.format import is_missing
from profcompare.render.sections.document import _empty_note

#: the columns of a comparison's figures: base, new, delta (new - base), its share of base and
#: the row's status
DIFF_COLUMNS = (
    Column("Base", True, key="base"),
    Column("New", True, key="new"),
    Column("Delta", True, key="delta"),
    Column("Delta %", True, key="delta_pct"),
    Column("Status", key="status"),
)


def other_label(view: TopN, noun: str) -> str:
    """The label of the "other" row: ``other (12 variables)``."""
    return f"other ({view.cut:,} {noun})"


def other_diff_row(view: TopN, noun: str, *, leading: int, trailing: int, value: str = "bytes") -> tuple[Row, ...]:
    """The footer of a cut comparison table: one "other" row with the base, new and delta sums
    of ``value`` (``bytes``, ``code_bytes``) over the rows left out and the delta's share of the
    base sum, after ``leading`` blank cells and before ``trailing`` ones; no row when nothing was
    cut. The view's "other" row holds its delta_pct recomputed from the sums."""
    if not view.cut:
        return ()
    other = view.other
    assert other is not None
    cells = (
        Cell(other_label(view, noun)),
        *(Cell("") for _ in range(leading)),
        bytes_cell(other[f"base_{value}"]),
        bytes_cell(other[f"new_{value}"]),
        bytes_cell(other[f"delta_{value}"], signed=True),
        pct_cell(other["delta_pct"]),
        Cell(""),
        *(Cell("") for _ in range(trailing)),
    )
    return (Row(cells),)


def empty_word(meta: ReportMeta, table: str, empty: str) -> str:
    """What an empty table of one report says: ``empty`` when the report records ``table``, else
    that it does not (a profile may lack a table: that is not the same as having none)."""
    note = _empty_note(meta, table, empty)
    return note[0].lower() + note[1:].rstrip(".")


def side_by_side(base: str, new: str, status: str) -> str:
    """One row's value on each side in one cell: the one side's value for an added or removed
    row, ``base → new`` when they differ, else the value."""
    if status == "added":
        return new
    if status == "removed":
        return base
    return base if base == new else f"{base} \u2192 {new}"


def yes_no(value: Any) -> str:
    """``yes``/``no`` for a flag, ``–`` where a side has none."""
    if is_missing(value):
        return "\u2013"
    return "yes" if bool(value) else "no"


def blank(value: Any) -> str:
    """A value as text, "" where it is missing."""
    return "" if is_missing(value) else str(value)


__all__ = ["DIFF_COLUMNS", "blank", "empty_word", "other_diff_row", "other_label", "side_by_side", "yes_no"]
