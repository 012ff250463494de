"""The pages as a user reads them, in headless Chromium (one browser, several checks per load):
the comparison page is a few screens tall until a table is expanded or a detail section opened,
its detail sections open on a click, a navigation link or the URL's hash (and show open in print
and without JavaScript), its expander shows every row, long names keep a row to one line, no table is cut at 1024 px (each fits its box or its box scrolls) and none needs to scroll at
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
#: a real op's name (GPT-J), longer than a page shows: cut in the middle, its row one line
LONG_NAME = "DecoderLayer_subgraph(5)/attention/qkv/matmul_out/operand_copies@449"


@pytest.fixture(scope="module")
def long_comparison():
    extra = [f"extra/buffer_{i:04d}" for i in range(EXTRA_VARIABLES)] + [LONG_NAME]
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
    _wait_for_charts(page)
    return page, messages


def _wait_for_charts(page) -> None:
    """Wait until every chart of the open sections is drawn (a closed section's are drawn when
    it opens)."""
    shown = "fs => fs.filter(f => !f.closest('section.fold:not(.open)')).map(f => f.id)"
    for chart in page.eval_on_selector_all("figure.chart", shown):
        page.wait_for_selector(f"#{chart}[data-ready=true]", state="attached", timeout=60_000)


def open_sections(page, *ids: str) -> None:
    """Open the detail sections ``ids`` (every closed one when none is named) by their buttons,
    and wait for their charts."""
    closed = page.eval_on_selector_all("section.fold:not(.open)", "s => s.map(x => x.id)")
    for section in ids or closed:
        if section in closed:
            page.click(f"#{section}-toggle")
    _wait_for_charts(page)


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
    open_sections(page, "variables")
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
    open_sections(page)
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
    # the tile map draws one cell per tile, the I/O tiles (none here) outlined, with no message
    tiles = page.evaluate("""() => { const data = profcompareChartModel('chart-tile-map:tiles').data;
        return (data instanceof Map ? data.get('tile') : data.tile).length; }""")
    assert tiles == len(long_comparison.tiles) == 1472
    assert page.locator("#chart-tile-map .chart-target").bounding_box()["height"] > 200
    assert messages == []
    page.close()

    # at 1024 px every table fits its box or its box scrolls sideways: nothing is cut
    page, messages = _open(browser, path, 1024)
    open_sections(page)
    fit = page.evaluate(_TABLE_FIT)
    assert len(fit) >= 10
    assert [t for t in fit if t[1] > t[2] and not t[3]] == []
    assert messages == []
    page.close()


#: the detail sections of the fixture's comparison page, folded at load, in page order
FOLDED = ["memory-per-ipu", "tiles", "tile-detail", "variables", "code", "streaming", "execution"]
#: what a folded section's closed height may be: its title and headline line
FOLDED_HEIGHT = 45


def _open_ids(page) -> list[str]:
    return page.eval_on_selector_all("section.fold.open", "s => s.map(x => x.id)")


def test_detail_sections_fold_and_open(browser, long_comparison, tmp_path: Path) -> None:
    path = tmp_path / "diff.html"
    path.write_text(HtmlRenderer().render(long_comparison, top=20), encoding="utf-8")
    page, messages = _open(browser, path, 1400)
    # the first screen's sections are open; each detail view is one line, its title and headline
    assert page.eval_on_selector_all("section.fold", "s => s.map(x => x.id)") == FOLDED
    assert _open_ids(page) == []
    heights = page.eval_on_selector_all("section.fold", "s => s.map(x => x.getBoundingClientRect().height)")
    assert max(heights) <= FOLDED_HEIGHT
    assert page.locator("#variables-body").is_hidden() and page.locator("#verdict").is_visible()
    assert page.inner_text("#variables .fold-headline") == (
        f"{len(long_comparison.variables):,} variables; largest change layer0/weight/second_moment -1.5 MiB")
    assert page.inner_text("#code .fold-headline") == "12 programs; largest change fwd/matmul0 +346.7 KiB"
    assert page.get_attribute("#tiles-toggle", "aria-expanded") == "false"
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= MAX_HEIGHT

    # a click opens a section, and its chart is drawn at the section's width
    page.click("#tiles-toggle")
    page.wait_for_selector("#chart-tiles[data-ready=true]", state="attached", timeout=60_000)
    assert _open_ids(page) == ["tiles"] and page.get_attribute("#tiles-toggle", "aria-expanded") == "true"
    chart = page.locator("#chart-tiles-target").bounding_box()
    main = page.locator("main").bounding_box()
    assert chart is not None and main is not None and chart["width"] > 0.8 * (main["width"] - 56)
    assert chart["height"] > 200
    assert page.evaluate("document.documentElement.scrollHeight") > height + 500
    page.click("#tiles-toggle")  # and closes it again
    assert _open_ids(page) == [] and page.locator("#tiles-body").is_hidden()

    # a navigation link opens its section and scrolls (smoothly) to it
    page.click("nav a[href='#code']")
    page.wait_for_selector("#chart-code[data-ready=true]", state="attached", timeout=60_000)
    assert _open_ids(page) == ["code"]
    # (near the page's end, the section's top stops in the window's upper half)
    page.wait_for_function("() => { const t = document.getElementById('code').getBoundingClientRect().top;"
                           " return t >= 0 && t < 450; }")
    assert page.evaluate("profcompareChartModel('chart-code').inner_width") > 400

    # long names are cut in the middle, whole in the tooltip and the row's data; one line a row
    page.click("nav a[href='#variables']")
    page.fill("#variable-filter", "DecoderLayer")
    cell = page.locator("#variables-table tbody tr:not([hidden]) td").first
    assert cell.inner_text() == "DecoderLayer_subgraph\u2026operand_copies@449"
    assert cell.get_attribute("title") == LONG_NAME
    heights = "rs => rs.map(r => r.getBoundingClientRect().height)"
    long_row = page.eval_on_selector_all("#variables-table tbody tr:not([hidden])", heights)
    page.fill("#variable-filter", "")
    rows = page.eval_on_selector_all("#variables-table tbody tr:not(.folded)", heights)
    assert len(long_row) == 1 and set(rows) == set(long_row)
    page.close()

    # the URL's hash opens the section holding what it names
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(path.as_uri() + "#execution-table")
    page.wait_for_selector("#chart-execution[data-ready=true]", state="attached", timeout=60_000)
    assert _open_ids(page) == ["execution"]
    page.wait_for_function("() => { const t = document.getElementById('execution-table').getBoundingClientRect();"
                           " return t.top >= 0 && t.bottom <= 900; }")
    # printing shows every section
    page.emulate_media(media="print")
    assert all(page.locator(f"#{section}-body").is_visible() for section in FOLDED)
    page.close()

    # without JavaScript every section shows open
    context = browser.new_context(java_script_enabled=False, viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(path.as_uri())
    assert all(page.locator(f"#{section}-body").is_visible() for section in FOLDED)
    context.close()
    assert messages == []


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
        "code, remote buffers (Streaming Memory), a program tree, operations or vertex types, compute sets and "
        "exchanges: the figures and sections that need them are left out.")
    metrics = page.eval_on_selector_all("#summary-table tbody tr", "rs => rs.map(r => r.cells[1].textContent)")
    assert metrics == ["2,540,750", "1.910 ms"]
    assert "n/a" not in page.inner_text("#summary")
    assert messages == []
    page.close()


def test_a_click_on_the_liveness_chart_lists_what_is_live_there(browser, long_comparison, tmp_path: Path) -> None:
    path = tmp_path / "diff.html"
    path.write_text(HtmlRenderer().render(long_comparison, top=20), encoding="utf-8")
    page, messages = _open(browser, path, 1400)
    panel = page.locator("#chart-liveness-panel")
    # the top peaks of each report are links before any click
    links = panel.locator(".step-peaks a")
    assert links.count() >= 2 and links.first.inner_text().startswith("base: ")
    chart = page.locator("#chart-liveness .chart-target")
    chart.scroll_into_view_if_needed()
    box = chart.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.4)
    page.wait_for_selector("#chart-liveness-panel .step-title")
    title = panel.locator(".step-title").inner_text()
    assert title.startswith("base: ") and "; new: " in title
    headers = panel.locator("table").first.locator("thead th").all_inner_texts()
    assert headers[0] == "Parameter · role" and headers[-1] == "Delta"
    # a peak's link shows its step
    links.first.click()
    step = links.first.inner_text().split("(step ")[1].split(",")[0]
    assert f"step {step} (" in panel.locator(".step-title").inner_text()
    # the lifetime chart is drawn under it
    assert page.locator("#chart-lifetimes[data-ready=true]").count() == 1
    assert messages == []
