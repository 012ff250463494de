"""Parameter sweeps: one variant run at every point of a grid of knob values, tabulated.

``profcompare sweep offchip-sharded --param sharded_threshold=1e10,262145,1024,512`` runs the
variant once per value (the points in warm worker processes of a local pool, or as tasks on a Dask
cluster: :mod:`profcompare.runner.engine`), then builds one table
row per point with the knobs that vary and the memory and throughput metrics, and writes
``sweep.csv``, ``sweep.json`` and ``sweep.html`` next to the point directories.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from profcompare import runner
from profcompare.backend.knobs import MAX_SEARCH_POINTS, format_knob_value
from profcompare.errors import ProfcompareError, WorkloadError

#: the metrics of a sweep table, in column order (units in profcompare.model.METRIC_UNITS)
SWEEP_METRICS: tuple[str, ...] = (
    "always_live_bytes",
    "not_always_live_peak_bytes",
    "code_bytes",
    "streaming_memory_bytes",
    "cycles_per_step",
    "host_seconds_per_step",
    "seconds_per_step",
    "samples_per_second",
)
SWEEP_SCHEMA_VERSION = 1


def parse_param(text: str) -> tuple[str, list[str]]:
    """Split ``NAME=V1,V2,...`` into the knob name (``-`` becomes ``_``) and the value texts.

    Raises WorkloadError for a missing ``=``, an empty name, an empty value or a repeated value.
    """
    name, sep, values_text = text.partition("=")
    name = runner.normalise_knob_name(name)
    if not sep or not name:
        raise WorkloadError(f"bad --param {text!r}: expected NAME=V1,V2,... (e.g. sharded_threshold=1e10,512)")
    values = [v.strip() for v in values_text.split(",")]
    if not values_text.strip() or any(not v for v in values):
        raise WorkloadError(f"bad --param {text!r}: empty value; expected NAME=V1,V2,...")
    return name, values


def point_label(values: Mapping[str, Any]) -> str:
    """Directory name of a sweep point: ``sharded_threshold=512`` or ``hidden=128,layers=2``."""
    return ",".join(f"{name}={format_knob_value(value)}" for name, value in values.items())


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sweep grid: the swept knob values (typed) and its job."""

    values: Mapping[str, Any]
    job: runner.Job


def expand_grid(
    variant: str, params: Sequence[tuple[str, Sequence[str]]], overrides: Mapping[str, Any] | None = None,
    workload: str | None = None,
) -> list[SweepPoint]:
    """Every combination of the ``params`` values (first param varies slowest), validated.

    ``params`` are (knob name, value texts) pairs as from :func:`parse_param`; ``overrides`` are
    fixed knob values for every point; ``workload`` (a workload name) restricts where ``variant``
    is looked up (default: across every workload). Values are parsed by the knob's type (``1e10`` is a valid
    int). Raises WorkloadError for an unknown variant or knob, a bad value, a knob swept twice or
    both swept and fixed, or two values that parse to the same point.
    """
    if not params:
        raise WorkloadError("nothing to sweep: give at least one --param NAME=V1,V2,...")
    found = runner.workload_registry().find_variant(variant, workload)
    fixed = {runner.find_knob(found, name).name: value for name, value in (overrides or {}).items()}
    names: list[str] = []
    for name, _ in params:
        knob = runner.find_knob(found, name)
        if knob.name in names:
            raise WorkloadError(f"knob {knob.name} is swept twice; give all its values in one --param")
        if knob.name in fixed:
            raise WorkloadError(f"knob {knob.name} is both set and swept; drop one")
        names.append(knob.name)
    count = math.prod(len(values) for _, values in params)
    if count > MAX_SEARCH_POINTS:
        raise WorkloadError(f"the --param grid has {count:,} points, more than the {MAX_SEARCH_POINTS:,} a sweep runs; "
                            "sweep fewer values")
    ref = runner.workload_ref(found)
    points: list[SweepPoint] = []
    seen: dict[str, tuple[str, ...]] = {}
    for combo in itertools.product(*(values for _, values in params)):
        config = runner.resolve_config(found, {**fixed, **dict(zip(names, combo))})
        values = {name: config[name] for name in names}
        label = point_label(values)
        if label in seen:
            raise WorkloadError(f"values {seen[label]} and {combo} give the same point {label}")
        seen[label] = combo
        points.append(SweepPoint(values, runner.Job(label, found.name, ref, variant, config)))
    return points


