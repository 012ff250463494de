"""``run_advise``: a workload's layout space searched on the simulator, into one advise run
directory ``<out>/<name>/`` holding every evaluated point (a normal compile-only run directory
each) and ``advise.json``, ``advise.csv``, ``advise.html`` and the point cache index.

The stages: the space (:mod:`.space`, pruned before anything runs), the search (:mod:`.search`),
the results (:mod:`profcompare.analysis.advise_results`); the verdict's words and the files come
from the caller's :class:`AdvisePages` (the command line's and ``profcompare.advise``'s are built
on the render layer; the advisor never renders). The run is built in a hidden staging directory
and appears only when complete, like every run.
"""

from __future__ import annotations

import contextlib

import importlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from profcompare import runner
from profcompare.advisor.cache import CACHE_INDEX, index_document
from profcompare.analysis.advise_results import AdviseVerdict, Machine, advise_verdict, front, match_layout, point_frame
from profcompare.advisor.search import EXECUTION, Evaluator, Executor, SearchOutcome, search
from profcompare.advisor.space import AdviseSpace, SearchContext, Space, expand_space
from profcompare.base import presenters
from profcompare.errors import WorkloadError

#: report pages written for the front's points (each is a full HTML report, about 2 MB)
DEFAULT_REPORT_PAGES = 5


def find_space(workload_name: str) -> tuple[Any, AdviseSpace]:
    """The workload called ``workload_name`` and the AdviseSpace its module declares (``ADVISE``);
    WorkloadError listing the workloads otherwise."""
    registry = runner.workload_registry()
    workloads = registry.list_workloads()
    names = [w.name for w in workloads]
    for workload in workloads:
        if workload.name == workload_name:
            module = importlib.import_module(workload.run.__module__)
            space = getattr(module, "ADVISE", None)
            if not isinstance(space, AdviseSpace):
                raise WorkloadError(f"workload {workload_name!r} declares no layout space (ADVISE) to search")
            return workload, space
    raise WorkloadError(f"unknown workload {workload_name!r}{registry.did_you_mean(workload_name, names)}; "
                        f"valid workloads: {', '.join(names)}")


@dataclass(frozen=True)
class AdvisePages:
    """How an advise run is put into words and files.

    ``verdict(facts, headline)`` returns the verdict's sentences; ``write(points, facts, verdict,
    meta, directory, report_pages, published)`` writes the run's files into ``directory`` (the
    staging directory, renamed to ``published`` when the run is published) and returns format -> path.
    """

    verdict: Callable[[AdviseVerdict, Sequence[str]], Sequence[str]]
    write: Callable[[pd.DataFrame, AdviseVerdict, str, Mapping[str, Any], Path, int, Path], Mapping[str, Path]]


@dataclass(frozen=True, eq=False)
class AdviseResult:
    """A finished advise run: the space, what the search evaluated, the points and the verdict."""

    name: str
    directory: Path
    workload: str
    space: Space
    outcome: SearchOutcome
    points: pd.DataFrame  # see profcompare.analysis.advise_results.point_frame
    facts: AdviseVerdict
    verdict: str
    files: Mapping[str, Path]
    wall_seconds: float
    replaced: bool = False

    @property
    def front(self) -> pd.DataFrame:
        """The Pareto front of fitting points (samples/s against the fullest tile), fastest first."""
        return front(self.points)

    @property
    def new_points(self) -> int:
        """Points run by this advise run (the others came from the cache)."""
        return self.facts.new

    @property
    def cached_points(self) -> int:
        """Points reused from earlier advise runs in the same output root."""
        return self.facts.cached

    @property
    def space_headline(self) -> tuple[str, ...]:
        """The knobs that name a layout in sentences (the workload's choice), in order."""
        return find_space(self.workload)[1].headline

    def layout(self, **knobs: Any) -> pd.DataFrame:
        """The evaluated points with these knob values (e.g. ``variant="onchip", replicas=4``)."""
        return match_layout(self.points, knobs)

    def _repr_html_(self) -> str:
        """The verdict and the front, for notebooks (drawn by the render layer: see
        :mod:`profcompare.base.presenters`)."""
        return str(presenters.present("AdviseResult._repr_html_", self))

    def __repr__(self) -> str:
        return (f"<AdviseResult {self.name!r} at {self.directory}: {self.facts.evaluated} points "
                f"({self.facts.new} new), {len(self.front)} on the front>")


