"""JSON output for scripts and CI (``--format json``); every document carries ``schema_version``.

Shapes (schema_version 9; version 3 added the memory ledger, version 4 the verdict, the liveness
rule, ``host_seconds_per_step`` in the summary and tile-memory totals in ``ledger_by_parameter``,
version 5 the tables the pages show that the export lacked -- ``time``, ``liveness_peak``,
``tile_stats``, ``memory_per_ipu``, ``replicas``, ``loaded_code``, ``streaming_memory_totals`` and
``execution_trace``, version 6 a comparison's ``headline``, version 7 the program tree
(``programs``), a comparison's ``config_differences`` (what differs in the two sides'
configuration), every ``meta``'s ``layout`` and ``sections``, version 8 the "Tile detail" section
(id ``tile-detail``) in ``sections``, the vertex types, compute sets and exchanges (``vertices``,
``compute_sets``, ``exchanges``) and, in ``profcompare tiles --format json``, each tile detail's
``tile_peak`` and its live variables' ``bytes_on_tile``, the ``ipu`` of every ``liveness`` row (one row
per step and IPU for a multi-IPU simulated program, <NA>/null for the whole replica),
``execution_trace``'s ``run`` and ``runs`` (the run its spans and types are of, and every run the
trace holds) and a comparison's ``lifetimes`` (each (parameter, role) live from which step to
which, base and new) and the ledger's code and cycles (``ledger_code``: per parameter and role,
the ops acting on its data; the ``operations`` rows' ``parameter`` and ``role``), a comparison's
``time_diff`` (where the device cycles went, step by step) and the verdict facts' ``time_causes``,
and the bytes each ``ledger_code`` row's transfers and collectives move (``bytes_moved``; a
comparison's ``base_``/``new_``/``delta_bytes_moved``), version 9 ``--top N`` bounding the step
series too (``liveness``; a comparison's ``time_diff.steps``) and ``cut`` saying so for each
(``cut.liveness``, a comparison's ``cut.time_diff_steps``); every older key is kept).

``sections`` holds the sections exactly as the HTML page draws them, with the page's row limits
(:meth:`~profcompare.render.sections.order.RowLimits.page`): one object per section (``id``,
``title``, ``text``, ``items``, ``notes``, ``tables``), each table with its ``id``, ``columns``
(headers), ``keys``, ``numeric``, body ``rows``, ``footer`` rows ("other", "total") and ``note``;
a figure is its exact value (bytes, cycles, percent), text as shown otherwise
(:mod:`profcompare.render.page.export`). The raw tables above stay complete; ``sections`` is
what a reader of the page sees, figure for figure:

``show``::

    {"schema_version": 4, "meta": {ReportMeta.to_dict()},
     "summary": {"<metric>": {"value", "unit", "confidence"}, ...},
     "liveness_rule": str | null (why model state is, or is not, always-live),
     "ledger": [one object per Report.ledger() column: parameter, role, location, bytes,
                bytes_at_peak, first_step, last_step, rows],
     "unattributed_bytes": int, "peak_step": int | null,
     "live_at_peak": [Report.live_at_peak() rows: the variables columns],
     "categories": [...], "variables": [...],
     "cut": {"variables": {"shown", "total", "cut"}, "liveness": {...} (version 9)},
     "liveness": [...], "tiles": [...], "code": [...], "phases": [...], "streaming_memory": [...],
     "time": {"clock_hz", "device_seconds_per_step", "host_seconds_per_step", "seconds_per_step"},
     "liveness_peak": {analysis.liveness_peak(): step, program, always_live_bytes,
                       not_always_live_bytes, peak_liveness_bytes} | null (no liveness),
     "tile_stats": {analysis.tile_stats() figures, "worst_tiles": [its rows]} | null (no tiles),
     "memory_per_ipu": [memory_per_ipu rows; memory_per_tile_set rows when the IPUs have I/O tiles],
     "replicas": {"replicas", "io_tiles_per_ipu", "collective_phase_cycles" (the Execution phase),
                  "groupings": [{stride, group_size, num_groups, members (replica 0's group),
                                 collectives, cycles (every phase of their steps)}]},
     "loaded_code": [replicas.loaded_code rows],
     "streaming_memory_totals": {replicas.StreamingTotals fields},
     "execution_trace": {"spans": [trace_spans rows], "types": [type_totals rows, per IPU]},
     "programs": [Report.programs rows: the program tree, in tree order],
     "operations": [Report.operations rows: one per op, then the "(not attributed to an op)" row],
     "vertices": [Report.vertices rows: one per vertex type, then at most one remainder row],
     "compute_sets": [Report.compute_sets rows: one per compute set (OnTileExecute program)],
     "exchanges": [Report.exchanges rows: one per program holding exchange code],
     "ledger_code": [analysis.ledger_code.ledger_code rows: parameter, role, code_bytes, cycles,
                     ops, bytes_moved (per run; null without an execution profile; version 8)
                     per (parameter, role), then the named rows; the sums are the operations']}

``compare``::

    {"schema_version": 4, "base": {meta}, "new": {meta},
     "verdict": {"sentences": [the verdict in words], "facts": {moves, memory, time, fit}},
     "liveness_rule": str | null,
     "summary": {"<metric>": {"base", "new", "delta", "delta_pct", "status", "confidence"}, ...},
     "ledger_moves": [every Comparison.ledger_moves(None) row, largest move first],
     "ledger_by_parameter": [Comparison.ledger_by_parameter() rows; *_tile_memory = always-live +
                             not-always-live, Streaming Memory apart],
     "peak_composition": [Comparison.peak_composition() rows],
     "ledger": [one object per Comparison.ledger column],
     "variables": [one object per Comparison.variables column],
     "cut": {"variables": {...}, "liveness": {...}, "time_diff_steps": {...} (version 9)},
     "categories": [...], "tiles": [...], "code": [...], "liveness": [...], "phases": [...],
     "streaming_memory": [...],
     "time": {"clock_hz" | "device_seconds_per_step" | ...: {"base", "new", "delta"}},
     "memory_per_ipu": [compare_memory_per_ipu rows],
     "replicas": [replicas.compare_groupings rows],
     "base_report" / "new_report": {"liveness_peak", "tile_stats", "replicas", "loaded_code",
                                    "streaming_memory_totals", "execution_trace"} as in ``show``,
     "headline": str (the comparison in one sentence: the line the terminal opens and closes with),
     "programs": [Comparison.programs rows: the two program trees aligned, in tree order],
     "operations": [Comparison.operations rows: the two reports' ops paired],
     "vertices" / "compute_sets" / "exchanges": [Comparison.vertices / compute_sets / exchanges
                                                rows: paired by name, the largest change first],
     "ledger_code": [Comparison.ledger_code() rows: base_/new_/delta_code_bytes and _cycles per
                     (parameter, role) and named row, status, largest_op(_delta_code_bytes),
                     base_/new_/delta_bytes_moved (per run; version 8)],
     "config_differences": [Comparison.config_differences rows: setting, base, new (values as text,
                            null where a side does not set it), kind (intended | unexpected),
                            moves_figures, note; intended rows first],
     "time_diff": {"summary": {TimeDiffSummary fields: base_cycles, new_cycles, delta_cycles,
                               gross_cycles, attributed_share, parameter_share, base_exposed_cycles,
                               new_exposed_cycles, delta_exposed_cycles, delta_overlapped_cycles,
                               clock_hz},
                   "causes": [Comparison.time_causes() rows: parameter, role, kind, steps,
                              delta_cycles, delta_exposed_cycles, delta_overlapped_cycles,
                              base_bytes_moved, new_bytes_moved, base_/new_bytes_per_second],
                   "steps": [Comparison.time_diff rows whose delta_cycles is not 0]}}

Lists of rows carry the columns of the matching Report / Comparison table. Everything is
complete unless ``--top N`` is given; then it limits the rows that grow with the program's
variables and steps: ``variables`` (the largest first; a comparison's largest changes first),
``liveness`` (the N steps with the most not-always-live bytes, a comparison's N aligned positions
whose not-always-live bytes change most, in step order) and a comparison's ``time_diff.steps``
(the N whose cycles change most, in step order). ``cut`` says for each how many rows there
were, how many are shown and how many were cut (``{"shown", "total", "cut"}``; cut 0 when
complete). The tables bounded by the program's size (tiles, programs, code, ops) stay complete.

``variables``::

    {"schema_version": 4, "meta": {meta},
     "selection": {"sort", "filter", "always_live", "top"},
     "total": int, "shown": int, "cut": int, "other_bytes": int | null,
     "selection_totals": {rows, bytes, tensors, tensor_bytes, instance_rows, not_always_live_rows}
                         (analysis.views.selection_totals: the rows overlap, the sum is not memory in use),
     "variables": [one object per Report.variables column, for the rows shown]}

Numbers: byte, tile, entry and step figures are integers; cycles, rates and percentages are
floats. NaN, infinities and missing values become ``null``. ``confidence`` is ``exact`` (follows
from the program), ``modelled`` (rests on the simulator's model constants) or ``measured`` (read
from a real profile); a comparison's is the weaker of its two sides. The top-N lists hold real rows
only; what was cut is never a fake "other" entry (``cut`` says how much was left out).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any, cast

import numpy as np
import pandas as pd

from profcompare.analysis import trace as trace_analysis
from profcompare.analysis.ledger_code import ledger_code
from profcompare.analysis.views import selection_totals, variables_view
from profcompare.comparison import Comparison
from profcompare.comparison.verdict import comparison_verdict
from profcompare.analysis.memory_per_ipu import compare_memory_per_ipu
from profcompare.analysis.replicas import compare_groupings
from profcompare.model import METRIC_UNITS, METRICS, Report, variables_convention
from profcompare.render.format import is_missing
from profcompare.render.json_rows import Rows, records
from profcompare.render.json_values import frame_records, jsonable
from profcompare.render.json_text import indented_parts
from profcompare.render.ledger_words import liveness_rule
from profcompare.render.verdict_words import comparison_sentences, headline
from profcompare.render.sections import VariablesView, limit
from profcompare.render.page.export import sections_data
from profcompare.render.sections.trace import shown_trace
from profcompare.render.sections.order import RowLimits, comparison_sections, report_sections

SCHEMA_VERSION = 9

#: metric units whose values are whole numbers
_INTEGER_UNITS = frozenset({"bytes", "tiles"})


def metric_value(metric: str, value: Any) -> int | float | None:
    """Return a summary metric's value for JSON/CSV: int for bytes and tiles, float otherwise,
    None when missing or not finite."""
    if is_missing(value) or not math.isfinite(float(value)):
        return None
    if METRIC_UNITS.get(metric) in _INTEGER_UNITS:
        return round(float(value))
    return float(value)


def _cut(shown: int, total: int) -> dict[str, int]:
    return {"shown": shown, "total": total, "cut": total - shown}


def _variables_rows(frame: pd.DataFrame, top: int | None, by: str) -> tuple[list[dict[str, Any]] | Rows, dict[str, int]]:
    """Every row (or the ``top`` largest by |by|) of a variables table, and how many were cut."""
    total = len(frame)
    if top is not None and top < total:
        order = np.argsort(-np.abs(frame[by].to_numpy(dtype="float64")), kind="stable")[:top]
        frame = frame.iloc[np.sort(order)] if by == "bytes" else frame.iloc[order]
    return records(frame), _cut(len(frame), total)


def _largest_rows(frame: pd.DataFrame, top: int | None, size: np.ndarray) -> tuple[pd.DataFrame, dict[str, int]]:
    """The ``top`` rows of ``frame`` with the largest ``size`` (one value per row; earlier rows
    first on a tie), in the frame's order, and how many were cut; every row when ``top`` is None."""
    total = len(frame)
    if top is None or top >= total:
        return frame, _cut(total, total)
    order = np.argsort(-size, kind="stable")[:top]
    return frame.iloc[np.sort(order)], _cut(top, total)


