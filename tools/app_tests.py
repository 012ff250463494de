"""Run Graphcore's popxl LLM applications' own tests unmodified on the simulator, one test file
per ``profcompare profile -m pytest FILE`` (numerically, with a timeout), and print a table.

    python tools/app_tests.py EXAMPLES/nlp                       # every app with a tests/ dir
    python tools/app_tests.py EXAMPLES/nlp --apps gpt_j,t5 --timeout 600

``EXAMPLES/nlp`` is your own checkout of graphcore/examples' ``nlp`` directory: nothing of it is
part of this project. An application is a directory ``APP/popxl`` with a ``tests`` directory;
every ``tests/**/test_*.py`` is one run in the application's directory, as its CI runs them.
Their ``pytest.ini`` names extra import paths with ``python_paths`` (the pytest-pythonpath
plugin, replaced by pytest's own ``pythonpath`` option since pytest 7): they are passed as
``-o pythonpath=...``, so the checkout's ``utils`` (``examples_tests``) is importable. The
execution tests start the entry points as ``python3`` child processes, which run on the
simulator too (``profile`` puts the directory of a virtual environment's Python first on the
program's ``PATH``, as activating it does).

The Python running this script runs the tests: it needs what they import (the applications'
requirements, torch and transformers for the numerics they compare with). Each row counts
pytest's own results (its JUnit XML): passed, failed on an API the simulator refuses (the one
line naming it), failed otherwise (the first reason), skipped, the run's wall seconds and its
CPU seconds (every process of the run, the programs the tests start included). A file stopped
by the timeout, or that pytest could not report on, counts as one failure.
"""

from __future__ import annotations

import argparse
import configparser
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))

from llm_programs import _MEASURE, _wait, markdown_cell, run_name  # noqa: E402 - the sibling tool's timeout handling and CPU measure, cells, run names

#: the one-line refusals of an API outside the simulated subset (profcompare.emulator.popxl.errors
#: ``not_implemented_message``; popxl_addons ``_compat.not_supported``); group 1 names the API
UNSUPPORTED = (
    re.compile(r"(?:^|:\s)\s*([^:]+?) is not implemented by the profcompare simulator"),
    re.compile(r"(?:^|:\s)\s*(popxl_addons\.[^:]+?) is outside the emulated popxl-addons subset"),
)


@dataclass(frozen=True)
class TestFile:
    """One test file of an application (``path`` relative to the application's directory)."""

    app: str
    path: str
    cwd: Path

    @property
    def name(self) -> str:
        """The run's name under the output directory."""
        return run_name(f"{self.app}-{Path(self.path).with_suffix('')}")


@dataclass(frozen=True)
class FileOutcome:
    """The results of one test file: counts, the APIs refused (with how many tests each
    stopped), the first other failure's reason, the run's wall seconds and the CPU seconds of
    its processes (the test run and the programs it started; NaN when not measured)."""

    test_file: TestFile
    passed: int
    skipped: int
    unsupported: dict[str, int] = field(default_factory=dict)
    other: int = 0
    other_reason: str = ""
    seconds: float = 0.0
    cpu_seconds: float = float("nan")

    @property
    def failed_unsupported(self) -> int:
        """Tests that failed on an API the simulator refuses."""
        return sum(self.unsupported.values())


def applications(root: Path, only: Sequence[str] = ()) -> list[Path]:
    """The application directories (``APP/popxl`` with a ``tests`` directory) under ``root``,
    sorted; only those named in ``only`` when it is given."""
    found = sorted(p.parent for p in root.glob("*/popxl/tests") if p.is_dir())
    return [p for p in found if not only or p.parent.name in only]


def test_files(app_dir: Path) -> list[TestFile]:
    """Every ``tests/**/test_*.py`` of the application, sorted."""
    return [TestFile(app_dir.parent.name, str(p.relative_to(app_dir)), app_dir)
            for p in sorted((app_dir / "tests").rglob("test_*.py"))]


def pytest_path_options(app_dir: Path) -> list[str]:
    """``-o pythonpath=...`` for the ``python_paths`` of the application's ``pytest.ini``
    (empty without one, or when it sets pytest's own ``pythonpath``)."""
    ini = app_dir / "pytest.ini"
    if not ini.is_file():
        return []
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ini, encoding="utf-8")
    if not parser.has_section("pytest") or parser.has_option("pytest", "pythonpath"):
        return []
    paths = parser.get("pytest", "python_paths", fallback="").split()
    return ["-o", "pythonpath=" + " ".join(paths)] if paths else []


def refused_api(text: str) -> str | None:
    """The API named by the first simulator refusal in ``text``, else None."""
    for line in text.splitlines():
        line = re.sub(r"^E\s+", "", line.strip())  # pytest's mark of an exception's lines
        for pattern in UNSUPPORTED:
            found = pattern.search(line)
            if found:
                return found.group(1).strip()
    return None


def _first_reason(message: str, text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip().startswith("E ")]
    if message == "collection failure" and lines:  # pytest's message for a module that fails to import
        message = lines[-1][1:]
    reason = message or (lines[0][1:] if lines else "") or (text.strip().splitlines() or [""])[-1]
    return " ".join(reason.split())[:160]


