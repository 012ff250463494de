"""One tile explained (profcompare/analysis/tile_detail.py), on two 4-tile reports whose every
figure is chosen by hand (analysis_builders.TARGET): a budget of 1,000 B per tile; in base tile 1 is the fullest (1,100 B,
100 B over budget) and holds the matmul's peak; in new tile 0 is (1,050 B) and tile 1 fits."""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest
from analysis_builders import META, TARGET, report
from placed_report import placed_report

from profcompare.analysis import tile_detail as td
from profcompare.comparison import compare
from profcompare.comparison import tile_detail as ctd
from profcompare.model import Report, make_frame

# steps: 0 load, 1 layer/matmul, 2 update
_PROGRAMS = ["load", "layer/matmul", "update"]


def _variables() -> pd.DataFrame:
    # (name, bytes, always live, kind, tiles, first, last)
    rows = [
        ("w", 800, True, "weight", 4, None, None),
        ("act", 400, False, "activation", 2, 0, 1),
        ("partials", 500, False, "other", 1, 1, 1),
        ("grad", 200, False, "gradient", 4, 2, 2),
    ]
    names = ("name", "bytes", "always_live", "kind", "tiles", "first_step", "last_step")
    data = {c: [r[i] for r in rows] for i, c in enumerate(names)}
    return make_frame("variables", {**data, "dtype": ["float32"] * 4, "shape": ["[1]"] * 4})


def _liveness(nal: list[int]) -> pd.DataFrame:
    return make_frame("liveness", {"step": [0, 1, 2], "program": _PROGRAMS, "program_type": ["OnTileExecute"] * 3,
                                   "not_always_live_bytes": nal})


def _tiles(including: list[int], always: list[int], nal: list[int], code: list[int],
           regions: dict[str, list[int]] | None) -> pd.DataFrame:
    excluding = [a + n for a, n in zip(always, nal, strict=True)]
    data: dict[str, list[int]] = {
        "tile": [0, 1, 2, 3], "ipu": [0, 0, 0, 0], "bytes_including_gaps": including,
        "bytes_excluding_gaps": excluding, "always_live_bytes": always, "not_always_live_peak_bytes": nal,
        "vertexCode": code, "variable": [e - c for e, c in zip(excluding, code, strict=True)],
        **(regions or {}),
    }
    return make_frame("tiles", data)


@pytest.fixture
def base() -> Report:
    # tile 1: 300 B always live + 740 B peak = 1,040 B allocated: 500 non-interleaved, 440
    # interleaved, 100 beyond the 1,000 B tile; 60 B of gaps make its 1,100 B
    regions = {"non_interleaved_bytes": [300, 500, 250, 250], "interleaved_bytes": [80, 440, 50, 50],
               "overflow_bytes": [0, 100, 0, 0], "gap_bytes": [20, 60, 0, 0]}
    tiles = _tiles([400, 1100, 300, 300], [200, 300, 200, 200], [180, 740, 100, 100], [100, 150, 100, 100], regions)
    return report(tiles=tiles, variables=_variables(), liveness=_liveness([100, 700, 250]))


@pytest.fixture
def new() -> Report:
    # no region columns (a source that does not record them), the peak moved to the update
    tiles = _tiles([1050, 900, 300, 300], [200, 300, 200, 200], [800, 600, 100, 100], [100, 150, 100, 100], None)
    return report(tiles=tiles, variables=_variables(), liveness=_liveness([100, 500, 900]))


