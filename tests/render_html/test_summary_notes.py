"""The summary's note on the two memory totals stands only where both totals are shown."""

from __future__ import annotations

import pytest
from html_fixtures import shared_data_path

from profcompare.model import Report
from profcompare.render.html import summary_table
from profcompare.render.labels import TOTAL_VS_PEAK_NOTE

GA_CACHE = shared_data_path("ga_cache_popxl_mnist_pipelining_2ipu.sqlite")


def test_a_report_with_both_totals_explains_how_they_differ(onchip: Report) -> None:
    table = summary_table(onchip, recorded_only=True)
    shown = {row.data["metric"] for row in table.rows}
    assert {"total_bytes", "peak_liveness_bytes"} <= shown
    assert table.note.startswith(TOTAL_VS_PEAK_NOTE)


@pytest.mark.skipif(not GA_CACHE.exists(), reason="shared/data/ beside the project has no Graph Analyser cache")
def test_a_cache_without_memory_figures_has_no_note_on_them() -> None:
    from profcompare.readers import open_report

    table = summary_table(open_report(GA_CACHE), recorded_only=True)
    assert [row.data["metric"] for row in table.rows] == ["cycles_per_step", "seconds_per_step"]
    assert "Total memory" not in table.note and "peak liveness" not in table.note
