"""The page's program tree in a browser: its name and status filters keep the rows they say
with the rows enclosing them, its toggles hide and show subtrees, a folded run opens to its
programs, "Expand all" shows every row."""

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


def _open(browser, path: Path):  # type: ignore[no-untyped-def]
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}"))
    page.goto(path.as_uri() + "#programs")  # the link opens the folded section
    page.wait_for_load_state("load")
    return page, problems


def test_the_program_tree_filters_by_name_and_status(browser, tree_page: Path) -> None:  # type: ignore[no-untyped-def]
    page, problems = _open(browser, tree_page)
    # opened: the root (changed), every other program closed
    assert _shown(page) == ["main", "matmul/102", "relu", "gelu"]
    first = page.eval_on_selector("#programs-table tbody tr:nth-child(3) td:first-child", "td => td.textContent")
    assert first == "\u00a0\u00a0└ matmul/102/Convolve"
    box = "div.table-filter[data-table=programs-table]"
    # a filter shows the matches and the rows enclosing them, opened
    page.select_option(f"{box} select[data-attr=status]", "added")
    assert _shown(page) == ["main", "gelu", "gelu"]
    assert page.inner_text(f"{box} .count") == "2 of 7 rows match"
    assert page.eval_on_selector_all("#programs-table tr.context", "rows => rows.map(r => r.dataset.name)") == ["main"]
    page.select_option(f"{box} select[data-attr=status]", "")
    page.fill(f"{box} input.filter-text", "MATMUL")
    assert _shown(page) == ["main", "matmul/102", "matmul/102/Convolve"]
    # the status marks: text in the Status column, a class on the row
    assert page.eval_on_selector_all("#programs-table tr.status-added", "rows => rows.length") == 2
    assert problems == []


#: a deeper tree: main { stage/0 { block/0 { deep/0 { needle } } }, 6 like copies, tail }
DEEP = programs_from_rows([
    (0, None, 0, "Sequence", "main", "", None),
    (1, 0, 1, "Sequence", "stage/0", "", 0),
    (2, 1, 2, "Sequence", "block/0", "", 0),
    (3, 2, 3, "Sequence", "deep/0", "", 0),
    (4, 3, 4, "OnTileExecute", "needle", "op", 0),
    *[(5 + i, 0, 1, "StreamCopyMid", f"copy/{i}/Mid", "", 0) for i in range(6)],
    (11, 0, 1, "OnTileExecute", "tail", "", 0),
])


@pytest.fixture(scope="module")
def deep_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("html") / "deep.html"
    path.write_text(HtmlRenderer().render(Report.build(_meta("deep"), programs=DEEP)), encoding="utf-8")
    return path


def test_toggles_search_and_expand_all(browser, deep_page: Path) -> None:  # type: ignore[no-untyped-def]
    page, problems = _open(browser, deep_page)
    # the root is open: its children, the six copies folded into one row
    assert _shown(page) == ["main", "stage/0", "6 × copy/…/Mid", "tail"]
    # the kind's swatch: the trace's StreamCopy green, the kind still written
    assert page.eval_on_selector("#programs-table tr[data-id=p5] td:nth-child(2)",
                                 "td => [td.textContent, td.querySelector('.swatch').style.backgroundColor]") == [
        "StreamCopyMid", "rgb(67, 160, 71)"]
    toggle = "#programs-table tr[data-id=p0] button.tree-toggle"
    assert page.get_attribute(toggle, "aria-expanded") == "true"
    page.click(toggle)
    assert _shown(page) == ["main"]
    assert page.get_attribute(toggle, "aria-expanded") == "false"
    page.focus(toggle)
    page.keyboard.press("Enter")
    assert _shown(page) == ["main", "stage/0", "6 × copy/…/Mid", "tail"]
    # the folded run opens to its programs
    page.click("#programs-table tr[data-id=p5] button.tree-toggle")
    assert _shown(page) == ["main", "stage/0", "6 × copy/…/Mid", *[f"copy/{i}/Mid" for i in range(6)], "tail"]
    page.click("#programs-table tr[data-id=p5] button.tree-toggle")
    # the search reveals a deep match with every row enclosing it
    box = "div.table-filter[data-table=programs-table]"
    page.fill(f"{box} input.filter-text", "needle")
    assert _shown(page) == ["main", "stage/0", "block/0", "deep/0", "needle"]
    assert page.inner_text(f"{box} .count") == "1 of 13 rows match"
    page.fill(f"{box} input.filter-text", "")
    # the search left the path to the match open
    assert _shown(page) == ["main", "stage/0", "block/0", "deep/0", "needle", "6 × copy/…/Mid", "tail"]
    page.click(".tree-controls button:has-text('Collapse all')")
    assert _shown(page) == ["main"]
    page.click(".tree-controls button:has-text('Expand all')")
    every = page.eval_on_selector_all("#programs-table tbody tr", "rows => rows.length")
    assert page.eval_on_selector_all("#programs-table tbody tr:not([hidden])", "rows => rows.length") == every == 13
    assert problems == []
