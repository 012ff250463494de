"""The interactive charts' data: buckets that keep peaks, the largest live variables per step,
the chart JSON (what hovering shows, what the toggles switch) and the page's size bound."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from html_fixtures import ESCAPE_NAME, build_report

from profcompare.analysis import views as analysis
from profcompare.comparison import compare
from profcompare.model import Report, make_frame
from profcompare.render import interactive
from profcompare.render.format import format_bytes


def _sources(item: dict) -> dict[str, dict]:
    """Every named ColumnDataSource of a Bokeh JSON item: name -> {column: values}."""
    found: dict[str, dict] = {}

    def decode(value):  # type: ignore[no-untyped-def]
        if isinstance(value, dict) and value.get("type") == "ndarray":
            import base64
            import gzip

            raw = base64.b64decode(value["array"]["data"])
            if raw[:2] == b"\x1f\x8b":  # Bokeh gzips larger arrays
                raw = gzip.decompress(raw)
            return np.frombuffer(raw, dtype=np.dtype(value["dtype"]).newbyteorder("<")).tolist()
        return value

    def walk(value):  # type: ignore[no-untyped-def]
        if isinstance(value, dict):
            if value.get("name") == "ColumnDataSource":
                attributes = value.get("attributes", {})
                entries = attributes.get("data", {}).get("entries", [])
                found[attributes.get("name") or value["id"]] = {k: decode(v) for k, v in entries}
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(item)
    return found


def test_buckets_keep_every_peak_and_trough() -> None:
    values = np.array([1, 5, 2, 2, 9, 3, 0, 4, 4, 1], dtype=float)
    cut = interactive.buckets(values, 4)  # 10 values in buckets of 3
    assert cut.start.tolist() == [0, 3, 6, 9] and cut.end.tolist() == [3, 6, 9, 10]
    assert cut.high.tolist() == [5, 9, 4, 1] and cut.low.tolist() == [1, 2, 0, 1]
    assert cut.argmax.tolist() == [1, 4, 7, 9] and cut.size == 3
    assert max(cut.high) == values.max() and min(cut.low) == values.min()
    short = interactive.buckets(values, 100)
    assert short.size == 1 and short.high.tolist() == values.tolist()


def test_buckets_skip_gaps_of_aligned_curves() -> None:
    cut = interactive.buckets(np.array([np.nan, np.nan, 3.0, np.nan, 7.0, 1.0]), 3)
    assert np.isnan(cut.high[0]) and cut.argmax[0] == -1  # a bucket of only gaps
    assert cut.high[1:].tolist() == [3.0, 7.0] and cut.low[1:].tolist() == [3.0, 1.0]
    assert cut.argmax[1:].tolist() == [2, 4]


def _report_with(intervals: list[tuple[str, int, int | None, int | None]]) -> Report:
    small = build_report("onchip")
    rows = {
        "name": [n for n, _, _, _ in intervals],
        "bytes": [b for _, b, _, _ in intervals],
        "always_live": [f is None for _, _, f, _ in intervals],
        "kind": ["activation"] * len(intervals),
        "dtype": ["float32"] * len(intervals),
        "shape": ["[1]"] * len(intervals),
        "tiles": [1] * len(intervals),
        "first_step": pd.array([f for _, _, f, _ in intervals], dtype="Int64"),
        "last_step": pd.array([last for _, _, _, last in intervals], dtype="Int64"),
    }
    return Report.build(small.meta, tiles=small.tiles, categories=small.categories, variables=make_frame("variables", rows),
                        liveness=small.liveness)


def test_largest_live_variables_by_hand() -> None:
    report = _report_with([
        ("w", 10_000, None, None),  # always live: never listed
        ("a", 100, 0, 4),
        ("b", 300, 2, 3),
        ("c", 200, 3, 9),
        ("d", 300, 5, 5),
        ("e", 50, 3, 3),
    ])
    top = analysis.largest_live_variables(report, [3, 5, 0, 7, 3], k=2)
    assert list(top.columns) == ["step", "rank", "name", "bytes"]
    assert top.to_dict("records") == [
        {"step": 0, "rank": 1, "name": "a", "bytes": 100},
        {"step": 3, "rank": 1, "name": "b", "bytes": 300},
        {"step": 3, "rank": 2, "name": "c", "bytes": 200},
        {"step": 5, "rank": 1, "name": "d", "bytes": 300},
        {"step": 5, "rank": 2, "name": "c", "bytes": 200},
        {"step": 7, "rank": 1, "name": "c", "bytes": 200},
    ]
    assert analysis.largest_live_variables(report, [12], k=3).empty


def test_largest_live_variables_agree_with_brute_force() -> None:
    rng = np.random.default_rng(5)
    n = 10_000  # more than one scan chunk
    first = rng.integers(0, 500, n)
    intervals = [(f"v{i}", int(rng.integers(1, 10**6)), int(f), int(f + rng.integers(0, 30))) for i, f in enumerate(first)]
    report = _report_with(intervals)
    steps = rng.integers(0, 540, 40)
    top = analysis.largest_live_variables(report, steps, k=3)
    frame = report.variables
    for step in np.unique(steps):
        live = frame[(frame["first_step"] <= step) & (frame["last_step"] >= step)]
        expected = live.sort_values("bytes", ascending=False, kind="stable").head(3)["name"].tolist()
        assert top.loc[top["step"] == step, "name"].tolist() == expected


@pytest.fixture(scope="module")
def comparison(onchip: Report, offchip: Report):
    return compare(onchip, offchip)


def test_liveness_chart_hover_fields_and_toggle_columns(comparison) -> None:
    chart = interactive.liveness_chart([comparison.base, comparison.new], ["base", "new"], aligned=comparison.liveness)
    assert chart.id == "chart-liveness" and chart.note == (f"All {len(comparison.liveness)} program steps drawn. Click the chart to list what is live "
                                                    "at that step below it.")
    assert chart.toggles[0].options == (("nal", "not-always-live bytes"), ("total", "always-live + not-always-live"))
    sources = _sources(json.loads(json.dumps(chart.item)))
    hover = next(s for s in sources.values() if "where" in s)
    aligned = comparison.liveness
    assert hover["where"] == [str(p) for p in aligned["position"]]
    new_steps = aligned["new_step"].astype("float").fillna(-1).astype(int).tolist()
    assert hover["r1_steps"] == [str(s) if s >= 0 else "–" for s in new_steps]
    assert hover["r1_nal"] == [format_bytes(v) for v in aligned["new_not_always_live_bytes"]]
    # new's step 2: the variable with the hostile name is live (steps 2-3), third largest
    at = new_steps.index(2)
    assert hover["r1_top"][at] == f"layer0/activation (8.0 KiB); layer1/activation (8.0 KiB); {ESCAPE_NAME} (4.0 KiB)"
    # the curves hold both columns the toggle switches between, in MiB (the axis unit)
    curve = sources["chart-liveness:curve:1"]
    always = float(comparison.new.tiles["always_live_bytes"].sum())
    nal = aligned["new_not_always_live_bytes"].astype("float").to_numpy() / 2**20
    np.testing.assert_allclose(np.array(curve["y_nal"][:-1], dtype=float), nal)
    np.testing.assert_allclose(np.array(curve["y_total"][:-1], dtype=float), nal + always / 2**20)
    assert curve["y"] == curve["y_nal"]


def test_long_liveness_is_bucketed_and_says_so() -> None:
    steps = 25_000
    small = build_report("onchip")
    values = np.full(steps, 1000, dtype="int64")
    values[12_345] = 7_000_000  # a one-step spike must survive the buckets
    liveness = make_frame("liveness", {"step": np.arange(steps), "program": [f"p{i % 7}" for i in range(steps)],
                                       "program_type": ["OnTileExecute"] * steps, "not_always_live_bytes": values})
    report = Report.build(small.meta, tiles=small.tiles, categories=small.categories, variables=small.variables,
                          liveness=liveness)
    chart = interactive.liveness_chart([report], ["report"])
    assert chart.note.startswith("25,000 steps drawn as 1,000 buckets of 25: the line is each bucket's maximum")
    sources = _sources(json.loads(json.dumps(chart.item)))
    curve = sources["chart-liveness:curve:0"]
    assert max(curve["y_nal"]) * 2**20 == pytest.approx(7_000_000)
    hover = next(s for s in sources.values() if "where" in s)
    spike = hover["where"].index("12,325–12,349")
    assert hover["r0_steps"][spike] == "12,325–12,349" and hover["r0_program"][spike] == f"p{12_345 % 7}"
    assert hover["r0_nal"][spike] == "6.7 MiB (max; min 1000 B)"


def test_tiles_chart_defaults_to_excluding_gaps(comparison) -> None:
    chart = interactive.tiles_chart([comparison.base, comparison.new], ["base", "new"])
    assert chart.toggles[0].options[0] == ("excl", "excluding gaps")
    sources = _sources(json.loads(json.dumps(chart.item)))
    curve = sources["chart-tiles:curve:0"]
    tiles = comparison.base.tiles
    assert [round(v * 1024) for v in curve["y"][:-1]] == tiles["bytes_excluding_gaps"].tolist()
    assert [round(v * 1024) for v in curve["y_incl"][:-1]] == tiles["bytes_including_gaps"].tolist()
    assert sources["chart-tiles:level:0"]["y"] == [624.0, 624.0]  # the tile budget, KiB


def test_chart_ids_are_stable_between_renders(comparison) -> None:
    first = interactive.liveness_chart([comparison.base, comparison.new], ["base", "new"], aligned=comparison.liveness)
    second = interactive.liveness_chart([comparison.base, comparison.new], ["base", "new"], aligned=comparison.liveness)
    assert json.dumps(first.item) == json.dumps(second.item)
    assert '"chart-liveness-1"' in json.dumps(first.item)


def test_bokeh_library_can_be_inlined() -> None:
    js = interactive.bokeh_js()
    assert len(js) > 500_000 and "</script" not in js.lower()


def _placed(item: dict, place: str) -> list[str]:
    """Names of the models a Bokeh figure of ``item`` holds in ``place`` (below, center, ...)."""
    names: list[str] = []

    def walk(value):  # type: ignore[no-untyped-def]
        if isinstance(value, dict):
            if value.get("name") == "Figure":
                names.extend(m.get("name", "") for m in value.get("attributes", {}).get(place, []) if isinstance(m, dict))
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(item)
    return names


def test_legends_sit_below_the_plot_area_and_captions_follow_the_toggles(comparison) -> None:
    liveness = interactive.liveness_chart([comparison.base, comparison.new], ["base", "new"], aligned=comparison.liveness)
    tiles = interactive.tiles_chart([comparison.base, comparison.new], ["base", "new"])
    for chart in (liveness, tiles):
        item = json.loads(json.dumps(chart.item))
        assert "Legend" in _placed(item, "below") and "Legend" not in _placed(item, "center")
    assert liveness.caption.startswith("Not-always-live bytes per program step.")
    assert list(liveness.option_captions) == ["nal", "total"]
    assert liveness.option_captions["nal"] == liveness.caption
    assert liveness.option_captions["total"].startswith("Always-live + not-always-live bytes per program step")
    assert tiles.option_captions["incl"].startswith("Memory per tile, including gaps")


def test_the_aligned_base_curve_holds_its_level_and_ends_with_its_program(comparison) -> None:
    chart = interactive.liveness_chart([comparison.base, comparison.new], ["base", "new"], aligned=comparison.liveness)
    base = np.array(_sources(json.loads(json.dumps(chart.item)))["chart-liveness:curve:0"]["y_nal"][:-1], dtype=float)
    aligned = comparison.liveness
    missing = aligned["base_step"].isna().to_numpy().nonzero()[0].tolist()
    assert missing == [9, 11]  # remote load and store: only the new (off-chip) program has them
    assert base[9] == base[8] and not np.isnan(base[:11]).any() and np.isnan(base[11])
