"""The "Tile detail" section (render/sections/tile_detail.py) on the MNIST samples: the fullest
tiles (tile 0 in both: 105,739 B = 103.3 KiB on chip, 54,280 B = 53.0 KiB off chip), the
sentences saying why, and the tables drawn as text and Markdown (golden files)."""

from __future__ import annotations

import dataclasses

import pytest
from render_text_helpers import check_golden, scrub

from profcompare.analysis import tile_detail as analysis
from profcompare.comparison import Comparison
from profcompare.model import Report, make_frame
from profcompare.render.markdown import render_document as render_markdown
from profcompare.render.sections.tile_detail import (
    PLACEMENT_NOTE,
    comparison_tile_detail_section,
    report_tile_detail_section,
    tile_detail_document,
)
from profcompare.render.text import render_document as render_text

# onchip tile 0: always live 15,493 B + not-always-live peak 90,150 B (the 150,000 + 20,000 B
# peak of step 8 spread over 1,472 tiles, plus 90,000 B on the hot tile) + 96 B of gaps
ONCHIP_WHY = ("tile 0 is the fullest: 103.3 KiB, 6.7x the median tile (15.4 KiB); it holds 88.0 KiB of "
              "not-always-live memory at its peak against a median of 149 B; the replica's not-always-live memory "
              "peaks at step 8 (layer3/bwd/matmul).")
OFFCHIP_WHY = ("tile 0 is the fullest: 53.0 KiB, 3.8x the median tile (13.9 KiB); it holds 40.7 KiB of "
               "not-always-live memory at its peak against a median of 1.7 KiB; the replica's not-always-live "
               "memory peaks at step 16 (optimizer/adam).")


def _column(table, index: int) -> list[str]:
    return [row[index].text for row in table.rows]


def test_the_fullest_tiles_of_the_samples(onchip: Report, offchip: Report) -> None:
    base, new = analysis.tile_detail(onchip), analysis.tile_detail(offchip)
    assert (base.tile, base.bytes, base.always_live_bytes, base.not_always_live_peak_bytes) == (0, 105_739, 15_493, 90_150)
    assert (new.tile, new.bytes, new.always_live_bytes, new.not_always_live_peak_bytes) == (0, 54_280, 12_494, 41_690)
    assert (base.median_bytes, new.median_bytes) == (15_738.0, 14_279.0)
    assert base.regions["gap"] == 96 and base.regions["interleaved"] is None  # the samples record no regions
    assert analysis.why_fullest(onchip) == ONCHIP_WHY
    assert analysis.why_fullest(offchip) == OFFCHIP_WHY


def test_the_report_section(onchip: Report) -> None:
    section = report_tile_detail_section(onchip)
    assert (section.id, section.title) == ("tile-detail", "Tile detail")
    assert section.items == (ONCHIP_WHY,)
    assert [t.id for t in section.tables] == ["tile-detail-table", "tile-variables-table", "tile-histogram-table"]
    detail = section.tables[0]
    assert [c.header for c in detail.columns] == ["Figure", "Tile 0"]
    assert list(zip(_column(detail, 0), _column(detail, 1), strict=True)) == [
        ("Bytes (incl. gaps)", "103.3 KiB"), ("Of budget", "16.5%"), ("Bytes (excl. gaps)", "103.2 KiB"),
        ("Always-live on the tile", "15.1 KiB"), ("Not-always-live peak on the tile", "88.0 KiB"), ("Non-interleaved region", "n/a"),
        ("Interleaved region", "n/a"), ("Overflow (beyond the tile)", "n/a"), ("Gaps", "96 B"),
        ("Category vertexCode", "2.3 KiB"), ("Category variable", "8.7 KiB")]
    live = section.tables[1]
    assert _column(live, 0) == ["layer0/gelu/output", "layer1/gelu/output", "layer2/gelu/output", "layer3/gelu/output"]
    assert live.note == "4 of 4 variables live at step 8 (layer3/bwd/matmul)."
    assert PLACEMENT_NOTE in section.notes
    other = report_tile_detail_section(onchip, tile=3, top=2)
    assert other.items == ("tile 3: 15.4 KiB, 2.5% of the budget, 1.0x the median tile (15.4 KiB).",)
    assert len(other.tables[1].rows) == 2


