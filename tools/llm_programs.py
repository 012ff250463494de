"""Run Graphcore's popxl LLM applications unmodified under ``profcompare profile --compile-only``
at every configuration their entry points offer, and print what compiles.

    python tools/llm_programs.py EXAMPLES/nlp                  # every app found, every config
    python tools/llm_programs.py EXAMPLES/nlp --apps gpt_j,t5 --timeout 900 --tests

``EXAMPLES/nlp`` is your own checkout of graphcore/examples' ``nlp`` directory (or its
``multimodal``): nothing of it is part of this project. An application is a directory
``APP/popxl`` with ``config/*.yml`` (``configs/`` for some); its entry points are the scripts of
that directory (``run_*.py`` and ``run-*.py`` left out: they read data sets and pretrained
checkpoints) that create a Session (a script that only converts a checkpoint has nothing to
profile) and whose ``__main__`` builds their config from ``"NAME.yml", "KEY"`` (the presets key,
``release`` or ``phased``). Every configuration under that key of that file is one
run: ``SCRIPT --config NAME`` in the application's directory, compile-only, with a timeout. A
run stopped by the timeout gets SIGTERM, so ``profile`` keeps the Session reports written until
then (status ``incomplete``). ``--tests`` also runs each application's own tests numerically
(``profile -m pytest tests``; their ``tests/integration/execution`` start the entry points as child
``python3`` processes, which run on the simulator too).

The Python running this script runs the applications: it needs what they import (their
requirements) besides profcompare. For each run the table gives the status (ok, oom, failed,
incomplete; the one-line reason otherwise), the Sessions reported, the fullest tile of the last
Session's report (share of tile memory, tiles over budget), wall seconds, CPU seconds (user and
system, over the run's processes: the wall time follows the load of the machine) and the peak resident memory
of the run's largest process (measured by a small wrapper process around each run, so the figure
is the run's own, never this script's).
"""

from __future__ import annotations

import argparse
import json
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: ``"finetuning.yml", "release"`` in an entry point's source (newlines allowed between them)
_CONFIG_USE = re.compile(r"""["']([\w.-]+)\.yml["']\s*,\s*["']([\w.-]+)["']""")
#: the directory of an application's config files (most ``config``, some ``configs``)
_CONFIG_DIRS = ("config", "configs")
#: the last lines profcompare prints about a failed run start with this
_FAILURE = "profcompare:"
#: seconds a stopped ``profile`` gets to publish what it has before it is killed
_GRACE_SECONDS = 60.0


def markdown_cell(text: str) -> str:
    """``text`` as a cell of a Markdown table (its pipes escaped)."""
    return text.replace("|", "\\|")


def run_name(text: str) -> str:
    """``text`` as a run name under the output directory (characters profcompare refuses replaced)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


@dataclass(frozen=True)
class Run:
    """One run: an application, its entry point and one of its configurations."""

    app: str
    script: str
    config: str
    cwd: Path

    @property
    def name(self) -> str:
        """The run's name under the output directory."""
        return run_name(f"{self.app}-{Path(self.script).stem}-{self.config}")


@dataclass(frozen=True)
class Outcome:
    """How a run ended: its job status (run.json), reason, Sessions, the fullest tile, time, RSS."""

    run: Run
    status: str
    reason: str
    sessions: int
    fullest_tile_pct: float | None
    tiles_over_budget: int | None
    seconds: float
    peak_rss_mib: float
    cpu_seconds: float = float("nan")  # user + system of the run's processes (the wall time depends on load)


def applications(root: Path, only: Sequence[str] = ()) -> list[Path]:
    """The application directories (``APP/popxl`` with a ``config`` or ``configs`` directory)
    under ``root``, sorted; only those named in ``only`` when it is given."""
    found = sorted({p.parent for name in _CONFIG_DIRS for p in root.glob(f"*/popxl/{name}") if p.is_dir()})
    return [p for p in found if not only or p.parent.name in only]


def entry_points(app_dir: Path) -> Iterator[tuple[str, str, str]]:
    """(script, yml stem, presets key) for every entry point of the application."""
    for script in sorted(app_dir.glob("*.py")):
        if script.name.startswith(("run_", "run-")):
            continue
        source = script.read_text(encoding="utf-8", errors="replace")
        if "__main__" not in source or "Session" not in source:
            continue
        main = source[source.rindex("__main__"):] if "def main" not in source else source[source.index("def main"):]
        found = _CONFIG_USE.search(main)
        if found:
            yield script.name, found.group(1), found.group(2)


