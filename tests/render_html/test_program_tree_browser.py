"""The page's program tree in a browser: its name and status filters keep the rows they say."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_browser import pytestmark as browser_marks

from profcompare.comparison import compare
from profcompare.model import Report, ReportMeta, Target, programs_from_rows
from profcompare.render.html import HtmlRenderer

pytestmark = browser_marks

BASE = programs_from_rows([
    (0, None, 0, "Sequence", "main", "", None),
    (1, 0, 1, "Sequence", "matmul/100", "matmul", 0),
    (2, 1, 2, "OnTileExecute", "matmul/100/Convolve", "matmul", 0),
    (3, 0, 1, "Sequence", "relu", "relu", 0),
    (4, 3, 2, "OnTileExecute", "relu", "relu", 0),
])
NEW = programs_from_rows([
    (0, None, 0, "Sequence", "main", "", None),
    (1, 0, 1, "Sequence", "matmul/102", "matmul", 0),
    (2, 1, 2, "OnTileExecute", "matmul/102/Convolve", "matmul", 0),
    (3, 0, 1, "Sequence", "gelu", "gelu", 0),
    (4, 3, 2, "OnTileExecute", "gelu", "gelu", 0),
])


def _meta(source: str) -> ReportMeta:
    return ReportMeta(source=source, format="store", producer="test", simulated=False,
                      target=Target("Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=1))


@pytest.fixture(scope="module")
def tree_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cmp = compare(Report.build(_meta("base"), programs=BASE), Report.build(_meta("new"), programs=NEW))
    path = tmp_path_factory.mktemp("html") / "tree.html"
    path.write_text(HtmlRenderer().render(cmp), encoding="utf-8")
    return path


def _shown(page) -> list[str]:  # type: ignore[no-untyped-def]
    return page.eval_on_selector_all("#programs-table tbody tr:not([hidden])",
                                     "rows => rows.map(r => r.getAttribute('data-name'))")


def test_the_program_tree_filters_by_name_and_status(browser, tree_page: Path) -> None:  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.goto(tree_page.as_uri() + "#programs")  # the link opens the folded section
    page.wait_for_load_state("load")
    assert _shown(page) == ["main", "matmul/102", "matmul/102/Convolve", "relu", "relu", "gelu", "gelu"]
    first = page.inner_text("#programs-table tbody tr:nth-child(3) td:first-child")
    assert first == "\u00a0\u00a0└ matmul/102/Convolve"
    box = "div.table-filter[data-table=programs-table]"
    page.select_option(f"{box} select[data-attr=status]", "added")
    assert _shown(page) == ["gelu", "gelu"]
    assert page.inner_text(f"{box} .count") == "2 of 7 rows match"
    page.select_option(f"{box} select[data-attr=status]", "")
    page.fill(f"{box} input.filter-text", "MATMUL")
    assert _shown(page) == ["matmul/102", "matmul/102/Convolve"]
    assert problems == []
