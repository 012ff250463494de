"""`profcompare workloads` and `profcompare runs`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from profcompare import runner
from profcompare.cli import cli


def test_workloads_lists_variants_and_knobs_with_defaults(fake_registry: object) -> None:
    result = CliRunner().invoke(cli, ["workloads"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == "fake: A tiny test workload that writes a small report"
    assert any(line.split() == ["fake-oom", "does", "not", "fit;", "report", "flagged", "oom"] for line in lines)
    size = next(line for line in lines if line.strip().startswith("--size"))
    assert size.split()[:4] == ["--size", "int", "default", "1000"]
    device = next(line for line in lines if line.strip().startswith("--device"))
    assert "one of ipu_hw, ipu_model" in device
    tag = next(line for line in lines if line.strip().startswith("--tag"))
    assert "default ''" in tag


def test_workloads_lists_the_mnist_variants() -> None:
    result = CliRunner().invoke(cli, ["workloads"])
    assert result.exit_code == 0, result.output
    for variant in ("onchip", "onchip-sharded", "offchip", "offchip-sharded"):
        assert any(line.split()[:1] == [variant] for line in result.output.splitlines())
    for option in ("--replicas", "--grad-accum", "--micro-batch", "--sharded-threshold", "--hidden", "--layers"):
        assert option in result.output


def _fake_run(out: Path, name: str, status: str, started: str, variant: str = "fake-small") -> None:
    job = out / name / variant
    job.mkdir(parents=True)
    (job / "run.json").write_text(
        json.dumps({"schema_version": 1, "variant": variant, "backend": "sim", "status": status, "started": started})
    )


def test_runs_lists_runs_newest_first_and_ignores_staging(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    _fake_run(out, "older", "ok", "2026-11-20T10:00:00+00:00")
    _fake_run(out, "newer", "oom", "2026-11-21T10:00:00+00:00", variant="offchip")
    _fake_run(out, ".newest.tmp-123", "ok", "2026-11-22T10:00:00+00:00")  # a run in progress or killed
    (out / "not-a-run").mkdir()
    listings = runner.list_runs(out)
    assert [r.name for r in listings] == ["newer", "older"]
    assert [r.status for r in listings] == ["oom", "ok"]
    result = CliRunner().invoke(cli, ["runs", "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if line.strip().startswith(("newer", "older"))]
    assert [row.split()[0] for row in rows] == ["newer", "older"]
    assert "offchip (oom)" in rows[0] and "sim" in rows[0] and "2026-11-21 10:00:00" in rows[0]
    assert ".newest" not in result.output and "not-a-run" not in result.output


def test_runs_lists_a_real_run(fake_registry: object, tmp_path: Path) -> None:
    runner.execute_jobs(runner.make_jobs(["fake-small", "fake-broken"]), out=tmp_path, name="r1", backend="sim")
    (listing,) = runner.list_runs(tmp_path)
    assert listing.name == "r1" and listing.kind == "run" and listing.status == "failed"
    assert [label for label, _ in listing.jobs] == ["fake-small", "fake-broken"]  # start order
    assert listing.variants == ("fake-small", "fake-broken")


def test_runs_without_runs(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["runs", "--out", str(tmp_path / "nothing")])
    assert result.exit_code == 0 and "no runs under" in result.output
