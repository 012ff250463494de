"""`profcompare run`: comparisons written next to the variants, failures reported, exit codes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from profcompare import runner
from profcompare.cli import cli


def _run(args: list[str]) -> Result:
    return CliRunner().invoke(cli, ["run", *args, "--backend", "sim", "-q"])


def test_run_writes_variants_and_the_four_outputs(fake_registry: object, tmp_path: Path) -> None:
    result = _run(["fake-small", "fake-big", "--out", str(tmp_path), "--name", "r", "--set", "size=2048"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    run_dir = tmp_path / "r"
    stem = run_dir / "compare-fake-small-vs-fake-big"
    for ext in ("html", "md", "json"):
        assert stem.with_suffix(f".{ext}").is_file()
    document = json.loads(stem.with_suffix(".json").read_text())
    assert document["schema_version"] == 9
    assert document["base"]["variant"] == "fake-small" and document["new"]["variant"] == "fake-big"
    streaming = document["summary"]["streaming_memory_bytes"]
    assert (streaming["base"], streaming["new"]) == (0, 4096)
    page = stem.with_suffix(".html").read_text()
    assert 'class="chart-data" data-chart="chart-categories"' in page and "<svg" not in page.split("<script data-library")[0]
    # the terminal shows the variant table, the comparison summary and where everything went
    out = result.output
    assert "fake-small" in out and "fake-big" in out
    assert "Streaming Memory" in out
    assert "compare-fake-small-vs-fake-big.html" in out and "compare-fake-small-vs-fake-big.md" in out
    assert f"run written to {run_dir.resolve()}" in out


def test_failed_and_oom_variants_are_reported_and_exit_code_is_1(fake_registry: object, tmp_path: Path) -> None:
    result = _run(["fake-small", "fake-broken", "fake-oom", "--out", str(tmp_path), "--name", "r", "--jobs", "3"])
    assert result.exit_code == 1
    run_dir = tmp_path / "r"
    assert runner.read_run_json(run_dir / "fake-broken")["status"] == "failed"
    assert runner.read_run_json(run_dir / "fake-broken")["summary"] is None  # no report, no figures
    assert not list(run_dir.glob("compare-*fake-broken*"))
    assert "not compared (no report): fake-broken" in result.output
    assert "fake-broken: failed: broken on purpose" in result.output  # CliRunner mixes stderr in
    # an oom variant still has its report (flagged), so it is compared
    info = runner.read_run_json(run_dir / "fake-oom")
    assert info["status"] == "oom" and info["report_files"] == ["profile.sqlite"]
    # its report was written by the workload itself, not the simulator: no figures kept (whoever needs
    # them reads the report; the child reads only what it needs)
    assert info["summary"] is None
    assert (run_dir / "compare-fake-small-vs-fake-oom.md").is_file()
    assert "fake-oom: oom: out of memory" in result.output


def test_oom_allowed_by_the_engine_is_still_oom(fake_registry: object, tmp_path: Path) -> None:
    # debug.allowOutOfMemory: the engine does not raise, but the program does not fit
    result = _run(["fake-small", "fake-oom-allowed", "--out", str(tmp_path), "--name", "r"])
    assert result.exit_code == 1
    info = runner.read_run_json(tmp_path / "r" / "fake-oom-allowed")
    assert info["status"] == "oom" and info["report_files"] == ["profile.sqlite"]
    assert "allowed by debug.allowOutOfMemory" in info["error"]
    assert (tmp_path / "r" / "compare-fake-small-vs-fake-oom-allowed.md").is_file()
    listing = CliRunner().invoke(cli, ["runs", "--out", str(tmp_path)])
    assert re.search(r"\boom\b", listing.output), listing.output


def test_no_comparison_without_a_base_report(fake_registry: object, tmp_path: Path) -> None:
    result = _run(["fake-broken", "fake-small", "--out", str(tmp_path), "--name", "r"])
    assert result.exit_code == 1
    assert "no comparison: the base variant 'fake-broken' has no report" in result.output
    assert not list((tmp_path / "r").glob("compare-*"))
    assert (tmp_path / "r" / "fake-small" / "profile.sqlite").is_file()


def test_rerun_with_force_replaces_and_says_so(fake_registry: object, tmp_path: Path) -> None:
    assert _run(["fake-small", "--out", str(tmp_path), "--name", "r"]).exit_code == 0
    refused = _run(["fake-small", "--out", str(tmp_path), "--name", "r"])
    assert refused.exit_code != 0 and "already exists" in str(refused.exception)
    forced = _run(["fake-small", "--out", str(tmp_path), "--name", "r", "--force", "--set", "size=7"])
    assert forced.exit_code == 0
    assert "replaced the previous run" in forced.output
    assert runner.read_run_json(tmp_path / "r" / "fake-small")["config"]["size"] == 7


def test_default_name_is_timestamp_and_variants(fake_registry: object, tmp_path: Path) -> None:
    result = _run(["fake-small", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    (run_dir,) = [p for p in tmp_path.iterdir()]
    stamp, rest = run_dir.name[:15], run_dir.name[16:]
    assert stamp[:8].isdigit() and stamp[8] == "-" and stamp[9:].isdigit()
    assert rest == "fake-small"


def test_auto_backend_says_which_backend_runs(fake_registry: object, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "fake-small", "--out", str(tmp_path), "--name", "r"])
    assert result.exit_code == 0, result.output
    assert "backend: sim -- the embedded simulator (Poplar SDK not importable)" in result.output
    assert runner.read_run_json(tmp_path / "r" / "fake-small")["backend"] == "sim"


def test_sdk_backend_without_the_sdk_is_a_one_line_error(fake_registry: object, tmp_path: Path) -> None:
    from profcompare.errors import SdkUnavailableError

    result = CliRunner().invoke(cli, ["run", "fake-small", "--backend", "sdk", "--out", str(tmp_path)])
    assert isinstance(result.exception, SdkUnavailableError)
    assert "\n" not in str(result.exception)
    assert not any(tmp_path.iterdir())


def test_progress_display_keeps_labels_and_times_whole_beside_a_long_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from profcompare.commands.run import ProgressDisplay

    monkeypatch.setenv("COLUMNS", "80")
    error = "Out of memory: the program does not fit on the Mk2 target (1472 tiles per replica): 4 tiles over budget"
    with ProgressDisplay(["offchip", "offchip-sharded"]) as display:
        display("offchip", "done", {"status": "oom", "error": error})
        display("offchip-sharded", "done", {"status": "ok", "error": None})
    lines = capsys.readouterr().err.splitlines()
    assert any(re.match(r"^\S offchip +oom Out of memory", line) for line in lines), lines
    assert any(re.match(r"^\S offchip-sharded ok", line) for line in lines), lines
    assert sum(bool(re.search(r"\d:\d\d:\d\d\s*$", line)) for line in lines) == 2, lines  # elapsed times kept
    assert "1472 tiles" in " ".join(lines)  # the error wraps instead of being cut at the edge


def test_run_help_lists_variants_and_knob_defaults() -> None:
    help_text = CliRunner().invoke(cli, ["run", "--help"]).output
    assert "mnist: onchip, onchip-sharded, offchip, offchip-sharded" in help_text
    assert re.search(r"--replicas N\s+data-parallel replicas \(a power of two\) \[default:\s+4\]", help_text)
    assert re.search(r"--device ipu_hw\|ipu_model", help_text)


def _help_sections(help_text: str) -> dict[str, list[str]]:
    """The option sections of a command's --help: heading -> the long option names under it."""
    sections: dict[str, list[str]] = {}
    heading = None
    for line in help_text.splitlines():
        if line and not line.startswith(" ") and line.endswith(":"):
            heading = line[:-1]
            sections[heading] = []
        elif heading is not None and (found := re.match(r"^  (?:-\w, )?(--[\w-]+)", line)):
            sections[heading].append(found.group(1))
    return sections


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_help_groups_the_options_by_workload(command: str) -> None:
    from profcompare.cli import cli as group

    help_text = CliRunner().invoke(cli, [command, "--help"]).output
    sections = _help_sections(help_text)
    assert list(sections) == ["Options", "Knobs of every workload (what each means, per workload)", "gpt knobs",
                              "mnist knobs"]
    shared = sections["Knobs of every workload (what each means, per workload)"]
    assert shared == ["--layers", "--hidden", "--micro-batch", "--grad-accum", "--steps", "--lr", "--seed", "--device",
                      "--set"]
    assert sections["gpt knobs"] == ["--heads", "--seq", "--vocab", "--tp", "--dp", "--io-tiles", "--amp", "--state",
                                     "--recompute"]
    assert sections["mnist knobs"] == ["--replicas", "--sharded-threshold", "--data"]
    assert {"--backend", "--out", "--jobs", "--compile-only", "--help"} <= set(sections["Options"])
    # every option of the command appears exactly once
    listed = [name for names in sections.values() for name in names]
    ctx = group.make_context("profcompare", [command, "--help"], resilient_parsing=True)
    sub = group.get_command(ctx, command)
    declared = [max(p.opts, key=len) for p in sub.get_params(ctx) if isinstance(p, click.Option)]
    assert sorted(listed) == sorted(declared) and len(listed) == len(set(listed))


