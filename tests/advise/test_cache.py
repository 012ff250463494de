"""The point cache: keys cover a point's whole identity; only complete, reusable points of
published advise runs are found; a found point is linked into the new run."""

from __future__ import annotations

import json

from profcompare.advise.cache import CACHE_INDEX, find_cached, index_document, link_point, point_key

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
    (run / CACHE_INDEX).write_text(json.dumps(index_document(
        {"k-ok": "ok-point", "k-oom": "oom-point", "k-failed": "failed-point", "k-missing": "no-report",
         "k-escape": "../elsewhere"})))
    hidden = tmp_path / ".advise-2.tmp-1"
    _point(hidden, "ok-point")
    (hidden / CACHE_INDEX).write_text(json.dumps(index_document({"k-hidden": "ok-point"})))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / CACHE_INDEX).write_text("{not json")
    found = find_cached(tmp_path, ["k-ok", "k-oom", "k-failed", "k-missing", "k-escape", "k-hidden", "k-unknown"])
    assert found == {"k-ok": run / "ok-point", "k-oom": run / "oom-point"}


def test_a_found_point_is_linked_into_the_new_run(tmp_path):
    source = _point(tmp_path / "old", "p")
    link_point(source, tmp_path / "new" / "p")
    assert (tmp_path / "new" / "p" / "profile.sqlite").read_bytes() == b"report"
    assert json.loads((tmp_path / "new" / "p" / "run.json").read_text())["status"] == "ok"
