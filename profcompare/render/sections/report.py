"""The sections of one report (``show``) and of the ``variables`` command, and their documents."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from profcompare.analysis import views as analysis
from profcompare.model import DEVICE_PHASES, METRICS, Report, ReportMeta, variables_convention
from profcompare.render.format import (
    describe_target,
    format_bytes,
    format_cycles,
    format_metric,
    format_pct,
    is_missing,
    metric_label,
)
from profcompare.render.ipu_sections import report_ipu_section
from profcompare.render.replica_sections import report_loaded_code_section, report_replicas_section
from profcompare.render.ledger_words import liveness_rule
from profcompare.render.sections.time import DEVICE_PHASES_NOTE, EXECUTION_TITLE, time_per_run_text
from profcompare.render.labels import TOTAL_VS_PEAK_NOTE, phase_label
from profcompare.render.trace_section import report_trace_section
from profcompare.render.sections.document import (
    CONFIDENCE_LEGEND,
    Cell,
    Column,
    Document,
    Section,
    Table,
    VariablesView,
    _confidence_cell,
    _cut_note,
    _empty_note,
    _num,
    _oom_warning,
    _report_facts,
    _compile_only_warning,
    _simulated_warning,
    limit,
    unrecorded_note,
    unrecorded_tables,
)
from profcompare.render.sections.code import CODE_TITLE, report_code_section
from profcompare.render.sections.ledger import _ledger_section, _live_at_peak_section
from profcompare.render.sections.streaming import STREAMING_TITLE, report_streaming_section
from profcompare.render.sections.variables import VARIABLES_TITLE, report_variables_section


def _workload_fact(meta: ReportMeta) -> str | None:
    if not meta.workload and not meta.config:
        return None
    parts = []
    if meta.workload:
        parts.append(meta.workload + (f" {meta.variant}" if meta.variant else ""))
    if meta.config:
        parts.append(", ".join(f"{k}={v}" for k, v in sorted(meta.config.items())))
    return "; ".join(parts)


def _summary_section(report: Report) -> Section:
    """The summary metrics; for a report that does not record some tables (a Graph Analyser cache
    records only the trace), the metrics it has a value for and one line for what it lacks."""
    summary = report.summary()
    confidence = report.confidence()
    lacking = unrecorded_tables(report)
    shown = [m for m in METRICS if not (lacking and is_missing(summary[m]))]
    rows = tuple(
        (Cell(metric_label(m)), _num(format_metric(m, summary[m])), _confidence_cell(confidence[m])) for m in shown
    )
    table = Table.of((Column("Metric"), Column("Value", numeric=True), Column("Confidence")), rows)
    notes = [unrecorded_note(report)] if lacking else []
    if is_missing(summary["cycles_per_step"]) and "execution" not in lacking:
        notes.append("Cycles and throughput need an execution profile, which this report does not have.")
    if {"total_bytes", "peak_liveness_bytes"} <= set(shown):  # said only where both totals are shown
        notes.append(TOTAL_VS_PEAK_NOTE)
    notes.append(CONFIDENCE_LEGEND)
    return Section("Summary", (table,), tuple(notes))


#: The Report tables each section of ``show`` draws: a section whose tables the report does not
#: record is left out (its summary says so in one line), as on the report's page.
_SECTION_TABLES = {
    "Memory per IPU": ("tiles",),
    "Memory ledger": ("variables",),
    "Live at the not-always-live peak": ("variables", "liveness"),
    "Memory by category": ("categories",),
    VARIABLES_TITLE: ("variables",),
    "Liveness": ("liveness",),
    "Tiles": ("tiles",),
    CODE_TITLE: ("code",),
    STREAMING_TITLE: ("remote_buffers",),
}


def _recorded(report: Report, sections: tuple[Section, ...]) -> tuple[Section, ...]:
    """``sections`` without those drawing only tables ``report`` does not record."""
    lacking = set(unrecorded_tables(report))
    return tuple(s for s in sections if not lacking & set(_SECTION_TABLES.get(s.title, ())))


def _categories_section(report: Report) -> Section:
    breakdown = analysis.category_breakdown(report)
    if not len(breakdown):
        return Section("Memory by category",
                       notes=(_empty_note(report.meta, "categories", "No memory categories in this report."),))
    rows = tuple(
        (Cell(str(r.category)), Cell(str(r.group)), _num(format_bytes(r.bytes)), _num(format_pct(r.pct, signed=False)))
        for r in breakdown.itertuples(index=False)
    )
    table = Table.of((Column("Category"), Column("Group"), Column("Bytes", True), Column("Share", True)), rows)
    return Section("Memory by category", (table,),
                   (f"Total over categories: {format_bytes(breakdown['bytes'].sum())}.",))


def _liveness_section(report: Report) -> Section:
    peak = analysis.liveness_peak(report)
    if peak["step"] is None:
        return Section("Liveness", notes=(_empty_note(report.meta, "liveness", "No program steps in this report."),))
    notes = (
        (
            f"Not-always-live memory peaks at {format_bytes(peak['not_always_live_bytes'])} in step {peak['step']} "
            f"({peak['program']}, {peak['program_type']})."
        ),
        (
            f"Always-live memory: {format_bytes(peak['always_live_bytes'])}; "
            f"peak liveness (always-live + not-always-live peak): {format_bytes(peak['peak_liveness_bytes'])}."
        ),
    )
    return Section("Liveness", notes=notes)


def _tiles_section(report: Report, top: int | None) -> Section:
    worst = min(top or 10, 10)
    stats = analysis.tile_stats(report, worst=worst)
    if not stats["tiles"]:
        return Section("Tiles", notes=(_empty_note(report.meta, "tiles", "No tiles in this report."),))
    notes = (
        (
            f"{stats['tiles']:,} tiles of {format_bytes(stats['bytes_per_tile'])}: "
            f"min {format_bytes(stats['min_bytes'])}, median {format_bytes(stats['median_bytes'])}, "
            f"max {format_bytes(stats['max_bytes'])}; {stats['tiles_over_budget']:,} over budget."
        ),
    )
    rows = tuple(
        (
            _num(str(int(r.tile))),
            _num(str(int(r.ipu))),
            _num(format_bytes(r.bytes), "bad" if r.bytes > stats["bytes_per_tile"] else None),
            _num(format_pct(r.pct_of_budget, signed=False)),
            _num(format_bytes(r.always_live_bytes)),
            _num(format_bytes(r.not_always_live_peak_bytes)),
        )
        for r in stats["worst_tiles"].itertuples(index=False)
    )
    table = Table.of((
            Column("Tile", True),
            Column("IPU", True),
            Column("Bytes (incl. gaps)", True),
            Column("Of budget", True),
            Column("Always-live", True),
            Column("Not-always-live peak", True),
        ), rows)
    return Section(f"Fullest tiles (top {len(rows)})", (table,), notes)


def _execution_section(report: Report) -> Section:
    phases = analysis.execution_by_phase(report)
    title = EXECUTION_TITLE
    if not len(phases):
        return Section(title, notes=(_empty_note(report.meta, "execution", "No execution profile in this report."),))
    summary = report.summary()
    device_cycles = summary["cycles_per_step"]
    device = phases[phases["phase"].astype(str).isin(DEVICE_PHASES)]
    rows = [
        (Cell(phase_label(r.phase)), _num(format_cycles(r.cycles)),
         _num(format_pct(100.0 * r.cycles / device_cycles if device_cycles else float("nan"), signed=False)))
        for r in device.itertuples(index=False)
    ]
    rows.append((Cell(metric_label("cycles_per_step")), _num(format_cycles(device_cycles)), _num("")))
    table = Table.of((Column("Device phase"), Column("Device cycles per step", True),
                   Column("Share of device cycles", True)), tuple(rows))
    time_text = time_per_run_text(summary, report.meta.target.clock_hz)
    notes = (DEVICE_PHASES_NOTE, time_text[0].upper() + time_text[1:])
    return Section(title, (table,), notes)


def report_document(report: Report, *, top: int | None = 20) -> Document:
    """Return the document for one report (``show``): header facts, warnings and sections.

    Sections: Summary, Memory ledger, Live at the not-always-live peak, Memory by category,
    Variables, Liveness, Fullest tiles, Code by program, Streaming Memory, Execution: device
    cycles by phase. ``top`` cuts the
    long tables (None or 0 = all rows).
    """
    top = limit(top)
    meta = report.meta
    facts = _report_facts(meta)
    facts.append(("target", describe_target(meta)))
    workload = _workload_fact(meta)
    if workload:
        facts.append(("workload", workload))
    if meta.created:
        facts.append(("created", meta.created))
    rule = liveness_rule((variables_convention(report.variables),))
    if rule:
        facts.append(("liveness", rule))
    warnings = [w for w in (_oom_warning(meta, "report"), _simulated_warning(meta, "report"),
                            _compile_only_warning(meta, "report")) if w]
    sections: tuple[Section, ...] = (
        _summary_section(report),
        _ledger_section(report, top),
        _live_at_peak_section(report, top),
        _categories_section(report),
        report_variables_section(report, top),
        _liveness_section(report),
        _tiles_section(report, top),
        report_code_section(report, top),
        report_streaming_section(report, top),
        _execution_section(report),
    )
    trace_section = report_trace_section(report)  # only with an execution trace
    if trace_section is not None:
        sections = (*sections, trace_section)
    # code loaded by remote_code_load after the code table; the replica groupings and their
    # collectives after the execution
    loaded = report_loaded_code_section(report)
    if loaded is not None:
        at = next(i for i, s in enumerate(sections) if s.title == CODE_TITLE) + 1
        sections = (*sections[:at], loaded, *sections[at:])
    replicas_section = report_replicas_section(report)
    if replicas_section is not None:
        sections = (*sections, replicas_section)
    ipu_section = report_ipu_section(report)  # only with more than one IPU per replica
    if ipu_section is not None:
        sections = (sections[0], ipu_section, *sections[1:])
    return Document(f"profcompare report: {meta.label}", tuple(facts), tuple(warnings), _recorded(report, sections))


def selection_notes(report: Report, selection: pd.DataFrame, shown: pd.DataFrame) -> tuple[str, ...]:
    """What the rows of a ``variables`` selection add up to, and why that is not memory in use:
    not-always-live rows live over different steps and share addresses, and ``name@N`` rows are
    the call instances of one tensor (each counted once in the de-duplicated figure); then the
    report's memory in use, and which of the rows shown are instances of one tensor."""
    totals = analysis.selection_totals(selection)
    text = f"Sum of the {totals['rows']:,} selected rows: {format_bytes(totals['bytes'])}"
    if totals["not_always_live_rows"] or totals["instance_rows"]:
        reasons = []
        if totals["not_always_live_rows"]:
            reasons.append(f"{totals['not_always_live_rows']:,} rows are not-always-live, each live over its own "
                           "steps (rows live at different steps can share addresses)")
        if totals["instance_rows"]:
            reasons.append(f"{totals['instance_rows']:,} rows are call instances (name@1, name@2, ...) of tensors "
                           "listed once per call; with each tensor counted once (its largest instance): "
                           f"{format_bytes(totals['tensor_bytes'])} in {totals['tensors']:,} tensors")
        text += ", not memory in use: " + "; ".join(reasons)
    notes = [text + "."]
    peak = analysis.liveness_peak(report)
    notes.append(f"Memory in use (per replica): peak liveness {format_bytes(peak['peak_liveness_bytes'])} = always-live "
                 f"{format_bytes(peak['always_live_bytes'])} + not-always-live peak "
                 f"{format_bytes(peak['not_always_live_bytes'])}.")
    if len(shown):
        stems = analysis.call_instance_stems(shown["name"])
        counts = stems.value_counts()
        for stem, count in counts[counts > 1].items():
            notes.append(f"{int(count)} rows shown are call instances of one tensor, {stem} (@1, @2, ...: one "
                         "allocation per call, live at different steps).")
    return tuple(notes)


