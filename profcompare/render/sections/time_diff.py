"""The "Time diff" section of a comparison, drawn alike by every medium: where the device cycles
of one run went between the two layouts. A sentence with the totals (the change, the share
charged to parameters, roles or named kinds, exposed and overlapped), then the causes (the
rows summed per parameter, role and kind, with the bytes moved and the bandwidth they imply),
then the steps added, removed, slower or faster. Present when either report has an execution
profile. Definitions: :mod:`profcompare.comparison.time_diff`.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from profcompare.analysis.views import top_n
from profcompare.comparison import Comparison
from profcompare.comparison.time_diff import BYTES_FROM_VARIABLES, BYTES_RECORDED, TimeDiffSummary, bytes_source
from profcompare.render.format import format_bytes, format_cycles, format_seconds, is_missing
from profcompare.render.html_model import sort_key
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.page.notes import cut_note

#: the one title of the section in every medium, and its anchor on a page
TIME_DIFF_TITLE = "Time diff"
TIME_DIFF_ID = "time-diff"

#: Most rows of each of the section's tables (fewer when ``--top`` says so): the page stays a few
#: screens tall; every row is in the JSON export's ``time_diff`` and in ``Comparison.time_diff``.
TIME_DIFF_MAX_ROWS = 10

#: what exposed and overlapped mean, under the causes table (then :func:`bytes_note`)
TIME_DIFF_NOTE = (
    "Cycles per run of the main program. A step is charged to a parameter and role where it moves that "
    "parameter's data (remote load or store, host transfer, collective, update), else to a kind. Exposed: the "
    "part of a step's time during which no compute runs on another IPU (or, for a transfer or sync, on any tile "
    "set), so the run waits for it; overlapped: the rest."
)

#: what each source of the bytes moved means
_BYTES_MEANING = {
    BYTES_RECORDED: f"{BYTES_RECORDED} (the bytes each data step moves, in plus out)",
    BYTES_FROM_VARIABLES: f"{BYTES_FROM_VARIABLES} (those the transfer, the parameter's where it moves one, "
                          "writes or reads)",
}


def bytes_note(base_source: str, new_source: str) -> str:
    """Where the bytes moved of both reports come from (:func:`profcompare.comparison.time_diff.bytes_source`)."""
    if base_source == new_source:
        said = _BYTES_MEANING[base_source]
    else:
        said = f"base {_BYTES_MEANING[base_source]}, new {_BYTES_MEANING[new_source]}"
    return f"Bytes moved per replica: {said}; bandwidth: those bytes over the transfer's data steps' time."

_CAUSE_COLUMNS = (
    Column("Parameter", key="parameter"), Column("Role", key="role"), Column("Kind", key="kind"),
    Column("Steps", True, key="steps"), Column("Δ cycles", True, key="delta"),
    Column("Δ time", True, key="time"), Column("Δ exposed", True, key="exposed"),
    Column("Δ overlapped", True, key="overlapped"), Column("Bytes moved (base → new)", True, key="bytes"),
    Column("Bandwidth (new)", True, key="bandwidth"),
)
_STEP_COLUMNS = (
    Column("IPU", True, key="ipu"), Column("Program", key="program"), Column("Status", key="status"),
    Column("Kind", key="kind"), Column("Parameter", key="parameter"), Column("Role", key="role"),
    Column("Base cycles", True, key="base"), Column("New cycles", True, key="new"),
    Column("Δ cycles", True, key="delta"), Column("Δ exposed", True, key="exposed"),
    Column("Bytes moved (new)", True, key="bytes"), Column("Bandwidth (new)", True, key="bandwidth"),
)


def format_bandwidth(value: Any) -> str:
    """Bytes per second in decimal units: ``"3.94 GB/s"``, ``"850.0 MB/s"``; "" when none."""
    if is_missing(value) or not value:
        return ""
    number = float(value)
    for unit, scale in (("TB/s", 1e12), ("GB/s", 1e9), ("MB/s", 1e6), ("kB/s", 1e3)):
        if number >= scale:
            return f"{number / scale:,.2f} {unit}"
    return f"{number:,.0f} B/s"


#: What the parameter and role cells of a row charged to a kind alone say.
NO_PARAMETER = "–"


def _name(value: Any) -> str:
    """A parameter or role cell: the name, or :data:`NO_PARAMETER` for a row charged to a kind."""
    return NO_PARAMETER if is_missing(value) or not str(value) else str(value)


def _moved(base: float, new: float) -> str:
    if not base and not new:
        return ""
    return f"{format_bytes(base) if base else '-'} → {format_bytes(new) if new else '-'}"


def summary_sentence(summary: TimeDiffSummary) -> str:
    """The totals of a time diff in one sentence."""
    delta = summary.delta_cycles
    return (
        f"Device cycles per run {format_cycles(summary.base_cycles)} → {format_cycles(summary.new_cycles)} "
        f"({format_cycles(delta, signed=True)}, {format_seconds(summary.seconds(delta), signed=True)}); "
        f"{100 * summary.attributed_share:.1f}% of the changed cycles charged to parameters, roles or named kinds "
        f"({100 * summary.parameter_share:.1f}% to parameters); exposed "
        f"{format_cycles(summary.delta_exposed_cycles, signed=True)}, overlapped "
        f"{format_cycles(summary.delta_overlapped_cycles, signed=True)} cycles. The rows add up to the change."
    )


def _cause_rows(causes: pd.DataFrame, seconds: Any) -> list[Row]:
    rows = []
    for r in causes.to_dict("records"):
        other = str(r["kind"]) == "other" and is_missing(r.get("steps"))
        rows.append(Row((
            Cell("" if other else _name(r["parameter"])),
            Cell("" if other else _name(r["role"])),
            Cell(str(r["kind"])),
            Cell("" if other else format_cycles(r["steps"]), sort_key(r["steps"])),
            Cell(format_cycles(r["delta_cycles"], signed=True), sort_key(r["delta_cycles"])),
            Cell(format_seconds(seconds(r["delta_cycles"]), signed=True), sort_key(r["delta_cycles"])),
            Cell(format_cycles(r["delta_exposed_cycles"], signed=True), sort_key(r["delta_exposed_cycles"])),
            Cell(format_cycles(r["delta_overlapped_cycles"], signed=True), sort_key(r["delta_overlapped_cycles"])),
            Cell(_moved(float(r["base_bytes_moved"]), float(r["new_bytes_moved"])), sort_key(r["new_bytes_moved"])),
            Cell(format_bandwidth(r["new_bytes_per_second"]), sort_key(r["new_bytes_per_second"])),
        ), {"kind": str(r["kind"])}))
    return rows


def _step_rows(steps: pd.DataFrame) -> list[Row]:
    rows = []
    for r in steps.to_dict("records"):
        ipu = r["ipu"]
        rows.append(Row((
            Cell("" if is_missing(ipu) or int(ipu) < 0 else str(int(ipu)), sort_key(ipu)),
            Cell(str(r["program"])),
            Cell("" if is_missing(r["status"]) else str(r["status"])),
            Cell("" if is_missing(r["kind"]) else str(r["kind"])),
            Cell("" if is_missing(r["status"]) else _name(r["parameter"])),
            Cell("" if is_missing(r["status"]) else _name(r["role"])),
            Cell(format_cycles(r["base_cycles"]), sort_key(r["base_cycles"])),
            Cell(format_cycles(r["new_cycles"]), sort_key(r["new_cycles"])),
            Cell(format_cycles(r["delta_cycles"], signed=True), sort_key(r["delta_cycles"])),
            Cell(format_cycles(r["delta_exposed_cycles"], signed=True), sort_key(r["delta_exposed_cycles"])),
            Cell(format_bytes(r["new_bytes_moved"]) if not is_missing(r["new_bytes_moved"]) and r["new_bytes_moved"]
                 else "", sort_key(r["new_bytes_moved"])),
            Cell(format_bandwidth(r["new_bytes_per_second"]), sort_key(r["new_bytes_per_second"])),
        ), {"status": "" if is_missing(r["status"]) else str(r["status"])}))
    return rows


def comparison_time_diff_section(cmp: Comparison, top: int | None) -> Section | None:
    """The "Time diff" section of a comparison: the totals sentence, then the ``top`` causes
    (parameter, role, kind) and the ``top`` steps that changed (:data:`TIME_DIFF_MAX_ROWS` at
    most), largest |change| first, each
    with an 'other' row for the rest; a note when one report has no execution profile, None when
    neither has."""
    if not len(cmp.base.execution) and not len(cmp.new.execution):
        return None
    lacking = [role for role, report in (("base", cmp.base), ("new", cmp.new)) if not len(report.execution)]
    if lacking:
        return Section(TIME_DIFF_TITLE, id=TIME_DIFF_ID, notes=(
            f"The {lacking[0]} report has no execution profile, so there is no time diff: it needs the steps of "
            "both runs.",))
    top = TIME_DIFF_MAX_ROWS if top is None else min(top, TIME_DIFF_MAX_ROWS)
    diff = cmp.time_diff
    summary = cmp.time_diff_summary()
    causes = cmp.time_causes()
    sums = ["delta_cycles", "delta_exposed_cycles", "delta_overlapped_cycles", "base_bytes_moved", "new_bytes_moved"]
    cause_view = top_n(causes, top, "delta_cycles", label_column="kind", sum_columns=sums, key=abs)
    changed = diff[diff["delta_cycles"] != 0].reset_index(drop=True)
    step_sums = ["base_cycles", "new_cycles", "delta_cycles", "delta_exposed_cycles", "new_bytes_moved"]
    step_view = top_n(changed, top, "delta_cycles", label_column="program", sum_columns=step_sums, key=abs)
    cause_table = Table(_CAUSE_COLUMNS, tuple(_cause_rows(cause_view.rows, summary.seconds)), id="time-causes",
                        note=f"{cut_note(cause_view, 'causes')} {TIME_DIFF_NOTE} "
                        f"{bytes_note(bytes_source(cmp.base), bytes_source(cmp.new))}", empty="no step changed")
    step_table = Table(_STEP_COLUMNS, tuple(_step_rows(step_view.rows)), id="time-steps",
                       note=cut_note(step_view, "steps that changed (added, removed, slower, faster)")
                       + " Every step: --format json (time_diff) or Comparison.time_diff.",
                       empty="no step changed")
    text = summary_sentence(summary)
    if math.isnan(summary.clock_hz) or not summary.clock_hz:
        text += " The clock is unknown: times are not shown."
    if cmp.base.meta.simulated or cmp.new.meta.simulated:
        text += " Simulated: the cycles are modelled, the bytes moved exact (shape x dtype)."
    return Section(TIME_DIFF_TITLE, (cause_table, step_table), id=TIME_DIFF_ID, text=text)


__all__ = ["TIME_DIFF_ID", "bytes_note", "TIME_DIFF_MAX_ROWS", "TIME_DIFF_NOTE", "TIME_DIFF_TITLE", "comparison_time_diff_section", "format_bandwidth",
           "summary_sentence"]
