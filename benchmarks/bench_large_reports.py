"""Large reports: what reading, showing and comparing them costs, against the floor of reading
their bytes.

Usage::

    python benchmarks/bench_large_reports.py                      # the GPT-J-size pair
    python benchmarks/bench_large_reports.py --size gptj --size t5
    python benchmarks/bench_large_reports.py --report A.sqlite --report B.sqlite   # any reports
    python benchmarks/bench_large_reports.py --size tiny --repeat 1                # a quick look

Reports come from two places:

* ``--size NAME`` builds a pair with the GPT workload on the simulator, compile-only
  (``profcompare run --workload gpt phased-rts phased-rts-recompute --compile-only ...``):
  ``gptj`` is GPT-J 6B at ``gptj_6B_1024_pod16`` size (28 layers, hidden 4096, 16 heads,
  sequence 1024, vocabulary 50400, TP 16, gradient accumulation 16, 128 I/O tiles); ``t5`` is a
  decoder stack the size of T5 XXL's 24 + 24 layers (48 layers, hidden 4096, 64 heads, sequence
  512, vocabulary 32128, TP 16); ``tiny`` is a two-layer model for checking this script. The
  build is measured too (the ``profile`` row).
* ``--report PATH`` (repeatable) takes report files as they are, e.g. an application's
  ``profile.sqlite`` from ``profcompare profile --compile-only``; two are compared with each
  other, one with itself.

Per command -- ``open + summary`` (``show --format csv --table summary``), ``show``, ``show --format json``
(with and without ``--top 1``), ``variables --top 20``, ``compare`` and ``compare --format html`` and
``json`` -- it prints the median wall
and CPU seconds and the peak resident memory of ``--repeat`` runs, each in a fresh process, and
the ratio of the wall time to a raw SQLite scan of every table of the file(s) (``SELECT *`` and
``fetchall``, the floor any reader of those rows pays). The file sizes are printed with them.

Peak memory is the child's own high-water mark (``VmHWM`` of ``/proc/self/status``, read as it
exits), not ``ru_maxrss`` of the children, which keeps the largest child's figure across runs.
For the ``profile`` row that is the ``run`` command's own process: the variants' processes it
starts are in its CPU seconds but not in its peak, so that row also prints the variants' peak,
the high-water mark of the largest variant process (``ru_maxrss`` of the processes the command
waited for, read as it exits: a variant's own compile, trace and report write).
``benchmarks/bench_llm.py`` measures one variant in a process of its own.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: GPT workload options per size (the ``run`` command's options)
SIZES: dict[str, list[str]] = {
    "tiny": ["--layers", "2", "--hidden", "256", "--heads", "4", "--seq", "128", "--vocab", "1024",
             "--tp", "2", "--dp", "1", "--micro-batch", "1", "--grad-accum", "2"],
    "gptj": ["--layers", "28", "--hidden", "4096", "--heads", "16", "--seq", "1024", "--vocab", "50400",
             "--tp", "16", "--dp", "1", "--micro-batch", "1", "--grad-accum", "16", "--io-tiles", "128"],
    "t5": ["--layers", "48", "--hidden", "4096", "--heads", "64", "--seq", "512", "--vocab", "32128",
           "--tp", "16", "--dp", "1", "--micro-batch", "1", "--grad-accum", "16", "--io-tiles", "128"],
}
VARIANTS = ("phased-rts", "phased-rts-recompute")

#: run in the measured child: the command line, then as JSON on the descriptor its first argument
#: names its own CPU seconds and peak memory ("cpu", "peak"; "profile": user, system, peak) and
#: those of the processes it waited for ("children_peak"; "program": user, system, peak)
CHILD = r"""
import json, os, resource, sys
def _report():
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)  # ru_maxrss in KiB on Linux
    hwm = 0
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                hwm = int(line.split()[1]) * 1024
    with os.fdopen(int(sys.argv[1]), "w") as out:
        json.dump({"cpu": own.ru_utime + own.ru_stime, "peak": hwm, "children_peak": children.ru_maxrss * 1024,
                   "profile": {"user": own.ru_utime, "system": own.ru_stime, "peak": hwm},
                   "program": {"user": children.ru_utime, "system": children.ru_stime,
                               "peak": children.ru_maxrss * 1024}}, out)
from profcompare.cli import main
try:
    code = main(sys.argv[2:])
except SystemExit as e:
    code = e.code