def configurations(config_file: Path, key: str) -> list[str]:
    """The configuration names under ``key`` of a YAML config file (empty when it has none)."""
    import yaml

    data = yaml.safe_load(config_file.read_text(encoding="utf-8")) or {}
    section = data.get(key) if isinstance(data, dict) else None
    return [str(name) for name in section] if isinstance(section, dict) else []


def plan(root: Path, only: Sequence[str] = ()) -> list[Run]:
    """Every (application, entry point, configuration) run under ``root``."""
    runs = []
    for app_dir in applications(root, only):
        for script, stem, key in entry_points(app_dir):
            config_file = next((app_dir / d / f"{stem}.yml" for d in _CONFIG_DIRS
                                if (app_dir / d / f"{stem}.yml").is_file()), None)
            if config_file is not None:
                runs += [Run(app_dir.parent.name, script, name, app_dir) for name in configurations(config_file, key)]
    return runs


#: Runs ``argv[2:]`` and writes the peak RSS (KiB) of the largest process of its tree and the CPU
#: seconds (user + system) of the tree to ``argv[1]``; forwards SIGTERM. A run's peak cannot be read from this script's own ``wait4``: Linux carries
#: the high-water mark of the process that execs into the new program's figures (the run would
#: read as at least this script's size, which grows with the reports it opens); this small
#: wrapper's children start from its own few MiB, and its RUSAGE_CHILDREN is theirs alone.
_MEASURE = r"""
import resource, signal, subprocess, sys
child = subprocess.Popen(sys.argv[2:])
signal.signal(signal.SIGTERM, lambda *_: child.send_signal(signal.SIGTERM))
code = child.wait()
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as out:
    out.write(f"{usage.ru_maxrss} {usage.ru_utime + usage.ru_stime}")
sys.exit(code if code >= 0 else 128 - code)
"""


def _wait(proc: subprocess.Popen[bytes], timeout: float, peak_file: Path | None = None) -> tuple[int, float, float, bool]:
    """Wait for ``proc`` (run by :data:`_MEASURE`, which writes ``peak_file``; SIGTERM at
    ``timeout``, SIGKILL to its process group after the grace period): (exit status, peak RSS in
    MiB of the largest process of the run's tree that was waited for, CPU seconds of that tree,
    timed out); without ``peak_file`` the two measures are NaN."""
    try:
        return _wait_measured(proc, timeout, peak_file)
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGTERM)  # the run is in its own session: stop it with the tool
        raise


def _wait_measured(proc: subprocess.Popen[bytes], timeout: float,
                   peak_file: Path | None) -> tuple[int, float, float, bool]:
    deadline = time.monotonic() + timeout
    timed_out = False
    while True:
        code = proc.poll()
        if code is not None:
            peak_kib, cpu = float("nan"), float("nan")  # not measured, or killed before it could say
            if peak_file is not None:
                with contextlib.suppress(OSError, ValueError):
                    peak_kib, cpu = (float(v) for v in peak_file.read_text(encoding="utf-8").split())
            return code, peak_kib / 1024, cpu, timed_out
        now = time.monotonic()
        if now > deadline and not timed_out:
            timed_out = True
            proc.send_signal(signal.SIGTERM)
            deadline = now + _GRACE_SECONDS
        elif now > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
        time.sleep(0.2)


def _job_info(out: Path, run: Run) -> tuple[dict[str, Any] | None, Path | None]:
    jobs = sorted((out / run.name).glob("*/run.json"))
    if not jobs:
        return None, None
    return json.loads(jobs[-1].read_text(encoding="utf-8")), jobs[-1].parent


def _fullest_tile(job_dir: Path, info: dict[str, Any]) -> tuple[float | None, int | None]:
    files = info.get("report_files") or []
    if not files:
        return None, None
    import profcompare

    report = profcompare.open_report(job_dir / files[0])
    summary = report.summary()
    budget = report.meta.target.bytes_per_tile
    return 100.0 * float(summary["max_tile_bytes"]) / budget, int(summary["tiles_over_budget"])


