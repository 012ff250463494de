"""The "Execution trace" section of every output (terminal, Markdown, HTML): each run's span per
IPU, then the blocks and cycles per block type, of a report or of a comparison's two reports.
Present only when a report has a trace.

The page's interactive trace chart (:mod:`profcompare.render.trace_chart`) is not built here: the
HTML page attaches it to the section (id ``trace``), so the terminal never pays for it.
"""

from __future__ import annotations

import pandas as pd

from profcompare.analysis import trace as trace_analysis
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.format import format_count
from profcompare.render.page.model import Cell, Column, Row, Section, Table

#: The one title of the section in every output.
TRACE_TITLE = "Execution trace"

_SPANS_NOTE = "The run total: from the first block's start to the last block's end, per IPU."
_SUMS_NOTE = ("Cycles per type are the sums of the blocks' lengths. Blocks overlap (a SyncAns block covers the "
              "blocks it waits for), so a run's time is its span, never the sum of its blocks.")

_SPAN_COLUMNS = (Column("IPU", True, key="ipu"), Column("Run span (cycles)", True, key="span"),
                 Column("From–to", key="interval"), Column("Blocks", True, key="blocks"))
_TYPE_COLUMNS = (Column("IPU", True, key="ipu"), Column("Type", key="type"), Column("Blocks", True, key="blocks"),
                 Column("Cycles (sum)", True, key="cycles"), Column("Median block", True, key="median"))
_REPORT_COLUMN = Column("Report", key="report")


def shown_trace(report: Report) -> tuple[pd.DataFrame, trace_analysis.RunChoice]:
    """The blocks of the run the views draw (``report.trace_run``, else the first steady-state
    run) and that choice."""
    choice = trace_analysis.choose_run(report.trace, report.trace_run)
    return trace_analysis.run_blocks(report.trace, choice), choice


def shown_run_report(report: Report) -> Report:
    """``report`` with only the blocks of the run the views draw (:func:`shown_trace`)."""
    blocks, choice = shown_trace(report)
    return report if len(blocks) == len(report.trace) else report.with_trace_subset(blocks)


def _what(report: Report) -> str:
    """How many blocks the shown run holds, whether they are measured or modelled, and which
    run of several it is."""
    origin = ("modelled (no SyncAns: an IPU's wait is inside the step it waits in)" if report.meta.simulated
              else "measured")
    blocks, choice = shown_trace(report)
    which = choice.sentence()
    return f"{format_count(len(blocks))} blocks, {origin}" + (f"; {which[0].lower()}{which[1:-1]}" if which else "")


def _span_rows(report: Report, lead: tuple[Cell, ...] = ()) -> list[Row]:
    return [Row((*lead, Cell(f"{int(r['ipu'])}", int(r["ipu"])),
                 Cell(f"{int(r['span_cycles']):,}", int(r["span_cycles"])),
                 Cell(f"{int(r['cycles_from']):,}–{int(r['cycles_to']):,}", int(r["cycles_from"])),
                 Cell(format_count(r["blocks"]), int(r["blocks"]))))
            for r in trace_analysis.trace_spans(shown_trace(report)[0]).to_dict("records")]


def _type_rows(report: Report, lead: tuple[Cell, ...] = ()) -> list[Row]:
    return [Row((*lead, Cell(f"{int(r['ipu'])}", int(r["ipu"])), Cell(str(r["type"])),
                 Cell(format_count(r["blocks"]), int(r["blocks"])), Cell(f"{int(r['cycles']):,}", int(r["cycles"])),
                 Cell(f"{r['median_cycles']:,.1f}", float(r["median_cycles"]))))
            for r in trace_analysis.type_totals(shown_trace(report)[0], by_ipu=True).to_dict("records")]


def _tables(columns_before: tuple[Column, ...], spans: list[Row], types: list[Row]) -> tuple[Table, Table]:
    return (Table((*columns_before, *_SPAN_COLUMNS), tuple(spans), id="trace-spans", note=_SPANS_NOTE, sortable=False),
            Table((*columns_before, *_TYPE_COLUMNS), tuple(types), id="trace-types", note=_SUMS_NOTE))


def report_trace_section(report: Report) -> Section | None:
    """The "Execution trace" section of one report: per IPU its run span (first block's start to
    last block's end) and blocks, then per IPU and block type its blocks, cycles (sum) and median
    block; None without a trace."""
    if not len(report.trace):
        return None
    return Section(TRACE_TITLE, _tables((), _span_rows(report), _type_rows(report)), id="trace",
                   text=_what(report) + ".")


def comparison_trace_section(cmp: Comparison) -> Section | None:
    """The "Execution trace" section of a comparison: the tables of
    :func:`report_trace_section` for base and new, each row naming its role; None when
    neither report has a trace."""
    sides = (("base", cmp.base), ("new", cmp.new))
    if not any(len(report.trace) for _, report in sides):
        return None
    spans: list[Row] = []
    types: list[Row] = []
    said = []
    for role, report in sides:
        if not len(report.trace):
            said.append(f"The {role} report has no execution trace.")
            continue
        who = (Cell(role),)  # the header says which report is base and which new
        spans += _span_rows(report, who)
        types += _type_rows(report, who)
        said.append(f"{role.capitalize()}: {_what(report)}.")
    return Section(TRACE_TITLE, _tables((_REPORT_COLUMN,), spans, types), id="trace", text=" ".join(said))


__all__ = ["TRACE_TITLE", "comparison_trace_section", "report_trace_section", "shown_run_report", "shown_trace"]