_report()
sys.exit(code)
"""


@dataclass(frozen=True)
class Measure:
    """One command's run: wall and CPU seconds (CPU includes every process it waited for), the
    peak resident bytes of its main process and of the largest process it started (0: none)."""

    wall: float
    cpu: float
    peak: int
    children_peak: int = 0


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("POPLAR_ENGINE_OPTIONS", None)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _run(args: list[str], cwd: Path) -> Measure:
    """``profcompare ARGS`` in a fresh process, its output thrown away."""
    read, write = os.pipe()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with subprocess.Popen([sys.executable, "-c", CHILD, str(write), *args], cwd=cwd, env=_environment(),
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(write,)) as proc:
        os.close(write)
        with os.fdopen(read) as pipe:
            reported = pipe.read()
        stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        code = proc.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        tail = (stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"`profcompare {' '.join(args)}` exited with {code}: {tail}")
    own = json.loads(reported)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return Measure(wall, cpu, int(own["peak"]), int(own.get("children_peak", 0)))


def _raw_scan(paths: list[Path]) -> float:
    """Seconds to read every row of every table of ``paths`` with the sqlite3 module."""
    start = time.perf_counter()
    for path in paths:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
            for table in tables:
                con.execute(f'SELECT * FROM "{table}"').fetchall()
        finally:
            con.close()
    return time.perf_counter() - start


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _build(size: str, out: Path) -> tuple[list[Path], Measure]:
    """Build the size's pair of reports; their paths and what the build cost."""
    measure = _run(["run", "--workload", "gpt", *VARIANTS, "--compile-only", "--backend", "sim", *SIZES[size],
                    "--out", str(out), "--name", size, "-q", "--force"], out)
    return [out / size / v / "profile.sqlite" for v in VARIANTS], measure


def _commands(paths: list[Path], work: Path) -> list[tuple[str, list[str]]]:
    base, new = (paths[0], paths[1]) if len(paths) > 1 else (paths[0], paths[0])
    html = work / "compare.html"
    return [
        ("open + summary", ["show", str(base), "--format", "csv", "--table", "summary"]),
        ("show", ["show", str(base)]),
        ("show --format json", ["show", str(base), "--format", "json"]),
        ("show --format json --top 1", ["show", str(base), "--format", "json", "--top", "1"]),
        ("variables --top 20", ["variables", str(base), "--top", "20"]),
        ("compare", ["compare", str(base), str(new)]),
        ("compare --format html", ["compare", str(base), str(new), "--format", "html", "-o", str(html), "--force"]),
        ("compare --format json", ["compare", str(base), str(new), "--format", "json"]),
    ]


def _line(label: str, measures: list[Measure], floor: float | None) -> str:
    wall = _median([m.wall for m in measures])
    cpu = _median([m.cpu for m in measures])
    peak = _median([m.peak for m in measures]) / 2**20
    ratio = f"{wall / floor:7.1f}x" if floor else "       "
    return f"  {label:<24} wall {wall:7.2f} s  cpu {cpu:7.2f} s  peak {peak:8.0f} MiB  {ratio}"


def _bench(label: str, paths: list[Path], repeat: int, work: Path, build: Measure | None) -> None:
    sizes = ", ".join(f"{p.name} {p.stat().st_size / 2**20:.1f} MiB" for p in paths)
    scanned = paths[:1]
    floors = {"one": _median([_raw_scan(scanned) for _ in range(repeat)]),
              "two": _median([_raw_scan(paths[:2] if len(paths) > 1 else paths * 2) for _ in range(repeat)])}
    print(f"{label}: {sizes}")
    print(f"  raw SQLite scan: one report {floors['one']:.2f} s, both {floors['two']:.2f} s "
          f"(the ratio column: wall over the scan of the files the command reads)")
    if build is not None:
        print(_line("profile (both, build)", [build], None) + f"  variant peak {build.children_peak / 2**20:.0f} MiB")
    for name, args in _commands(paths, work):
        measures = [_run(args, work) for _ in range(repeat)]
        print(_line(name, measures, floors["two" if name.startswith("compare") else "one"]), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", action="append", choices=sorted(SIZES), help="build a pair with the GPT workload")
    parser.add_argument("--report", action="append", type=Path, help="a report file to read (repeatable)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per command (medians printed)")
    args = parser.parse_args(argv)
    sizes = args.size or ([] if args.report else ["gptj"])
    for path in args.report or []:
        if not path.is_file():
            parser.error(f"no report at {path}")
    with tempfile.TemporaryDirectory(prefix="bench-large-") as tmp:
        work = Path(tmp)
        if args.report:
            _bench("given reports", list(args.report), args.repeat, work, None)
        for size in sizes:
            paths, build = _build(size, work)
            _bench(f"gpt workload, {size} size", paths, args.repeat, work, build)
    return 0


if __name__ == "__main__":
    sys.exit(main())
