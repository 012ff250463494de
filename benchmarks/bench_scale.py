"""Scale benchmark: open, compare and render two 1M-variable reports; time and memory per stage.

Usage::

    python benchmarks/bench_scale.py [DIR] [--repeat 3] [--keep]

DIR holds ``base/profile.sqlite`` and ``new/profile.sqlite`` from ``make_scale_reports.py``;
without DIR (or when DIR holds no reports) they are generated first, in a subprocess, and that
generation is timed too. Every measurement runs in a fresh Python process so that wall time
includes nothing cached and the peak RSS (``resource.getrusage``, ``ru_maxrss``) is that of the
stage alone (for the pipeline: the process peak after each stage, i.e. cumulative):

* ``raw scan``: ``cursor.execute("SELECT * FROM t").fetchall()`` over every table of both files,
  the floor any reader of these rows pays (also shown with the garbage collector paused, as
  our reader does while materialising);
* ``open``: ``profcompare.readers.open_report`` of both files;
* ``pipeline``: import, open both, ``profcompare.comparison.compare``, render HTML with
  ``profcompare.render.base.get_renderer("html")`` and write it; stages that are not
  available yet are reported as such.

Prints the median over ``--repeat`` runs, the open/raw ratio and the HTML size, and checks the
targets (open <= 2x raw scan; pipeline < 15 s and < 2 GiB peak RSS; HTML < 5 MB).
"""

from __future__ import annotations

import argparse
import gc
import json
import pathlib
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
TARGET_OPEN_RATIO = 2.0
TARGET_PIPELINE_SECONDS = 15.0
TARGET_PEAK_BYTES = 2 * 2**30
TARGET_HTML_BYTES = 5 * 10**6


def _peak_rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


# --------------------------------------------------------------------------------------------
# workers (each runs in its own process and prints one JSON object)


def worker_raw(paths: list[str], pause_gc: bool) -> dict[str, Any]:
    if pause_gc:
        gc.disable()
    start, cpu = time.perf_counter(), time.process_time()
    rows = 0
    for path in paths:
        con = sqlite3.connect(path)
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            rows += len(con.execute(f'SELECT * FROM "{table}"').fetchall())
        con.close()
    return {"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu, "rows": rows,
            "peak_rss": _peak_rss_bytes()}


def worker_open(paths: list[str]) -> dict[str, Any]:
    from profcompare.readers import open_report

    start, cpu = time.perf_counter(), time.process_time()
    reports = [open_report(p) for p in paths]
    seconds = time.perf_counter() - start
    return {
        "seconds": seconds,
        "cpu": time.process_time() - cpu,
        "variables": [len(r.variables) for r in reports],
        "liveness": [len(r.liveness) for r in reports],
        "peak_rss": _peak_rss_bytes(),
    }


def worker_pipeline(paths: list[str], html_out: str) -> dict[str, Any]:
    stages: dict[str, Any] = {}
    start = time.perf_counter()
    from profcompare.readers import open_report

    stages["import"] = {"seconds": time.perf_counter() - start, "peak_rss": _peak_rss_bytes()}
    t = time.perf_counter()
    base, new = (open_report(p) for p in paths)
    stages["open"] = {"seconds": time.perf_counter() - t, "peak_rss": _peak_rss_bytes()}

    comparison = None
    t = time.perf_counter()
    try:
        from profcompare.comparison import compare

        comparison = compare(base, new)
    except (ImportError, NotImplementedError, AttributeError) as exc:
        stages["compare"] = {"unavailable": f"{type(exc).__name__}: {exc}"}
    else:
        stages["compare"] = {"seconds": time.perf_counter() - t, "peak_rss": _peak_rss_bytes()}

    if comparison is None:
        stages["html"] = {"unavailable": "needs compare"}
    else:
        t = time.perf_counter()
        try:
            from profcompare.render.base import get_renderer

            content = get_renderer("html").render(comparison)
        except (ImportError, NotImplementedError, AttributeError) as exc:
            stages["html"] = {"unavailable": f"{type(exc).__name__}: {exc}"}
        else:
            data = content.encode("utf-8") if isinstance(content, str) else content
            pathlib.Path(html_out).write_bytes(data)
            stages["html"] = {"seconds": time.perf_counter() - t, "peak_rss": _peak_rss_bytes(), "bytes": len(data)}
    stages["total"] = {"seconds": time.perf_counter() - start, "peak_rss": _peak_rss_bytes()}
    return stages


# --------------------------------------------------------------------------------------------
# driver