def execute(run: Run, out: Path, timeout: float, argv: Sequence[str]) -> Outcome:
    """Run one configuration (``argv`` after ``profile``'s own options) and return its outcome."""
    out.mkdir(parents=True, exist_ok=True)
    peak_file = out / f".{run.name}.peak-rss"
    peak_file.unlink(missing_ok=True)
    command = [sys.executable, "-c", _MEASURE, str(peak_file),
               sys.executable, "-m", "profcompare", "profile", "-q", "--out", str(out), "--name", run.name,
               "--force", *argv]
    start = time.perf_counter()
    proc = subprocess.Popen(command, cwd=run.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stderr is not None
    stderr_chunks: list[bytes] = []
    import threading

    reader = threading.Thread(target=lambda: stderr_chunks.append(proc.stderr.read()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    code, rss, cpu, timed_out = _wait(proc, timeout, peak_file)
    peak_file.unlink(missing_ok=True)
    reader.join(timeout=5)
    seconds = time.perf_counter() - start
    stderr = b"".join(stderr_chunks).decode(errors="replace")
    info, job_dir = _job_info(out, run)
    failures = [line for line in stderr.splitlines() if line.startswith(_FAILURE)]
    if info is None:
        status = "timeout" if timed_out else "failed"
        reason = f"stopped after {timeout:.0f} s with no report" if timed_out else (failures[-1] if failures else f"exit {code}")
        return Outcome(run, status, reason, 0, None, None, seconds, rss, cpu)
    status = str(info.get("status"))
    reason = "" if status == "ok" else str(info.get("error") or (failures[-1] if failures else f"exit {code}"))
    if timed_out:
        reason = f"timed out after {timeout:.0f} s; " + reason
    fullest, over = _fullest_tile(job_dir, info) if job_dir is not None else (None, None)
    return Outcome(run, status, " ".join(reason.split())[:160], len(info.get("report_files") or []), fullest, over,
                   seconds, rss, cpu)


def _one_decimal(value: float) -> str:
    return "-" if value != value else f"{value:.1f}"


def _mib(value: float) -> str:
    return "-" if value != value else f"{value:.0f}"  # NaN: the run was killed before its peak was read


def table(outcomes: Sequence[Outcome]) -> str:
    """A Markdown table, one row per run."""
    lines = ["| app | entry point | config | status | Sessions | fullest tile | tiles over budget | s | CPU s | peak RSS MiB "
             "| reason |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for o in outcomes:
        fullest = f"{o.fullest_tile_pct:.0f}%" if o.fullest_tile_pct is not None else "-"
        over = str(o.tiles_over_budget) if o.tiles_over_budget is not None else "-"
        reason = markdown_cell(o.reason)
        lines.append(f"| {o.run.app} | {o.run.script} | {o.run.config} | {o.status} | {o.sessions} | {fullest} | "
                     f"{over} | {o.seconds:.1f} | {_one_decimal(o.cpu_seconds)} | {_mib(o.peak_rss_mib)} | {reason} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the applications' configurations and print the table; 0 once every run was tried
    (a run's own failure is a row of the table), 2 for bad options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="graphcore/examples' nlp directory (APP/popxl/config/*.yml)")
    parser.add_argument("--apps", default="", help="comma-separated application directories (default: all)")
    parser.add_argument("--config", default="", help="comma-separated configuration names (default: all)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per run (then SIGTERM)")
    parser.add_argument("--tests", action="store_true", help="also run each application's tests (numerically)")
    parser.add_argument("--out", type=Path, default=None, help="where the runs go (default: a temporary directory)")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"{args.root}: not a directory")
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    only = [a for a in args.apps.split(",") if a]
    runs = plan(args.root.resolve(), only)
    wanted = [c for c in args.config.split(",") if c]
    runs = [r for r in runs if not wanted or r.config in wanted]
    if not runs:
        parser.error(f"{args.root}: no application entry point with a config file found")
    with tempfile.TemporaryDirectory(prefix="llm-programs-") as scratch:
        out = (args.out or Path(scratch) / "runs").resolve()
        outcomes = []
        for run in runs:
            outcomes.append(execute(run, out, args.timeout, ["--compile-only", run.script, "--config", run.config]))
            print(f"{run.app} {run.script} {run.config}: {outcomes[-1].status}", file=sys.stderr, flush=True)
        if args.tests:
            for app_dir in applications(args.root.resolve(), only):
                if (app_dir / "tests").is_dir():
                    test_run = Run(app_dir.parent.name, "tests", "tests", app_dir)
                    outcomes.append(execute(test_run, out, args.timeout * 4,
                                            ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]))
                    print(f"{test_run.app} tests: {outcomes[-1].status}", file=sys.stderr, flush=True)
        print(table(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