def run_advise(
    workload_name: str,
    *,
    ipus: int | None = None,
    global_batch: int | None = None,
    set_values: Mapping[str, Sequence[str]] | None = None,
    fixed: Mapping[str, str] | None = None,
    size: str | None = None,
    budget: int | None = None,
    seed: int = 0,
    jobs: int = 1,
    out: str | os.PathLike[str] = "reports",
    name: str | None = None,
    force: bool = False,
    report_pages: int = DEFAULT_REPORT_PAGES,
    executor: Executor | None = None,
    dask: str | None = None,
    engine: runner.Engine | None = None,
    progress: runner.ProgressCallback | None = None,
    on_space: Any = None,
    asked: Sequence[Mapping[str, str]] = (),
    pages: AdvisePages | None = None,
) -> AdviseResult:
    """Search ``workload_name``'s layout space and write the advise run ``<out>/<name>/``.

    ``ipus`` / ``global_batch`` default to the space's (the workload's reference machine and
    batch); ``set_values`` / ``fixed`` / ``size`` shape the space (see
    :func:`~profcompare.advisor.space.expand_space`); ``budget`` and ``seed`` drive the NSGA-II
    search of large spaces; ``jobs`` points run side by side, on ``engine`` when given (the caller
    closes it), else on one made here and closed at the end: ``runner.make_engine(jobs, dask)``, a
    pool of ``jobs`` warm worker processes, or with ``dask`` (``"local:N"``, ``"tcp://host:8786"``)
    a Dask cluster. ``report_pages``: how many front
    points get a full report page (``report.html`` in their directory). ``on_space(space)`` is
    called once the space is known, before anything runs. ``asked``: layouts (knob values, e.g.
    ``{"variant": "offchip-sharded", "replicas": "4"}``) the verdict answers for: the fastest
    fitting layout with those values and whether one is on the front. ``pages`` words the verdict
    and writes ``advise.json``, ``advise.csv``, ``advise.html`` and the report pages (without it:
    no verdict text and no files but the point cache index). Raises WorkloadError for a bad space or
    option and OutputExistsError when the run exists and not ``force``; a failing point never
    raises (its status says what happened).
    """
    started = time.perf_counter()
    workload, declared = find_space(workload_name)
    context = SearchContext(declared.default_ipus if ipus is None else int(ipus),
                            declared.default_global_batch if global_batch is None else int(global_batch))
    space = expand_space(declared, workload, context, set_values=set_values, fixed=fixed, size=size)
    if budget is not None and budget < 1:
        raise WorkloadError(f"bad --budget-points {budget}: expected an integer >= 1")
    runner.check_execution(EXECUTION, "sim")
    out_path = Path(out)
    if name is not None:
        run_name = runner.check_run_name(name)
    else:
        run_name = runner.unique_run_name(out_path, runner.default_run_name([workload.name], prefix="advise"))
    if on_space is not None:
        on_space(space)
    for wanted in asked:
        for knob in wanted:
            if knob not in space.searched:
                raise WorkloadError(f"{knob} is not a searched knob; searched: {', '.join(space.searched)}")
    from profcompare.runner.rundir import open_staging, publish_staging

    staging = open_staging(out_path, run_name, force)
    final = out_path / run_name
    machine = Machine.of(context.ipus)
    try:
        with contextlib.ExitStack() as stack:
            if engine is None and executor is None:
                engine = stack.enter_context(runner.make_engine(jobs, dask))
            evaluator = Evaluator(workload, staging.path, out_path, machine, parallel=jobs, executor=executor,
                                  progress=progress, engine=engine)
            outcome = search(space, evaluator, budget=budget, seed=seed)
        pruned = [(c.knobs, str(c.reason)) for c in space.candidates if c.pruned]
        points = point_frame(space.searched, outcome.evaluated, pruned, machine)
        facts = advise_verdict(points, workload=workload.name, ipus=context.ipus, global_batch=context.global_batch,
                               method=outcome.method, valid_points=len(space.valid), pruned=space.pruned_counts,
                               asked=asked)
        verdict = " ".join(pages.verdict(facts, declared.headline)) if pages is not None else ""
        staging.check()
        runner.write_json_atomic(staging.path / CACHE_INDEX, index_document(evaluator.index_entries()))
        meta = {"name": run_name, "workload": workload.name, "ipus": context.ipus, "global_batch": context.global_batch,
                "global_batch_rule": declared.global_batch_rule, "method": outcome.method, "budget": outcome.budget,
                "seed": outcome.seed, "size": size, "base_config": dict(space.base), "execution": EXECUTION,
                "backend": "sim", "headline": list(declared.headline), "searched": list(space.searched),
                "dimensions": {k: list(v) for k, v in space.dimensions}, "notes": list(declared.notes),
                "streaming_memory_bytes": machine.streaming_memory_bytes}
        files = pages.write(points, facts, verdict, meta, staging.path, report_pages, final) if pages is not None else {}
        replaced = publish_staging(staging, final, force)
    except BaseException:
        staging.discard()
        raise
    final_files = {fmt: final / path.name for fmt, path in files.items()}
    return AdviseResult(run_name, final, workload.name, space, outcome, points, facts, verdict, final_files,
                        time.perf_counter() - started, replaced)


__all__ = ["AdvisePages", "AdviseResult", "DEFAULT_REPORT_PAGES", "find_space",
           "run_advise"]
