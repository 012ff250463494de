"""Cost of ``profcompare advise mnist`` (the tutorial machine: 4 IPUs, global batch 256; 96
layouts, all compile-only), from a cold start, and of the same search again (every point from
the cache).

Usage::

    python benchmarks/bench_advise.py [--jobs 2] [--set KNOB=V1,V2 ...]

Runs ``python -m profcompare advise mnist -q --jobs N`` in a fresh process writing into a
temporary directory, then the same command under another name (every point reused), and prints
the wall time and the CPU time (user + system of the command and every process it started) of
each, with the number of points run. Target: the first search < 60 s wall on 2 cores with
``--jobs 2``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 60.0


def _timed(args: list[str], cwd: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "profcompare", *args], cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "PYTHONPATH": str(ROOT)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--set", action="append", default=[], metavar="KNOB=V1,V2")
    options = parser.parse_args()
    extra = [arg for value in options.set for arg in ("--set", value)]
    with tempfile.TemporaryDirectory(prefix="bench-advise-") as out:
        for name in ("first", "again"):
            wall, cpu = _timed(["advise", "mnist", "-q", "--jobs", str(options.jobs), "--out", out, "--name", name,
                                *extra], out)
            document = json.loads((Path(out) / name / "advise.json").read_text())
            facts = document["facts"]
            print(f"advise mnist ({name}): {facts['evaluated']} points, {facts['new']} run, {facts['cached']} reused: "
                  f"{wall:.1f} s wall, {cpu:.1f} s CPU" + (f" (target < {TARGET_SECONDS:.0f} s wall)"
                                                           if name == "first" else ""))
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
