"""The HTML renderer: one self-contained page for a report or a comparison of two.

The page has the sections a PopVision user knows (Summary, Memory, Liveness, Tiles, Variables,
Code by program, Streaming Memory, Execution) and the memory ledger (:mod:`profcompare.render.html_ledger`):
a comparison's page leads with where each parameter's bytes moved, a report's page shows its
ledger after the summary. Comparisons show base and new side by side with a diff column;
PopVision calls them source and target. Everything the page needs is inside the file:
CSS and JavaScript are package data inlined into the page, and every chart is drawn by BokehJS
inlined into the page from its JSON: the liveness and per-tile curves (zoom, pan, hover a step;
see :mod:`profcompare.render.interactive`) and the bar charts of the ledger, memory categories,
code and execution (:mod:`profcompare.render.bar_charts`), so it opens offline and can be
attached to a CI run. Rendering a page imports no matplotlib, and no Bokeh Python module unless
a ``BOKEH_*`` variable or Bokeh's config file can change its settings (:mod:`.bokeh_doc`).

Safety: the page is built only with Jinja2 templates with autoescaping on. Report-derived text
(variable names, programs, paths) reaches the page either as autoescaped template values or as
JSON through Jinja's ``tojson`` filter inside a ``<script type="application/json">`` block (which
escapes ``<``, ``>``, ``&`` and ``'``), never by string splicing.

Size: every table is cut to ``top`` rows plus an "other" row (see
:func:`profcompare.analysis.views.top_n`) and curves are cut into buckets (:mod:`profcompare.render.interactive`),
so two reports with a million variables each still give a page of a few hundred kilobytes.

Data preparation (``build_page``) is kept apart from rendering (``render_page``): the first turns
a Report or Comparison into plain dataclasses of display strings and sort keys (the page model,
:mod:`profcompare.render.page.model`); the second only fills the template. What a report's page
and a comparison's page draw differently comes through one adapter, :class:`PageSide`, chosen
once by :func:`page_side`: the section builders take it and never ask which kind of page it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

import jinja2

from profcompare.render.templates_env import environment
from markupsafe import Markup

from profcompare.analysis import views as analysis
from profcompare._version import __version__
from profcompare.model import DEVICE_PHASES, METRIC_UNITS, METRICS, Report
from profcompare.render import bar_charts, html_ledger, interactive
from profcompare.render.ipu_sections import html_comparison_ipu_section, html_report_ipu_section
from profcompare.render.replica_sections import (
    comparison_replicas_section,
    report_loaded_code_section,
    report_replicas_section,
)
from profcompare.render.sections.code import comparison_code_section, report_code_section
from profcompare.render.sections.streaming import comparison_streaming_section, report_streaming_section
from profcompare.render.sections.variables import (
    VARIABLES_ID,
    VARIABLES_TITLE,
    comparison_variables_section,
    matched_changes_first,
    report_variables_section,
)
from profcompare.render.labels import TOTAL_VS_PEAK_NOTE, live_label, phase_label
from profcompare.render.ledger_words import TONE_LEGEND
from profcompare.render.page.model import placed_for_page
from profcompare.render.sections.document import unrecorded_note, unrecorded_tables
from profcompare.render.trace_section import html_trace_section
from profcompare.render.format import (
    MISSING,
    format_bytes,
    format_count,
    format_cycles,
    format_metric,
    format_pct,
    format_seconds,
    is_missing,
    metric_label,
    metric_tone,
)
from profcompare.render.html_model import (
    HTML_MAX_VARIABLE_ROWS,
    Cell,
    Column,
    Page,
    ReportCard,
    Row,
    Section,
    Table,
    bytes_cell,
    cut_note,
    diff_cells,
    diff_cols,
    pct_cell,
    report_cards,
    sort_key,
    status_cell,
    text_cell,
)
from profcompare.comparison.verdict import ComparisonVerdict, comparison_verdict
from profcompare.render.json_out import jsonable
from profcompare.render.verdict_words import comparison_sentences, headline

if TYPE_CHECKING:
    import pandas as pd

    from profcompare.comparison import Comparison

#: How many of the fullest tiles the Tiles section lists per report.
WORST_TILES = 10

#: Statuses a comparison row can have, in the order the filter menu lists them.
STATUS_ORDER = ("added", "removed", "grew", "shrank", "unchanged")



# --------------------------------------------------------------------------- sections


#: The legend under every summary table (docs/ipu-model.md says what the model assumes).
CONFIDENCE_NOTE = (
    "exact: follows from the program (shapes, dtypes, replicas). modelled (~): an estimate resting on "
    "the simulator's model constants (code size, layout, cycles, time), see docs/ipu-model.md; never a "
    "measurement, so a modelled ratio is an estimate too. measured: read from a real Poplar profile."
)


def _confidence_cell(level: str) -> Cell:
    """A confidence badge: modelled figures are marked ``~ modelled``."""
    return Cell("~ modelled" if level == "modelled" else level, level, "muted" if level == "modelled" else None,
                title=CONFIDENCE_NOTE)


def summary_table(obj: Report | Comparison, *, recorded_only: bool = False) -> Table:
    """The summary-metrics table of the page (also the notebook display's table). With
    ``recorded_only`` (a report only), the metrics the report has no value for are left out."""
    return page_side(obj).summary_table(recorded_only=recorded_only)


def _report_summary_table(obj: Report, recorded_only: bool) -> Table:
    summary = obj.summary()
    confidence = obj.confidence()
    rows = tuple(
        Row((Cell(metric_label(m), m), Cell(format_metric(m, summary[m]), sort_key(summary[m])),
             _confidence_cell(confidence[m])), {"metric": m, "confidence": confidence[m]})
        for m in METRICS
        if not (recorded_only and is_missing(summary[m]))
    )
    shown = {row.data["metric"] for row in rows}
    # the two memory totals' difference is said only where both are shown
    both = {"total_bytes", "peak_liveness_bytes"} <= shown
    columns = (Column("Metric", key="metric"), Column("Value", True, key="value"),
               Column("Confidence", key="confidence"))
    return Table(columns, rows, id="summary-table", note=(TOTAL_VS_PEAK_NOTE + " " if both else "") + CONFIDENCE_NOTE,
                 sortable=False)


def _comparison_summary_table(obj: Comparison) -> Table:
    frame = obj.summary
    rows_list = []
    for metric in frame.index:
        r = frame.loc[metric]
        status = "" if is_missing(r["status"]) else str(r["status"])
        tone = metric_tone(str(metric), status) if status else None
        rows_list.append(
            Row(
                (
                    Cell(metric_label(str(metric)), str(metric)),
                    Cell(format_metric(str(metric), r["base"]), sort_key(r["base"])),
                    Cell(format_metric(str(metric), r["new"]), sort_key(r["new"])),
                    Cell(format_metric(str(metric), r["delta"], signed=True), sort_key(r["delta"]), tone),
                    pct_cell(r["delta_pct"], tone),
                    status_cell(status, tone),
                    _confidence_cell(str(r["confidence"])),
                ),
                {"metric": str(metric), "status": status, "confidence": str(r["confidence"])},
            )
        )
    cols: tuple[Column, ...] = (Column("Metric", key="metric"), *diff_cols(""), Column("Confidence", key="confidence"))
    return Table(cols, tuple(rows_list), id="summary-table",
                 note=TOTAL_VS_PEAK_NOTE + " " + CONFIDENCE_NOTE + " " + TONE_LEGEND, sortable=False)


def _memory_section(side: PageSide) -> Section:
    table = side.categories_table()
    chart = bar_charts.categories_chart(side.reports, side.roles)
    return Section("Memory", id="memory", tables=(table,), charts=(chart,))


def _report_categories_table(obj: Report) -> Table:
    frame = analysis.category_breakdown(obj)
    rows = tuple(
        Row((text_cell(r.category), text_cell(r.group), bytes_cell(r.bytes), pct_cell(r.pct, signed=False)))
        for r in frame.itertuples(index=False)
    )
    cols: tuple[Column, ...] = (
        Column("Category", key="category"),
        Column("Group", key="group"),
        Column("Bytes", True, key="bytes"),
        Column("Share", True, key="pct"),
    )
    total = int(frame["bytes"].sum())
    footer = (Row((Cell("total"), Cell(""), bytes_cell(total), Cell(""))),)
    return Table(cols, rows, id="categories-table", footer=footer, empty="no memory categories in the report(s)")


def _comparison_categories_table(obj: Comparison) -> Table:
    frame = obj.categories
    rows = tuple(
        Row((text_cell(r["category"]), text_cell(r["group"]), *diff_cells(r)), {"status": str(r["status"])})
        for r in frame.to_dict("records")
    )
    cols = (Column("Category", key="category"), Column("Group", key="group"), *diff_cols(""))
    base_total, new_total = int(frame["base_bytes"].sum()), int(frame["new_bytes"].sum())
    footer = (
        Row(
            (
                Cell("total"),
                Cell(""),
                bytes_cell(base_total),
                bytes_cell(new_total),
                bytes_cell(new_total - base_total, signed=True),
                pct_cell(100.0 * (new_total - base_total) / base_total if base_total else None),
                Cell(""),
            )
        ),
    )
    return Table(cols, rows, id="categories-table", footer=footer, empty="no memory categories in the report(s)")


def _liveness_section(side: PageSide) -> Section:
    cols: tuple[Column, ...] = (
        Column("Report", key="report"),
        Column(live_label(True, title=True), True, key="always"),
        Column("Not-always-live peak", True, key="peak"),
        Column("Peak liveness", True, key="total"),
        Column("Peak step", True, key="step"),
        Column("Program at peak", key="program"),
        Column("Program steps", True, key="steps"),
    )
    rows = []
    for role, report in zip(side.roles, side.reports, strict=True):
        peak = analysis.liveness_peak(report)
        label = report.label if role == "report" else f"{role}: {report.label}"
        summary = report.summary()  # the summary's figures (n/a where the report records none)
        rows.append(
            Row(
                (
                    Cell(label),
                    bytes_cell(summary["always_live_bytes"]),
                    bytes_cell(summary["not_always_live_peak_bytes"]),
                    bytes_cell(summary["peak_liveness_bytes"]),
                    Cell(MISSING if peak["step"] is None else f"{peak['step']:,}", peak["step"]),
                    Cell(peak["program"] or MISSING),
                    Cell(format_count(len(report.liveness)), len(report.liveness)),
                )
            )
        )
    table = Table(cols, tuple(rows), id="liveness-table", sortable=False)
    chart = interactive.liveness_chart(side.reports, side.roles, aligned=side.aligned_liveness,
                                       chart_id="chart-liveness")
    return Section("Liveness", id="liveness", tables=(table,), charts=(chart,))


def _tiles_section(reports: list[Report], roles: list[str]) -> Section:
    stats: list[Mapping[str, Any]] = [analysis.tile_stats(r, worst=WORST_TILES) for r in reports]  # read by key name
    names = [r.label if role == "report" else role for role, r in zip(roles, reports, strict=True)]
    cols: tuple[Column, ...] = (Column("Tiles", key="stat"),
                                *(Column(n, True, key=f"r{i}") for i, n in enumerate(names)))
    lines = (
        ("tiles", "Tiles per replica", format_count),
        ("bytes_per_tile", "Tile budget", format_bytes),
        ("max_bytes", "Max tile memory", format_bytes),
        ("median_bytes", "Median tile memory", format_bytes),
        ("min_bytes", "Min tile memory", format_bytes),
        ("tiles_over_budget", "Tiles over budget", format_count),
    )
    rows = []
    for key, title, fmt in lines:
        tone_cells = []
        for s in stats:
            tone = "bad" if key == "tiles_over_budget" and s[key] > 0 else None
            if not s["tiles"] and key != "bytes_per_tile":
                # no per-tile memory recorded: n/a, as the summary says, never a figure of 0
                tone_cells.append(Cell(MISSING, None))
                continue
            tone_cells.append(Cell(fmt(s[key]), sort_key(s[key]), tone))
        rows.append(Row((Cell(title), *tone_cells)))
    tables = [Table(cols, tuple(rows), id="tile-stats-table", sortable=False)]
    for i, (name, s) in enumerate(zip(names, stats, strict=True)):
        worst = s["worst_tiles"]
        worst_rows = tuple(
            Row(
                (
                    Cell(f"{int(w.tile)}", int(w.tile)),
                    Cell(f"{int(w.ipu)}", int(w.ipu)),
                    bytes_cell(w.bytes),
                    bytes_cell(w.always_live_bytes),
                    bytes_cell(w.not_always_live_peak_bytes),
                    Cell(
                        format_pct(w.pct_of_budget, signed=False),
                        sort_key(w.pct_of_budget),
                        "bad" if w.pct_of_budget > 100 else None,
                    ),
                )
            )
            for w in worst.itertuples(index=False)
        )
        tables.append(
            Table(
                (
                    Column("Tile", True, key="tile"),
                    Column("IPU", True, key="ipu"),
                    Column("Bytes (incl. gaps)", True, key="bytes"),
                    Column(live_label(True, title=True), True, key="always"),
                    Column("Not-always-live peak", True, key="nal"),
                    Column("Of budget", True, key="pct"),
                ),
                worst_rows,
                id=f"worst-tiles-{i}",
                note=f"{name}: the {len(worst_rows)} fullest tiles",
                empty="no per-tile data",
            )
        )
    chart = interactive.tiles_chart(reports, roles, chart_id="chart-tiles")
    return Section("Tiles", id="tiles", tables=tuple(tables), charts=(chart,))


#: Variables columns copied into the page's JSON data block (report / comparison).
_REPORT_VARIABLE_FIELDS = ("name", "kind", "bytes", "always_live", "dtype", "shape")
_COMPARISON_VARIABLE_FIELDS = ("name", "kind", "base_bytes", "new_bytes", "delta_bytes", "delta_pct", "status", "match")


def _code_section(side: PageSide, top: int) -> Section:
    """The "Code by program" section with its bar chart of the programs of the most code."""
    chart = bar_charts.code_chart(side.reports, side.roles, top=min(top, bar_charts.CODE_PROGRAMS))
    return replace(side.code_section(top), charts=(chart,))


def _variables_on_page(section: Section, view: analysis.TopN) -> Section:
    """The Variables section as the page shows it: its notes at its table, and when the page's
    bound cut the variables, where to find them all."""
    section = placed_for_page(section)
    table = section.table
    if table is None or not view.cut:
        return section
    bound = (f"This page holds at most {HTML_MAX_VARIABLE_ROWS:,} variables; the filter applies to these. "
             "`--format json` or `--format csv` write them all.")
    return replace(section, tables=(replace(table, note=f"{table.note} {bound}".strip()),))


#: The rows of the time table: (row key, title, summary metric).
_TIME_LINES = (("device", "Device time per step", "cycles_per_step"),
               ("host", metric_label("host_seconds_per_step"), "host_seconds_per_step"),
               ("run", metric_label("seconds_per_step"), "seconds_per_step"))


def _report_time_table(obj: Report) -> Table:
    """Time per session.run split into device time and host/runtime time (not device time)."""
    lines = _TIME_LINES
    summary = obj.summary()
    clock = obj.meta.target.clock_hz
    values = {"cycles_per_step": summary["cycles_per_step"] / clock, "host_seconds_per_step":
              summary["host_seconds_per_step"], "seconds_per_step": summary["seconds_per_step"]}
    rows = tuple(Row((Cell(title), Cell(format_seconds(values[metric]), sort_key(values[metric]))), {"metric": key})
                 for key, title, metric in lines)
    return Table((Column("Time", key="time"), Column("Value", True, key="value")), rows, id="time-table",
                 sortable=False)


def _comparison_time_table(obj: Comparison) -> Table:
    """Base and new time per session.run split into device time and host/runtime time."""
    lines = _TIME_LINES
    frame = obj.summary
    clocks = (obj.base.meta.target.clock_hz, obj.new.meta.target.clock_hz)
    rows_list = []
    for key, title, metric in lines:
        r = frame.loc[metric]
        base, new = float(r["base"]), float(r["new"])
        if metric == "cycles_per_step":
            base, new = base / clocks[0], new / clocks[1]
        delta = new - base
        status = "" if is_missing(r["status"]) else str(r["status"])
        tone = metric_tone(metric, status) if status else None
        rows_list.append(Row((Cell(title), Cell(format_seconds(base), sort_key(base)),
                              Cell(format_seconds(new), sort_key(new)),
                              Cell(format_seconds(delta, signed=True), sort_key(delta), tone),
                              pct_cell(r["delta_pct"], tone), status_cell(status, tone)), {"metric": key}))
    return Table((Column("Time", key="time"), *diff_cols("")), tuple(rows_list), id="time-table", sortable=False)


def _execution_section(side: PageSide) -> Section:
    if not any(len(r.execution) for r in side.reports):
        return Section("Execution", id="execution", text="No execution profile in the report(s): cycles are not known.")
    chart = bar_charts.execution_chart(side.reports, side.roles)
    return Section("Execution", id="execution", tables=(side.execution_table(), side.time_table()), charts=(chart,))


def _report_execution_table(obj: Report) -> Table:
    frame = analysis.execution_by_phase(obj)
    frame = frame[frame["phase"].astype(str).isin(DEVICE_PHASES)]
    device = float(obj.summary()["cycles_per_step"])
    rows = tuple(
        Row((text_cell(phase_label(r.phase)), Cell(format_cycles(r.cycles), sort_key(r.cycles)),
             pct_cell(100.0 * r.cycles / device if device else None, signed=False)))
        for r in frame.itertuples(index=False)
    )
    cols: tuple[Column, ...] = (
        Column("Device phase", key="phase"),
        Column("Device cycles per step", True, key="cycles"),
        Column("Share of device cycles", True, key="pct"),
    )
    footer = (Row((Cell(metric_label("cycles_per_step")), Cell(format_cycles(device)), Cell(""))),)
    return Table(cols, rows, id="execution-table", footer=footer, note=EXECUTION_NOTE)


def _comparison_execution_table(obj: Comparison) -> Table:
    frame = obj.execution
    frame = frame[frame["phase"].astype(str).isin(DEVICE_PHASES)]
    rows = tuple(
        Row((text_cell(phase_label(r["phase"])), *diff_cells(r, "", "cycles", format_cycles)),
            {"status": str(r["status"])})
        for r in frame.to_dict("records")
    )
    cols = (Column("Device phase", key="phase"), *diff_cols("cycles"))
    total = obj.summary.loc["cycles_per_step"]
    status = "" if is_missing(total["status"]) else str(total["status"])
    tone = metric_tone("cycles_per_step", status) if status else None
    footer = (
        Row(
            (
                Cell(metric_label("cycles_per_step")),
                Cell(format_cycles(total["base"])),
                Cell(format_cycles(total["new"])),
                Cell(format_cycles(total["delta"], signed=True), None, tone),
                pct_cell(total["delta_pct"], tone),
                Cell(status, None, tone),
            )
        ),
    )
    return Table(cols, rows, id="execution-table", footer=footer, note=EXECUTION_NOTE)


#: The note of the execution table: what is device time and what is not.
EXECUTION_NOTE = (
    "Device phases only; their span is the device cycles per step (what Graph Analyser's execution view spans). "
    "Each cycle counts once, under one phase, so the phases add up to it (where phases overlap, the first of "
    "compute, exchange, host I/O, Streaming Memory, collective; sync is the waiting no other phase covers). "
    "Host/runtime time is not device time: it is in the time table below, where time per session.run = device "
    "time + host/runtime time."
)


def _verdict_section(cmp: Comparison, verdict: ComparisonVerdict) -> Section:
    """The verdict in words, first on a comparison's page."""
    modelled = bool((cmp.summary["confidence"].astype(str) == "modelled").any())
    note = ("Written from the figures below; bytes per replica."
            + (" Modelled figures are estimates (see the Confidence column of the Summary)." if modelled else ""))
    return Section("Verdict", id="verdict", items=comparison_sentences(verdict), notes=(note,))


# --------------------------------------------------------------------------- page


def build_page(obj: Report | Comparison, *, top: int = 20) -> Page:
    """Prepare everything the HTML page shows for a report or a comparison.

    Returns a :class:`Page` of display strings, sort keys and chart JSON; no HTML is
    produced here. Tables are cut to ``top`` rows (variables, code, remote buffers) with an
    "other" row. Raises ProfcompareError for a negative ``top``.
    """
    side = page_side(obj)
    # the variables table holds every row up to a bound, so its status filter ("grew") shows
    # every variable that grew; other tables are top-N views. The template draws it under the
    # filter controls, in the place of the section's table.
    variables_view = side.variables_view(HTML_MAX_VARIABLE_ROWS)
    variables = _variables_on_page(side.variables_section(variables_view), variables_view)
    assert variables.table is not None
    sections = tuple(replace(variables, tables=()) if section.id == VARIABLES_ID else placed_for_page(section)
                     for section in side.sections(top) if section is not None)
    data = _page_data(side, variables_view)
    verdict = side.verdict()
    return Page(side.title, side.is_comparison, report_cards(obj), sections, variables.table, side.variable_filter(),
                data, headline="" if verdict is None else headline(verdict))


def _timeline(side: PageSide) -> tuple[Section, ...]:
    """The views over time: the execution trace (when a report has one), then liveness."""
    trace_section = html_trace_section(side.reports, side.roles)
    return (*(() if trace_section is None else (trace_section,)), _liveness_section(side))


def _details(side: PageSide, top: int, *, loaded_code: Section | None = None) -> tuple[Section | None, ...]:
    """The detail sections, in page order; None for a section the reports give nothing to show
    (memory per IPU, code loaded at run time, replicas and collectives)."""
    return (
        _memory_section(side),
        side.ipu_section(),  # only with more than one IPU per replica (or I/O tiles)
        _tiles_section(side.reports, side.roles),
        Section(VARIABLES_TITLE, id=VARIABLES_ID),  # its table comes from build_page
        _code_section(side, top),
        loaded_code,
        side.streaming_section(top),
        _execution_section(side),
        side.replicas_section(),  # only with replica groupings
    )


# --------------------------------------------------------------------------- the two kinds of page


class PageSide(Protocol):
    """What a report's page and a comparison's page draw differently: :func:`page_side` picks
    one for a Report or a Comparison, and the section builders take it without asking which.

    ``reports`` and ``roles`` are the page's reports and their roles (``report``, or ``base`` and
    ``new``); the methods return the tables and sections of the kind of page it is."""

    @property
    def obj(self) -> Report | Comparison: ...
    @property
    def reports(self) -> list[Report]: ...
    @property
    def roles(self) -> list[str]: ...
    @property
    def title(self) -> str: ...
    @property
    def is_comparison(self) -> bool: ...
    @property
    def aligned_liveness(self) -> pd.DataFrame | None: ...
    def summary_table(self, *, recorded_only: bool = False) -> Table: ...
    def categories_table(self) -> Table: ...
    def variables_view(self, top: int) -> analysis.TopN: ...
    def variables_section(self, view: analysis.TopN) -> Section: ...
    def code_section(self, top: int) -> Section: ...
    def streaming_section(self, top: int) -> Section: ...
    def time_table(self) -> Table: ...
    def execution_table(self) -> Table: ...
    def replicas_section(self) -> Section | None: ...
    def ipu_section(self) -> Section | None: ...
    def sections(self, top: int) -> tuple[Section | None, ...]: ...
    def variable_filter(self) -> tuple[str, tuple[str, ...]]: ...
    def page_summary(self) -> dict[str, Any]: ...
    def variable_fields(self) -> tuple[str, ...]: ...
    def verdict(self) -> ComparisonVerdict | None: ...


class _ReportSide:
    """The page of one report: its summary and ledger first, every table of its own figures."""

    is_comparison = False
    aligned_liveness = None

    def __init__(self, report: Report) -> None:
        self.obj = self.report = report
        self.reports, self.roles = [report], ["report"]
        self.title = f"profcompare: {report.label}"

    def summary_table(self, *, recorded_only: bool = False) -> Table:
        return _report_summary_table(self.report, recorded_only)

    def categories_table(self) -> Table:
        return _report_categories_table(self.report)

    def variables_view(self, top: int) -> analysis.TopN:
        return analysis.variables_view(self.report, top=top)

    def variables_section(self, view: analysis.TopN) -> Section:
        return report_variables_section(self.report, view=view)

    def code_section(self, top: int) -> Section:
        return report_code_section(self.report, top)

    def streaming_section(self, top: int) -> Section:
        return report_streaming_section(self.report, top)

    def time_table(self) -> Table:
        return _report_time_table(self.report)

    def execution_table(self) -> Table:
        return _report_execution_table(self.report)

    def replicas_section(self) -> Section | None:
        return report_replicas_section(self.report)

    def ipu_section(self) -> Section | None:
        return html_report_ipu_section(self.report)

    def sections(self, top: int) -> tuple[Section | None, ...]:
        """The summary (what the report records), the ledger and what is live at the peak, the
        views over time, the details; a section of tables the report does not record is left out."""
        report = self.report
        summary = Section("Summary", id="summary", tables=(self.summary_table(),))
        if unrecorded_tables(report):
            summary = Section("Summary", id="summary", tables=(self.summary_table(recorded_only=True),),
                              notes=(unrecorded_note(report),))
        sections = (summary, html_ledger.report_ledger_section(report), html_ledger.report_peak_section(report, top),
                    *_timeline(self), *_details(self, top, loaded_code=report_loaded_code_section(report)))
        return _recorded_sections(report, tuple(s for s in sections if s is not None))

    def variable_filter(self) -> tuple[str, tuple[str, ...]]:
        return ("liveness", (live_label(True), live_label(False)))

    def page_summary(self) -> dict[str, Any]:
        return {m: {"value": v, "unit": METRIC_UNITS[str(m)]} for m, v in self.report.summary().items()}

    def variable_fields(self) -> tuple[str, ...]:
        return _REPORT_VARIABLE_FIELDS

    def verdict(self) -> ComparisonVerdict | None:
        return None


class _ComparisonSide:
    """The page of a comparison: the verdict and the ledger first, base and new side by side."""

    is_comparison = True

    def __init__(self, cmp: Comparison) -> None:
        self.obj = self.cmp = cmp
        self.reports, self.roles = [cmp.base, cmp.new], ["base", "new"]
        self.title = f"profcompare: {cmp.base.label} (base) vs {cmp.new.label} (new)"
        self.aligned_liveness = cmp.liveness
        self._verdict: ComparisonVerdict | None = None

    def summary_table(self, *, recorded_only: bool = False) -> Table:
        return _comparison_summary_table(self.cmp)

    def categories_table(self) -> Table:
        return _comparison_categories_table(self.cmp)

    def variables_view(self, top: int) -> analysis.TopN:
        return matched_changes_first(self.cmp, top)

    def variables_section(self, view: analysis.TopN) -> Section:
        return comparison_variables_section(self.cmp, view=view)

    def code_section(self, top: int) -> Section:
        return comparison_code_section(self.cmp, top)

    def streaming_section(self, top: int) -> Section:
        return comparison_streaming_section(self.cmp, top)

    def time_table(self) -> Table:
        return _comparison_time_table(self.cmp)

    def execution_table(self) -> Table:
        return _comparison_execution_table(self.cmp)

    def replicas_section(self) -> Section | None:
        return comparison_replicas_section(self.cmp.base, self.cmp.new)

    def ipu_section(self) -> Section | None:
        return html_comparison_ipu_section(self.cmp.base, self.cmp.new)

    def sections(self, top: int) -> tuple[Section | None, ...]:
        """The verdict and the ledger (what moved, per parameter), the views over time, what
        changed the peak (after the liveness chart that shows it), the summary, the details."""
        cmp = self.cmp
        summary = Section("Summary", id="summary", tables=(self.summary_table(),))
        return (_verdict_section(cmp, self.verdict()), html_ledger.moves_section(cmp), html_ledger.ledger_section(cmp),
                *_timeline(self), html_ledger.peak_section(cmp, top), summary, *_details(self, top))

    def variable_filter(self) -> tuple[str, tuple[str, ...]]:
        variables = self.cmp.variables
        present = set(variables["status"].astype(str).unique()) if len(variables) else set()
        return ("status", tuple(s for s in STATUS_ORDER if s in present) or STATUS_ORDER)

    def page_summary(self) -> dict[str, Any]:
        summary = self.cmp.summary
        return {str(m): {k: summary.loc[m, k] for k in ("unit", "base", "new", "delta", "delta_pct", "status")}
                for m in summary.index}

    def variable_fields(self) -> tuple[str, ...]:
        return _COMPARISON_VARIABLE_FIELDS

    def verdict(self) -> ComparisonVerdict:
        if self._verdict is None:
            self._verdict = comparison_verdict(self.cmp)
        return self._verdict


def page_side(obj: Report | Comparison) -> PageSide:
    """The :class:`PageSide` of a Report's page or a Comparison's (the one place that asks which)."""
    return _ReportSide(obj) if isinstance(obj, Report) else _ComparisonSide(obj)


#: The Report tables each section of a report's page draws: a section whose every table the
#: report does not record is left out of the page (a Graph Analyser cache records only the trace).
_SECTION_TABLES = {
    "ledger": ("variables",),
    "peak": ("variables", "liveness"),
    "liveness": ("liveness",),
    "memory": ("categories",),
    "memory-per-ipu": ("tiles",),
    "tiles": ("tiles",),
    "variables": ("variables",),
    "code": ("code",),
    "streaming": ("remote_buffers",),
}


def _recorded_sections(report: Report, sections: tuple[Section, ...]) -> tuple[Section, ...]:
    """``sections`` without those drawing only tables ``report`` does not record."""
    lacking = set(unrecorded_tables(report))
    if not lacking:
        return sections
    return tuple(s for s in sections if not (s.id in _SECTION_TABLES and lacking & set(_SECTION_TABLES[s.id])))


def _page_data(side: PageSide, variables: analysis.TopN) -> dict[str, Any]:
    """The JSON data block: metas, summary metrics and the variable rows shown (plus "other")."""
    fields = side.variable_fields()
    verdict = side.verdict()
    return jsonable(
        {
            "schema_version": 1,
            "kind": "comparison" if side.is_comparison else "report",
            "generator": f"profcompare {__version__}",
            "reports": {role: r.meta.to_dict() for role, r in zip(side.roles, side.reports, strict=True)},
            "summary": side.page_summary(),
            "ledger": html_ledger.ledger_data(side.obj),
            **({} if verdict is None else {"verdict": _verdict_data(verdict)}),
            "variables": {
                "shown": variables.shown,
                "total": variables.total,
                "cut": variables.cut,
                "note": cut_note(variables, "variables"),
                "columns": list(fields),
                "rows": variables.rows[list(fields)].to_numpy(dtype=object).tolist(),
            },
        }
    )


def _verdict_data(verdict: ComparisonVerdict) -> dict[str, Any]:
    return {"sentences": list(comparison_sentences(verdict)), "facts": verdict.to_dict()}


def _environment() -> jinja2.Environment:
    return environment()


@cache
def _asset(name: str) -> Markup:
    """A static CSS/JS file shipped next to the templates, inlined verbatim (our own code)."""
    text = resources.files("profcompare.render").joinpath("templates").joinpath(name).read_text(encoding="utf-8")
    if "</" in text:
        # the asset is inlined inside <style>/<script>; a closing tag would end it early
        raise RuntimeError(f"asset {name} must not contain '</'")
    return Markup(text)


def render_page(page: Page) -> str:
    """Fill the page template. Returns the complete HTML document."""
    template = _environment().get_template("page.html.j2")
    charts = any(section.charts for section in page.sections)
    return template.render(
        page=page,
        css=_asset("page.css"),
        js=_asset("page.js"),
        chart_js=interactive.bokeh_js() if charts else "",
        chart_library=f"Bokeh {interactive.bokeh_version()}" if charts else "",
    )


class HtmlRenderer:
    """Renders a Report or a Comparison as one self-contained HTML page (``show/compare --format html``)."""

    name = "html"
    file_extension = ".html"

    def render(self, obj: Report | Comparison, *, top: int = 20) -> str:
        """Return the HTML document; tables are cut to ``top`` rows plus an "other" row."""
        return render_page(build_page(obj, top=top))


def render_template(name: str, **context: Any) -> str:
    """Render one of the package's templates with autoescaping (used by the notebook reprs)."""
    return _environment().get_template(name).render(**context)


__all__ = [
    "Cell",
    "Column",
    "HtmlRenderer",
    "Page",
    "ReportCard",
    "Row",
    "Section",
    "Table",
    "build_page",
    "render_page",
    "render_template",
    "report_cards",
    "summary_table",
]
