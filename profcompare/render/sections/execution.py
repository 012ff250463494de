"""The "Execution" section of every output (terminal, Markdown, HTML): the device cycles per
step by device phase, then the time per ``session.run`` split into device time and host/runtime
time, of a report or of a comparison's two reports side by side.

The page's execution chart is not built here: the HTML page attaches it to the section (id
``execution``), so the terminal never pays for it.
"""

from __future__ import annotations

from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison
from profcompare.model import DEVICE_PHASES, Report
from profcompare.render.format import format_cycles, format_seconds, is_missing, metric_label, metric_tone
from profcompare.render.html_model import diff_cells, diff_cols, pct_cell, sort_key, status_cell, text_cell
from profcompare.render.labels import phase_label
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.sections.document import _empty_note

#: The one title of the section in every output.
EXECUTION_TITLE = "Execution"

#: The note of the execution table: what is device time and what is not.
EXECUTION_NOTE = (
    "Device phases only; their span is the device cycles per step (what Graph Analyser's execution view spans). "
    "Each cycle counts once, under one phase, so the phases add up to it (where phases overlap, the first of "
    "compute, exchange, host I/O, Streaming Memory, collective; sync is the waiting no other phase covers). "
    "Host/runtime time is not device time: it is in the time table below, where time per session.run = device "
    "time + host/runtime time."
)

#: The rows of the time table: (row key, title, summary metric).
_TIME_LINES = (("device", "Device time per step", "cycles_per_step"),
               ("host", metric_label("host_seconds_per_step"), "host_seconds_per_step"),
               ("run", metric_label("seconds_per_step"), "seconds_per_step"))


def _time_lines(without_host: bool) -> tuple[tuple[str, str, str], ...]:
    """The time table's rows; without the host/runtime row where no profile records that time
    (the table's note says so: a row of n/a would tell nothing)."""
    return tuple(line for line in _TIME_LINES if not (without_host and line[0] == "host"))


def _clock_text(clock_hz: float) -> str:
    return f"{clock_hz / 1e9:.3f} GHz"


def _time_note(clocks: dict[str, float], no_host: tuple[str, ...]) -> str:
    """The time table's note: the clock that turns device cycles into device time (one per role)
    and which reports record no host/runtime time."""
    if len(set(clocks.values())) == 1:
        clock = _clock_text(next(iter(clocks.values())))
    else:
        clock = ", ".join(f"{role} {_clock_text(hz)}" for role, hz in clocks.items())
    note = f"Device time = device cycles per step / the IPU clock ({clock})."
    if len(no_host) == 2:
        note += " Neither profile records host/runtime time: time per session.run is the device time alone."
    elif no_host:
        whose = "The profile" if no_host[0] == "report" else f"The {no_host[0]} profile"
        note += f" {whose} records no host/runtime time: its time per session.run is its device time alone."
    return note


def _report_execution_table(report: Report) -> Table:
    frame = analysis.execution_by_phase(report)
    frame = frame[frame["phase"].astype(str).isin(DEVICE_PHASES)]
    device = float(report.summary()["cycles_per_step"])
    rows = tuple(
        Row((text_cell(phase_label(r.phase)), Cell(format_cycles(r.cycles), sort_key(r.cycles)),
             pct_cell(100.0 * r.cycles / device if device else None, signed=False)))
        for r in frame.itertuples(index=False)
    )
    cols = (
        Column("Device phase", key="phase"),
        Column("Device cycles per step", True, key="cycles"),
        Column("Share of device cycles", True, key="pct"),
    )
    footer = (Row((Cell(metric_label("cycles_per_step")), Cell(format_cycles(device)), Cell(""))),)
    return Table(cols, rows, id="execution-table", footer=footer, note=EXECUTION_NOTE)


def _report_time_table(report: Report) -> Table:
    summary = report.summary()
    clock = report.meta.target.clock_hz
    values = {"cycles_per_step": summary["cycles_per_step"] / clock,
              "host_seconds_per_step": summary["host_seconds_per_step"],
              "seconds_per_step": summary["seconds_per_step"]}
    no_host = ("report",) if is_missing(summary["host_seconds_per_step"]) else ()
    rows = tuple(Row((Cell(title), Cell(format_seconds(values[metric]), sort_key(values[metric]))), {"metric": key})
                 for key, title, metric in _time_lines(len(no_host) == 1))
    return Table((Column("Time", key="time"), Column("Value", True, key="value")), rows, id="time-table",
                 note=_time_note({"report": clock}, no_host), sortable=False)