def test_the_fullest_tile_in_detail(base: Report) -> None:
    detail = td.tile_detail(base)
    assert (detail.tile, detail.ipu, detail.bytes, detail.bytes_excluding_gaps) == (1, 0, 1100, 1040)
    assert (detail.always_live_bytes, detail.not_always_live_peak_bytes) == (300, 740)
    assert dict(detail.regions) == {"non_interleaved": 500, "interleaved": 440, "overflow": 100, "gap": 60}
    assert list(detail.categories.items()) == [("variable", 890), ("vertexCode", 150)]  # largest first
    assert (detail.peak_step, detail.peak_program) == (1, "layer/matmul")
    assert detail.over_budget and detail.pct_of_budget == 110.0
    assert detail.median_bytes == 350.0 and detail.times_median == pytest.approx(1100 / 350)
    # live at step 1: act (0..1) and partials (1..1); grad is live at step 2 only, w always
    expected = pd.DataFrame({"name": pd.Series(["partials", "act"], dtype=object), "bytes": [500, 400],
                             "kind": pd.Series(["other", "activation"], dtype=object), "tiles": [1, 2],
                             "bytes_on_tile": pd.array([pd.NA, pd.NA], dtype="Int64")})
    pd.testing.assert_frame_equal(detail.live_variables, expected)
    assert detail.placement_recorded is False  # variables record a tile count, not which tiles


def test_a_tile_asked_for_and_unknown_regions(new: Report) -> None:
    detail = td.tile_detail(new, 2)
    assert (detail.tile, detail.bytes, detail.over_budget) == (2, 300, False)
    # no region columns: unknown, but the gaps follow from the totals (300 - 300)
    assert dict(detail.regions) == {"non_interleaved": None, "interleaved": None, "overflow": None, "gap": 0}
    assert td.tile_detail(new, 0).regions["gap"] == 50
    assert detail.live_variables["name"].tolist() == ["grad"]  # the peak is step 2 in new


def test_why_the_fullest_tile_is_the_fullest(base: Report, new: Report) -> None:
    # base: median tile (300, 300, 400, 1,100) = 350 B; median peak (100, 100, 180, 740) = 140 B,
    # 600 B above it against 100 B of always-live memory above its median (200 B)
    assert td.why_fullest(base) == (
        "tile 1 is the fullest: 1.1 KiB, 3.1x the median tile (350 B); it holds 740 B of not-always-live "
        "memory at its peak against a median of 140 B; the replica's not-always-live memory peaks at step 1 "
        "(layer/matmul); it is 100 B over its 1,000 B budget.")
    # new: median tile (300, 300, 900, 1,050) = 600 B, 1,050 / 600 = 1.75
    assert td.why_fullest(new) == (
        "tile 0 is the fullest: 1.0 KiB, 1.8x the median tile (600 B); it holds 800 B of not-always-live "
        "memory at its peak against a median of 350 B; the replica's not-always-live memory peaks at step 2 "
        "(update); it is 50 B over its 1,000 B budget.")


def test_a_tile_full_of_always_live_memory_names_its_largest_category(base: Report) -> None:
    tiles = base.tiles.copy()
    tiles.loc[3, ["bytes_including_gaps", "bytes_excluding_gaps", "always_live_bytes", "vertexCode"]] = [
        1500, 1500, 1400, 1300]
    tiles.loc[3, "variable"] = 200
    heavy = dataclasses.replace(base, tiles=tiles)
    # tiles (300, 400, 1,100, 1,500): median 750 B; always live 1,400 B against a median of
    # (200, 200, 300, 1,400) 250 B; its peak, 100 B, is below the median peak (140 B)
    assert td.why_fullest(heavy) == (
        "tile 3 is the fullest: 1.5 KiB, 2.0x the median tile (750 B); it holds 1.4 KiB of always-live "
        "memory against a median of 250 B; its largest category is vertexCode (1.3 KiB); "
        "it is 500 B over its 1,000 B budget.")


def _with_tile_1(base: Report, including: int, gap: int) -> Report:
    tiles = base.tiles.copy()
    tiles.loc[1, "bytes_including_gaps"] = including
    tiles["gap_bytes"] = pd.array([20, gap, 0, 0], dtype="Int64")
    return dataclasses.replace(base, tiles=tiles)


