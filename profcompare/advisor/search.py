"""How ``profcompare advise`` explores a layout space: every point when the space is small
(:data:`EXHAUSTIVE_LIMIT`), else Optuna's multi-objective NSGA-II sampler within a budget of
points, maximising samples per second and minimising the fullest tile, under the constraint
that the point fits.

Every point runs as a normal compile-only job of the runner (:func:`run_batch`, the one place a
batch is handed to an executor), into its own directory of the advise run, unless the point
cache (:mod:`profcompare.advisor.cache`) holds it from an earlier advise run.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from profcompare import runner
from profcompare.advisor.cache import REUSABLE_STATUSES, find_cached, index_entry, link_point, point_key
from profcompare.analysis.advise_results import POINT_METRICS, Evaluated, Machine, fits
from profcompare.advisor.space import VARIANT, Candidate, Space
from profcompare.errors import ProfcompareError

#: Spaces with at most this many valid points are searched exhaustively.
EXHAUSTIVE_LIMIT = 200
#: Points an NSGA-II search evaluates unless told otherwise (``--budget-points``).
DEFAULT_BUDGET = 100
#: The execution mode of every point: memory and time modelled, no values computed.
EXECUTION = "compile-only"

#: ``executor(jobs, out, name, parallel) -> RunResult``: runs jobs into ``<out>/<name>/<label>/``
Executor = Callable[[Sequence[runner.Job], Path, str, int], runner.RunResult]


def run_batch(jobs: Sequence[runner.Job], out: Path, name: str, parallel: int,
              progress: runner.ProgressCallback | None = None, engine: runner.Engine | None = None) -> runner.RunResult:
    """The default executor: compile-only, on ``engine`` (a warm worker pool or a Dask cluster, see
    :func:`profcompare.runner.make_engine`), else one fresh subprocess per point, ``parallel`` at a time."""
    return runner.execute_jobs(jobs, out=out, name=name, backend="sim", parallel=parallel, progress=progress,
                               execution=EXECUTION, engine=engine)


_UNSAFE = re.compile(r"[^A-Za-z0-9_.,=+-]")


def point_label(knobs: Mapping[str, Any], key: str) -> str:
    """The directory name of a point: ``offchip-sharded,replicas=4,micro_batch=8,...``; characters
    outside ``[A-Za-z0-9_.,=+-]`` become ``_`` and a short hash of the key is appended then (and
    when the name is too long), so two points never share a directory."""
    text = ",".join([str(knobs[VARIANT]), *(f"{k}={v}" for k, v in knobs.items() if k != VARIANT)])
    safe = _UNSAFE.sub("_", text).lstrip(".") or "point"
    if safe != text or len(safe.encode()) > 150:
        safe = f"{safe[:150]}-{key[:10]}"
    return safe


def point_metrics(directory: Path) -> dict[str, float]:
    """:data:`POINT_METRICS` of the report in ``directory`` (NaN for what it cannot say): read
    from the report itself, for a point whose ``run.json`` keeps no summary."""
    from profcompare.readers import open_report

    report = open_report(directory, code=False)
    summary = report.summary()
    values = {m: float(summary[m]) for m in POINT_METRICS if m in summary.index}
    values["bytes_per_tile"] = float(report.meta.target.bytes_per_tile)
    values["num_replicas"] = float(report.meta.target.num_replicas)
    return {m: values.get(m, math.nan) for m in POINT_METRICS}


def summary_metrics(summary: Any) -> dict[str, float] | None:
    """:data:`POINT_METRICS` from the ``summary`` a point's ``run.json`` keeps (the figures its
    process computed from the report it had just written, null for NaN); None when there is no
    summary or it lacks a metric or holds a value that is not a number (the report is read then)."""
    if not isinstance(summary, Mapping):
        return None
    metrics: dict[str, float] = {}
    for name in POINT_METRICS:
        if name not in summary:
            return None
        value = summary[name]
        if value is None:
            metrics[name] = math.nan
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            metrics[name] = float(value)
        else:
            return None
    return metrics


@dataclass
class Evaluator:
    """Runs points into the advise run's staging directory, reusing cached ones; remembers every
    point it evaluated (by key) in evaluation order."""

    workload: Any
    staging: Path
    out: Path
    machine: Machine
    parallel: int = 1
    executor: Executor | None = None
    progress: runner.ProgressCallback | None = None
    use_cache: bool = True
    #: where the default executor runs points (None: a fresh subprocess per point)
    engine: runner.Engine | None = None

    def __post_init__(self) -> None:
        from profcompare.backend import addons_generation
        from profcompare._version import __version__

        self._identity = {"execution": EXECUTION, "backend": "sim", "addons_generation": addons_generation.current(),
                          "version": __version__}
        self.done: dict[str, Evaluated] = {}
        self.batches = 0

    def key(self, candidate: Candidate) -> str:
        """The cache key of a valid point."""
        assert candidate.config is not None
        return point_key(self.workload.name, candidate.variant, candidate.config, **self._identity)

    def evaluate(self, candidates: Sequence[Candidate]) -> list[Evaluated]:
        """Evaluate ``candidates`` (valid points): those already done are returned as they are,
        cached ones are linked in, the rest run as one batch. Returns one Evaluated each."""
        keys = [self.key(c) for c in candidates]
        todo = {k: c for k, c in zip(keys, candidates) if k not in self.done}
        cached = find_cached(self.out, todo) if self.use_cache else {}
        jobs = []
        for key, candidate in todo.items():
            label = point_label(candidate.knobs, key)
            if key in cached:
                hit = cached[key]
                link_point(hit.directory, self.staging / label)
                if hit.metrics is not None:  # the figures the index kept: the report is not read again
                    self.done[key] = Evaluated(candidate.knobs, label, hit.status, None, dict(hit.metrics), True)
                else:
                    self.done[key] = self._read(candidate, label, cached=True)
            else:
                jobs.append((key, runner.Job(label, self.workload.name, runner.workload_ref(self.workload),
                                             candidate.variant, dict(candidate.config or {}))))
        if jobs:
            self.batches += 1
            name = f"batch-{self.batches:03d}"
            executor = self.executor or (lambda j, o, n, p: run_batch(j, o, n, p, self.progress, self.engine))
            result = executor([job for _, job in jobs], self.staging, name, self.parallel)
            for _, job in jobs:
                os.replace(result.directory / job.label, self.staging / job.label)
            shutil.rmtree(result.directory)
            for key, job in jobs:
                self.done[key] = self._read(todo[key], job.label, cached=False)
        return [self.done[k] for k in keys]

    def index_entries(self) -> dict[str, dict[str, Any]]:
        """The point cache index of every point evaluated (key -> entry), for ``advise-cache.json``."""
        return {key: index_entry(point.label, point.status, point.metrics) for key, point in self.done.items()
                if point.status in REUSABLE_STATUSES}

    def _read(self, candidate: Candidate, label: str, *, cached: bool) -> Evaluated:
        directory = self.staging / label
        info = runner.read_run_json(directory) or {}
        status = str(info.get("status", "failed"))
        error = info.get("error")
        metrics = {m: math.nan for m in POINT_METRICS}
        if status in ("ok", "oom") and info.get("report_files"):
            try:
                # the figures the point's process computed from its report; else the report is read
                metrics = summary_metrics(info.get("summary")) or point_metrics(directory)
            except ProfcompareError as exc:  # an unreadable report is the point's failure, not the search's
                status, error = "failed", f"report unreadable: {exc}"
        elif status not in ("ok", "oom"):
            status = "failed"
        return Evaluated(candidate.knobs, label, status, None if error is None else " ".join(str(error).split()),
                         metrics, cached)


@dataclass(frozen=True)
class SearchOutcome:
    """What a search evaluated, in order, and how."""

    method: str  # exhaustive | nsga2
    evaluated: tuple[Evaluated, ...]
    batches: int
    budget: int | None
    seed: int | None


def exhaustive(space: Space, evaluator: Evaluator) -> SearchOutcome:
    """Evaluate every valid point of ``space`` (one batch)."""
    evaluated = evaluator.evaluate(space.valid)
    return SearchOutcome("exhaustive", tuple(evaluated), evaluator.batches, None, None)


def _objectives(point: Evaluated) -> tuple[float, float] | None:
    """(samples/s, fullest tile bytes) for the sampler; None without tile figures (a failed
    point). A point that ran out of memory has no execution profile: 0 samples/s."""
    rate, memory = point.metrics.get("samples_per_second", math.nan), point.metrics.get("max_tile_bytes", math.nan)
    if math.isnan(memory):
        return None
    return (0.0 if math.isnan(rate) else rate), memory


def _violation(point: Evaluated, machine: Machine) -> float:
    """How far a point is from fitting (0 when it fits): the fullest tile's excess over the tile
    budget as a fraction of it, at least a small constant, so the sampler prefers nearer misses."""
    if fits(point.status, point.metrics, machine):
        return 0.0
    budget = point.metrics.get("bytes_per_tile", math.nan)
    memory = point.metrics.get("max_tile_bytes", math.nan)
    excess = (memory - budget) / budget if budget and not math.isnan(budget) and not math.isnan(memory) else 0.0
    return max(excess, 0.01)


def nsga2(space: Space, evaluator: Evaluator, *, budget: int, seed: int, batch_size: int) -> SearchOutcome:
    """Search ``space`` with Optuna's NSGA-II sampler: at most ``budget`` distinct points, asked for
    and run ``batch_size`` at a time, seeded by ``seed`` (the same inputs give the same points).

    Objectives: samples per second (maximised) and the fullest tile's bytes (minimised); points
    that do not fit break the sampler's constraint. A sampled combination that was pruned is told
    as pruned and costs no budget; one already evaluated is told its figures again.
    """
    import optuna
    from optuna.distributions import BaseDistribution, CategoricalDistribution
    from optuna.trial import TrialState

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    by_coordinates = {_coordinates(c.knobs, space): c for c in space.candidates}
    single = _single_values(space)
    distributions: dict[str, BaseDistribution] = {
        name: CategoricalDistribution(list(values)) for name, values in space.dimensions if len(values) > 1}
    fixed = {name: values[0] for name, values in space.dimensions if len(values) == 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.NSGAIISampler(seed=seed, population_size=max(2, batch_size))
    study = optuna.create_study(directions=["maximize", "minimize"], sampler=sampler)
    order: list[Evaluated] = []
    seen: set[str] = set()
    attempts, limit = 0, 50 * budget
    valid_count = len(space.valid)
    while len(seen) < min(budget, valid_count) and attempts < limit:
        pending: list[tuple[Any, Candidate]] = []
        fresh: set[str] = set()
        while len(seen) + len(fresh) < min(budget, valid_count) and len(pending) < batch_size and attempts < limit:
            attempts += 1
            trial = study.ask(distributions)
            sampled = {**fixed, **trial.params}
            variant = sampled.get(VARIANT)
            sampled.update({name: value for (v, name), value in single.items() if v == variant})
            candidate = by_coordinates.get(_coordinates(sampled, space))
            if candidate is None or candidate.pruned:
                study.tell(trial, state=TrialState.PRUNED)
                continue
            pending.append((trial, candidate))
            key = evaluator.key(candidate)
            if key not in seen:
                fresh.add(key)
        results = evaluator.evaluate([c for _, c in pending])
        for (trial, candidate), point in zip(pending, results):
            key = evaluator.key(candidate)
            if key not in seen:
                seen.add(key)
                order.append(point)
            values = _objectives(point)
            if values is None:
                study.tell(trial, state=TrialState.FAIL)
                continue
            trial.set_constraint("fits", _violation(point, evaluator.machine))  # feasible when <= 0 (Optuna's rule)
            study.tell(trial, list(values))
    return SearchOutcome("nsga2", tuple(order), evaluator.batches, budget, seed)


def _coordinates(knobs: Mapping[str, Any], space: Space) -> tuple[tuple[str, str], ...]:
    """A point's position in the space: its value of every dimension, as text."""
    return tuple((name, str(knobs.get(name))) for name, _ in space.dimensions)


