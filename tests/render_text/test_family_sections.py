"""The Tiles and Execution sections are built once, by one builder per kind of object: the figures
a reader sees, and the terminal's document and the HTML page holding the same section (the page
adding only its chart)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from profcompare.comparison import Comparison, compare
from profcompare.model import Report
from profcompare.render.html import build_page
from profcompare.render.page.model import Table
from profcompare.render.section_names import SECTION_NAMES
from profcompare.render.sections import comparison_document, report_document
from profcompare.render.sections.execution import comparison_execution_section, report_execution_section
from profcompare.render.sections.tiles import comparison_tiles_section, report_tiles_section


def _texts(table: Table) -> list[list[str]]:
    return [[cell.text for cell in row] for row in table.rows]


def test_a_reports_tiles_are_its_figures_then_its_fullest_tiles(offchip: Report) -> None:
    section = report_tiles_section(offchip, top=3)
    assert (section.title, section.id) == ("Tiles", "tiles")
    figures, worst = section.tables
    assert _texts(figures) == [["Tiles per replica", "1,472"], ["Tile budget", "624.0 KiB"],
                               ["Max tile memory", "53.0 KiB"], ["Median tile memory", "13.9 KiB"],
                               ["Min tile memory", "13.9 KiB"], ["Tiles over budget", "0"]]
    assert [c.header for c in worst.columns] == ["Tile", "IPU", "Bytes (incl. gaps)", "Always-live",
                                                 "Not-always-live peak", "Of budget"]
    assert _texts(worst) == [["0", "0", "53.0 KiB", "12.2 KiB", "40.7 KiB", "8.5%"],
                             ["5", "0", "33.5 KiB", "12.2 KiB", "21.2 KiB", "5.4%"],
                             ["1", "0", "13.9 KiB", "12.2 KiB", "1.7 KiB", "2.2%"]]
    assert worst.note == "The 3 fullest tiles of offchip-sharded."
    # never more than ten, whatever --top
    assert len(report_tiles_section(offchip, top=None).tables[1].rows) == 10


def test_a_comparisons_tiles_set_base_and_new_side_by_side(comparison: Comparison) -> None:
    section = comparison_tiles_section(comparison, top=2)
    figures, base, new = section.tables
    assert [c.header for c in figures.columns] == ["Tiles", "Base", "New", "Delta", "Delta %"]
    assert _texts(figures)[2:5] == [["Max tile memory", "103.3 KiB", "53.0 KiB", "-50.3 KiB", "-48.7%"],
                                    ["Median tile memory", "15.4 KiB", "13.9 KiB", "-1.4 KiB", "-9.3%"],
                                    ["Min tile memory", "15.4 KiB", "13.9 KiB", "-1.4 KiB", "-9.3%"]]
    assert [(t.id, t.note, _texts(t)[0][2]) for t in (base, new)] == [
        ("worst-tiles-0", "The 2 fullest tiles of base.", "103.3 KiB"),
        ("worst-tiles-1", "The 2 fullest tiles of new.", "53.0 KiB")]
    assert section.notes == ("1,472 of 1,472 tiles changed beyond the noise threshold.",)


def test_a_reports_execution_is_cycles_by_phase_then_time(offchip: Report) -> None:
    section = report_execution_section(offchip)
    assert (section.title, section.id) == ("Execution", "execution")
    phases, time = section.tables
    assert _texts(phases)[0] == ["compute", "410,050", "45.3%"]
    assert [[c.text for c in row] for row in phases.footer] == [["Device cycles per step", "905,300", ""]]
    assert _texts(time) == [["Device time per step", "0.681 ms"], ["Time per session.run (device + host)", "0.681 ms"]]
    assert time.note == ("Device time = device cycles per step / the IPU clock (1.330 GHz). The profile records no "
                         "host/runtime time: its time per session.run is its device time alone.")


def test_a_comparisons_execution_tones_the_costs(comparison: Comparison) -> None:
    phases, time = comparison_execution_section(comparison).tables
    assert [c.header for c in phases.columns] == ["Device phase", "Base cycles", "New cycles", "Delta", "Delta %",
                                                  "Status"]
    exchange = phases.rows[1]
    assert [(c.text, c.tone) for c in exchange][3:] == [("+30,000", "bad"), ("+25.0%", "bad"), ("grew", "bad")]
    assert [(c.text, c.tone) for c in phases.footer[0]] == [
        ("Device cycles per step", None), ("840,250", None), ("905,300", None), ("+65,050", "bad"), ("+7.7%", "bad"),
        ("grew", "bad")]
    assert [c.header for c in time.columns] == ["Time", "Base", "New", "Delta", "Delta %", "Status"]
    assert _texts(time)[0] == ["Device time per step", "0.632 ms", "0.681 ms", "+0.049 ms", "+7.7%", "grew"]


def test_a_report_without_an_execution_profile_says_so(onchip: Report) -> None:
    bare = Report.build(onchip.meta, tiles=onchip.tiles, categories=onchip.categories)
    section = report_execution_section(bare)
    assert (section.tables, section.notes) == ((), ("No execution profile in this report.",))


@pytest.mark.parametrize("section_id", ["tiles", "execution"])
def test_the_document_and_the_page_hold_one_section(onchip: Report, comparison: Comparison,
                                                    section_id: str) -> None:
    for obj, document in ((onchip, report_document(onchip, top=20)), (comparison, comparison_document(comparison))):
        page = {s.id: s for s in build_page(obj, top=20).sections}[section_id]
        drawn = next(s for s in document.sections if s.id == section_id)
        assert len(page.charts) == 1  # the page adds its chart, nothing else
        assert replace(page, charts=()) == drawn


def test_the_section_names_give_the_one_titles() -> None:
    assert (SECTION_NAMES["tiles"], SECTION_NAMES["execution"], SECTION_NAMES["trace"]) == (
        "Tiles", "Execution", "Execution trace")


def test_a_side_without_tiles_or_execution_reads_n_a(onchip: Report) -> None:
    bare = Report.build(onchip.meta.replace(capabilities=onchip.meta.capabilities - {"tiles", "execution"}),
                        categories=onchip.categories)
    cmp = compare(onchip, bare)
    tiles = comparison_tiles_section(cmp, top=3)
    assert _texts(tiles.tables[0])[2] == ["Max tile memory", "103.3 KiB", "n/a", "n/a", "n/a"]
    assert [t.id for t in tiles.tables] == ["tile-stats-table", "worst-tiles-0"]  # no empty table for new
    assert tiles.notes[-1] == "The new report does not record per-tile memory; its figures read n/a."
    execution = comparison_execution_section(cmp)
    time = execution.tables[1]
    assert [row.data["metric"] for row in time.rows] == ["device", "run"]  # no side records host time
    assert _texts(time)[0] == ["Device time per step", "0.632 ms", "n/a", "n/a", "n/a", "n/a"]
    assert execution.notes == ("The new report has no execution profile; its cycles read 0.",)
