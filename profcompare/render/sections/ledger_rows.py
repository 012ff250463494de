"""Every row of the memory ledger as a table, for every medium: one row per (parameter, role,
location), largest first, the rest summed in an "other" footer row, with a filter by location
(and, for a comparison, by status) where a page can filter.

A report's table is its whole "Memory ledger" section; a comparison's follows the ledger by
parameter (:mod:`profcompare.render.sections.ledger`). Bytes are per replica, as everywhere.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison
from profcompare.model import LOCATIONS, Report
from profcompare.render.format import format_count
from profcompare.render.html_model import (
    Cell,
    Column,
    Row,
    Table,
    TableFilter,
    bytes_cell,
    cut_note,
    diff_cells,
    sort_key,
    text_cell,
)
from profcompare.render.ledger_words import LOCATION_WORDS, parameter_text, steps_text
from profcompare.render.sections.document import _str

#: Rows of each ledger table on the page (largest first; the rest in an "other" row, and
#: ``--format csv --table ledger`` / json have them all): a model with thousands of parameters
#: keeps the page within its size budget.
LEDGER_MAX_ROWS = 300

#: Statuses of ledger diff rows, in the order the filter lists them.
_STATUSES = ("added", "removed", "grew", "shrank", "unchanged")

#: What a ledger table says when the reports attribute nothing.
REPORT_EMPTY = "nothing to attribute: no variables and no remote buffers"
COMPARISON_EMPTY = "neither report attributes memory to parameters"


#: where every ledger row is when a table or list shows only the largest
ALL_ROWS_HINT = " (every row: --format csv --table ledger, or --format json)"


def cut_sentence(view: analysis.TopN, noun: str) -> str:
    """The cut note of a ledger table, saying where every row is when rows were cut:
    "Top 300 of 717 rows shown; 417 more in the 'other' row (every row: ...)."."""
    return cut_note(view, noun)[:-1] + (ALL_ROWS_HINT if view.cut else "") + "."


def _location_words(frame: pd.DataFrame) -> tuple[str, ...]:
    """The locations ``frame`` has rows at, in :data:`LOCATIONS` order, as a filter lists them."""
    return tuple(LOCATION_WORDS[loc] for loc in LOCATIONS if (frame["location"] == loc).any())


def report_ledger_rows_table(report: Report, top: int | None) -> Table:
    """Every (parameter, role, location) row of ``report``'s ledger, by bytes, cut to ``top``
    (None: every row). Columns: Parameter, Role, Location, Bytes, At peak (tile memory live at the
    not-always-live peak step), Steps (the not-always-live first-last step), Rows."""
    frame = report.ledger()
    view = analysis.top_n(frame, top, "bytes", label_column="parameter", sum_columns=("bytes", "bytes_at_peak", "rows"))
    columns = (Column("Parameter", key="parameter"), Column("Role", key="role"), Column("Location", key="location"),
               Column("Bytes", True, key="bytes"), Column("At peak", True, key="bytes_at_peak"),
               Column("Steps", key="steps"), Column("Rows", True, key="rows"))
    rows = []
    for r in view.shown_rows.to_dict("records"):
        label = parameter_text(r["parameter"], r["role"])
        role = _str(r["role"])
        location = LOCATION_WORDS.get(str(r["location"]), str(r["location"]))
        rows.append(Row((Cell(label, label), text_cell(role), text_cell(location), bytes_cell(r["bytes"]),
                         bytes_cell(r["bytes_at_peak"]),
                         Cell(steps_text(r["first_step"], r["last_step"]), sort_key(r["first_step"])),
                         Cell(format_count(r["rows"]), sort_key(r["rows"]))),
                        {"name": f"{label} {role}", "location": location}))
    footer: tuple[Row, ...] = ()
    if view.cut:
        other = view.other
        assert other is not None
        footer = (Row((Cell(f"other ({view.cut:,} rows)"), Cell(""), Cell(""), bytes_cell(other["bytes"]),
                       bytes_cell(other["bytes_at_peak"]), Cell(""), Cell(format_count(other["rows"])))),)
    return Table(columns, tuple(rows), id="ledger-rows", footer=footer, note=cut_sentence(view, "rows"),
                 empty=REPORT_EMPTY,
                 filter=TableFilter("parameter or role (substring)", (("location", "Location", _location_words(frame)),)))


def _diff_row(r: Any) -> Row:
    label = parameter_text(r["parameter"], r["role"])
    role = _str(r["role"])
    location = LOCATION_WORDS.get(str(r["location"]), str(r["location"]))
    diff = diff_cells(r)
    if r["location"] == "streaming_memory":  # off chip: costs no tile memory, not coloured
        diff = tuple(Cell(c.text, c.sort, None, c.title) for c in diff)
    cells = (
        Cell(label, label),
        text_cell(role),
        text_cell(location),
        *diff,
        Cell(steps_text(r["base_first_step"], r["base_last_step"]), sort_key(r["base_first_step"])),
        Cell(steps_text(r["new_first_step"], r["new_last_step"]), sort_key(r["new_first_step"])),
    )
    return Row(cells, {"name": f"{label} {role}", "location": location, "status": str(r["status"])})


def comparison_ledger_rows_table(cmp: Comparison, top: int | None) -> Table:
    """Every (parameter, role, location) row of the comparison's ledger, largest |delta| first,
    cut to ``top`` (None: every row). Columns: Parameter, Role, Location, Base, New, Delta, Delta %,
    Status, Base steps, New steps (each report's not-always-live first-last step)."""
    frame = cmp.ledger
    view = analysis.top_n(frame, top, "delta_bytes", label_column="parameter",
                          sum_columns=("base_bytes", "new_bytes", "delta_bytes"), key=abs)
    columns = (
        Column("Parameter", key="parameter"),
        Column("Role", key="role"),
        Column("Location", key="location"),
        Column("Base", True, key="base"),
        Column("New", True, key="new"),
        Column("Delta", True, key="delta"),
        Column("Delta %", True, key="delta_pct"),
        Column("Status", key="status"),
        Column("Base steps", key="base_steps"),
        Column("New steps", key="new_steps"),
    )
    footer: tuple[Row, ...] = ()
    if view.cut:
        other = view.other
        assert other is not None
        footer = (Row((Cell(f"other ({view.cut:,} rows)"), Cell(""), Cell(""), bytes_cell(other["base_bytes"]),
                       bytes_cell(other["new_bytes"]), bytes_cell(other["delta_bytes"], signed=True),
                       *(Cell("") for _ in range(4)))),)
    present = set(frame["status"].astype(str)) if len(frame) else set()
    filters = TableFilter(
        "parameter or role (substring)",
        (("location", "Location", _location_words(frame)),
         ("status", "Status", tuple(s for s in _STATUSES if s in present))),
    )
    note = ("Every (parameter, role, location) row, largest |delta| first; steps: the not-always-live "
            "first-last step. " + cut_sentence(view, "rows"))
    return Table(columns, tuple(_diff_row(r) for r in view.shown_rows.to_dict("records")), id="ledger-rows",
                 footer=footer, note=note, empty=COMPARISON_EMPTY, filter=filters)


def ledger_data(obj: Report | Comparison) -> dict[str, int]:
    """For a page's JSON block: how many rows the ledger of ``obj`` (:meth:`Report.ledger` or
    :attr:`Comparison.ledger`) has and how many the page's ledger table (cut to
    :data:`LEDGER_MAX_ROWS`) leaves out (``--format json`` / ``csv --table ledger`` have them all)."""
    frame: pd.DataFrame = obj.ledger() if isinstance(obj, Report) else obj.ledger
    return {"total": len(frame), "shown": min(len(frame), LEDGER_MAX_ROWS),
            "cut": max(0, len(frame) - LEDGER_MAX_ROWS)}


__all__ = [
    "ALL_ROWS_HINT",
    "COMPARISON_EMPTY",
    "LEDGER_MAX_ROWS",
    "REPORT_EMPTY",
    "comparison_ledger_rows_table",
    "cut_sentence",
    "ledger_data",
    "report_ledger_rows_table",
]
