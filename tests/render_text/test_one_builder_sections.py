"""The Summary, Memory by category, Liveness and Verdict sections: one builder each, whose
figures the terminal, Markdown and the HTML page all show."""

from __future__ import annotations

from profcompare.comparison import Comparison
from profcompare.model import METRICS, Report
from profcompare.render.html import build_page
from profcompare.render.page.model import Section
from profcompare.render.sections import comparison_document, report_document
from profcompare.render.sections.categories import comparison_categories_section, report_categories_section
from profcompare.render.sections.liveness import comparison_liveness_section, report_liveness_section
from profcompare.render.sections.summary import (
    CONFIDENCE_LEGEND,
    comparison_summary_section,
    report_summary_section,
)
from profcompare.render.sections.verdict import comparison_verdict_section, verdict_lines


def _texts(section: Section) -> list[list[str]]:
    if not section.tables:
        return []
    table = section.tables[0]
    return [[cell.text for cell in row] for row in (*table.rows, *table.footer)]


def test_a_reports_summary_gives_each_metric_its_value_and_confidence(onchip: Report) -> None:
    section = report_summary_section(onchip)
    assert (section.id, section.title, section.text) == ("summary", "Summary", "")
    table = section.tables[0]
    assert [c.key for c in table.columns] == ["metric", "value", "confidence"]
    assert [row.data["metric"] for row in table.rows] == list(METRICS)
    rows = {row.data["metric"]: [c.text for c in row] for row in table.rows}
    assert rows["peak_liveness_bytes"] == ["Peak liveness", "22.0 MiB", "~ modelled"]
    assert rows["variable_bytes"] == ["Model state in tile memory", "12.4 MiB", "exact"]
    assert section.notes[-1] == CONFIDENCE_LEGEND


def test_a_comparisons_summary_colours_what_costs(comparison: Comparison) -> None:
    table = comparison_summary_section(comparison).tables[0]
    assert [c.header for c in table.columns] == ["Metric", "Base", "New", "Delta", "Delta %", "Status", "Confidence"]
    peak = next(row for row in table.rows if row.data["metric"] == "not_always_live_peak_bytes")
    assert [c.text for c in peak] == ["Not-always-live peak", "214.3 KiB", "2.4 MiB", "+2.2 MiB", "+1033.2%", "grew",
                                      "~ modelled"]
    assert [c.tone for c in peak][3:6] == ["bad", "bad", "bad"]


def test_memory_by_category_closes_with_the_total(onchip: Report, comparison: Comparison) -> None:
    section = report_categories_section(onchip)
    assert (section.id, section.title) == ("memory", "Memory by category")
    assert _texts(section)[0] == ["vertexCode", "code", "3.2 MiB", "14.9%"]
    assert _texts(section)[-1] == ["total", "", "21.7 MiB", ""]
    both = comparison_categories_section(comparison)
    assert _texts(both)[-1] == ["total", "", "21.7 MiB", "17.5 MiB", "-4.2 MiB", "-19.4%", ""]


def test_liveness_reads_the_summary_figures_and_says_where_the_peak_is(onchip: Report,
                                                                       comparison: Comparison) -> None:
    section = report_liveness_section(onchip)
    assert (section.id, section.title) == ("liveness", "Liveness")
    assert _texts(section) == [["Always-live memory", "21.7 MiB"], ["Not-always-live peak", "214.3 KiB"],
                               ["Peak liveness", "22.0 MiB"], ["Program steps", "16"]]
    assert section.notes == ("Not-always-live memory peaks at 214.3 KiB in step 8 (layer3/bwd/matmul, OnTileExecute).",)
    both = comparison_liveness_section(comparison)
    assert _texts(both) == [
        ["Always-live memory", "21.7 MiB", "17.5 MiB", "-4.2 MiB", "-19.4%"],
        ["Not-always-live peak", "214.3 KiB", "2.4 MiB", "+2.2 MiB", "+1033.2%"],
        ["Peak liveness", "22.0 MiB", "19.9 MiB", "-2.0 MiB", "-9.3%"],
        ["Program steps", "16", "19", "+3", "+18.8%"],
    ]
    assert both.notes[0] == "Not-always-live peak: base at step 8 (layer3/bwd/matmul), new at step 16 (optimizer/adam)."


def test_the_verdict_says_it_is_written_from_the_figures(comparison: Comparison) -> None:
    section = comparison_verdict_section(comparison)
    assert (section.id, section.title, section.items) == ("verdict", "Verdict", verdict_lines(comparison))
    assert section.notes == ("Written from the figures below; bytes per replica. Modelled figures are estimates "
                             "(see the Confidence column of the Summary).",)


def test_the_document_and_the_page_show_the_same_sections(onchip: Report, comparison: Comparison) -> None:
    for obj, document in ((onchip, report_document(onchip)), (comparison, comparison_document(comparison))):
        page = {s.id: s for s in build_page(obj).sections}
        text = {s.title: s for s in document.sections}
        for section in page.values():
            if section.id in ("summary", "memory", "liveness", "verdict"):
                assert _texts(text[section.title]) == _texts(section)
                assert text[section.title].items == section.items


def test_the_first_screens_verdict_has_no_figures_below_to_point_at(comparison: Comparison) -> None:
    section = comparison_verdict_section(comparison, first_screen=True)
    assert section.items == verdict_lines(comparison)
    assert section.notes == ("Modelled figures are estimates.",)
