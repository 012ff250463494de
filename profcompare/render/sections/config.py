"""The "What differs" section of a comparison: the settings whose values differ between the two
reports (:attr:`profcompare.comparison.Comparison.config_differences`), intended ones (the layout
under study) first, then unexpected ones, with one warning per unexpected difference that can
move the figures."""

from __future__ import annotations

from profcompare.comparison import Comparison
from profcompare.render.page.model import Cell, Column, Row, Section, Table

TITLE = "What differs"
SECTION_ID = "config"
TABLE_ID = "config-table"
COLUMNS = (Column("Setting"), Column("Base"), Column("New"), Column("Kind"), Column("Note"))
#: what a side that does not set a setting shows (a layout key, knob or option of the other side only)
NOT_SET = "not set"
NOTE = ("Intended: the layout knobs the variants choose. Unexpected: everything else, which should "
        "be the same on both sides for the figures to show the layout alone.")
EMPTY = "No setting differs between the two reports."


def _kind_cell(kind: str, moves_figures: bool) -> Cell:
    """The kind as a user reads it; an unexpected difference that can move the figures is toned
    as a cost."""
    if kind == "unexpected" and moves_figures:
        return Cell("unexpected (moves figures)", tone="bad")
    return Cell(kind)


def comparison_config_section(cmp: Comparison) -> Section:
    """The "What differs" section of ``cmp``: one row per differing setting (Setting, Base, New,
    Kind, Note; "not set" where a side lacks the setting), the warnings of
    :meth:`~profcompare.comparison.Comparison.config_warnings` as its notes."""
    rows = tuple(
        Row((Cell(str(r.setting)),
             Cell(NOT_SET if r.base is None else str(r.base)),
             Cell(NOT_SET if r.new is None else str(r.new)),
             _kind_cell(str(r.kind), bool(r.moves_figures)),
             Cell(str(r.note))),
            {"name": str(r.setting), "kind": str(r.kind)})
        for r in cmp.config_differences.itertuples(index=False)
    )
    table = Table(COLUMNS, rows, id=TABLE_ID, note=NOTE if rows else "", empty=EMPTY)
    return Section(TITLE, tables=(table,), notes=cmp.config_warnings(), id=SECTION_ID)


__all__ = ["comparison_config_section"]
