"""``--run N``: the run of the execution trace that ``show`` and ``compare`` draw."""

from __future__ import annotations

import dataclasses
import json
import pathlib

from cli_sample_reports import build_report

from profcompare.model import trace_from_blocks
from profcompare.readers.store import write_report


def _three_runs(tmp_path: pathlib.Path) -> str:
    """The onchip sample with a trace of three runs (run 0 longer: it loads code and weights)."""
    blocks = [(0, 0, 500, "OnTileExecute", "a", "a", "", 0), (0, 500, 600, "OnTileExecute", "a", "a", "", 0),
              (0, 600, 700, "OnTileExecute", "a", "a", "", 0)]
    report = build_report("onchip")
    report = dataclasses.replace(report, trace=trace_from_blocks(blocks, runs=[0, 1, 2]))
    return str(write_report(report, tmp_path / "profile.sqlite"))


def test_show_draws_the_second_run_unless_told(run_cli, tmp_path: pathlib.Path) -> None:
    path = _three_runs(tmp_path)
    default = json.loads(run_cli("show", path, "--format", "json").stdout)["execution_trace"]
    assert (default["run"], default["runs"]) == (1, [0, 1, 2])
    assert [s["span_cycles"] for s in default["spans"]] == [100]
    chosen = json.loads(run_cli("show", path, "--format", "json", "--run", "0").stdout)["execution_trace"]
    assert chosen["run"] == 0 and [s["span_cycles"] for s in chosen["spans"]] == [500]
    text = run_cli("show", path, "--format", "markdown", "--run", "2").stdout
    assert "run 2 of runs 0–2 (chosen with --run)" in text


def test_a_run_the_trace_does_not_hold_is_one_error_line(run_cli, tmp_path: pathlib.Path) -> None:
    path = _three_runs(tmp_path)
    out = run_cli("compare", path, path, "--run", "7")
    assert out.exit_code == 2
    assert out.stderr.strip().splitlines() == [
        "profcompare: error: Invalid value for '--run': onchip: the trace has no run 7 (its runs are 0–2) "
        "(see 'profcompare compare --help')"]
