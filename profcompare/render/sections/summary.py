"""The Summary section of every medium (terminal, Markdown, HTML page): the summary metrics of a
report, or of a comparison with base, new, delta and status, each figure with its confidence.

The summary table alone is also the notebook display's table (:func:`report_summary_table`,
:func:`comparison_summary_table`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profcompare.model import METRICS, Report
from profcompare.render.format import format_metric, format_pct, is_missing, metric_label, metric_tone
from profcompare.render.html_model import sort_key
from profcompare.render.labels import TOTAL_VS_PEAK_NOTE
from profcompare.render.ledger_words import TONE_LEGEND
from profcompare.render.sections.listing import DIFF_COLUMNS
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.sections.document import unrecorded_note, unrecorded_tables

if TYPE_CHECKING:
    from profcompare.comparison import Comparison

#: The section's title and page anchor.
SUMMARY_TITLE = "Summary"
SUMMARY_ID = "summary"

#: What each confidence level of a figure means (docs/ipu-model.md says what the model assumes).
CONFIDENCE_LEGEND = (
    "Confidence: exact = follows from the program (shapes, dtypes, replicas); modelled (marked ~) = an estimate resting "
    "on the simulator's model constants (code size, layout, cycles, time; see docs/ipu-model.md), never a "
    "measurement, so a modelled ratio is an estimate too; measured = read from a real Poplar profile."
)

#: The note saying a report has no execution profile (where the line on what it does not record does not say so).
NO_EXECUTION_NOTE = "Cycles and throughput need an execution profile, which this report does not have."



def confidence_cell(level: str) -> Cell:
    """A figure's confidence badge: ``~ modelled`` (muted) for an estimate, else the level
    itself; the legend is its tooltip."""
    return Cell("~ modelled" if level == "modelled" else level, level, "muted" if level == "modelled" else None,
                title=CONFIDENCE_LEGEND)


def _metric_cell(metric: str) -> Cell:
    return Cell(metric_label(metric), metric)


def report_summary_table(report: Report, *, recorded_only: bool = False) -> Table:
    """The summary metrics of ``report``: Metric, Value, Confidence, one row per metric of
    :data:`profcompare.model.METRICS` (row data ``metric`` and ``confidence``). With
    ``recorded_only`` the metrics the report has no value for are left out."""
    summary = report.summary()
    confidence = report.confidence()
    rows = tuple(
        Row((_metric_cell(m), Cell(format_metric(m, summary[m]), sort_key(summary[m])),
             confidence_cell(confidence[m])), {"metric": m, "confidence": confidence[m]})
        for m in METRICS
        if not (recorded_only and is_missing(summary[m]))
    )
    columns = (Column("Metric", key="metric"), Column("Value", True, key="value"),
               Column("Confidence", key="confidence"))
    return Table(columns, rows, id="summary-table", sortable=False)


def comparison_summary_table(cmp: Comparison) -> Table:
    """The summary metrics of ``cmp``: Metric, Base, New, Delta, Delta %, Status, Confidence,
    one row per metric (row data ``metric``, ``status``, ``confidence``); delta and status are
    coloured by what the change costs."""
    frame = cmp.summary
    rows = []
    for metric in frame.index:
        r = frame.loc[metric]
        name = str(metric)
        status = "" if is_missing(r["status"]) else str(r["status"])
        tone = metric_tone(name, status) if status else None
        rows.append(Row((
            _metric_cell(name),
            Cell(format_metric(name, r["base"]), sort_key(r["base"])),
            Cell(format_metric(name, r["new"]), sort_key(r["new"])),
            Cell(format_metric(name, r["delta"], signed=True), sort_key(r["delta"]), tone),
            Cell(format_pct(r["delta_pct"]), sort_key(r["delta_pct"]), tone),
            Cell(status, status, tone),
            confidence_cell(str(r["confidence"])),
        ), {"metric": name, "status": status, "confidence": str(r["confidence"])}))
    columns = (Column("Metric", key="metric"), *DIFF_COLUMNS, Column("Confidence", key="confidence"))
    return Table(columns, tuple(rows), id="summary-table", sortable=False)


def report_summary_section(report: Report) -> Section:
    """The Summary of one report: its metrics with their confidence. A report that does not
    record some tables (a Graph Analyser cache records only the trace) shows only the metrics it
    has a value for, led by one line saying what it lacks. Notes: what the two memory totals mean
    (where both are shown) and the confidence legend."""
    lacking = unrecorded_tables(report)
    table = report_summary_table(report, recorded_only=bool(lacking))
    shown = {row.data["metric"] for row in table.rows}
    notes = []
    if is_missing(report.summary()["cycles_per_step"]) and "execution" not in lacking:
        notes.append(NO_EXECUTION_NOTE)
    if {"total_bytes", "peak_liveness_bytes"} <= shown:  # said only where both totals are shown
        notes.append(TOTAL_VS_PEAK_NOTE)
    notes.append(CONFIDENCE_LEGEND)
    return Section(SUMMARY_TITLE, (table,), tuple(notes), id=SUMMARY_ID,
                   text=unrecorded_note(report) if lacking else "", notes_on_table=True)


def comparison_summary_section(cmp: Comparison) -> Section:
    """The Summary of a comparison: each metric base, new, delta and status with its confidence;
    notes: what the two memory totals mean, the confidence legend and what the colours say."""
    return Section(SUMMARY_TITLE, (comparison_summary_table(cmp),), (TOTAL_VS_PEAK_NOTE, CONFIDENCE_LEGEND, TONE_LEGEND),
                   id=SUMMARY_ID, notes_on_table=True)


__all__ = [
    "CONFIDENCE_LEGEND",
    "NO_EXECUTION_NOTE",
    "SUMMARY_ID",
    "SUMMARY_TITLE",
    "comparison_summary_section",
    "comparison_summary_table",
    "confidence_cell",
    "report_summary_section",
    "report_summary_table",
]
