"""The "Tile detail" section of a report that records which tiles hold each variable, drawn in
every medium (terminal, Markdown, the tiles command's JSON, the JSON export's sections and the
HTML page), on a hand-made 8-tile report: A (steps 0-1) on tiles 0-3 with 100 B each, B (steps
1-2) on tiles 2-5 with 100 B each, the always-live W on tiles 4-7 with 50 B each. Tile 2, the
fullest (200 B), holds A and B at its peak step 1; tile 5 holds only B (and W)."""

from __future__ import annotations

import json

import pytest

from profcompare.comparison import compare
from profcompare.model import Report, ReportMeta, Target
from profcompare.render.markdown import render_document as render_markdown
from profcompare.render.page.export import sections_data
from profcompare.render.sections.order import RowLimits, comparison_sections, report_sections
from profcompare.render.sections.tile_detail import (
    PLACED_NOTE,
    PLACEMENT_NOTE,
    PVA_PLACEMENT_NOTE,
    report_tile_detail_section,
    tile_detail_document,
)
from profcompare.render.text import render_document as render_text
from profcompare.render.tile_detail_json import tile_detail_json
from tests.analysis.placed_report import placed_report

TARGET = Target(architecture="Mk2", num_ipus=1, tiles_per_ipu=8, bytes_per_tile=1000, clock_hz=1.0e9)


def _placed(fmt: str = "store", placed: bool = True) -> Report:
    meta = ReportMeta(source="", format=fmt, producer="test", simulated=fmt == "store", target=TARGET)
    return placed_report(meta, placed)


def _variables(section) -> list[tuple[str, str]]:
    table = next(t for t in section.tables if t.id == "tile-variables-table")
    headers = [c.header for c in table.columns]
    name, on_tile = headers.index("Variable"), headers.index("On tile")
    return [(row[name].text, row[on_tile].text) for row in table.rows]


def test_the_fullest_tile_lists_the_variables_placed_on_it() -> None:
    section = report_tile_detail_section(_placed())
    assert _variables(section) == [("A", "100 B"), ("B", "100 B")]
    assert section.items == ("tile 2 is the fullest: 200 B, 1.6x the median tile (125 B); it holds 200 B of "
                             "not-always-live memory at its peak against a median of 100 B; the variables placed on "
                             "it peak at step 1 (layer/matmul).",)
    table = next(t for t in section.tables if t.id == "tile-variables-table")
    assert table.note == "2 of 2 variables on tile 2 at its peak step 1 (layer/matmul)."
    assert section.notes[0] == PLACED_NOTE


def test_a_tile_asked_for_lists_only_what_it_holds() -> None:
    section = report_tile_detail_section(_placed(), tile=5)
    assert _variables(section) == [("B", "100 B"), ("W", "50 B")]


def test_the_section_in_text_and_markdown() -> None:
    document = tile_detail_document(_placed(), tile=5)
    text = render_text(document, width=200)
    assert "Variable   Kind       On tile   Bytes   Tiles" in text
    assert "B          gradient     100 B   400 B       4" in text
    assert "W          weight        50 B   200 B       4" in text
    assert "A " not in text.split("Variable   Kind")[1].split("\n\n")[0]  # A is not on tile 5
    markdown = render_markdown(document)
    assert "| Variable | Kind | On tile | Bytes | Tiles |" in markdown
    assert "| B | gradient | 100 B | 400 B | 4 |" in markdown


def test_the_tiles_command_json() -> None:
    data = tile_detail_json(_placed(), tile=2)
    assert data["schema_version"] == 9
    detail = data["tile"]
    assert (detail["placement_recorded"], detail["tile_peak"], detail["peak_step"]) == (True, True, 1)
    assert [(v["name"], v["bytes_on_tile"], v["bytes"]) for v in detail["live_variables"]] == [("A", 100, 400),
                                                                                                ("B", 100, 400)]


def test_the_section_is_in_every_view_of_a_report_and_a_comparison() -> None:
    report = _placed()
    ids = [s.id for s in report_sections(report, RowLimits.page())]
    assert ids[ids.index("tiles") + 1] == "tile-detail"
    exported = json.loads(json.dumps(sections_data(report_sections(report, RowLimits.page()))))
    tile = next(s for s in exported if s["id"] == "tile-detail")
    assert tile["title"] == "Tile detail"
    cmp = compare(_placed(placed=False), report)
    sections = comparison_sections(cmp, RowLimits.every(10), names={"tile-detail"})
    assert [s.id for s in sections] == ["tile-detail"]
    # base does not record the placement, new does: each side says what its rows are
    assert sections[0].notes[:2] == (f"new: {PLACED_NOTE}", f"base: {PLACEMENT_NOTE}")
    rows = next(t for t in sections[0].tables if t.id == "tile-variables-table").rows
    assert [(r[0].text, r[2].text, r[4].text) for r in rows] == [("base", "A", "n/a"), ("base", "B", "n/a"),
                                                                 ("new", "A", "100 B"), ("new", "B", "100 B")]


def test_a_pva_profile_says_why_it_has_no_placement() -> None:
    section = report_tile_detail_section(_placed("pva", placed=False))
    assert section.notes[:2] == (PLACEMENT_NOTE, PVA_PLACEMENT_NOTE)
    table = next(t for t in section.tables if t.id == "tile-variables-table")
    assert "On tile" not in [c.header for c in table.columns]


def test_a_report_without_tiles_has_no_tile_detail_section() -> None:
    report = Report.build(ReportMeta(source="", format="store", producer="test", simulated=True, target=TARGET))
    assert "tile-detail" not in [s.id for s in report_sections(report, RowLimits.page())]


@pytest.mark.parametrize("top", [None, 1])
def test_top_cuts_the_variables(top: int | None) -> None:
    section = report_tile_detail_section(_placed(), top=top)
    assert len(_variables(section)) == (2 if top is None else 1)
