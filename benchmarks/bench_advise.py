"""How fast points of a workload's layout space are evaluated: the execution engines compared.

Usage::

    python benchmarks/bench_advise.py [--points 24] [--repeat 3] [--jobs 2] [--skip-dask]

A grid of ``--points`` tiny compile-only MNIST points (variant offchip-sharded, hidden 16, 20,
24, ... x sharded_threshold 1e10 and 512; one layer, one step, one replica, one micro-batch per
step) -- the kind of point ``profcompare advise`` evaluates by the hundred -- is run through
``runner.execute_jobs`` by each mode:

* ``fresh``: one fresh subprocess per point (``python -m profcompare.runner.process.variant_main``), ``--jobs``
  at a time: what ``run`` does, and what ``sweep`` did before the engines;
* ``pool``: ``runner.make_engine(jobs)``, a local pool of ``--jobs`` warm worker processes;
* ``dask``: ``runner.make_engine(jobs, "local:JOBS")``, a Dask LocalCluster of ``--jobs``
  single-threaded worker processes.

Each mode prints the median wall time of ``--repeat`` runs and points per second, twice: for
the runs alone (the engine started once beforehand and reused, as a long search does), and with
the engine's start and close counted (what one command pays). Then the ratios, and Dask's
overhead per point over the pool's: (median Dask wall - median pool wall) / points. One unmeasured
warm-up run per mode fills caches first (bytecode, the pool's and the cluster's workers).

A mode is a :class:`Mode` (its name, how to make its engine, its description).

``--search`` also times the command itself: ``profcompare advise mnist -q --jobs JOBS`` (the
tutorial machine: 4 IPUs, global batch 256; every layout compile-only) in a fresh process
writing into a temporary directory, then the same search under another name (every point from
the cache), printing wall and CPU time (user + system of the command and every process it
started) and the points run. Target: the first search < 60 s wall on 2 cores with ``--jobs 2``.

``--phases`` runs the same search in this process and splits it: the search (the points on the
pool; the pool's workers' CPU counted when they end, with the engine) and the files written after
it (advise.json/.csv/.html and the front points' report pages), each with its wall time, this
process's CPU and its child processes' CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # time this checkout, whatever is installed

from profcompare import runner  # noqa: E402
from profcompare.runner import sweep  # noqa: E402

#: the knobs every point shares: the smallest MNIST that still trains (compile-only)
FIXED = {"layers": "1", "steps": "1", "replicas": "1", "grad_accum": "1"}
THRESHOLDS = ("1e10", "512")


def grid(points: int) -> list[runner.Job]:
    """``points`` tiny MNIST jobs (rounded up to an even number: two thresholds per width)."""
    widths = [str(16 + 4 * i) for i in range((points + 1) // 2)]
    return [p.job for p in sweep.expand_grid("offchip-sharded", [("hidden", widths), ("sharded_threshold", THRESHOLDS)],
                                             FIXED)]


@dataclass(frozen=True)
class Mode:
    """One way of running the points: ``engine(jobs)`` gives the engine (None = a fresh subprocess
    per point) as a context manager."""

    name: str
    description: str
    engine: Callable[[int], Any]


@contextlib.contextmanager
def _no_engine(jobs: int) -> Iterator[None]:
    yield None


MODES = (
    Mode("fresh", "a fresh subprocess per point", _no_engine),
    Mode("pool", "local pool of warm worker processes", lambda jobs: runner.make_engine(jobs)),
    Mode("dask", "Dask LocalCluster", lambda jobs: runner.make_engine(jobs, f"local:{jobs}")),
)


def _run(jobs: list[runner.Job], engine: Any, parallel: int, out: Path, name: str) -> float:
    t0 = time.perf_counter()
    result = runner.execute_jobs(jobs, out=out, name=name, backend="sim", execution="compile-only", parallel=parallel,
                                 engine=engine)
    wall = time.perf_counter() - t0
    bad = [o.label for o in result.outcomes if o.status != "ok"]
    if bad:
        raise SystemExit(f"bench_advise: points failed: {bad}")
    return wall


def measure(mode: Mode, jobs: list[runner.Job], parallel: int, repeat: int, out: Path) -> dict[str, float]:
    """Median wall seconds of the runs alone, and of start + run + close."""
    runs, totals = [], []
    with mode.engine(parallel) as engine:
        _run(jobs, engine, parallel, out, f"{mode.name}-warmup")
        for i in range(repeat):
            runs.append(_run(jobs, engine, parallel, out, f"{mode.name}-{i}"))
    for i in range(repeat):
        t0 = time.perf_counter()
        with mode.engine(parallel) as engine:
            _run(jobs, engine, parallel, out, f"{mode.name}-cold-{i}")
        totals.append(time.perf_counter() - t0)
    return {"run": statistics.median(runs), "total": statistics.median(totals)}


TARGET_SEARCH_SECONDS = 60.0


def _timed_command(args: list[str], cwd: str) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, children included) of ``python -m profcompare ARGS``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "profcompare", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def time_search(jobs: int, extra: list[str]) -> None:
    """Time ``advise mnist`` from a cold start, then again with every point cached."""
    with tempfile.TemporaryDirectory(prefix="bench-advise-search-") as out:
        for name in ("first", "again"):
            wall, cpu = _timed_command(["advise", "mnist", "-q", "--jobs", str(jobs), "--out", out, "--name", name,
                                        *extra], out)
            facts = json.loads((Path(out) / name / "advise.json").read_text())["facts"]
            target = f" (target < {TARGET_SEARCH_SECONDS:.0f} s wall)" if name == "first" else ""
            print(f"advise mnist ({name}): {facts['evaluated']} points, {facts['new']} run, {facts['cached']} reused: "
                  f"{wall:.1f} s wall, {cpu:.1f} s CPU{target}")


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its ended child processes."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def time_phases(jobs: int, set_values: dict[str, list[str]]) -> None:
    """``advise mnist`` in this process, split into the search and the files written after it."""
    import dataclasses

    from profcompare.advisor import advisor
    from profcompare.commands.pages import advise_pages

    marks: list[tuple[str, float, tuple[float, float]]] = []
    search = advisor.search

    def marked(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            marks.append((name, time.perf_counter(), _cpu()))
            return function(*args, **kwargs)
        return call

    pages = advise_pages()
    advisor.search = marked("search", search)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-advise-phases-") as out:
            advisor.run_advise("mnist", jobs=jobs, out=out, name="phases", set_values=set_values or None,
                               pages=dataclasses.replace(pages, write=marked("files", pages.write)))
            marks.append(("end", time.perf_counter(), _cpu()))
    finally:
        advisor.search = search
    for (name, start, (own0, kids0)), (_, end, (own1, kids1)) in zip(marks, marks[1:]):
        print(f"  {name:<7} {end - start:6.1f} s wall, this process {own1 - own0:5.1f} s CPU, "
              f"its child processes {kids1 - kids0:5.1f} s CPU")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=24)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--skip-dask", action="store_true")
    parser.add_argument("--search", action="store_true", help="also time `advise mnist` itself (cold, then cached)")
    parser.add_argument("--search-only", action="store_true", help="time only `advise mnist`")
    parser.add_argument("--phases", action="store_true",
                        help="time `advise mnist` split into the search and the files written after it")
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=V1,V2",
                        help="passed to advise as --set (with --search or --phases)")
    args = parser.parse_args(argv)
    if args.phases:
        values = {knob: value.split(",") for knob, _, value in (item.partition("=") for item in args.set)}
        print(f"advise mnist --jobs {args.jobs}, by phase:")
        time_phases(args.jobs, values)
        print(f"load average: {os.getloadavg()[0]:.1f}")
        return 0
    if args.search or args.search_only:
        time_search(args.jobs, [arg for value in args.set for arg in ("--set", value)])
        print(f"load average: {os.getloadavg()[0]:.1f}")
        if args.search_only:
            return 0
    jobs = grid(args.points)
    n = len(jobs)
    print(f"{n} tiny compile-only MNIST points (offchip-sharded), --jobs {args.jobs}, median of {args.repeat}")
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-advise-") as tmp:
        for mode in MODES:
            if mode.name == "dask" and args.skip_dask:
                continue
            results[mode.name] = figures = measure(mode, jobs, args.jobs, args.repeat, Path(tmp))
            print(f"  {mode.name:<6} {mode.description:<38} runs alone {figures['run']:6.2f} s "
                  f"({n / figures['run']:6.1f} points/s); with start-up {figures['total']:6.2f} s "
                  f"({n / figures['total']:6.1f} points/s)")
    fresh = results["fresh"]
    for name in ("pool", "dask"):
        if name in results:
            print(f"  {name} vs fresh: {fresh['run'] / results[name]['run']:.1f}x the points/s (runs alone), "
                  f"{fresh['total'] / results[name]['total']:.1f}x with start-up")
    if "dask" in results:
        pool, dask = results["pool"], results["dask"]
        print(f"  Dask overhead over the pool: {1000 * (dask['run'] - pool['run']) / n:+.0f} ms per point (runs alone), "
              f"{1000 * (dask['total'] - pool['total']) / n:+.0f} ms per point with start-up "
              f"(Dask/pool wall {dask['run'] / pool['run']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