def _liveness_rows(liveness: pd.DataFrame, top: int | None) -> tuple[pd.DataFrame, dict[str, int]]:
    """A report's liveness rows: every step, or the ``top`` with the most not-always-live bytes."""
    return _largest_rows(liveness, top, liveness["not_always_live_bytes"].to_numpy(dtype="float64", na_value=0.0))


def _aligned_liveness_rows(liveness: pd.DataFrame, top: int | None) -> tuple[pd.DataFrame, dict[str, int]]:
    """A comparison's aligned liveness rows: every position, or the ``top`` whose not-always-live
    bytes change most (a side without the position counts 0)."""
    base = liveness["base_not_always_live_bytes"].to_numpy(dtype="float64", na_value=0.0)
    new = liveness["new_not_always_live_bytes"].to_numpy(dtype="float64", na_value=0.0)
    return _largest_rows(liveness, top, np.abs(new - base))


def _time(report: Report) -> dict[str, Any]:
    """Time per step as the pages' time table splits it: device, host/runtime and their sum."""
    summary = report.summary()
    clock = float(report.meta.target.clock_hz)
    cycles = summary["cycles_per_step"]
    return {
        "clock_hz": clock,
        "device_seconds_per_step": None if is_missing(cycles) else float(cycles) / clock,
        "host_seconds_per_step": metric_value("host_seconds_per_step", summary["host_seconds_per_step"]),
        "seconds_per_step": metric_value("seconds_per_step", summary["seconds_per_step"]),
    }


