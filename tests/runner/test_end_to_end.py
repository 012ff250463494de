"""The headline, end to end on the simulator: real MNIST variants, real reports, real comparisons."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from profcompare.cli import cli
from profcompare.readers import open_report

#: small knobs: the same program structure as the defaults, a fraction of the work
SMALL = ["--hidden", "64", "--steps", "1", "--grad-accum", "2", "--micro-batch", "4", "--backend", "sim", "-q"]


def test_run_onchip_vs_offchip_sharded(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", "onchip", "offchip-sharded", "--out", str(tmp_path), "--name", "r", *SMALL])
    assert result.exit_code == 0, result.output + repr(result.exception)
    run_dir = tmp_path / "r"
    stem = run_dir / "compare-onchip-vs-offchip-sharded"
    for ext in ("html", "md", "json"):
        assert stem.with_suffix(f".{ext}").stat().st_size > 0
    for variant in ("onchip", "offchip-sharded"):
        info = json.loads((run_dir / variant / "run.json").read_text())
        assert (info["workload"], info["variant"], info["backend"], info["status"]) == ("mnist", variant, "sim", "ok")
        assert info["config"]["hidden"] == 64 and info["config"]["replicas"] == 4
        assert info["report_files"] == ["profile.sqlite"]
        assert len(info["losses"]) == 1
    summary = json.loads(stem.with_suffix(".json").read_text())["summary"]
    # off-chip state lives in Streaming Memory; on-chip has none
    assert summary["streaming_memory_bytes"]["base"] == 0
    assert summary["streaming_memory_bytes"]["new"] > 0
    assert summary["always_live_bytes"]["base"] > 0 and summary["cycles_per_step"]["new"] > 0
    onchip, offchip = open_report(run_dir / "onchip"), open_report(run_dir / "offchip-sharded")
    assert onchip.meta.simulated and onchip.meta.variant == "onchip" and onchip.meta.config["hidden"] == 64
    assert len(onchip.remote_buffers) == 0 and len(offchip.remote_buffers) > 0
    assert offchip.remote_buffers["sharded"].any()
    assert "Streaming Memory" in result.output and "compare-onchip-vs-offchip-sharded.html" in result.output
    # the terminal leads with the ledger: moves in words, the ledger table, then the raw tables
    titles = ("Where the memory moved", "Memory ledger", "Summary", "Variables")
    positions = [result.output.index(f"{title}\n") for title in titles]
    assert positions == sorted(positions)
    assert "fc1.weight optimizer_state:" in result.output


def test_sweep_sharded_threshold(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["sweep", "offchip-sharded", "--param", "sharded_threshold=1e10,512", "--out", str(tmp_path), "--name", "s", *SMALL]
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    table = pd.read_csv(tmp_path / "s" / "sweep.csv")
    assert list(table["sharded_threshold"]) == [10_000_000_000, 512]
    assert list(table["status"]) == ["ok", "ok"]
    # a threshold above every tensor size shards nothing; 512 shards the large state across replicas
    unsharded, sharded = table["streaming_memory_bytes"]
    assert 0 < sharded < unsharded
    assert (table["samples_per_second"] > 0).all()