def test_a_workloads_own_knobs_are_listed_under_its_name(fake_registry: object) -> None:
    sections = _help_sections(CliRunner().invoke(cli, ["run", "--help"]).output)
    assert sections["fake knobs"] == ["--size", "--sleep", "--device", "--tag"]
    assert "--set" in sections["Knobs of every workload (what each means, per workload)"]


def test_knob_options_come_from_the_workloads(fake_registry: object, tmp_path: Path) -> None:
    # the fake workload declares its own knobs: they become options without any CLI change
    help_text = CliRunner().invoke(cli, ["run", "--help"]).output
    assert "--size" in help_text and "--replicas" not in help_text
    result = _run(["fake-small", "fake-big", "--size", "2048", "--out", str(tmp_path), "--name", "r"])
    assert result.exit_code == 0, result.output
    assert runner.read_run_json(tmp_path / "r" / "fake-big")["config"]["size"] == 2048


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_an_existing_run_name_is_refused_before_anything_starts(
    command: str, fake_registry: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from profcompare.runner import sweep
    from profcompare.cli import main

    (tmp_path / "taken").mkdir()
    started: list[str] = []
    monkeypatch.setattr(runner, "run_variants", lambda *a, **k: started.append("run"))
    monkeypatch.setattr(sweep, "run_sweep", lambda *a, **k: started.append("sweep"))
    args = ["fake-small"] if command == "run" else ["fake-small", "--param", "size=1,2"]
    # no -q: a progress display would be drawn if the refusal came late
    code = main([command, *args, "--backend", "sim", "--out", str(tmp_path), "--name", "taken"])
    captured = capsys.readouterr()
    assert code != 0 and started == []
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f"profcompare: error: run directory {tmp_path / 'taken'} already exists (use --force to replace it, or --name)"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_run_runs_and_workloads_fit_columns(fake_registry: object, tmp_path: Path) -> None:
    name = "a-long-run-name-" + "x" * 50
    env = {"COLUMNS": "60"}
    result = CliRunner().invoke(cli, ["run", "fake-small", "fake-big", "--out", str(tmp_path), "--name", name,
                                      "--backend", "sim", "-q"], env={"COLUMNS": "70"})
    assert result.exit_code == 0, result.output
    # the tables and the comparison; the paths listed after them are printed whole
    shown = result.stdout.split("\nrun written to")[0].splitlines()
    assert max(len(line) for line in shown) <= 70
    assert "fake-small/profile.sqlite" in result.stdout  # the report, within the run directory
    listing = CliRunner().invoke(cli, ["runs", "--out", str(tmp_path)], env=env)
    assert max(len(line) for line in listing.stdout.splitlines()) <= 60
    assert re.search("a-long\\S*\u2026x+ ", listing.stdout), listing.stdout
    assert "long names shortened" in " ".join(listing.stdout.split())
    whole = CliRunner().invoke(cli, ["runs", "--out", str(tmp_path)], env={"COLUMNS": None})
    assert name in whole.stdout
    workloads_text = CliRunner().invoke(cli, ["workloads"], env=env).stdout
    assert max(len(line) for line in workloads_text.splitlines()) <= 60
    assert "fake-small" in workloads_text