def _replicas(report: Report) -> dict[str, Any]:
    """The "Replicas and collectives" table of one report, with the collective phase it differs from."""
    from profcompare.analysis import replicas
    from profcompare.analysis.views import execution_by_phase

    phases = execution_by_phase(report)
    collective = phases.loc[phases["phase"].astype(str) == "collective", "cycles"]
    return {
        "replicas": int(report.meta.target.num_replicas or 1),
        "io_tiles_per_ipu": replicas.io_tiles_per_ipu(report),
        "collective_phase_cycles": float(collective.iloc[0]) if len(collective) else None,
        "groupings": [{"stride": g.stride, "group_size": g.group_size, "num_groups": g.num_groups,
                       "members": list(g.members(0)), "collectives": g.collectives, "cycles": g.cycles}
                      for g in replicas.groupings(report)],
    }


def _report_views(report: Report) -> dict[str, Any]:
    """The tables a report's page shows beyond the raw Report tables (schema version 5)."""
    from profcompare.analysis import replicas
    from profcompare.analysis.views import liveness_peak, tile_stats
    from profcompare.analysis.memory_per_ipu import memory_per_ipu

    stats = dict(tile_stats(report))
    worst = stats.pop("worst_tiles")
    per_ipu = replicas.memory_per_tile_set(report) if replicas.io_tiles_per_ipu(report) else memory_per_ipu(report)
    totals = replicas.streaming_totals(report)
    return {
        # null when the report has no liveness or no tiles (its summary says n/a, never 0)
        "liveness_peak": jsonable(dict(liveness_peak(report))) if len(report.liveness) else None,
        "tile_stats": {**jsonable(stats), "worst_tiles": records(worst)} if len(report.tiles) else None,
        "memory_per_ipu": records(per_ipu),
        "replicas": _replicas(report),
        "loaded_code": records(replicas.loaded_code(report)),
        "streaming_memory_totals": {"replicas": totals.replicas, "per_replica_bytes": totals.per_replica,
                                    "sharded_per_replica_bytes": totals.sharded_per_replica,
                                    "all_replicas_bytes": totals.all_replicas,
                                    "sharded_all_replicas_bytes": totals.sharded_all_replicas},
        "execution_trace": _execution_trace(report),
    }


