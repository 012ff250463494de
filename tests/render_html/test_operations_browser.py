"""The Operations table in Chromium: its column chooser hides and shows columns, an op's details
button opens its program steps and figures under the table, and a hostile op name shows as text."""

from __future__ import annotations

from pathlib import Path

import pytest
from op_detail_fixtures import HOSTILE_OP, op_report
from test_browser import CHROMIUM

from profcompare.comparison import compare
from profcompare.render.html import HtmlRenderer

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]


def _open(browser, path: Path, problems: list[str]):
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}"))
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(path.as_uri() + "#operations")
    return page


def _headers(page) -> list[str]:
    return page.eval_on_selector_all(
        "#operations-table thead th", "cells => cells.filter(c => c.offsetParent !== null).map(c => c.textContent.trim())")


def _visible_cells(page, row: int) -> int:
    return page.eval_on_selector(
        "#operations-table tbody", f"b => Array.from(b.rows[{row}].cells).filter(c => c.offsetParent !== null).length")


def test_the_column_chooser_and_the_op_detail(browser, tmp_path: Path) -> None:
    path = tmp_path / "report.html"
    path.write_text(HtmlRenderer().render(op_report()), encoding="utf-8")
    problems: list[str] = []
    page = _open(browser, path, problems)

    assert _headers(page) == ["Op", "Type", "Code bytes", "Cycles", "FLOPs", "Tiles"]
    page.click("#operations details.column-chooser summary")
    boxes = page.eval_on_selector_all("#operations details.column-chooser label",
                                      "labels => labels.map(l => [l.textContent.trim(), l.firstChild.checked])")
    assert boxes == [["Op", True], ["Type", True], ["Code bytes", True], ["Vertex state", False],
                     ["Exchange code", False], ["Cycles", True], ["FLOPs", True], ["Tiles", True]]
    page.uncheck("#operations input[data-column='type']")
    assert _headers(page) == ["Op", "Code bytes", "Cycles", "FLOPs", "Tiles"]
    assert _visible_cells(page, 0) == 5
    page.check("#operations input[data-column='vertex_state_bytes']")
    assert _headers(page) == ["Op", "Code bytes", "Vertex state", "Cycles", "FLOPs", "Tiles"]
    # the keyboard reaches the boxes: Space on a focused box ticks it
    page.focus("#operations input[data-column='type']")
    page.keyboard.press("Space")
    assert _headers(page) == ["Op", "Type", "Code bytes", "Vertex state", "Cycles", "FLOPs", "Tiles"]

    assert page.is_hidden("#operations-table-detail")
    page.click("#operations-table tbody tr[data-row='0'] button.row-detail-toggle")
    assert page.get_attribute("#operations-table tbody tr[data-row='0'] button.row-detail-toggle",
                              "aria-expanded") == "true"
    panel = page.inner_text("#operations-table-detail")
    assert "matmul/1" in panel
    figures = page.eval_on_selector_all("#operations-table-detail table tbody tr",
                                        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))")
    assert figures[:6] == [["Code", "1000 B"], ["Vertex state", "300 B"], ["Exchange code", "200 B"],
                           ["Cycles per run", "500"], ["FLOPs", "2,048"], ["Tiles", "4"]]
    assert ["Source", "model.py:12"] in figures and ["Parameter", "fc.weight"] in figures
    steps = page.eval_on_selector_all("#operations-table-detail ol.detail-steps li", "items => items.map(i => i.textContent)")
    assert steps == ["OnTileExecute matmul/1/Conv", "DoExchange matmul/1/exchange", "OnTileExecute matmul/1/Reduce"]

    # the hostile op: its name is text in its cell and in its detail, no element made of it
    page.focus("#operations-table tbody tr[data-row='1'] button.row-detail-toggle")
    page.keyboard.press("Enter")
    assert page.inner_text("#operations-table-detail h3") == HOSTILE_OP
    assert page.eval_on_selector_all("#operations b", "nodes => nodes.length") == 0
    assert page.inner_text("#operations-table tbody tr[data-row='1'] td.name").startswith(HOSTILE_OP)
    assert page.get_attribute("#operations-table tbody tr[data-row='0'] button.row-detail-toggle",
                              "aria-expanded") == "false"
    page.click("#operations-table-detail button.row-detail-close")
    assert page.is_hidden("#operations-table-detail")
    assert problems == []
    page.close()


def test_a_comparison_detail_shows_both_sides_and_the_deltas(browser, tmp_path: Path) -> None:
    path = tmp_path / "diff.html"
    cmp = compare(op_report(), op_report(code=1500, cycles=450, source="new.pop"))
    path.write_text(HtmlRenderer().render(cmp), encoding="utf-8")
    problems: list[str] = []
    page = _open(browser, path, problems)
    assert "Type" not in _headers(page)
    page.click("#operations-table tbody tr:has(td[data-sort='matmul/1']) button.row-detail-toggle")
    figures = page.eval_on_selector_all("#operations-table-detail table tbody tr",
                                        "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))")
    assert figures[0] == ["Code", "1000 B", "1.5 KiB (1,500 B)", "+500 B"]
    assert figures[3] == ["Cycles per run", "500", "450", "-50"]
    assert problems == []
    page.close()
