"""The sections of one report (``show``) and of the ``variables`` command, and their documents."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from profcompare.analysis import views as analysis
from profcompare.model import Report, ReportMeta, variables_convention
from profcompare.render.format import (
    describe_target,
    format_bytes,
)
from profcompare.render.ledger_words import liveness_rule
from profcompare.render.sections.header import report_warnings
from profcompare.render.sections.order import RowLimits, report_sections
from profcompare.render.sections.document import (
    Document,
    Section,
    VariablesView,
    _cut_note,
    _empty_note,
    _report_facts,
    limit,
)
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


def report_document(report: Report, *, top: int | None = 20) -> Document:
    """Return the document for one report (``show``): header facts, warnings and sections.

    Sections: those of :func:`~profcompare.render.sections.order.report_sections`. ``top`` cuts
    the long tables (None or 0 = all rows).
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
    warnings = report_warnings(report)
    return Document(f"profcompare report: {meta.label}", tuple(facts), tuple(warnings),
                    report_sections(report, RowLimits.every(top)))


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
    warnings = report_warnings(result.report)
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