def _execution_trace(report: Report) -> dict[str, Any]:
    """The spans and block types of the trace's shown run, which run that is and every run the
    trace holds (schema 8: ``run``, ``runs``)."""
    blocks, choice = shown_trace(report)
    return {"spans": records(trace_analysis.trace_spans(blocks)),
            "types": records(trace_analysis.type_totals(blocks, by_ipu=True)),
            "run": choice.run, "runs": list(choice.runs)}


def _report_document(report: Report, *, top: int | None = None) -> dict[str, Any]:
    """Return the ``show --format json`` document (see the module docstring): the summary with
    each metric's confidence, the memory ledger and what is live at the peak, and every table the HTML page shows, complete unless ``top``
    limits the variables and the liveness steps."""
    from profcompare.analysis.views import execution_by_phase
    from profcompare.analysis.ledger import peak_step, unattributed_bytes

    summary = report.summary()
    ledger = report.ledger()
    confidence = report.confidence()
    variables, cut = _variables_rows(report.variables.sort_values("bytes", ascending=False, kind="stable"), top, "bytes")
    liveness, liveness_cut = _liveness_rows(report.liveness, top)
    return {
        "schema_version": SCHEMA_VERSION,
        "meta": jsonable(report.meta.to_dict()),
        "summary": {
            m: {"value": metric_value(m, summary[m]), "unit": METRIC_UNITS[m], "confidence": confidence[m]}
            for m in METRICS
        },
        "liveness_rule": liveness_rule((variables_convention(report.variables),)),
        "ledger": records(ledger),
        "unattributed_bytes": unattributed_bytes(ledger),
        "peak_step": peak_step(report),
        "live_at_peak": records(report.live_at_peak()),
        "categories": records(report.categories),
        "variables": variables,
        "cut": {"variables": cut, "liveness": liveness_cut},
        "liveness": records(liveness),
        "tiles": records(report.tiles),
        "code": records(report.code),
        "phases": records(execution_by_phase(report)),
        "streaming_memory": records(report.remote_buffers),
        "time": _time(report),
        **_report_views(report),
        "programs": records(report.programs),
        "operations": records(report.operations),
        "vertices": records(report.vertices),
        "compute_sets": records(report.compute_sets),
        "exchanges": records(report.exchanges),
        "ledger_code": records(ledger_code(report)),
        "sections": sections_data(report_sections(report, RowLimits.page(top))),
    }