def test_the_comparison_section(comparison: Comparison) -> None:
    section = comparison_tile_detail_section(comparison)
    assert section.items == (f"base: {ONCHIP_WHY}", f"new: {OFFCHIP_WHY}", "No tile crossed the 624.0 KiB budget.")
    assert [t.id for t in section.tables] == ["tile-detail-table", "tile-variables-table", "tile-histogram-table"]
    detail = section.tables[0]
    assert [c.header for c in detail.columns] == ["Tile", "Figure", "Base", "New", "Delta"]
    # tile 0 is both sides' fullest; tile 1 changed most (75,739 -> 14,280 B: -61,459 B)
    assert [t for t in _column(detail, 0) if t] == ["0 (fullest in base, fullest in new)", "1 (largest change)"]
    first = [tuple(cell.text for cell in row) for row in detail.rows[:4]]
    assert first == [
        ("0 (fullest in base, fullest in new)", "Bytes (incl. gaps)", "103.3 KiB", "53.0 KiB", "-50.3 KiB"),
        ("", "Bytes (excl. gaps)", "103.2 KiB", "52.9 KiB", "-50.3 KiB"),
        ("", "Always-live on the tile", "15.1 KiB", "12.2 KiB", "-2.9 KiB"),
        ("", "Not-always-live peak on the tile", "88.0 KiB", "40.7 KiB", "-47.3 KiB")]
    assert detail.rows[0][4].tone == "good"
    changed = next(row for row in detail.rows if row[0].text == "1 (largest change)")
    assert [cell.text for cell in changed] == ["1 (largest change)", "Bytes (incl. gaps)", "74.0 KiB", "13.9 KiB",
                                               "-60.0 KiB"]
    hist = section.tables[2]
    assert [c.header for c in hist.columns] == ["Tile bytes (incl. gaps)", "Base tiles", "New tiles", "Delta"]
    assert [tuple(cell.text for cell in row) for row in hist.rows[:2]] == [
        ("0 B to 10.3 KiB", "0", "0", "0"), ("10.3 KiB to 20.7 KiB", "1,469", "1,470", "+1")]


def test_tiles_that_crossed_the_budget_get_a_table(onchip: Report, offchip: Report) -> None:
    # shrink new's budget to 50 KiB: its tile 0 (53.0 KiB) goes over, no base tile was over 624 KiB
    small = offchip.with_meta(offchip.meta.replace(target=dataclasses.replace(offchip.meta.target,
                                                                              bytes_per_tile=50 * 1024)))
    from profcompare.comparison import compare

    section = comparison_tile_detail_section(compare(onchip, small))
    assert section.items[-1] == "1 tile crossed the 50.0 KiB / 624.0 KiB budget: 1 went over in new, 0 came back under."
    budget = next(t for t in section.tables if t.id == "tile-budget-table")
    assert [tuple(cell.text for cell in row) for row in budget.rows] == [
        ("0", "0", "103.3 KiB", "53.0 KiB", "-50.3 KiB", "over in new")]


def test_a_report_without_tiles_is_refused(onchip: Report) -> None:
    bare = dataclasses.replace(onchip, tiles=make_frame("tiles"))
    with pytest.raises(analysis.TileDetailError, match="onchip records no per-tile memory"):
        report_tile_detail_section(bare)


def test_the_comparison_as_text_and_markdown(comparison: Comparison) -> None:
    document = tile_detail_document(comparison)
    check_golden("tiles_compare.txt", scrub(render_text(document, width=120)))
    check_golden("tiles_onchip.md", scrub(render_markdown(tile_detail_document(comparison.base))))
