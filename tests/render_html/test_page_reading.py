"""The pages as a user reads them, in headless Chromium (one browser, several checks per load):
the comparison page is a few screens tall until a table is expanded, its expander shows every
row, no table is cut at 1024 px (each fits its box or its box scrolls) and none needs to scroll at
1400 px, the mouse wheel zooms the execution trace instead of scrolling the page, the axes write
thousands separators, and the comparison, index and Graph Analyser cache pages log nothing to the
console.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from html_fixtures import build_report, shared_data_path
from test_browser import CHROMIUM
from test_trace_view import BASE_BLOCKS, NEW_BLOCKS, _with_trace

from profcompare.comparison import compare
from profcompare.analysis.nway import nway_table
from profcompare.render.html import HtmlRenderer
from profcompare.render.html_model import FOLDED_ROWS
from profcompare.render.nway import render_nway_html

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]

#: the real Graph Analyser cache: shared/data beside the project (as CI has it) or further up
GA_CACHE = shared_data_path("ga_cache_popxl_mnist_pipelining_2ipu.sqlite")
#: variables beyond the fixture's own: a long table, as a real run's (717 variables)
EXTRA_VARIABLES = 700
#: the tallest the comparison page may be at 1400x900 before any table is expanded
MAX_HEIGHT = 12_000


@pytest.fixture(scope="module")
def long_comparison():
    extra = [f"extra/buffer_{i:04d}" for i in range(EXTRA_VARIABLES)]
    base = _with_trace(build_report("onchip"), BASE_BLOCKS)
    new = _with_trace(build_report("offchip-sharded", extra_names=extra), NEW_BLOCKS)
    return compare(base, new)


def _open(browser, path: Path, width: int):
    """A page at ``width`` x 900 with ``path`` loaded and its charts drawn; the second value
    collects every console message and page error."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    messages: list[str] = []
    page.on("console", lambda m: messages.append(f"console {m.type}: {m.text}"))
    page.on("pageerror", lambda e: messages.append(f"page error: {e}"))
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    for chart in page.eval_on_selector_all("figure.chart", "fs => fs.map(f => f.id)"):
        page.wait_for_selector(f"#{chart}[data-ready=true]", state="attached", timeout=60_000)
    return page, messages


#: per table: [id, its width, its box's width, whether its box scrolls sideways]
_TABLE_FIT = """() => Array.from(document.querySelectorAll("main table")).map(t => {
    const box = t.closest(".table-wrap");
    const scrolls = box !== null && ["auto", "scroll"].includes(getComputedStyle(box).overflowX);
    return [t.id, t.scrollWidth, box ? box.clientWidth : document.documentElement.clientWidth, scrolls];
})"""


