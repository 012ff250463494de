"""Sweeps: grid expansion, the table, the files, and the CLI."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from profcompare import runner
from profcompare.runner import sweep
from profcompare.cli import cli
from profcompare.errors import WorkloadError


def test_parse_param() -> None:
    assert sweep.parse_param("sharded-threshold=1e10,262145, 512") == ("sharded_threshold", ["1e10", "262145", "512"])
    for bad in ("size", "=1,2", "size=", "size=1,,2"):
        with pytest.raises(WorkloadError, match="--param"):
            sweep.parse_param(bad)


def test_grid_is_the_product_first_param_slowest(fake_registry: object) -> None:
    points = sweep.expand_grid(
        "fake-big", [("size", ["1e3", "2000"]), ("device", ["ipu_hw", "ipu_model"])], {"sleep": "0.25"}
    )
    assert [p.job.label for p in points] == [
        "size=1000,device=ipu_hw",
        "size=1000,device=ipu_model",
        "size=2000,device=ipu_hw",
        "size=2000,device=ipu_model",
    ]
    assert [dict(p.values) for p in points][1] == {"size": 1000, "device": "ipu_model"}
    assert all(p.job.config["sleep"] == 0.25 and p.job.variant == "fake-big" for p in points)


@pytest.mark.parametrize(
    ("params", "overrides", "match"),
    [
        ([("size", ["1000", "1e3"])], {}, "same point"),
        ([("size", ["1"]), ("size", ["2"])], {}, "swept twice"),
        ([("size", ["1", "2"])], {"size": "3"}, "both set and swept"),
        ([("colour", ["red"])], {}, "valid knobs are size, sleep, device, tag"),
        ([("size", ["1", "big"])], {}, "'big'"),
        ([("device", ["ipu_hw", "gpu"])], {}, "ipu_model"),
        ([], {}, "nothing to sweep"),
    ],
)
def test_bad_grids_are_one_line_errors(fake_registry: object, params: list, overrides: dict, match: str) -> None:
    with pytest.raises(WorkloadError, match=match) as info:
        sweep.expand_grid("fake-big", params, overrides)
    assert "\n" not in str(info.value)


def test_sweep_cli_runs_every_point_and_writes_the_table(fake_registry: object, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    result = CliRunner().invoke(
        cli,
        ["sweep", "fake-big", "--param", "size=1000,4000", "--param", "device=ipu_hw,ipu_model",
         "--backend", "sim", "--out", str(out), "--name", "s", "-q", "--jobs", "2"],
        env={"COLUMNS": "60"},
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    # the table keeps to the 60 columns asked for, its figures whole (8,000 B = 7.8 KiB)
    shown = result.stdout.split("\nsweep written to")[0].splitlines()
    assert max(len(line) for line in shown) <= 60 and "7.8 KiB" in result.stdout
    run_dir = out / "s"
    points = ["size=1000,device=ipu_hw", "size=1000,device=ipu_model", "size=4000,device=ipu_hw", "size=4000,device=ipu_model"]
    assert all((run_dir / p / "run.json").is_file() and (run_dir / p / "profile.sqlite").is_file() for p in points)
    table = pd.read_csv(run_dir / "sweep.csv")
    assert list(table.columns) == ["point", "size", "device", "status", *sweep.SWEEP_METRICS, "error"]
    assert list(table["point"]) == points
    assert list(table["status"]) == ["ok"] * 4
    # the fake puts 2 x size bytes in its one remote buffer
    assert list(table["streaming_memory_bytes"]) == [2000.0, 2000.0, 8000.0, 8000.0]
    assert (table["samples_per_second"] > 0).all()
    document = json.loads((run_dir / "sweep.json").read_text())
    assert document["schema_version"] == 1 and document["swept"] == ["size", "device"]
    assert document["variant"] == "fake-big" and document["backend"] == "sim"
    assert [p["size"] for p in document["points"]] == [1000, 1000, 4000, 4000]
    html = (run_dir / "sweep.html").read_text()
    assert "<svg" in html and "Throughput" in html
    assert "Simulated" in html
    # the terminal table shows each point and where the files are
    assert "ipu_model" in result.output and "sweep.html" in result.output
    (listing,) = runner.list_runs(out)
    assert (listing.kind, listing.swept, listing.variants) == ("sweep", ("size", "device"), ("fake-big",))
    runs_output = CliRunner().invoke(cli, ["runs", "--out", str(out)]).output
    assert "fake-big: 4 points over size, device" in runs_output


def test_sweep_of_failing_points_reports_them_and_exits_1(fake_registry: object, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    result = CliRunner().invoke(
        cli, ["sweep", "fake-broken", "--param", "size=1,2", "--backend", "sim", "--out", str(out), "--name", "s", "-q"]
    )
    assert result.exit_code == 1
    table = pd.read_csv(out / "s" / "sweep.csv")
    assert list(table["status"]) == ["failed", "failed"]
    assert list(table["error"]) == ["broken on purpose"] * 2
    assert all(math.isnan(v) for v in table["always_live_bytes"])
    assert "failed" in result.output


def test_sweep_page_escapes_user_text(fake_registry: object, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    result = CliRunner().invoke(
        cli,
        ["sweep", "fake-small", "--param", "tag=<b>bold</b>,</script><i>,[/x]", "--backend", "sim", "--out", str(out), "--name", "s", "-q"],
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    html = (out / "s" / "sweep.html").read_text()
    assert "<b>bold" not in html and "<i>" not in html
    assert html.count("</script>") == 1  # only the data block's own end tag
    data = re.search(r'<script type="application/json" id="sweep-data">(.*?)</script>', html, re.DOTALL)
    assert data is not None
    assert [p["tag"] for p in json.loads(data.group(1))["points"]] == ["<b>bold</b>", "</script><i>", "[/x]"]
    assert "[/x]" in result.output  # the terminal table shows it as text, not as markup


def test_sweep_page_with_missing_and_oom_points() -> None:
    from profcompare.render.sweep import render_sweep_html

    table = pd.DataFrame(
        {
            "point": ["hidden=64", "hidden=4096", "hidden=8192"],
            "hidden": [64, 4096, 8192],
            "status": ["ok", "oom", "failed"],
            "always_live_bytes": [1.5 * 2**20, 700 * 2**20, math.nan],
            "not_always_live_peak_bytes": [2**19, 90 * 2**20, math.nan],
            "code_bytes": [2**20, 2**21, math.nan],
            "streaming_memory_bytes": [0.0, 0.0, math.nan],
            "cycles_per_step": [1000.0, math.nan, math.nan],
            "samples_per_second": [1.2e6, math.nan, math.nan],
            "error": [None, "out of memory", "boom"],
        }
    )
    meta = {"name": "s", "workload": "mnist", "variant": "onchip", "backend": "sdk", "swept": ["hidden"], "fixed_config": {}}
    html = render_sweep_html(table, ["hidden"], meta)
    assert "Simulated" not in html  # an sdk sweep is not labelled simulated
    assert ">oom<" in html and "out of memory" in html and "boom" in html
    assert "MiB per replica" in html  # the memory axis uses the unit of the largest bar
    data = re.search(r'id="sweep-data">(.*?)</script>', html, re.DOTALL)
    assert data is not None
    points = json.loads(data.group(1))["points"]
    assert points[2]["always_live_bytes"] is None and points[0]["samples_per_second"] == 1.2e6


def _table(knobs: dict, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    columns = {"point": [f"p{i}" for i in range(n)], **knobs, "status": ["ok"] * n}
    for metric in ("always_live_bytes", "not_always_live_peak_bytes", "code_bytes", "streaming_memory_bytes"):
        columns[metric] = rng.uniform(2**20, 2**25, n)
    columns["cycles_per_step"] = rng.uniform(1e5, 1e7, n)
    columns["samples_per_second"] = rng.uniform(1e4, 1e5, n)
    columns["error"] = [None] * n
    return pd.DataFrame(columns)


def test_sweep_plot_puts_a_wide_numeric_knob_on_a_log_axis() -> None:
    from profcompare.render.sweep import plot_sweep

    figure = plot_sweep(_table({"sharded_threshold": [10**10, 262145, 1024, 512]}, 4), ["sharded_threshold"])
    memory, throughput = figure.axes[:2]
    for ax in (memory, throughput):
        assert ax.get_xscale() == "log"
        assert [t.get_text() for t in ax.get_xticklabels()] == ["512", "1024", "262145", "1e10"]
        assert ax.get_xlim()[0] < 512 and ax.get_xlim()[1] > 1e10
    # the throughput line follows the knob's value, not the order the values were given in
    xs, _ = throughput.lines[0].get_data()
    assert list(xs) == [512, 1024, 262145, 10**10]


def test_sweep_plot_of_a_narrow_range_or_a_grid() -> None:
    from profcompare.render.sweep import plot_sweep

    narrow = plot_sweep(_table({"hidden": [128, 256, 512]}, 3), ["hidden"])
    assert narrow.axes[0].get_xscale() == "linear"
    assert [t.get_text() for t in narrow.axes[0].get_xticklabels()] == ["128", "256", "512"]
    grid = _table({"hidden": [128, 128, 256, 256], "replicas": [1, 2, 1, 2]}, 4)
    grid["point"] = [f"hidden={h},replicas={r}" for h, r in zip(grid["hidden"], grid["replicas"])]
    figure = plot_sweep(grid, ["hidden", "replicas"])
    assert figure.axes[0].get_xscale() == "linear"
    # one throughput line per value of the slowest knob: points of different hidden sizes are not joined
    assert [len(line.get_xdata()) for line in figure.axes[1].lines] == [2, 2]


def test_sweep_table_spells_metrics_as_the_summary_and_keeps_throughput_at_80_columns() -> None:
    import types

    from profcompare.commands.sweep import sweep_table
    from profcompare.render.text import render_table

    # two points of a sharded_threshold sweep (the figures of the simulated offchip-sharded)
    table = pd.DataFrame({
        "point": ["sharded_threshold=10000000000", "sharded_threshold=1024"],
        "sharded_threshold": [10_000_000_000, 1024], "status": ["ok", "ok"],
        "always_live_bytes": [44_983_910.0, 45_822_771.0], "not_always_live_peak_bytes": [15_204_352.0, 11_848_909.0],
        "code_bytes": [27_368_243.0, 27_682_816.0], "streaming_memory_bytes": [5_557_452.0, 1_363_148.0],
        "cycles_per_step": [6_719_068.0, 3_889_784.0], "host_seconds_per_step": [0.000726, 0.000726],
        "seconds_per_step": [0.005778, 0.003650], "samples_per_second": [44_308.1, 70_128.3],
    })
    result = types.SimpleNamespace(swept=("sharded_threshold",), table=table)
    headers = [column.header for column in sweep_table(result).columns]
    assert headers[2:] == ["Always-live memory", "Not-always-live peak", "Code", "Streaming Memory (remote buffers)",
                           "Device cycles per step", "Host/runtime time per step",
                           "Time per session.run (device + host)", "Samples per second"]
    text = render_table(sweep_table(result), color=False, width=80)
    assert max(len(line) for line in text.splitlines()) <= 80
    # memory and throughput stay; cycles per step, code and host/runtime time (in time per run) go first
    flat = " ".join(text.split())
    assert "44,308.1" in text and "70,128.3" in text and "5.778 ms" in text and "3.650 ms" in text
    assert "42.9 MiB" in text and "14.5 MiB" in text and "5.3 MiB" in text
    assert "6,719,068" not in text and "26.1 MiB" not in text
    assert "columns left out: Device cycles per step, Code, Host/runtime time per step." in flat