def variables_document(result: VariablesView) -> Document:
    """Return the document for the ``variables`` command: header facts and one variables table."""
    meta = result.report.meta
    facts = _report_facts(meta)
    how = [f"sorted by {result.sort}"]
    if result.filter_regex is not None:
        how.append(f"names matching /{result.filter_regex}/")
    if result.always_live is not None:
        how.append("always-live only" if result.always_live else "not-always-live only")
    facts.append(("selection", ", ".join(how)))
    warnings = [w for w in (_oom_warning(meta, "report"), _simulated_warning(meta, "report"),
                            _compile_only_warning(meta, "report")) if w]
    view = result.view
    if not view.total:
        section = Section(VARIABLES_TITLE, notes=(_empty_note(meta, "variables", "No variables match."),))
    else:
        other_bytes = view.other["bytes"] if view.other is not None else None
        selection = analysis.variables_view(result.report, top=None, sort=result.sort, filter_regex=result.filter_regex,
                                            always_live=result.always_live).rows
        notes = (_cut_note(view, "variables", other_bytes), *selection_notes(result.report, selection, view.shown_rows))
        section = replace(report_variables_section(result.report, view=view), notes=notes)
    return Document(f"profcompare variables: {meta.label}", tuple(facts), tuple(warnings), (section,))
