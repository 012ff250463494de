"""Advise runs for real on a tiny MNIST space (compile only): the run directory and its files,
the point cache (a repeated search runs nothing, an extended one only the new points), and the
advisor's figures against ``profcompare run`` of the same layout."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import profcompare as pc
from profcompare.advise.cache import CACHE_INDEX
from profcompare.runner import list_runs, read_run_json

pytestmark = pytest.mark.slow

#: a small model, one variant per layout family, replicas 1 and 2
TINY = {"hidden": "32", "layers": "1", "steps": "1"}


def _advise(out, name, **options):
    fixed = {**TINY, **options.pop("fixed", {})}
    set_values = {"variant": ["onchip", "offchip-sharded"], "replicas": ["1", "2"], "micro_batch": ["32"],
                  **options.pop("set_values", {})}
    return pc.advise("mnist", fixed=fixed, set_values=set_values, global_batch=64, jobs=2, out=out, name=name,
                     report_pages=1, **options)


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    out = tmp_path_factory.mktemp("advise")
    return out, _advise(out, "first", fixed={"sharded_threshold": "512"})


def test_an_advise_run_directory(first):
    out, result = first
    assert result.directory == out / "first" and result.facts.method == "exhaustive"
    assert (result.new_points, result.cached_points) == (4, 0)
    points = result.points
    assert list(points["status"]) == ["ok"] * 4
    assert [dict(k) for k in points["knobs"]] == [
        {"variant": "onchip", "replicas": 1, "micro_batch": 32, "grad_accum": 2},
        {"variant": "onchip", "replicas": 2, "micro_batch": 32, "grad_accum": 1},
        {"variant": "offchip-sharded", "replicas": 1, "sharded_threshold": 512, "micro_batch": 32, "grad_accum": 2},
        {"variant": "offchip-sharded", "replicas": 2, "sharded_threshold": 512, "micro_batch": 32, "grad_accum": 1},
    ]
    for run_dir in points["run_dir"]:
        info = read_run_json(out / "first" / run_dir)  # a normal run directory of a compile-only job
        assert info["status"] == "ok" and info["execution"] == "compile-only" and info["backend"] == "sim"
    document = json.loads((out / "first" / "advise.json").read_text())
    assert document["verdict"] == result.verdict and len(document["points"]) == 4
    assert document["front"] == list(result.front["run_dir"])
    assert len(pd.read_csv(out / "first" / "advise.csv")) == 4
    page = (out / "first" / "advise.html").read_text()
    assert result.verdict.split(":")[0] in page
    assert (out / "first" / result.front["run_dir"].iloc[0] / "report.html").is_file()
    assert result.verdict.split(":")[0] in result._repr_html_()  # a notebook shows the verdict and the front
    index = json.loads((out / "first" / CACHE_INDEX).read_text())
    assert sorted(entry["dir"] for entry in index["entries"].values()) == sorted(points["run_dir"])
    listing = {run.name: run for run in list_runs(out)}
    assert listing["first"].kind == "advise" and len(listing["first"].jobs) == 4


def test_a_repeated_search_runs_nothing_and_an_extended_one_only_the_new_points(first, monkeypatch):
    out, result = first
    from profcompare.advise import search

    def no_reading(directory):
        raise AssertionError(f"a cached point's report was read again: {directory}")

    with monkeypatch.context() as patch:  # the index keeps each point's figures
        patch.setattr(search, "point_metrics", no_reading)
        again = _advise(out, "again", fixed={"sharded_threshold": "512"})
    assert (again.new_points, again.cached_points) == (0, 4)
    pd.testing.assert_frame_equal(again.points.drop(columns=["cached"]), result.points.drop(columns=["cached"]))
    assert again.verdict.split(". Searched")[0] == result.verdict.split(". Searched")[0]
    # the reused points are complete run directories of the new run (linked, not referenced)
    for run_dir in again.points["run_dir"]:
        assert read_run_json(out / "again" / run_dir)["status"] == "ok"
    wider = _advise(out, "wider", fixed={"sharded_threshold": "512"}, set_values={"micro_batch": ["16", "32"]})
    assert (wider.new_points, wider.cached_points) == (4, 4)
    assert set(wider.points.loc[~wider.points["cached"], "micro_batch"]) == {16}


def test_the_advisor_agrees_with_profcompare_run_of_the_same_layout(first, tmp_path):
    out, result = first
    row = result.layout(variant="offchip-sharded", replicas=2).iloc[0]
    point_dir = out / "first" / row["run_dir"]
    config = read_run_json(point_dir)["config"]
    run = pc.run(["offchip-sharded"], knobs=config, out=tmp_path, name="numeric", backend="sim")  # numeric execution
    assert run.result.outcomes[0].status == "ok"
    advised, ran = pc.open_report(point_dir), run.reports["offchip-sharded"]
    memory = ["total_bytes", "always_live_bytes", "not_always_live_peak_bytes", "peak_liveness_bytes", "code_bytes",
              "variable_bytes", "max_tile_bytes", "tiles_over_budget", "streaming_memory_bytes"]
    pd.testing.assert_series_equal(advised.summary()[memory], ran.summary()[memory], check_names=False)
    pd.testing.assert_frame_equal(advised.tiles, ran.tiles)
    assert row["max_tile_bytes"] == ran.summary()["max_tile_bytes"]
    # time is modelled from the same program: the same cycles and host/runtime terms
    for metric in ("cycles_per_step", "seconds_per_step", "samples_per_second"):
        assert math.isclose(advised.summary()[metric], ran.summary()[metric], rel_tol=1e-12), metric
