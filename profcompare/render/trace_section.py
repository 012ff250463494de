"""The "Execution trace" sections: on the HTML page the interactive chart (trace_chart.py), each
run's span per IPU and the cycles per block type; in ``show``'s text and markdown the same two
tables as one. Present only when a report has a trace."""

from __future__ import annotations

from profcompare.analysis import trace as trace_analysis
from profcompare.model import Report
from profcompare.render.format import format_count
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.trace_chart import trace_chart

_SUMS_NOTE = ("Cycles per type are the sums of the blocks' lengths. Blocks overlap (a SyncAns block covers the "
              "blocks it waits for), so a run's time is its span, never the sum of its blocks.")


def _origin(report: Report) -> str:
    if report.meta.simulated:
        return "simulated (modelled; no SyncAns)"
    return "measured"


def report_trace_section(report: Report) -> Section | None:
    """The "Execution trace" document Section of ``show`` (text, markdown): per IPU its span, then
    per block type its blocks, cycles (sum) and median block; None without a trace."""
    if not len(report.trace):
        return None
    spans = trace_analysis.trace_spans(report.trace).set_index("ipu")
    rows = []
    for row in trace_analysis.type_totals(report.trace, by_ipu=True).to_dict("records"):
        ipu = int(row["ipu"])
        rows.append((Cell(f"{ipu}"), Cell(f"{int(spans.loc[ipu, 'span_cycles']):,}"), Cell(str(row["type"])),
                     Cell(format_count(row["blocks"])), Cell(f"{int(row['cycles']):,}"),
                     Cell(f"{row['median_cycles']:,.1f}")))
    columns = (Column("IPU", True), Column("Run span (cycles)", True), Column("Type"), Column("Blocks", True),
               Column("Cycles (sum)", True), Column("Median block", True))
    origin = "modelled (no SyncAns: an IPU's wait is inside the step it waits in)" if report.meta.simulated else "measured"
    return Section("Execution trace", (Table.of(columns, tuple(rows)),),
                   (f"{format_count(len(report.trace))} blocks, {origin}. " + _SUMS_NOTE,))


def html_trace_section(reports: list[Report], roles: list[str]) -> Section | None:
    """The "Execution trace" section of the HTML page of ``reports`` (one report, role
    ``report``, or a comparison's base and new), or None when no report has an execution trace."""
    if not any(len(r.trace) for r in reports):
        return None
    chart = trace_chart(reports, roles, chart_id="chart-trace")

    def who(report: Report, role: str) -> str:
        return report.label if role == "report" else f"{role}: {report.label}"

    span_rows = []
    type_rows = []
    for report, role in zip(reports, roles, strict=True):
        name = who(report, role)
        for row in trace_analysis.trace_spans(report.trace).to_dict("records"):
            span_rows.append(Row((Cell(name), Cell(_origin(report)), Cell(f"{int(row['ipu'])}", int(row["ipu"])),
                                  Cell(f"{int(row['span_cycles']):,}", int(row["span_cycles"])),
                                  Cell(f"{int(row['cycles_from']):,}–{int(row['cycles_to']):,}", int(row["cycles_from"])),
                                  Cell(format_count(row["blocks"]), int(row["blocks"])))))
        for row in trace_analysis.type_totals(report.trace, by_ipu=True).to_dict("records"):
            type_rows.append(Row((Cell(name), Cell(f"{int(row['ipu'])}", int(row["ipu"])), Cell(str(row["type"])),
                                  Cell(format_count(row["blocks"]), int(row["blocks"])),
                                  Cell(f"{int(row['cycles']):,}", int(row["cycles"])),
                                  Cell(f"{row['median_cycles']:,.1f}", float(row["median_cycles"])))))
    spans = Table((Column("Report", key="report"), Column("Figures", key="origin"), Column("IPU", True, key="ipu"),
                   Column("Run span (cycles)", True, key="span"), Column("From–to", key="interval"),
                   Column("Blocks", True, key="blocks")), tuple(span_rows), id="trace-spans",
                  note="The run total: from the first block's start to the last block's end, per IPU.", sortable=False)
    types = Table((Column("Report", key="report"), Column("IPU", True, key="ipu"), Column("Type", key="type"),
                   Column("Blocks", True, key="blocks"), Column("Cycles (sum)", True, key="cycles"),
                   Column("Median block", True, key="median")), tuple(type_rows), id="trace-types", note=_SUMS_NOTE)
    return Section("Execution trace", id="trace", tables=(spans, types), charts=(chart,))


__all__ = ["html_trace_section", "report_trace_section"]