def _comparison_document(cmp: Comparison, *, top: int | None = None) -> dict[str, Any]:
    """Return the ``compare --format json`` document (see the module docstring): the summary
    with confidence, the ledger diff with its moves, per-parameter view and peak composition, and
    every joined table, complete unless ``top`` limits the variables (the
    largest changes first)."""
    summary: dict[str, Any] = {}
    for metric in cmp.summary.index:
        row = cmp.summary.loc[metric]
        m = str(metric)
        summary[m] = {
            "base": metric_value(m, row["base"]),
            "new": metric_value(m, row["new"]),
            "delta": metric_value(m, row["delta"]),
            "delta_pct": None if is_missing(row["delta_pct"]) or not math.isfinite(float(row["delta_pct"]))
            else float(row["delta_pct"]),
            "status": None if is_missing(row["status"]) else str(row["status"]),
            "confidence": str(row["confidence"]),
        }
    variables, cut = _variables_rows(cmp.variables, top, "delta_bytes")
    liveness, liveness_cut = _aligned_liveness_rows(cmp.liveness, top)
    time_diff, time_diff_cut = _time_steps(cmp, top)
    verdict = comparison_verdict(cmp)
    return {
        "schema_version": SCHEMA_VERSION,
        "base": jsonable(cmp.base.meta.to_dict()),
        "new": jsonable(cmp.new.meta.to_dict()),
        "verdict": {"sentences": list(comparison_sentences(verdict)), "facts": jsonable(verdict.to_dict())},
        "liveness_rule": liveness_rule((variables_convention(cmp.base.variables),
                                        variables_convention(cmp.new.variables))),
        "summary": summary,
        "ledger_moves": records(cmp.ledger_moves(None)),
        "ledger_by_parameter": records(cmp.ledger_by_parameter()),
        "peak_composition": records(cmp.peak_composition()),
        "ledger": records(cmp.ledger),
        "lifetimes": records(cmp.lifetimes(None)),
        "variables": variables,
        "cut": {"variables": cut, "liveness": liveness_cut, "time_diff_steps": time_diff_cut},
        "categories": records(cmp.categories),
        "tiles": records(cmp.tiles),
        "code": records(cmp.code),
        "liveness": records(liveness),
        "phases": records(cmp.execution),
        "streaming_memory": records(cmp.remote_buffers),
        "time": _time_diff(cmp),
        "memory_per_ipu": records(compare_memory_per_ipu(cmp.base, cmp.new)),
        "replicas": records(compare_groupings(cmp.base, cmp.new)),
        "base_report": _side_views(cmp.base),
        "new_report": _side_views(cmp.new),
        "headline": headline(verdict),
        "programs": records(cmp.programs),
        "operations": records(cmp.operations),
        "vertices": records(cmp.vertices),
        "compute_sets": records(cmp.compute_sets),
        "exchanges": records(cmp.exchanges),
        "ledger_code": records(cmp.ledger_code()),
        "sections": sections_data(comparison_sections(cmp, RowLimits.page(top), verdict=verdict)),
        "config_differences": records(cmp.config_differences),
        "time_diff": time_diff,
    }


