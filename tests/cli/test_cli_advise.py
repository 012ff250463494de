"""``profcompare advise``: bad input refused in one line before anything runs, and the CI guards."""

from __future__ import annotations

import pytest

from profcompare.cli import USAGE_ERROR


@pytest.mark.parametrize("args, message", [
    (["mnst"], "unknown workload 'mnst' (did you mean 'mnist'?); valid workloads: "),
    (["mnist", "--set", "replicas"], "bad --set 'replicas': expected KNOB=V1,V2,..."),
    (["mnist", "--set", "replicas=1", "--set", "replicas=2"], "knob replicas given twice in --set"),
    (["mnist", "--fix", "replicas=1,2"], "bad --fix replicas=1,2: one value only (use --set for several)"),
    (["mnist", "--set", "replicas=1,two"], "bad value 'two' for knob 'replicas': expected an integer"),
    (["mnist", "--size", "big"], "unknown mnist size 'big'"),
    (["mnist", "--fail-if-not-fits", "variant"], "bad --fail-if-not-fits 'variant': expected KNOB=VALUE"),
    (["mnist", "--fail-if-not-front", "colour=red"], "bad --fail-if-not-front: colour is not a searched knob"),
    (["gpt", "--set", "tp=3"], "no layout of gpt is left to run on 16 IPU(s) with global batch 16: tp does not divide"),
])
def test_bad_input_is_one_line_and_runs_nothing(run_cli, tmp_path, args, message):
    outcome = run_cli("advise", *args, "--out", str(tmp_path))
    assert outcome.exit_code == USAGE_ERROR, outcome
    lines = outcome.stderr.strip().splitlines()
    assert lines[-1].startswith("profcompare: error: ") and message in lines[-1]
    assert "Traceback" not in outcome.stderr
    assert list(tmp_path.iterdir()) == []


def test_bad_numbers_are_click_errors(run_cli, tmp_path):
    outcome = run_cli("advise", "mnist", "--ipus", "0", "--out", str(tmp_path))
    assert outcome.exit_code == USAGE_ERROR and "--ipus" in outcome.stderr and "Traceback" not in outcome.stderr


@pytest.mark.slow
def test_guards_and_an_existing_name(run_cli, tmp_path):
    args = ["advise", "mnist", "--fix", "variant=onchip", "--set", "replicas=1,2", "--fix", "micro_batch=32",
            "--fix", "hidden=32", "--fix", "layers=1", "--fix", "steps=1", "--global-batch", "64", "--out",
            str(tmp_path), "--name", "guarded", "-j", "2", "--report-pages", "0"]
    passing = run_cli(*args, "--fail-if-not-fits", "variant=onchip,replicas=2")
    assert passing.exit_code == 0, passing
    assert passing.stdout.startswith("Verdict\n- onchip, replicas=")
    assert "Pareto front (fastest first; bytes per replica)" in passing.stdout
    again = run_cli(*args)
    assert again.exit_code == USAGE_ERROR and "already exists (use --force" in again.stderr
    failing = run_cli(*args, "--force", "--fail-if-not-front", "replicas=4", "--fail-if-not-fits", "replicas=1")
    assert failing.exit_code == 1
    assert failing.stderr.strip().splitlines()[-1] == \
        "profcompare: --fail-if-not-front: no evaluated layout has replicas=4"
    assert "(0 points run, 2 reused" in failing.stdout