def read_junit(xml_path: Path, test_file: TestFile, seconds: float, cpu_seconds: float = float("nan")) -> FileOutcome:
    """Count the results of pytest's JUnit XML file for ``test_file``."""
    root = ET.parse(xml_path).getroot()
    passed = skipped = other = 0
    unsupported: Counter[str] = Counter()
    reason = ""
    for case in root.iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is not None:
            text = (problem.get("message") or "") + "\n" + (problem.text or "")
            api = refused_api(text)
            if api is not None:
                unsupported[api] += 1
            else:
                other += 1
                reason = reason or _first_reason(problem.get("message") or "", problem.text or "")
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return FileOutcome(test_file, passed, skipped, dict(unsupported), other, reason, seconds, cpu_seconds)


def execute(test_file: TestFile, out: Path, timeout: float) -> FileOutcome:
    """Run one test file under ``profcompare profile -m pytest`` and count its results."""
    xml_path = out / f"{test_file.name}.junit.xml"
    xml_path.unlink(missing_ok=True)
    cpu_file = out / f"{test_file.name}.cpu"
    cpu_file.unlink(missing_ok=True)
    # run through the sibling tool's measure, which writes the CPU seconds of the run's processes
    command = [sys.executable, "-c", _MEASURE, str(cpu_file), sys.executable, "-m", "profcompare", "profile", "-q", "--backend", "sim", "--out", str(out),
               "--name", test_file.name, "--force", "-m", "pytest", "-p", "no:cacheprovider",
               *pytest_path_options(test_file.cwd), f"--junitxml={xml_path}", test_file.path]
    start = time.perf_counter()
    # a session of its own, so a timeout or Ctrl-C stops the whole run (llm_programs._wait); its
    # peak RSS is not shown
    proc = subprocess.Popen(command, cwd=test_file.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    code, _rss, cpu, timed_out = _wait(proc, timeout, cpu_file)
    seconds = time.perf_counter() - start
    if timed_out:
        return FileOutcome(test_file, 0, 0, {}, 1, f"stopped after the {timeout:.0f} s timeout", seconds, cpu)
    if not xml_path.is_file():
        return FileOutcome(test_file, 0, 0, {}, 1, f"pytest wrote no results (profile exit {code})", seconds, cpu)
    return read_junit(xml_path, test_file, seconds, cpu)


def table(outcomes: Sequence[FileOutcome]) -> str:
    """A Markdown table, one row per test file, and a total row."""
    lines = ["| app | test file | passed | failed-unsupported | failed-other | skipped | s | CPU s |",
             "|---|---|---:|---|---:|---:|---:|---:|"]
    for o in outcomes:
        refused = ", ".join(f"{api} ({n})" if n > 1 else api for api, n in sorted(o.unsupported.items()))
        unsupported = f"{o.failed_unsupported}: {refused}" if refused else "0"
        other = f"{o.other}: {o.other_reason}" if o.other else "0"
        lines.append(f"| {o.test_file.app} | {markdown_cell(o.test_file.path)} | {o.passed} | {markdown_cell(unsupported)} | "
                     f"{markdown_cell(other)} | {o.skipped} | {o.seconds:.0f} | {_cpu_cell(o.cpu_seconds)} |")
    lines.append(f"| **total** | {len(outcomes)} files | {sum(o.passed for o in outcomes)} | "
                 f"{sum(o.failed_unsupported for o in outcomes)} | {sum(o.other for o in outcomes)} | "
                 f"{sum(o.skipped for o in outcomes)} | {sum(o.seconds for o in outcomes):.0f} | "
                 f"{_cpu_cell(sum(o.cpu_seconds for o in outcomes))} |")
    return "\n".join(lines)


def _cpu_cell(seconds: float) -> str:
    return "-" if seconds != seconds else f"{seconds:.0f}"  # NaN: not measured


def main(argv: Sequence[str] | None = None) -> int:
    """Run every test file and print the table; 0 once every file was run (a test's failure is
    a count of the table), 2 for bad options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="graphcore/examples' nlp directory (APP/popxl/tests)")
    parser.add_argument("--apps", default="", help="comma-separated application directories (default: all)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per test file (then SIGTERM)")
    parser.add_argument("--out", type=Path, default=None, help="where the runs go (default: a temporary directory)")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        parser.error(f"{args.root}: not a directory")
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    only = [a for a in args.apps.split(",") if a]
    files = [f for app_dir in applications(args.root.resolve(), only) for f in test_files(app_dir)]
    if not files:
        parser.error(f"{args.root}: no application with tests/test_*.py found")
    with tempfile.TemporaryDirectory(prefix="app-tests-") as scratch:
        out = (args.out or Path(scratch) / "runs").resolve()
        out.mkdir(parents=True, exist_ok=True)
        outcomes = []
        for test_file in files:
            outcomes.append(execute(test_file, out, args.timeout))
            o = outcomes[-1]
            print(f"{test_file.app} {test_file.path}: {o.passed} passed, {o.failed_unsupported} unsupported, "
                  f"{o.other} other, {o.skipped} skipped", file=sys.stderr, flush=True)
        print(table(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
