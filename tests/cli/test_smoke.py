"""One real process: ``python -m profcompare`` as a user runs it."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys


def test_python_m_profcompare_show(onchip_path: str, tmp_path: pathlib.Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE")}
    done = subprocess.run(
        [sys.executable, "-m", "profcompare", "show", onchip_path, "--format", "json"],
        check=False, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["meta"]["label"] == "onchip"
    failed = subprocess.run(
        [sys.executable, "-m", "profcompare", "show", str(tmp_path / "missing")],
        check=False, capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )
    assert failed.returncode == 2
    assert failed.stderr.strip().splitlines() == [f"profcompare: error: {tmp_path / 'missing'}: no such file or directory"]


def test_help_and_show_import_only_what_they_need(onchip_path: str) -> None:
    # start-up time: --help needs neither pandas nor matplotlib; show needs pandas only
    code = ("import sys; from profcompare.cli import main; "
            "code = main(sys.argv[1:]); "
            "print(sorted(m for m in ('pandas', 'matplotlib', 'profcompare.emulator', 'jinja2') if m in sys.modules))")
    help_run = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, check=True)
    assert help_run.stdout.strip().splitlines()[-1] == "[]"
    show_run = subprocess.run([sys.executable, "-c", code, "show", onchip_path], capture_output=True, text=True, check=True)
    assert show_run.stdout.strip().splitlines()[-1] == "['pandas']"


def test_pc_compare_and_advise_are_functions_however_the_packages_were_imported(onchip_path: str) -> None:
    # the package imports lazily; importing the comparison and advisor packages first must not
    # turn pc.compare or pc.advise into a module
    code = ("import sys, types, profcompare as pc, profcompare.comparison.tables, profcompare.advisor.space; "
            "r = pc.open_report(sys.argv[1]); print(type(pc.compare(r, r)).__name__, "
            "isinstance(pc.compare, types.FunctionType), isinstance(pc.advise, types.FunctionType))")
    done = subprocess.run([sys.executable, "-W", "ignore", "-c", code, onchip_path], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "Comparison True True"


def test_a_command_runs_with_the_command_collector_thresholds_and_restores_the_callers(monkeypatch) -> None:
    import gc

    from profcompare import cli
    from profcompare.perf import collector

    seen = []
    monkeypatch.setattr(cli, "_main", lambda args, debug: seen.append(gc.get_threshold()) or 0)
    before = gc.get_threshold()
    assert before != collector.COMMAND_GC_THRESHOLDS
    assert cli.main(["--version"]) == 0
    assert seen == [collector.COMMAND_GC_THRESHOLDS]
    assert gc.get_threshold() == before
