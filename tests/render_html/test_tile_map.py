"""The tile map (render/tile_map.py): one cell per tile placed in software order, I/O tiles
flagged, a report's colours up to the budget, a comparison's symmetric about 0, and the histogram
chart's words."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from profcompare.analysis.tile_detail import tile_histogram
from profcompare.comparison import compare
from profcompare.model import Report, ReportMeta, Target, make_frame
from profcompare.render import tile_map

#: 2 IPUs of 100 tiles (so 2 rows of 64 each), the first 4 tiles of each IPU for I/O
TARGET = Target(architecture="Mk2", num_ipus=2, tiles_per_ipu=100, bytes_per_tile=1000, clock_hz=1.0e9,
                ipus_per_replica=2)


def _report(values: list[int], io_tiles: int = 4) -> Report:
    n = len(values)
    tiles = make_frame("tiles", {"tile": list(range(n)), "ipu": [t // 100 for t in range(n)],
                                 "bytes_including_gaps": values, "bytes_excluding_gaps": values,
                                 "always_live_bytes": [v // 2 for v in values],
                                 "not_always_live_peak_bytes": [v - v // 2 for v in values],
                                 "variable": values})
    meta = ReportMeta(source="", format="store", producer="test", simulated=True, target=TARGET,
                      replication={"io_tiles_per_ipu": io_tiles} if io_tiles else {})
    return Report.build(meta, tiles=tiles)


@pytest.fixture
def base() -> Report:
    return _report([500] * 200)


@pytest.fixture
def new() -> Report:
    values = [500] * 200
    values[0], values[150], values[199] = 1500, 200, 700  # +1,000 B, -300 B, +200 B
    return _report(values)


def test_one_cell_per_tile_placed_in_software_order(base: Report) -> None:
    data = tile_map.tile_map_data(base)
    cells = data.cells
    assert len(cells) == 200 and cells["tile"].tolist() == list(range(200))
    assert (data.rows_per_ipu, data.ipus, data.total_rows) == (2, 2, 5)  # a blank row between the IPUs
    # tile 65 of IPU 0: row 1, column 1; tile 100 (IPU 1's first) starts IPU 1's rows after the gap
    assert cells.loc[65, ["ipu", "column", "row"]].tolist() == [0, 1, 1]
    assert cells.loc[100, ["ipu", "column", "row"]].tolist() == [1, 0, 3]
    assert cells.loc[199, ["ipu", "column", "row"]].tolist() == [1, 35, 4]
    assert len(set(zip(cells["column"], cells["row"]))) == 200  # no two tiles share a cell


def test_io_tiles_are_flagged(base: Report) -> None:
    io = tile_map.tile_map_data(base).cells["io"]
    assert np.flatnonzero(io.to_numpy()).tolist() == [0, 1, 2, 3, 100, 101, 102, 103]
    assert not tile_map.tile_map_data(_report([500] * 200, io_tiles=0)).cells["io"].any()


def test_a_report_is_coloured_up_to_the_budget() -> None:
    data = tile_map.tile_map_data(_report([0, 500, 1000, 1001] + [0] * 196))
    assert data.scale == 1000 and not data.diverging
    assert data.cells["colour"].tolist()[:4] == ["#ffffff", "#8498b5", "#08306b", tile_map.OVER_BUDGET_COLOUR]


def test_a_comparison_is_coloured_symmetrically_about_zero(base: Report, new: Report) -> None:
    data = tile_map.tile_map_data(compare(base, new))
    assert data.diverging and data.scale == 1000  # the largest |change|
    colours = data.cells["colour"]
    assert colours[0] == "#d73027"  # +1,000 B: the full red
    assert colours[1] == "#ffffff"  # no change
    # the same change either way is the same depth: +300 B and -300 B are 30% of the way from
    # white to the full red (215, 48, 39) and green (26, 152, 80)
    assert tile_map.diverging_colours(np.array([300, -300]), 1000).tolist() == ["#f3c1be", "#bae0ca"]
    assert tile_map.diverging_colours(np.array([-1000]), 1000).tolist() == ["#1a9850"]
    assert colours[150] == tile_map.diverging_colours(np.array([-300]), 1000)[0]


def test_the_chart_draws_every_tile_with_its_breakdown(base: Report, new: Report) -> None:
    chart = tile_map.tile_map_chart(compare(base, new))
    text = json.dumps(chart.item)
    assert "I/O tiles are outlined" in chart.note and "software order" in chart.note
    assert "The 8 I/O tiles are outlined." in chart.note
    assert "Colour from green (-1000 B) through white (no change) to red (+1000 B)" in chart.note
    assert "largest categories" in text and "not-always-live peak" in text
    report_chart = tile_map.tile_map_chart(base)
    assert report_chart.note.startswith("200 tiles. Colour from white (0 B) to dark blue (1000 B, the budget); "
                                        "0 tiles over the budget in red.")


def test_the_histogram_chart_gives_its_counts_in_words(base: Report, new: Report) -> None:
    chart = tile_map.histogram_chart(tile_histogram(base, new), ("base", "new"))
    assert chart.note == ("Tiles per bin (lower bound included, upper excluded but for the last bin): "
                          "base: 450 B to 600 B: 200. new: 150 B to 300 B: 1; 450 B to 600 B: 197; "
                          "600 B to 750 B: 1; 1.3 KiB to 1.5 KiB: 1.")


def test_a_report_without_tiles_draws_an_empty_map() -> None:
    empty = dataclasses.replace(_report([500] * 200), tiles=make_frame("tiles"))
    assert tile_map.tile_map_chart(empty).note == "no per-tile data"


def test_a_reports_map_keeps_its_cells_edges_and_names_its_ipus(base: Report) -> None:
    chart = tile_map.tile_map_chart(base)
    source = next(m for m in _models(chart.item) if m.get("attributes", {}).get("name") == "chart-tile-map:tiles")
    columns = dict(source["attributes"]["data"]["entries"])
    assert columns["top"]["dtype"] == "float64"  # the cells' upper edges, never a hover text
    assert len(columns["categories"]) == 200
    assert "IPU 0 on top, then IPU 1, each after a blank row." in chart.note


def _models(value):  # type: ignore[no-untyped-def]
    """Every serialized Bokeh model in a JSON item."""
    if isinstance(value, dict):
        if value.get("type") == "object":
            yield value
        for inner in value.values():
            yield from _models(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _models(inner)