def test_a_tile_full_of_gaps_says_so(base: Report) -> None:
    # tile 1 spans 1,040 B of data + 2,000 B of gaps: gaps (20, 2,000, 0, 0), median 10 B, exceed
    # their median by 1,990 B, more than its peak (600 B) or always-live memory (100 B) do
    gappy = _with_tile_1(base, 3040, 2000)
    assert td.why_fullest(gappy) == (
        "tile 1 is the fullest: 3.0 KiB, 8.7x the median tile (350 B); 2.0 KiB of it are gaps (address space its "
        "data spans but does not use) against a median of 10 B; it is 2.0 KiB over its 1,000 B budget.")


def test_gaps_larger_than_the_data_are_named_when_every_tile_has_them(base: Report) -> None:
    # every tile has 5,000 B of gaps more: they are the largest part of tile 1 (5,060 of 6,100 B), not
    # what sets it apart (their median is 5,010 B); the median tile is (5,300 + 5,400) / 2 = 5,350 B
    tiles = base.tiles.copy()
    tiles["bytes_including_gaps"] += 5000
    tiles["gap_bytes"] = tiles["gap_bytes"] + 5000
    assert td.why_fullest(dataclasses.replace(base, tiles=tiles)) == (
        "tile 1 is the fullest: 6.0 KiB (4.9 KiB of it gaps), 1.1x the median tile (5.2 KiB); it holds 740 B of "
        "not-always-live memory at its peak against a median of 140 B; the replica's not-always-live memory peaks "
        "at step 1 (layer/matmul); it is 5.0 KiB over its 1,000 B budget.")


def test_bad_tiles_are_refused(base: Report) -> None:
    with pytest.raises(td.TileDetailError, match=r"tile 4 is not in .*: its tiles are 0 to 3"):
        td.tile_detail(base, 4)
    empty = report()
    with pytest.raises(td.TileDetailError, match="records no per-tile memory"):
        td.why_fullest(empty)
    with pytest.raises(td.TileDetailError, match="neither report records per-tile memory"):
        ctd.compare_tiles_detail(compare(empty, empty))


def test_each_sides_fullest_tile_and_the_largest_change_side_by_side(base: Report, new: Report) -> None:
    foci = ctd.compare_tiles_detail(compare(base, new))
    # tile 0 is new's fullest and changed most (400 -> 1,050 B, +650; tile 1 -200)
    assert [(f.tile, f.reasons) for f in foci] == [(1, ("fullest in base",)),
                                                   (0, ("fullest in new", "largest change"))]
    figures = foci[0].figures.set_index("figure")
    assert figures.index.tolist() == ["bytes", "bytes_excluding_gaps", "always_live_bytes",
                                      "not_always_live_peak_bytes", "non_interleaved_bytes", "interleaved_bytes",
                                      "overflow_bytes", "gap_bytes", "vertexCode", "variable"]
    assert figures.loc["bytes"].tolist() == [1100, 900, -200]
    assert figures.loc["not_always_live_peak_bytes"].tolist() == [740, 600, -140]
    assert figures.loc["overflow_bytes"].tolist()[0] == 100 and figures.loc["overflow_bytes"].isna().tolist()[1:] == [True, True]
    assert figures.loc["gap_bytes"].tolist() == [60, 0, -60]
    assert figures.loc["variable"].tolist() == [890, 750, -140]
    asked = ctd.compare_tiles_detail(compare(base, new), tile=3)
    assert [(f.tile, f.reasons) for f in asked] == [(3, ("asked for",))]
    with pytest.raises(td.TileDetailError, match="tile 7 is not in"):
        ctd.compare_tiles_detail(compare(base, new), tile=7)


def test_tiles_that_crossed_the_budget(base: Report, new: Report) -> None:
    crossed = ctd.crossed_budget(compare(base, new))
    expected = pd.DataFrame({"tile": [0, 1], "ipu": [0, 0], "base_bytes": [400, 1100], "new_bytes": [1050, 900],
                             "delta_bytes": [650, -200],
                             "crossing": pd.Series(["over in new", "under in new"], dtype=object)})
    pd.testing.assert_frame_equal(crossed, expected)
    assert ctd.crossed_budget(compare(base, base)).empty


