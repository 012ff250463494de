"""Notebook display: a compact summary table, not the full page."""

from __future__ import annotations

import re

from html_fixtures import ESCAPE_NAME

from profcompare.comparison import compare
from profcompare.model import METRICS, Report
from profcompare.render.format import metric_label
from profcompare.render.notebook import comparison_repr_html, report_repr_html


def test_report_repr_is_a_compact_summary(onchip: Report) -> None:
    fragment = onchip._repr_html_()
    assert fragment == report_repr_html(onchip)
    assert "<html" not in fragment and "<script" not in fragment and "<svg" not in fragment
    assert "SIMULATED" in fragment and "onchip" in fragment
    assert fragment.count("<tr>") == 1 + len(METRICS)
    for metric in METRICS:
        assert metric_label(metric) in fragment
    assert "14.8 MiB" in fragment  # always-live bytes of the onchip fixture
    assert len(fragment) < 10_000


def test_comparison_repr_shows_base_new_diff_and_status(onchip: Report, offchip: Report) -> None:
    comparison = compare(onchip, offchip)
    fragment = comparison._repr_html_()
    assert fragment == comparison_repr_html(comparison)
    assert "<script" not in fragment and "<svg" not in fragment
    assert re.search(r">base</span>\s*<strong>onchip</strong>", fragment)
    assert re.search(r">new</span>\s*<strong>offchip-sharded</strong>", fragment)
    assert fragment.count("SIMULATED") == 2
    for header in ("Base", "New", "Delta", "Delta %", "Status"):
        assert f">{header}</th>" in fragment
    # the not-always-live peak grew: shown in the "bad" colour
    row = fragment[fragment.index(metric_label("not_always_live_peak_bytes")) :]
    row = row[: row.index("</tr>")]
    assert "color:#c0392b" in row and ">grew<" in row
    counts = comparison.variables["status"].astype(str).value_counts()
    assert f"{counts['added']:,} added" in fragment and f"{counts['removed']:,} removed" in fragment
    assert ESCAPE_NAME not in fragment  # variables are not listed in the compact view


def test_repr_escapes_report_labels(onchip: Report) -> None:
    hostile = Report.build(onchip.meta.replace(variant="<img src=x onerror=alert(1)>"), tiles=onchip.tiles)
    fragment = report_repr_html(hostile)
    assert "<img" not in fragment
    assert "&lt;img src=x onerror=alert(1)&gt;" in fragment
