"""The summary's note on the two memory totals stands only where both totals are shown."""

from __future__ import annotations

import pytest
from html_fixtures import shared_data_path

from profcompare.model import Report
from profcompare.render.labels import TOTAL_VS_PEAK_NOTE
from profcompare.render.page.model import placed_for_page
from profcompare.render.sections.summary import CONFIDENCE_LEGEND, report_summary_section, report_summary_table

GA_CACHE = shared_data_path("ga_cache_popxl_mnist_pipelining_2ipu.sqlite")


def test_a_report_with_both_totals_explains_how_they_differ(onchip: Report) -> None:
    table = report_summary_table(onchip, recorded_only=True)
    shown = {row.data["metric"] for row in table.rows}
    assert {"total_bytes", "peak_liveness_bytes"} <= shown
    section = placed_for_page(report_summary_section(onchip))
    assert section.tables[0].note.startswith(TOTAL_VS_PEAK_NOTE)
    assert section.tables[0].note.endswith(CONFIDENCE_LEGEND)


@pytest.mark.skipif(not GA_CACHE.exists(), reason="shared/data/ beside the project has no Graph Analyser cache")
def test_a_cache_without_memory_figures_has_no_note_on_them() -> None:
    from profcompare.readers import open_report

    report = open_report(GA_CACHE)
    table = report_summary_table(report, recorded_only=True)
    assert [row.data["metric"] for row in table.rows] == ["cycles_per_step", "seconds_per_step"]
    section = report_summary_section(report)
    assert [row.data["metric"] for row in section.tables[0].rows] == ["cycles_per_step", "seconds_per_step"]
    assert section.text.startswith("This report does not record ")
    notes = " ".join(section.notes)
    assert "Total memory" not in notes and "peak liveness" not in notes