def test_histogram_of_tile_bytes_base_over_new(base: Report, new: Report) -> None:
    # 10 bins of 110 B up to the largest tile (1,100 B); the last bin holds its upper edge
    hist = td.tile_histogram(base, new)
    assert hist["from_bytes"].tolist() == list(range(0, 1100, 110))
    assert hist["to_bytes"].tolist() == list(range(110, 1210, 110))
    assert hist["base_tiles"].tolist() == [0, 0, 2, 1, 0, 0, 0, 0, 0, 1]
    assert hist["new_tiles"].tolist() == [0, 0, 2, 0, 0, 0, 0, 0, 1, 1]
    assert hist["delta_tiles"].tolist() == [0, 0, 0, -1, 0, 0, 0, 0, 1, 0]
    one = td.tile_histogram(base, bins=2)
    assert one.columns.tolist() == ["from_bytes", "to_bytes", "base_tiles"]
    assert one["base_tiles"].tolist() == [3, 1]
    assert td.tile_histogram(report()).empty



# --- which tiles hold each variable (variable_tiles): tests/analysis/placed_report.py ----------
_PLACED_TARGET = dataclasses.replace(TARGET, tiles_per_ipu=8)


def _placed() -> Report:
    return placed_report(dataclasses.replace(META, target=_PLACED_TARGET))


def _listed(detail: td.TileDetail) -> list[tuple[str, int]]:
    return [(str(n), int(b)) for n, b in zip(detail.live_variables["name"], detail.live_variables["bytes_on_tile"])]


def test_a_tile_lists_the_variables_placed_on_it_with_their_bytes_there() -> None:
    placed = _placed()
    assert td.placement_recorded(placed)
    tile2 = td.tile_detail(placed, 2)
    # A and B overlap on tiles 2-3 at step 1: the tile's own peak (200 B)
    assert (tile2.peak_step, tile2.peak_program, tile2.tile_peak) == (1, "layer/matmul", True)
    assert _listed(tile2) == [("A", 100), ("B", 100)]
    assert tile2.placement_recorded is True
    tile5 = td.tile_detail(placed, 5)
    # only B (and the always-live W) sit on tile 5; B is live at steps 1-2, so the first of them
    assert (tile5.peak_step, tile5.tile_peak) == (1, True)
    assert _listed(tile5) == [("B", 100), ("W", 50)]
    # tile 0 holds A alone: its peak is A's first step, not the replica's (step 1)
    assert td.tile_detail(placed, 0).peak_step == 0
    assert _listed(td.tile_detail(placed, 0)) == [("A", 100)]
    # tile 7 holds only the always-live W: the replica's peak step, W listed
    tile7 = td.tile_detail(placed, 7)
    assert (tile7.peak_step, tile7.tile_peak) == (1, False)
    assert _listed(tile7) == [("W", 50)]


def test_variables_on_a_tile_and_the_tiles_peak() -> None:
    on_tile = td.variables_on_tile(_placed(), 3)
    assert on_tile["name"].tolist() == ["A", "B"] and on_tile["bytes_on_tile"].tolist() == [100, 100]
    assert td.tile_peak_step(on_tile) == (1, 200)
    assert td.tile_peak_step(td.variables_on_tile(_placed(), 6)) == (None, 0)  # always-live only


def test_without_placement_the_replicas_live_set_is_listed(base: Report) -> None:
    assert not td.placement_recorded(base)
    assert td.variables_on_tile(base, 1).empty


def test_two_overlapping_variables_by_hand() -> None:
    """A on tiles 0-3 and B on tiles 2-5, 100 B a tile each, live together: tile 2 lists A and B
    with 100 B each, tile 5 only B."""
    placed = _placed()
    keep = placed.variables["name"] != "W"
    only_ab = dataclasses.replace(placed, variables=placed.variables[keep].reset_index(drop=True),
                                  variable_tiles=placed.variable_tiles.iloc[:2].reset_index(drop=True))
    assert _listed(td.tile_detail(only_ab, 2)) == [("A", 100), ("B", 100)]
    assert _listed(td.tile_detail(only_ab, 5)) == [("B", 100)]
