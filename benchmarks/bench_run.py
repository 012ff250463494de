"""End-to-end speed of the headline commands, each from a cold start (a new process every time).

Usage::

    python benchmarks/bench_run.py [--repeat 3] [--jobs 1] [--skip-sweep] [--check]

Measures the wall time of

* ``profcompare run onchip offchip-sharded`` (default knobs, simulator backend): two variants
  built, compiled, trained and profiled in subprocesses, compared, four outputs written;
  target < 10 s;
* ``profcompare sweep offchip-sharded --param sharded_threshold=1e10,262145,1024,512``: four
  points, table and page written; target < 30 s.

Each command runs as ``python -m profcompare ...`` in a fresh process, writing into a temporary
directory. The median of ``--repeat`` runs is printed, with the per-variant timings the children
recorded in run.json (build, compile, run, total) for the last run. ``--check`` makes the exit
code 1 when a median misses its target.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_RUN_SECONDS = 10.0
TARGET_SWEEP_SECONDS = 30.0
RUN_ARGS = ["run", "onchip", "offchip-sharded"]
SWEEP_ARGS = ["sweep", "offchip-sharded", "--param", "sharded_threshold=1e10,262145,1024,512"]


def _time_command(args: list[str], out: Path, name: str) -> float:
    env = dict(os.environ)
    env.pop("POPLAR_ENGINE_OPTIONS", None)
    # time this checkout, whatever is installed
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", "profcompare", *args, "--backend", "sim", "--out", str(out), "--name", name, "-q"]
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        tail = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"`profcompare {' '.join(args)}` exited with {result.returncode}: {tail}")
    return seconds


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


def _bench(label: str, args: list[str], repeat: int, target: float, out: Path) -> bool:
    times = []
    for i in range(repeat):
        times.append(_time_command(args, out, f"{label}-{i}"))
    median = statistics.median(times)
    verdict = "ok" if median < target else "MISSED"
    print(f"{label}: `profcompare {' '.join(args)}`")
    print(f"  wall (cold start, {repeat} runs): median {median:.2f} s, min {min(times):.2f} s, max {max(times):.2f} s"
          f"  -- target < {target:.0f} s: {verdict}")
    print("  per job (last run, from run.json):")
    for line in _child_timings(out / f"{label}-{repeat - 1}"):
        print(line)
    return median < target


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns the exit code (1 with --check when a target is missed)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per command; the median is shown")
    parser.add_argument("--jobs", type=int, default=None, help="pass --jobs N to both commands")
    parser.add_argument("--skip-sweep", action="store_true", help="time only `run`")
    parser.add_argument("--check", action="store_true", help="exit 1 when a median misses its target")
    args = parser.parse_args(argv)
    extra = ["--jobs", str(args.jobs)] if args.jobs else []
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPU(s)")
    with tempfile.TemporaryDirectory(prefix="pc-bench-run-") as tmp:
        out = Path(tmp)
        ok = _bench("run", RUN_ARGS + extra, args.repeat, TARGET_RUN_SECONDS, out)
        if not args.skip_sweep:
            ok = _bench("sweep", SWEEP_ARGS + extra, args.repeat, TARGET_SWEEP_SECONDS, out) and ok
    return 1 if (args.check and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