def _run_worker(*args: str) -> dict[str, Any]:
    result = subprocess.run(
        [sys.executable, str(pathlib.Path(__file__).resolve()), "--worker", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        tail = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"worker {args[0]} failed: {tail}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def _generate(out: pathlib.Path) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        [sys.executable, str(HERE / "make_scale_reports.py"), str(out), "--force"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"generation failed: {result.stderr.strip()}")
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", nargs="?", help="directory with base/ and new/ reports (default: generate)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is shown")
    parser.add_argument("--keep", action="store_true", help="keep a generated directory")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        kind, *rest = args.worker
        if kind == "raw":
            out = worker_raw(rest, pause_gc=False)
        elif kind == "raw-nogc":
            out = worker_raw(rest, pause_gc=True)
        elif kind == "open":
            out = worker_open(rest)
        else:
            out = worker_pipeline(rest[:2], rest[2])
        print(json.dumps(out))
        return 0

    generated = args.directory is None
    directory = pathlib.Path(args.directory) if args.directory else pathlib.Path(tempfile.mkdtemp(prefix="pc-scale-"))
    paths = [directory / "base" / "profile.sqlite", directory / "new" / "profile.sqlite"]
    try:
        if not all(p.is_file() for p in paths):
            seconds = _generate(directory)
            print(f"generate (2 reports, subprocess): {seconds:.2f} s -> {directory}")
        sizes = sum(p.stat().st_size for p in paths)
        print(f"reports: {', '.join(str(p) for p in paths)} ({_mib(sizes)} on disk)")

        raw, raw_nogc, opened, pipelines = [], [], [], []
        for _ in range(args.repeat):
            raw.append(_run_worker("raw", *map(str, paths)))
            raw_nogc.append(_run_worker("raw-nogc", *map(str, paths)))
            opened.append(_run_worker("open", *map(str, paths)))
        html_out = directory / "scale-compare.html"
        for _ in range(args.repeat):
            pipelines.append(_run_worker("pipeline", *map(str, paths), str(html_out)))

        raw_s = _median([r["seconds"] for r in raw])
        raw_nogc_s = _median([r["seconds"] for r in raw_nogc])
        open_s = _median([r["seconds"] for r in opened])
        raw_cpu = _median([r["cpu"] for r in raw])
        open_cpu = _median([r["cpu"] for r in opened])
        print(f"rows scanned per run: {raw[0]['rows']:,}; variables {opened[0]['variables']}, "
              f"liveness steps {opened[0]['liveness']}")
        print(f"raw sqlite3 scan (both files):    wall {raw_s:6.2f} s  cpu {raw_cpu:6.2f} s  "
              f"peak {_mib(_median([r['peak_rss'] for r in raw]))}")
        print(f"raw scan, gc paused (both files): wall {raw_nogc_s:6.2f} s  cpu "
              f"{_median([r['cpu'] for r in raw_nogc]):6.2f} s")
        print(f"open_report (both files):         wall {open_s:6.2f} s  cpu {open_cpu:6.2f} s  "
              f"peak {_mib(_median([r['peak_rss'] for r in opened]))}")
        ratio = open_s / raw_s
        print(f"open / raw scan: {ratio:.2f} wall, {open_cpu / raw_cpu:.2f} cpu "
              f"(open / gc-paused scan: {open_s / raw_nogc_s:.2f} wall; target <= {TARGET_OPEN_RATIO})")

        failures = []
        if ratio > TARGET_OPEN_RATIO:
            failures.append(f"open/raw {ratio:.2f} > {TARGET_OPEN_RATIO}")
        print("pipeline (fresh process each run; peak RSS is the process peak after the stage):")
        for stage in ("import", "open", "compare", "html", "total"):
            runs = [p[stage] for p in pipelines]
            if any("unavailable" in r for r in runs):
                print(f"  {stage:8s} stage not available ({runs[0].get('unavailable', '')})")
                continue
            seconds = _median([r["seconds"] for r in runs])
            peak = _median([r["peak_rss"] for r in runs])
            extra = f"   HTML {runs[0]['bytes'] / 1e6:.2f} MB" if stage == "html" else ""
            print(f"  {stage:8s} {seconds:6.2f} s   peak {_mib(peak)}{extra}")
            if stage == "total":
                complete = all("unavailable" not in p[s] for p in pipelines for s in ("compare", "html"))
                if complete and seconds > TARGET_PIPELINE_SECONDS:
                    failures.append(f"pipeline {seconds:.1f} s > {TARGET_PIPELINE_SECONDS} s")
                if peak > TARGET_PEAK_BYTES:
                    failures.append(f"peak RSS {_mib(peak)} > {_mib(TARGET_PEAK_BYTES)}")
                if not complete:
                    print("  (total covers only the stages that are available)")
            if stage == "html" and runs[0]["bytes"] > TARGET_HTML_BYTES:
                failures.append(f"HTML {runs[0]['bytes'] / 1e6:.1f} MB > 5 MB")
        print("targets: " + ("all met" if not failures else "MISSED: " + "; ".join(failures)))
        return 0 if not failures else 1
    except RuntimeError as exc:
        print(f"bench_scale: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if generated and not args.keep:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
