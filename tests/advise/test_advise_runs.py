"""Advise runs for real on a tiny MNIST space (compile only): the run directory and its files,
the point cache (a repeated search runs nothing, an extended one only the new points), and the
advisor's figures against ``profcompare run`` of the same layout."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import profcompare as pc
from profcompare.advisor.cache import CACHE_INDEX
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
    # no published page names the staging directory the run was written in (it is gone)
    for html in (out / "first").rglob("*.html"):
        assert ".first.tmp-" not in html.read_text(), html
    front_page = (out / "first" / result.front["run_dir"].iloc[0] / "report.html").read_text()
    assert str(out / "first" / result.front["run_dir"].iloc[0] / "profile.sqlite") in front_page
    assert result.verdict.split(":")[0] in result._repr_html_()  # a notebook shows the verdict and the front
    index = json.loads((out / "first" / CACHE_INDEX).read_text())
    assert sorted(entry["dir"] for entry in index["entries"].values()) == sorted(points["run_dir"])
    listing = {run.name: run for run in list_runs(out)}
    assert listing["first"].kind == "advise" and len(listing["first"].jobs) == 4


def test_a_repeated_search_runs_nothing_and_an_extended_one_only_the_new_points(first, monkeypatch):
    out, result = first
    from profcompare.advisor import search

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


def test_each_point_keeps_its_report_summary_in_run_json(first):
    """The process that ran a point computed its report's summary (run.json ``summary``): the
    figures reading the report gives, to the last bit (null for NaN)."""
    out, result = first
    for run_dir in result.points["run_dir"]:
        directory = out / "first" / run_dir
        report = pc.open_report(directory)
        kept = read_run_json(directory)["summary"]
        expected = {**report.summary().to_dict(), "bytes_per_tile": float(report.meta.target.bytes_per_tile),
                    "num_replicas": float(report.meta.target.num_replicas)}
        assert set(kept) == set(expected)
        for metric, value in expected.items():
            assert (kept[metric] is None) if math.isnan(value) else kept[metric] == value, metric


def _counting_reads(patch):
    from profcompare.advisor import search

    reads = []
    reading = search.point_metrics

    def counted(directory):
        reads.append(directory)
        return reading(directory)

    patch.setattr(search, "point_metrics", counted)
    return reads


def test_the_search_reads_no_report_of_a_point_whose_process_returned_its_figures(tmp_path, monkeypatch):
    from profcompare.advisor import search

    with monkeypatch.context() as patch:
        reads = _counting_reads(patch)
        result = _advise(tmp_path, "fresh", set_values={"variant": ["onchip"]})
    assert result.new_points == 2 and reads == []
    for _, row in result.points.iterrows():  # the figures are the report's
        read = search.point_metrics(tmp_path / "fresh" / row["run_dir"])
        assert all((math.isnan(v) and math.isnan(row[m])) or row[m] == v for m, v in read.items())


def test_a_point_without_a_kept_summary_has_its_report_read(tmp_path, monkeypatch):
    """A run.json from before points kept their summary: the report is read, with the same figures."""
    from profcompare.advisor import search
    from profcompare.runner import write_json_atomic

    def run_then_forget(jobs, out, name, parallel):
        result = search.run_batch(jobs, out, name, parallel)
        for job in jobs:
            info = read_run_json(result.directory / job.label)
            del info["summary"]
            write_json_atomic(result.directory / job.label / "run.json", info)
        return result

    kept = _advise(tmp_path / "kept", "kept", set_values={"variant": ["onchip"]})
    with monkeypatch.context() as patch:  # another output root: no point cache to reuse
        reads = _counting_reads(patch)
        forgot = _advise(tmp_path / "forgot", "forgot", set_values={"variant": ["onchip"]}, executor=run_then_forget)
    assert len(reads) == 2
    pd.testing.assert_frame_equal(forgot.points.drop(columns=["run_dir"]), kept.points.drop(columns=["run_dir"]))