def report_execution_section(report: Report) -> Section:
    """The "Execution" section of one report: device cycles per step by device phase (their
    share; the total in the footer), then the time per session.run = device time + host/runtime
    time; a note instead when the report has no execution profile."""
    if not len(report.execution):
        return Section(EXECUTION_TITLE, id="execution",
                       notes=(_empty_note(report.meta, "execution", "No execution profile in this report."),))
    return Section(EXECUTION_TITLE, (_report_execution_table(report), _report_time_table(report)), id="execution")


def _comparison_execution_table(cmp: Comparison) -> Table:
    frame = cmp.execution
    frame = frame[frame["phase"].astype(str).isin(DEVICE_PHASES)]
    rows = tuple(
        Row((text_cell(phase_label(r["phase"])), *diff_cells(r, "", "cycles", format_cycles)),
            {"status": str(r["status"])})
        for r in frame.to_dict("records")
    )
    total = cmp.summary.loc["cycles_per_step"]
    status = "" if is_missing(total["status"]) else str(total["status"])
    tone = metric_tone("cycles_per_step", status) if status else None
    footer = (Row((
        Cell(metric_label("cycles_per_step")),
        Cell(format_cycles(total["base"])),
        Cell(format_cycles(total["new"])),
        Cell(format_cycles(total["delta"], signed=True), None, tone),
        pct_cell(total["delta_pct"], tone),
        Cell(status, None, tone),
    )),)
    return Table((Column("Device phase", key="phase"), *diff_cols("cycles")), rows, id="execution-table",
                 footer=footer, note=EXECUTION_NOTE)


def _comparison_time_table(cmp: Comparison) -> Table:
    frame = cmp.summary
    clocks = {"base": cmp.base.meta.target.clock_hz, "new": cmp.new.meta.target.clock_hz}
    host = frame.loc["host_seconds_per_step"]
    timed = tuple(role for role in ("base", "new") if not is_missing(frame.loc["cycles_per_step", role]))
    no_host = tuple(role for role in timed if is_missing(host[role]))
    rows = []
    for key, title, metric in _time_lines(all(is_missing(host[role]) for role in ("base", "new"))):
        r = frame.loc[metric]
        base, new = float(r["base"]), float(r["new"])
        if metric == "cycles_per_step":
            base, new = base / clocks["base"], new / clocks["new"]
        delta = new - base
        status = "" if is_missing(r["status"]) else str(r["status"])
        tone = metric_tone(metric, status) if status else None
        rows.append(Row((Cell(title), Cell(format_seconds(base), sort_key(base)),
                         Cell(format_seconds(new), sort_key(new)),
                         Cell(format_seconds(delta, signed=True), sort_key(delta), tone),
                         pct_cell(r["delta_pct"], tone), status_cell(status, tone)), {"metric": key}))
    columns = (Column("Time", key="time"), Column("Base", True, key="base"), Column("New", True, key="new"),
               *diff_cols("")[2:])
    return Table(columns, tuple(rows), id="time-table",
                 note=_time_note(clocks, no_host), sortable=False)


def comparison_execution_section(cmp: Comparison) -> Section:
    """The "Execution" section of a comparison: base and new device cycles per step by device
    phase with their delta (the totals in the footer), then base and new time per session.run;
    a note for a report without an execution profile (its cycles read 0)."""
    if not len(cmp.execution):
        return Section(EXECUTION_TITLE, id="execution", notes=("Neither report has an execution profile.",))
    notes = tuple(f"The {role} report has no execution profile; its cycles read 0."
                  for role, report in (("base", cmp.base), ("new", cmp.new)) if not len(report.execution))
    return Section(EXECUTION_TITLE, (_comparison_execution_table(cmp), _comparison_time_table(cmp)), notes,
                   id="execution")


__all__ = ["EXECUTION_NOTE", "EXECUTION_TITLE", "comparison_execution_section", "report_execution_section"]