def _single_values(space: Space) -> dict[tuple[Any, str], Any]:
    """(variant, knob) -> value for the knobs that have one value for every point of a variant
    (knobs that matter only for other variants): a sampled value of theirs means that value."""
    seen: dict[tuple[Any, str], set[str]] = {}
    first: dict[tuple[Any, str], Any] = {}
    for candidate in space.candidates:
        for name, _ in space.dimensions:
            key = (candidate.knobs[VARIANT], name)
            seen.setdefault(key, set()).add(str(candidate.knobs.get(name)))
            first.setdefault(key, candidate.knobs.get(name))
    return {key: first[key] for key, values in seen.items() if len(values) == 1 and key[1] != VARIANT}


def search(space: Space, evaluator: Evaluator, *, budget: int | None = None, seed: int = 0,
           batch_size: int | None = None) -> SearchOutcome:
    """Exhaustive when the space has at most :data:`EXHAUSTIVE_LIMIT` valid points (or no more than
    the budget), else :func:`nsga2` with ``budget`` (default :data:`DEFAULT_BUDGET`) points."""
    budget = DEFAULT_BUDGET if budget is None else budget
    if len(space.valid) <= EXHAUSTIVE_LIMIT or len(space.valid) <= budget:
        return exhaustive(space, evaluator)
    size = batch_size or max(8, 4 * evaluator.parallel)
    return nsga2(space, evaluator, budget=budget, seed=seed, batch_size=min(size, budget))


__all__ = ["DEFAULT_BUDGET", "EXECUTION", "EXHAUSTIVE_LIMIT", "Evaluator", "Executor", "SearchOutcome", "exhaustive",
           "nsga2", "point_label", "point_metrics", "run_batch", "search", "summary_metrics"]