def test_comparison_page_reads_top_to_bottom(browser, long_comparison, tmp_path: Path) -> None:
    path = tmp_path / "diff.html"
    path.write_text(HtmlRenderer().render(long_comparison, top=20), encoding="utf-8")
    page, messages = _open(browser, path, 1400)
    sections = page.eval_on_selector_all("main > section.section", "s => s.map(x => x.id)")
    assert sections[:9] == ["verdict", "config", "moves", "ledger", "trace", "time-diff", "liveness", "peak", "summary"]

    # a few screens tall before any expander is opened, with every table's rows in the page
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= MAX_HEIGHT
    total = len(long_comparison.variables)
    assert total > EXTRA_VARIABLES
    visible = "#variables-table tbody tr:not([hidden]):not(.folded)"
    assert page.locator(visible).count() == FOLDED_ROWS
    assert page.locator("#variables-table tbody tr").count() == total
    expander = page.locator("#variables-table-expander")
    assert expander.inner_text() == f"Show all {total:,} rows"
    # the first rows are the table's order: sorting shows the top of the new order
    headers = page.locator("#variables-table thead th")
    titles = [t.strip() for t in headers.all_inner_texts()]
    new_col = next(i for i, t in enumerate(titles) if t.startswith("New"))
    headers.nth(new_col).click(position={"x": 3, "y": 3})
    shown = page.eval_on_selector_all(visible, f"rs => rs.map(r => parseFloat(r.cells[{new_col}].dataset.sort))")
    largest = sorted(long_comparison.variables["new_bytes"].astype(float), reverse=True)[:FOLDED_ROWS]
    assert shown == largest
    # the filter applies to every row; the fold to the rows it keeps
    page.fill("#variable-filter", "extra/buffer_000")
    assert page.locator(visible).count() == 10 and expander.is_hidden()
    page.fill("#variable-filter", "")
    # the expander shows every row, and folds them again
    expander.click()
    assert page.locator(visible).count() == total
    assert expander.inner_text() == f"Show the first {FOLDED_ROWS} rows"
    assert page.evaluate("document.documentElement.scrollHeight") > height + 10_000
    expander.click()
    assert page.locator(visible).count() == FOLDED_ROWS

    # no table needs to scroll sideways at 1400 px (the ledger's Streaming Memory column was cut)
    assert [t for t in page.evaluate(_TABLE_FIT) if t[1] > t[2]] == []

    # the mouse wheel over the execution trace zooms its time axis; the page does not scroll
    trace = page.locator("#chart-trace .chart-target")
    trace.scroll_into_view_if_needed()
    assert page.evaluate("() => profcompareChartModel('chart-trace').toolbar.active_scroll.constructor.__name__") \
        == "WheelZoomTool"
    before = page.evaluate("() => { const r = profcompareChartModel('chart-trace:x'); return r.end - r.start; }")
    scrolled = page.evaluate("window.scrollY")
    box = trace.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.4, box["y"] + box["height"] * 0.3)
    page.mouse.wheel(0, -400)
    page.wait_for_function(
        f"() => {{ const r = profcompareChartModel('chart-trace:x'); return r.end - r.start < {before}; }}")
    assert page.evaluate("window.scrollY") == scrolled
    # every axis writes thousands separators (the trace's read 1000000)
    axes = page.evaluate("""() => ["chart-trace", "chart-liveness", "chart-tiles", "chart-execution"].map(id => {
        const fig = profcompareChartModel(id);
        return fig.below.filter(m => m.formatter).map(a => a.formatter.doFormat([1000000, 2500], {loc: 0}));
    }).flat()""")
    assert axes and all(labels == ["1,000,000", "2,500"] for labels in axes)
    assert messages == []
    page.close()

    # at 1024 px every table fits its box or its box scrolls sideways: nothing is cut
    page, messages = _open(browser, path, 1024)
    fit = page.evaluate(_TABLE_FIT)
    assert len(fit) >= 10
    assert [t for t in fit if t[1] > t[2] and not t[3]] == []
    assert messages == []
    page.close()


def test_index_page_has_no_console_messages(browser, long_comparison, tmp_path: Path) -> None:
    table = nway_table([("onchip", long_comparison.base), ("offchip-sharded", long_comparison.new)])
    path = tmp_path / "index.html"
    path.write_text(render_nway_html(table, title="run r1: 2 variants side by side"), encoding="utf-8")
    page, messages = _open(browser, path, 1024)
    assert page.title() == "run r1: 2 variants side by side"
    assert [t for t in page.evaluate(_TABLE_FIT) if t[1] > t[2] and not t[3]] == []
    assert messages == []
    page.close()


@pytest.mark.skipif(not GA_CACHE.exists(), reason="shared/data/ beside the project has no Graph Analyser cache")
def test_graph_analyser_cache_page(browser, tmp_path: Path) -> None:
    from profcompare.readers import open_report

    report = open_report(GA_CACHE)
    path = tmp_path / "ga.html"
    path.write_text(HtmlRenderer().render(report), encoding="utf-8")
    page, messages = _open(browser, path, 1400)
    # named after the program's file, not the folder it sits in ("data")
    assert page.title() == "profcompare: ga_cache_popxl_mnist_pipelining_2ipu"
    # what the cache records, and one line for what it does not
    assert page.eval_on_selector_all("main > section.section", "s => s.map(x => x.id)") == [
        "summary", "trace", "execution"]
    assert page.locator("#summary .section-text").inner_text() == (
        "This report does not record per-tile memory, memory categories, variables, liveness (program steps), "
        "code, remote buffers (Streaming Memory), a program tree or operations: the figures and sections that "
        "need them are left out.")
    metrics = page.eval_on_selector_all("#summary-table tbody tr", "rs => rs.map(r => r.cells[1].textContent)")
    assert metrics == ["2,540,750", "1.910 ms"]
    assert "n/a" not in page.inner_text("#summary")
    assert messages == []
    page.close()
