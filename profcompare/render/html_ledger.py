"""The memory ledger on the HTML page.

A comparison's page leads with it: "Where the memory moved" (the largest moves in plain words and
a stacked bar per parameter, base vs new, coloured by location), "Memory ledger" (one row per
parameter with a column per location, then every (parameter, role, location) row with filters)
and "What changed the not-always-live peak". A single report's page shows its ledger and what is
live at its not-always-live peak. Bytes are per replica, as everywhere on the page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from profcompare.analysis import views as analysis
from profcompare.analysis.ledger import TILE_LOCATIONS, peak_step, unattributed_bytes
from profcompare.model import LOCATIONS, Report, variables_convention
from profcompare.render import bar_charts
from profcompare.render.format import format_bytes, format_count, is_missing, status_tone
from profcompare.render.html_model import (
    Cell,
    Column,
    Row,
    Section,
    Table,
    TableFilter,
    bytes_cell,
    cut_note,
    diff_cells,
    diff_cols,
    sort_key,
    step_cell,
    text_cell,
)
from profcompare.render.ledger_words import (
    LOCATION_WORDS,
    TONE_LEGEND,
    MOVES_SHOWN,
    liveness_rule,
    location_title,
    move_sentence,
    parameter_text,
    peak_change_notes,
    steps_text,
)

if TYPE_CHECKING:
    from profcompare.comparison import Comparison

#: Rows of each ledger table on the page (largest first; the rest in an "other" row, and
#: ``--format csv --table ledger`` / json have them all): a model with thousands of parameters
#: keeps the page within its size budget.
LEDGER_MAX_ROWS = 300

#: Statuses of ledger diff rows, in the order the filter lists them.
_STATUSES = ("added", "removed", "grew", "shrank", "unchanged")


def _cut_sentence(view: analysis.TopN, noun: str) -> str:
    """The cut note as a sentence of its own: "All 9 parameters shown (...)."."""
    return cut_note(view, noun)[:-1] + _all_rows_hint(view) + "."


def _all_rows_hint(view: analysis.TopN) -> str:
    return " (every row: --format csv --table ledger, or --format json)" if view.cut else ""


def _role(value: Any) -> str:
    return "" if is_missing(value) else str(value)


def _location_cell(base: Any, new: Any, delta: Any, *, toned: bool = True) -> Cell:
    """One location of the per-parameter table: "base -> new (delta)", one figure when unchanged,
    blank when neither report has bytes there; sorts by the delta. ``toned``: coloured by whether
    the change costs tile memory (False for Streaming Memory, which is off chip)."""
    base, new, delta = int(base), int(new), int(delta)
    if not base and not new:
        return Cell("", None)
    tone = None if not toned else "bad" if delta > 0 else ("good" if delta < 0 else None)
    if not delta:
        return Cell(format_bytes(new), 0.0, None, f"{new:,} B in both")
    text = f"{format_bytes(base)} -> {format_bytes(new)} ({format_bytes(delta, signed=True)})"
    return Cell(text, float(delta), tone, f"base {base:,} B, new {new:,} B")


# --------------------------------------------------------------------------- comparison


def moves_section(cmp: Comparison) -> Section:
    """The largest (parameter, role) moves in plain words, then the ledger plot."""
    title = "Where the memory moved"
    everything = cmp.ledger_moves(None)
    if not len(everything):
        text = ("No parameter's bytes changed between the reports." if len(cmp.ledger)
                else "Neither report attributes memory to parameters (no variables, no remote buffers).")
        return Section(title, id="moves", text=text)
    moves = everything.head(MOVES_SHOWN)
    note = (f"The {len(moves):,} largest of {len(everything):,} (parameter, role) moves, by bytes moved (the sum of "
            "|delta| over locations); bytes per replica. Every row is in the Memory ledger below."
            if len(everything) > len(moves) else
            f"All {len(everything):,} (parameter, role) moves, largest first; bytes per replica.")
    chart = bar_charts.ledger_chart(cmp, chart_id="ledger-plot")
    return Section(title, id="moves", charts=(chart,),
                   items=tuple(move_sentence(m) for m in moves.itertuples(index=False)), notes=(note,))


def _by_parameter_table(cmp: Comparison) -> Table:
    frame = cmp.ledger_by_parameter()
    sums = tuple(f"{side}_{loc}" for loc in (*LOCATIONS, "tile_memory") for side in ("base", "new", "delta"))
    view = analysis.top_n(frame, LEDGER_MAX_ROWS, "delta_tile_memory", label_column="parameter", sum_columns=sums,
                          key=abs)
    columns = (
        Column("Parameter", key="parameter"),
        *(Column(location_title(loc), True, key=loc) for loc in TILE_LOCATIONS),
        Column("Base tile memory", True, key="base"),
        Column("New tile memory", True, key="new"),
        Column("Delta tile memory", True, key="delta"),
        Column(location_title("streaming_memory"), True, key="streaming_memory"),
    )

    def cells(r: Any) -> tuple[Cell, ...]:
        delta = int(r["delta_tile_memory"])
        tone = "bad" if delta > 0 else ("good" if delta < 0 else None)
        return (
            *(_location_cell(r[f"base_{loc}"], r[f"new_{loc}"], r[f"delta_{loc}"]) for loc in TILE_LOCATIONS),
            bytes_cell(r["base_tile_memory"]),
            bytes_cell(r["new_tile_memory"]),
            bytes_cell(delta, signed=True, tone=tone),
            _location_cell(r["base_streaming_memory"], r["new_streaming_memory"], r["delta_streaming_memory"],
                           toned=False),
        )

    rows = []
    for r in view.shown_rows.to_dict("records"):
        label = parameter_text(r["parameter"])
        rows.append(Row((Cell(label, label), *cells(r)), {"name": label}))
    footer: tuple[Row, ...] = ()
    if view.cut:
        other = view.other
        assert other is not None
        footer = (Row((Cell(f"other ({view.cut:,} parameters)"), *cells(other))),)
    note = ("Per parameter (roles summed), per location: base -> new (diff); one figure when unchanged. "
            "Not-always-live: the most the parameter holds at once. Tile memory = always-live + not-always-live; "
            "Streaming Memory is off chip, not tile memory, and not in the tile totals. " + TONE_LEGEND + " "
            + _cut_sentence(view, "parameters"))
    return Table(columns, tuple(rows), id="ledger-parameters", footer=footer, note=note,
                 empty="neither report attributes memory to parameters")


def _ledger_rows_table(cmp: Comparison) -> Table:
    frame = cmp.ledger
    view = analysis.top_n(frame, LEDGER_MAX_ROWS, "delta_bytes", label_column="parameter",
                          sum_columns=("base_bytes", "new_bytes", "delta_bytes"), key=abs)
    columns = (
        Column("Parameter", key="parameter"),
        Column("Role", key="role"),
        Column("Location", key="location"),
        *diff_cols(""),
        Column("Base steps", key="base_steps"),
        Column("New steps", key="new_steps"),
    )
    rows = []
    for r in view.shown_rows.to_dict("records"):
        label = parameter_text(r["parameter"], r["role"])
        role = _role(r["role"])
        location = LOCATION_WORDS.get(str(r["location"]), str(r["location"]))
        diff = diff_cells(r)
        if r["location"] == "streaming_memory":  # off chip: costs no tile memory, not coloured
            diff = tuple(Cell(c.text, c.sort, None, c.title) for c in diff)
        rows.append(Row(
            (
                Cell(label, label),
                text_cell(role),
                text_cell(location),
                *diff,
                Cell(steps_text(r["base_first_step"], r["base_last_step"]), sort_key(r["base_first_step"])),
                Cell(steps_text(r["new_first_step"], r["new_last_step"]), sort_key(r["new_first_step"])),
            ),
            {"name": f"{label} {role}", "location": location, "status": str(r["status"])},
        ))
    footer: tuple[Row, ...] = ()
    if view.cut:
        other = view.other
        assert other is not None
        footer = (Row((Cell(f"other ({view.cut:,} rows)"), Cell(""), Cell(""), bytes_cell(other["base_bytes"]),
                       bytes_cell(other["new_bytes"]), bytes_cell(other["delta_bytes"], signed=True),
                       *(Cell("") for _ in range(4)))),)
    present = set(frame["status"].astype(str)) if len(frame) else set()
    locations = tuple(LOCATION_WORDS[loc] for loc in LOCATIONS if (frame["location"] == loc).any())
    filters = TableFilter(
        "parameter or role (substring)",
        (("location", "Location", locations), ("status", "Status", tuple(s for s in _STATUSES if s in present))),
    )
    note = ("Every (parameter, role, location) row, largest |diff| first; steps: the not-always-live "
            "first-last step. " + _cut_sentence(view, "rows"))
    return Table(columns, tuple(rows), id="ledger-rows", footer=footer, note=note,
                 empty="neither report attributes memory to parameters", filter=filters)


def ledger_section(cmp: Comparison) -> Section:
    """The ledger of a comparison: the liveness rule the reports follow, per parameter, then every
    (parameter, role, location) row."""
    rule = liveness_rule((variables_convention(cmp.base.variables), variables_convention(cmp.new.variables)))
    return Section("Memory ledger", id="ledger", tables=(_by_parameter_table(cmp), _ledger_rows_table(cmp)),
                   text=f"Liveness: {rule}" if rule else "")


def peak_section(cmp: Comparison, top: int) -> Section:
    """Which parameters and roles make the difference between the two not-always-live peaks."""
    title = "What changed the not-always-live peak"
    base_peak, new_peak = analysis.liveness_peak(cmp.base), analysis.liveness_peak(cmp.new)
    if base_peak["step"] is None and new_peak["step"] is None:
        return Section(title, id="peak", text="Neither report records program steps.")
    frame = cmp.peak_composition()
    view = analysis.top_n(frame, top, "delta_bytes", label_column="parameter",
                          sum_columns=("base_bytes", "new_bytes", "delta_bytes"), key=abs)
    columns = (Column("Parameter", key="parameter"), Column("Role", key="role"), Column("Base", True, key="base"),
               Column("New", True, key="new"), Column("Delta", True, key="delta"))
    rows = []
    for r in view.shown_rows.to_dict("records"):
        delta = int(r["delta_bytes"])
        label = parameter_text(r["parameter"], r["role"])
        rows.append(Row((Cell(label, label), text_cell(_role(r["role"])), bytes_cell(r["base_bytes"]),
                         bytes_cell(r["new_bytes"]), bytes_cell(delta, signed=True, tone=status_tone(
                             "grew" if delta > 0 else "shrank" if delta < 0 else "unchanged"))), {"name": label}))
    footer: tuple[Row, ...] = ()
    if view.cut:
        other = view.other
        assert other is not None
        footer = (Row((Cell(f"other ({view.cut:,} rows)"), Cell(""), bytes_cell(other["base_bytes"]),
                       bytes_cell(other["new_bytes"]), bytes_cell(other["delta_bytes"], signed=True))),)
    text = " ".join(peak_change_notes(base_peak, new_peak, int(frame["delta_bytes"].sum()) if len(frame) else 0))
    table = Table(columns, tuple(rows), id="peak-composition", footer=footer, note=cut_note(view, "rows"),
                  empty="no listed variable is live at either report's peak")
    return Section(title, id="peak", tables=(table,), text=text)


# --------------------------------------------------------------------------- one report


def report_ledger_section(report: Report) -> Section:
    """The ledger of one report: every (parameter, role, location) row, with filters."""
    frame = report.ledger()
    view = analysis.top_n(frame, LEDGER_MAX_ROWS, "bytes", label_column="parameter",
                          sum_columns=("bytes", "bytes_at_peak", "rows"))
    columns = (Column("Parameter", key="parameter"), Column("Role", key="role"), Column("Location", key="location"),
               Column("Bytes", True, key="bytes"), Column("At peak", True, key="bytes_at_peak"),
               Column("Steps", key="steps"), Column("Rows", True, key="rows"))
    rows = []
    for r in view.shown_rows.to_dict("records"):
        label = parameter_text(r["parameter"], r["role"])
        role = _role(r["role"])
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
    locations = tuple(LOCATION_WORDS[loc] for loc in LOCATIONS if (frame["location"] == loc).any())
    unattributed = unattributed_bytes(frame) if len(frame) else 0
    rule = liveness_rule((variables_convention(report.variables),))
    text = ((f"Liveness: {rule} " if rule else "")
            + "Per model parameter, where its bytes live (per replica): always-live, not-always-live (the most the "
            "rows hold at once; at peak: live at the not-always-live peak step) or Streaming Memory. "
            + (f"Unattributed (no parameter, role other): {format_bytes(unattributed)}." if unattributed
               else "Every row is attributed."))
    table = Table(columns, tuple(rows), id="ledger-rows", footer=footer, note=cut_note(view, "rows"),
                  empty="nothing to attribute: no variables and no remote buffers",
                  filter=TableFilter("parameter or role (substring)", (("location", "Location", locations),)))
    return Section("Memory ledger", id="ledger", tables=(table,), text=text)


def report_peak_section(report: Report, top: int) -> Section:
    """The variables live at the report's not-always-live peak step (Graph Analyser's Insights)."""
    title = "Live at the not-always-live peak"
    step = peak_step(report)
    if step is None:
        return Section(title, id="peak", text="No program steps in this report.")
    live = report.live_at_peak()
    view = analysis.top_n(live, top, "bytes", label_column="name", sum_columns=("bytes",))
    columns = (Column("Variable", key="name"), Column("Parameter", key="parameter"), Column("Role", key="role"),
               Column("Bytes", True, key="bytes"),
               Column("First step", True, key="first_step"), Column("Last step", True, key="last_step"))
    rows = []
    for r in view.shown_rows.to_dict("records"):
        label = parameter_text(r["parameter"], r["role"])
        rows.append(Row((text_cell(r["name"]), Cell(label, label), text_cell(_role(r["role"])), bytes_cell(r["bytes"]),
                         step_cell(r["first_step"]), step_cell(r["last_step"])), {"name": str(r["name"])}))
    footer: tuple[Row, ...] = ()
    if view.cut:
        other = view.other
        assert other is not None
        footer = (Row((Cell(f"other ({view.cut:,} variables)"), Cell(""), Cell(""), bytes_cell(other["bytes"]),
                       Cell(""), Cell(""))),)
    program = report.liveness.loc[report.liveness["step"] == step, "program"]
    where = f"step {step:,}" + (f" ({program.iloc[0]})" if len(program) else "")
    peak_bytes = int(report.liveness["not_always_live_bytes"].max())
    listed = int(live["bytes"].sum()) if len(live) else 0
    text = f"At {where}: {len(live):,} variables, {format_bytes(listed)} of the peak's {format_bytes(peak_bytes)}."
    if listed != peak_bytes:
        text += f" {format_bytes(peak_bytes - listed)} of the peak is not listed in the variables table."
    table = Table(columns, tuple(rows), id="peak-live", footer=footer, note=cut_note(view, "variables"),
                  empty="no listed variable is live at the peak")
    return Section(title, id="peak", tables=(table,), text=text)


def ledger_data(obj: Report | Comparison) -> dict[str, int]:
    """For the page's JSON block: how many ledger rows there are and how many the page's ledger
    table leaves out (``--format json`` / ``csv --table ledger`` have them all)."""
    frame: pd.DataFrame = obj.ledger() if isinstance(obj, Report) else obj.ledger
    return {"total": len(frame), "shown": min(len(frame), LEDGER_MAX_ROWS),
            "cut": max(0, len(frame) - LEDGER_MAX_ROWS)}


__all__ = [
    "ledger_data",
    "ledger_section",
    "moves_section",
    "peak_section",
    "report_ledger_section",
    "report_peak_section",
]
