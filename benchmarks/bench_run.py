"""End-to-end cost of the headline commands, each from a cold start (a new process every time).

Usage::

    python benchmarks/bench_run.py [--repeat 3] [--jobs 1] [--skip-sweep] [--check] [--compare-spawn]

Measures the CPU time (user + system of the command and every process it started:
``resource.getrusage(RUSAGE_CHILDREN)`` before and after) and the wall time of

* ``profcompare run onchip offchip-sharded`` (default knobs, simulator backend): two variants
  built, compiled, trained and profiled in subprocesses, compared, four outputs written;
  target: CPU at most 4x that of ``python -c "import numpy, pandas, matplotlib, bokeh"``,
  measured the same way in the same benchmark run, once before each round of runs (a
  machine-independent yardstick: what importing our libraries costs on this machine, under the
  load the runs see), and wall < 10 s;
* ``profcompare sweep offchip-sharded --param sharded_threshold=1e10,262145,1024,512``: four
  points, table and page written; target wall < 30 s.

Each command runs as ``python -m profcompare ...`` in a fresh process, writing into a temporary
directory, with the bytecode cache allowed (``PYTHONDONTWRITEBYTECODE`` removed, as for a user)
and filled, with the page templates' compiled code, by one warm-up run of each command that is
not counted. The median of ``--repeat`` runs is printed, with the per-variant timings the
children recorded in run.json (build, compile, run, total) for the last run. ``--check`` makes the exit code 1 when a median misses its target.

Last measured (``--repeat 5 --skip-sweep``, 2 cores shared with other work): machine quiet,
``run`` 1.70 and 1.67 s CPU with the variants forked against a bare import of 0.50 and 0.48 s,
3.4x both times; with two busy loops beside it 1.71 and 1.69 s against 0.46 s, 3.7x both times
(the bare import's own idle BLAS threads spin less on a busy machine). The same day, before the
command line loaded BLAS with the variants' one thread and skipped the collections of its
imports and exit: 2.04 s against 0.47 s, 4.3x. Wall 1.7 s quiet. ``sweep`` (``--repeat 5``,
without ``--skip-sweep``, load about 1.6): 3.3 s wall. The bare import moves by a tenth from
run to run on a shared machine: compare several runs' ratios. The README's benchmark table says
where the CPU goes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_RUN_SECONDS = 10.0
TARGET_SWEEP_SECONDS = 30.0
#: the run's CPU seconds over the bare import's
TARGET_RUN_CPU_RATIO = 4.0
IMPORT_CODE = "import numpy, pandas, matplotlib, bokeh"
#: how variants start (profcompare.runner.forked): "fork" (the default on Linux) or "spawn"
VARIANT_START_VARIABLE = "PROFCOMPARE_VARIANT_START"
RUN_ARGS = ["run", "onchip", "offchip-sharded"]
SWEEP_ARGS = ["sweep", "offchip-sharded", "--param", "sharded_threshold=1e10,262145,1024,512"]


def _environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(extra or {})
    env.pop("POPLAR_ENGINE_OPTIONS", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's Python keeps its bytecode cache
    # time this checkout, whatever is installed
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _measure(command: list[str], extra_env: dict[str, str] | None = None) -> tuple[float, float]:
    """Run ``command``; return (wall seconds, CPU seconds of it and every process it waited for)."""
    cpu = _children_cpu()
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=_environment(extra_env), check=False)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        tail = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"`{' '.join(command[2:])}` exited with {result.returncode}: {tail}")
    return seconds, _children_cpu() - cpu


def _time_command(args: list[str], out: Path, name: str, start: str = "fork") -> tuple[float, float]:
    command = [sys.executable, "-m", "profcompare", *args, "--backend", "sim", "--out", str(out), "--name", name, "-q"]
    return _measure(command, {VARIANT_START_VARIABLE: start})


def _fmt(timings: dict[str, float | None], key: str) -> str:
    value = timings.get(key)
    return "  n/a" if value is None else f"{value:5.2f}"


def _child_timings(run_dir: Path) -> list[str]:
    lines = []
    for info_path in sorted(run_dir.glob("*/run.json")):
        info = json.loads(info_path.read_text())
        t = info.get("timings") or {}
        lines.append(
            f"    {info_path.parent.name:<28} {info.get('status', '?'):<6} build {_fmt(t, 'build_s')}"
            f"  compile {_fmt(t, 'compile_s')}  run {_fmt(t, 'run_s')}  total {_fmt(t, 'total_s')} s"
        )
    return lines


def _stats(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s, min {min(values):.2f} s, max {max(values):.2f} s"


def _bench(label: str, args: list[str], repeat: int, target: float, out: Path,
           yardstick: bool = False, starts: tuple[str, ...] = ("fork",)) -> bool:
    """Time ``profcompare ARGS`` ``repeat`` times per variant start method (alternating them run by
    run, so that both see the same load); print medians; True when the first meets its targets.
    With ``yardstick`` the bare import is timed before each round of runs too (interleaved: a
    shared machine's load moves both alike) and the CPU is compared with its median."""
    import_command = [sys.executable, "-c", IMPORT_CODE]
    if yardstick:
        _measure(import_command)  # warm-up, as for the commands
    for start in starts:
        _time_command(args, out, f"{label}-{start}-warm-up", start)  # fills the bytecode cache; not counted
    walls: dict[str, list[float]] = {s: [] for s in starts}
    cpus: dict[str, list[float]] = {s: [] for s in starts}
    imports: list[float] = []
    for i in range(repeat):
        if yardstick:
            imports.append(_measure(import_command)[1])
        for start in starts:
            wall, cpu = _time_command(args, out, f"{label}-{start}-{i}", start)
            walls[start].append(wall)
            cpus[start].append(cpu)
    import_cpu = statistics.median(imports) if yardstick else None
    if yardstick:
        print(f"bare import: `python -c \"{IMPORT_CODE}\"` (timed before each round of runs)")
        print(f"  cpu  (user + system, {repeat} runs): {_stats(imports)}")
    print(f"{label}: `profcompare {' '.join(args)}`")
    ok = True
    for n, start in enumerate(starts):
        median = statistics.median(walls[start])
        print(f"  variants started by {start}:")
        print(f"  cpu  (user + system, child processes included, {repeat} runs): {_stats(cpus[start])}")
        if import_cpu is not None:
            ratio = statistics.median(cpus[start]) / import_cpu
            ratio_ok = ratio <= TARGET_RUN_CPU_RATIO
            print(f"  cpu / bare import: {ratio:.1f}x  -- target <= {TARGET_RUN_CPU_RATIO:.0f}x: "
                  f"{'ok' if ratio_ok else 'MISSED'}")
            ok = ok and (ratio_ok or n > 0)
        print(f"  wall (cold start, {repeat} runs): {_stats(walls[start])}  -- target < {target:.0f} s: "
              f"{'ok' if median < target else 'MISSED'}")
        ok = ok and (median < target or n > 0)
        print("  per job (last run, from run.json):")
        for line in _child_timings(out / f"{label}-{start}-{repeat - 1}"):
            print(line)
    if len(starts) > 1:
        first, other = starts[0], starts[1]
        print(f"  cpu {first} / {other}: {statistics.median(cpus[first]) / statistics.median(cpus[other]):.2f}")
    return ok


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit code (1 with --check when a target is missed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the median is shown")
    parser.add_argument("--jobs", type=int, default=None, help="pass --jobs N to both commands")
    parser.add_argument("--skip-sweep", action="store_true", help="time only `run`")
    parser.add_argument("--check", action="store_true", help="exit 1 when a median misses its target")
    parser.add_argument("--compare-spawn", action="store_true",
                        help="also time `run` with every variant a fresh subprocess (alternating run by run)")
    args = parser.parse_args(argv)
    extra = ["--jobs", str(args.jobs)] if args.jobs else []
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU(s)")
    with tempfile.TemporaryDirectory(prefix="pc-bench-run-") as tmp:
        out = Path(tmp)
        starts = ("fork", "spawn") if args.compare_spawn else ("fork",)
        ok = _bench("run", RUN_ARGS + extra, args.repeat, TARGET_RUN_SECONDS, out, True, starts)
        if not args.skip_sweep:
            ok = _bench("sweep", SWEEP_ARGS + extra, args.repeat, TARGET_SWEEP_SECONDS, out) and ok
    return 1 if (args.check and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