def sweep_table(points: Sequence[SweepPoint], outcomes: Sequence[runner.JobOutcome], reports: Mapping[str, Any]) -> pd.DataFrame:
    """The sweep table: one row per point, in grid order.

    Columns: point (str, the directory name), one column per swept knob (typed), status
    (ok | oom | failed), then :data:`SWEEP_METRICS` as float64 (bytes, cycles, samples/s; NaN
    when the point has no report or no execution profile), then error (str or None).
    ``reports`` maps point label -> Report for the points that have one.
    """
    rows = []
    for point, outcome in zip(points, outcomes, strict=True):
        row: dict[str, Any] = {"point": point.job.label, **dict(point.values), "status": outcome.status}
        report = reports.get(point.job.label)
        summary = report.summary() if report is not None else None
        for metric in SWEEP_METRICS:
            row[metric] = float(summary[metric]) if summary is not None else math.nan
        row["error"] = outcome.error
        rows.append(row)
    frame = pd.DataFrame(rows)
    for metric in SWEEP_METRICS:
        frame[metric] = frame[metric].astype("float64")
    return frame


@dataclass(frozen=True)
class SweepResult:
    """A finished sweep: the run (directories, statuses), the swept knobs and the table."""

    run: runner.RunResult
    swept: tuple[str, ...]
    table: pd.DataFrame
    files: Mapping[str, Path]

    @property
    def ok(self) -> bool:
        """True when every point finished with status ok."""
        return self.run.ok


class SweepPages(Protocol):
    """Writes a sweep's files into ``directory`` (the staging directory, published with the run)
    and returns format -> path; the command line's are built on the render layer."""

    def __call__(self, table: pd.DataFrame, swept: Sequence[str], directory: Path, *, result: runner.RunResult,
                 variant: str, reports: Mapping[str, Any] | None = None) -> Mapping[str, Path]: ...


def run_sweep(
    variant: str,
    params: Sequence[tuple[str, Sequence[str]]],
    *,
    overrides: Mapping[str, Any] | None = None,
    workload: str | None = None,
    backend: str = "auto",
    out: str | os.PathLike[str] = "reports",
    name: str | None = None,
    jobs: int = 1,
    force: bool = False,
    progress: runner.ProgressCallback | None = None,
    environ: Mapping[str, str] | None = None,
    execution: str | None = None,
    dask: str | None = None,
    engine: runner.Engine | None = None,
    pages: SweepPages | None = None,
) -> SweepResult:
    """Run ``variant`` at every grid point of ``params`` and tabulate the results.

    Writes ``<out>/<name>/<point>/`` per point plus the files ``pages`` writes (the command
    line's: ``sweep.csv``, ``sweep.json`` and ``sweep.html``), all published atomically with the
    run. Returns the SweepResult; a failing
    point never raises (its status says what happened). Raises WorkloadError for a bad grid,
    OutputExistsError when the run exists and not ``force``. ``execution``: the simulator's
    execution mode (numeric | compile-only; see ``runner.execute_jobs``). ``workload``: find
    ``variant`` in that workload only (default: by name across the workloads).

    The points run on ``engine`` when given (the caller closes it), else on one made here and
    closed at the end: ``runner.make_engine(jobs, dask)``, a pool of ``jobs`` warm worker
    processes, or with ``dask`` (``"local:N"``, ``"tcp://host:8786"``) a Dask cluster. Raises
    DaskUnreachableError (one line) when that scheduler cannot be reached, before anything runs.
    """
    points = expand_grid(variant, params, overrides, workload)
    swept = tuple(points[0].values)
    if name is not None:
        run_name = runner.check_run_name(name)
    else:
        run_name = runner.unique_run_name(Path(out), runner.default_run_name(["-".join([variant, *swept])], prefix="sweep"))
    holder: dict[str, Any] = {}

    def finalize(result: runner.RunResult, staging: Path) -> runner.RunResult:
        reports: dict[str, Any] = {}
        unreadable: dict[str, str] = {}
        for outcome in result.outcomes:
            if outcome.has_report:
                try:
                    reports[outcome.label] = runner.open_staged_report(outcome, staging)
                except ProfcompareError as exc:  # keep the sweep; the row says what went wrong
                    unreadable[outcome.label] = f"report unreadable: {exc}"
        table = sweep_table(points, result.outcomes, reports)
        for label, error in unreadable.items():
            table.loc[table["point"] == label, "error"] = error
        files = {} if pages is None else pages(table, swept, staging, result=result, variant=variant, reports=reports)
        holder["table"] = table
        final_files = {k: result.directory / p.name for k, p in files.items()}
        return runner.replace_result(result, files=final_files)

    with contextlib.ExitStack() as stack:
        if engine is None:
            engine = stack.enter_context(runner.make_engine(jobs, dask))
        result = runner.execute_jobs(
            [p.job for p in points],
            out=out,
            name=run_name,
            backend=backend,
            parallel=jobs,
            force=force,
            progress=progress,
            environ=environ,
            finalize=finalize,
            execution=execution,
            engine=engine,
        )
    return SweepResult(result, swept, holder["table"], dict(result.files))


__all__ = [
    "SWEEP_METRICS",
    "SweepPoint",
    "SweepResult",
    "expand_grid",
    "parse_param",
    "point_label",
    "run_sweep",
    "SweepPages",
    "sweep_table",
]
