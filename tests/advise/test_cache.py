"""The point cache: keys cover a point's whole identity; only complete, reusable points of
published advise runs are found; a found point is linked into the new run."""

from __future__ import annotations

import json

import math

from profcompare.advisor.cache import CACHE_INDEX, find_cached, index_document, index_entry, link_point, point_key
from profcompare.analysis.advise_results import POINT_METRICS

IDENTITY = {"execution": "compile-only", "backend": "sim", "addons_generation": "3.4", "version": "0.1.0"}


def test_the_key_covers_the_whole_identity():
    base = point_key("mnist", "onchip", {"replicas": 4, "hidden": 512}, **IDENTITY)
    assert base == point_key("mnist", "onchip", {"hidden": 512, "replicas": 4}, **IDENTITY)  # order does not matter
    changed = [
        point_key("gpt", "onchip", {"replicas": 4, "hidden": 512}, **IDENTITY),
        point_key("mnist", "offchip", {"replicas": 4, "hidden": 512}, **IDENTITY),
        point_key("mnist", "onchip", {"replicas": 4, "hidden": 256}, **IDENTITY),
        point_key("mnist", "onchip", {"replicas": 4, "hidden": 512}, **{**IDENTITY, "execution": "numeric"}),
        point_key("mnist", "onchip", {"replicas": 4, "hidden": 512}, **{**IDENTITY, "backend": "sdk"}),
        point_key("mnist", "onchip", {"replicas": 4, "hidden": 512}, **{**IDENTITY, "addons_generation": "3.0"}),
        point_key("mnist", "onchip", {"replicas": 4, "hidden": 512}, **{**IDENTITY, "version": "0.2.0"}),
    ]
    assert len({base, *changed}) == 8 and len(base) == 64


def _point(run, label, status="ok", report=True):
    directory = run / label
    directory.mkdir(parents=True)
    if report:
        (directory / "profile.sqlite").write_bytes(b"report")
    (directory / "run.json").write_text(json.dumps({"status": status, "report_files": ["profile.sqlite"]}))
    return directory


def test_only_reusable_points_of_published_runs_are_found(tmp_path):
    run = tmp_path / "advise-1"
    _point(run, "ok-point")
    _point(run, "oom-point", status="oom")
    _point(run, "failed-point", status="failed")
    _point(run, "no-report", report=False)
    metrics = {m: 1.0 for m in POINT_METRICS} | {"samples_per_second": math.nan}
    entries = {key: index_entry(label, status, metrics) for key, label, status in (
        ("k-ok", "ok-point", "ok"), ("k-oom", "oom-point", "ok"), ("k-failed", "failed-point", "failed"),
        ("k-missing", "no-report", "ok"), ("k-escape", "../elsewhere", "ok"))}
    (run / CACHE_INDEX).write_text(json.dumps(index_document(entries)))
    hidden = tmp_path / ".advise-2.tmp-1"
    _point(hidden, "ok-point")
    (hidden / CACHE_INDEX).write_text(json.dumps(index_document({"k-hidden": index_entry("ok-point", "ok", metrics)})))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / CACHE_INDEX).write_text("{not json")
    found = find_cached(tmp_path, ["k-ok", "k-oom", "k-failed", "k-missing", "k-escape", "k-hidden", "k-unknown"])
    assert {key: (hit.directory, hit.status) for key, hit in found.items()} == {
        "k-ok": (run / "ok-point", "ok"), "k-oom": (run / "oom-point", "oom")}
    # the figures recorded with the point's status are reused; recorded with another status, they are not
    assert found["k-ok"].metrics["max_tile_bytes"] == 1.0 and math.isnan(found["k-ok"].metrics["samples_per_second"])
    assert found["k-oom"].metrics is None


def test_a_found_point_is_linked_into_the_new_run(tmp_path):
    source = _point(tmp_path / "old", "p")
    link_point(source, tmp_path / "new" / "p")
    assert (tmp_path / "new" / "p" / "profile.sqlite").read_bytes() == b"report"
    assert json.loads((tmp_path / "new" / "p" / "run.json").read_text())["status"] == "ok"