def _time_steps(cmp: Comparison, top: int | None) -> tuple[dict[str, Any], dict[str, int]]:
    """The time diff: its totals, its causes and its rows that changed (every one, or the
    ``top`` that change most), and how many of those were cut."""
    import dataclasses

    diff = cmp.time_diff
    changed = diff[diff["delta_cycles"] != 0]
    steps, cut = _largest_rows(changed, top, np.abs(changed["delta_cycles"].to_numpy(dtype="float64", na_value=0.0)))
    return ({"summary": jsonable(dataclasses.asdict(cmp.time_diff_summary())),
             "causes": records(cmp.time_causes()),
             "steps": records(steps)}, cut)


def _time_diff(cmp: Comparison) -> dict[str, Any]:
    """Time per step of both reports as the comparison page's time table: base, new, delta."""
    base, new = _time(cmp.base), _time(cmp.new)
    out: dict[str, Any] = {}
    for key in base:
        b, n = base[key], new[key]
        out[key] = {"base": b, "new": n, "delta": None if b is None or n is None else n - b}
    return out


def _side_views(report: Report) -> dict[str, Any]:
    """One side's per-report views a comparison page shows (liveness peak, tiles, replicas, trace)."""
    views = _report_views(report)
    del views["memory_per_ipu"]  # the comparison's own ``memory_per_ipu`` holds both sides
    return views


def variables_json(result: VariablesView) -> dict[str, Any]:
    """Return the ``variables --format json`` document (see the module docstring)."""
    view = result.view
    other = view.other
    return {
        "schema_version": SCHEMA_VERSION,
        "meta": jsonable(result.report.meta.to_dict()),
        "selection": {
            "sort": result.sort,
            "filter": result.filter_regex,
            "always_live": result.always_live,
            "top": view.shown if view.cut else None,
        },
        "total": view.total,
        "shown": view.shown,
        "cut": view.cut,
        "other_bytes": None if other is None else int(other["bytes"]),
        "selection_totals": selection_totals(
            variables_view(result.report, top=None, sort=result.sort, filter_regex=result.filter_regex,
                           always_live=result.always_live).rows),
        "variables": records(view.shown_rows),
    }


class JsonRenderer:
    """Render a report, a comparison or a variables view as an indented JSON document."""

    name = "json"
    file_extension = ".json"

    def render(self, obj: Report | Comparison | VariablesView, *, top: int = 0) -> str:
        """Return the JSON text (ends with a newline; ``allow_nan`` is off, NaN is null); every
        row unless ``top`` (> 0) limits the variables and the steps."""
        return "".join(self.render_parts(obj, top=top))

    def render_parts(self, obj: Report | Comparison | VariablesView, *, top: int = 0) -> Iterator[str]:
        """:meth:`render`'s text in consecutive parts, the large tables' made as they are taken
        (written part by part, a large export is never held whole)."""
        if isinstance(obj, Comparison):
            data = _comparison_document(obj, top=limit(top))
        elif isinstance(obj, Report):
            data = _report_document(obj, top=limit(top))
        elif isinstance(obj, VariablesView):
            data = variables_json(obj)
        else:
            raise TypeError(f"cannot render a {type(obj).__name__} as JSON")
        return itertools.chain(indented_parts(data, ensure_ascii=False), ("\n",))  # json.dumps(indent=2)'s text


def _plain(value: Any) -> Any:
    """``value`` with every :class:`Rows` (a large table kept as JSON text, for writing) as the
    list of dictionaries it stands for: data ``json.dumps`` takes."""
    if isinstance(value, Rows):
        return list(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def report_json(report: Report, *, top: int | None = None) -> dict[str, Any]:
    """The ``show --format json`` document as plain data (see the module docstring and
    :func:`_report_document`): the summary with each metric's confidence, the memory ledger and
    what is live at the peak, and every table the HTML page shows, complete unless ``top``
    limits the variables and the liveness steps."""
    return cast(dict[str, Any], _plain(_report_document(report, top=top)))


def comparison_json(cmp: Comparison, *, top: int | None = None) -> dict[str, Any]:
    """The ``compare --format json`` document as plain data (see :func:`_comparison_document`)."""
    return cast(dict[str, Any], _plain(_comparison_document(cmp, top=top)))


__all__ = [
    "SCHEMA_VERSION",
    "JsonRenderer",
    "comparison_json",
    "frame_records",
    "jsonable",
    "metric_value",
    "report_json",
    "variables_json",
]
