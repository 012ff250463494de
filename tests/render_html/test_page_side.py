"""The page of a Report and the page of a Comparison differ through one adapter (PageSide): the
section builders take it and never ask which kind of object the page is of."""

from __future__ import annotations

import inspect

from profcompare import compare
from profcompare.model import Report
from profcompare.render import html
from profcompare.render.sections import execution, ipus, replicas, tiles, trace
from profcompare.render.html import build_page, page_side
from profcompare.render.sections import comparison_document, report_document


def test_the_side_names_the_pages_reports_and_their_roles(onchip: Report, offchip: Report) -> None:
    report = page_side(onchip)
    assert (report.reports, report.roles, report.is_comparison, report.aligned_liveness) == (
        [onchip], ["report"], False, None)
    assert report.title == f"profcompare: {onchip.label}"
    cmp = compare(onchip, offchip)
    both = page_side(cmp)
    assert (both.reports, both.roles, both.is_comparison) == ([onchip, offchip], ["base", "new"], True)
    assert both.aligned_liveness is cmp.liveness


def test_each_side_orders_its_page(onchip: Report, offchip: Report) -> None:
    # every medium draws the same sections in the same order
    report_page = [s.id for s in build_page(onchip).sections]
    assert report_page == [
        "summary", "ledger", "peak", "liveness", "memory", "tiles", "tile-detail", "variables", "code", "streaming", "execution"]
    assert [s.id for s in report_document(onchip).sections] == report_page
    cmp = compare(onchip, offchip)
    comparison_page = [s.id for s in build_page(cmp).sections]
    assert comparison_page == [
        "verdict", "config", "moves", "ledger", "time-diff", "liveness", "peak", "summary", "memory", "tiles",
        "tile-detail", "variables", "code", "streaming", "execution"]
    assert [s.id for s in comparison_document(cmp).sections] == comparison_page


def test_only_page_side_asks_report_or_comparison() -> None:
    assert inspect.getsource(html).count("isinstance(") == 1
    assert "isinstance(" in inspect.getsource(page_side)
    for module in (execution, ipus, replicas, tiles, trace):
        assert "isinstance(" not in inspect.getsource(module), module.__name__
