"""The advise page in a real browser (headless Chromium through Playwright, no download): the
chart draws without errors, hovering a point shows its layout as text (a hostile knob value never
becomes markup), clicking it opens that point's page."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from profcompare.analysis.advise_results import POINT_METRICS, Evaluated, Machine, advise_verdict, point_frame
from profcompare.render.advise import render_advise_html
from profcompare.render.advise_words import advise_sentences

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "render_html"))
from test_browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)"),
]

HOSTILE = "<b id='injected'>bold</b></script>"


def _page(tmp_path: Path) -> Path:
    metrics = {m: math.nan for m in POINT_METRICS}
    metrics.update({"samples_per_second": 1000.0, "max_tile_bytes": 200_000.0, "tiles_over_budget": 0.0,
                    "bytes_per_tile": 638_976.0, "always_live_bytes": 1.0, "not_always_live_peak_bytes": 1.0,
                    "streaming_memory_bytes": 0.0, "code_bytes": 1.0, "num_replicas": 1.0})
    points = point_frame(("variant", "note"), [Evaluated({"variant": "onchip", "note": HOSTILE}, "p1", "ok", None,
                                                         metrics)], [], Machine.of(4))
    facts = advise_verdict(points, workload="mnist", ipus=4, global_batch=256, method="exhaustive", valid_points=1,
                           pruned={})
    meta = {"name": "run", "workload": "mnist", "ipus": 4, "global_batch": 256, "global_batch_rule": "",
            "method": "exhaustive", "base_config": {}, "headline": ["note"], "notes": [],
            "streaming_memory_bytes": 450e9}
    (tmp_path / "p1").mkdir()
    (tmp_path / "p1" / "report.html").write_text("<!DOCTYPE html><title>point report</title>", encoding="utf-8")
    path = tmp_path / "advise.html"
    path.write_text(render_advise_html(points, facts, " ".join(advise_sentences(facts)), meta,
                                       pages={"p1": "p1/report.html"}), encoding="utf-8")
    return path


def test_hover_shows_the_layout_as_text_and_a_click_opens_the_point(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    path = _page(tmp_path)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            problems: list[str] = []
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.goto(path.as_uri())
            page.wait_for_function("() => typeof Bokeh !== 'undefined' && Bokeh.documents.length === 1",
                                   timeout=60_000)
            page.locator("#advise-chart").scroll_into_view_if_needed()
            page.wait_for_timeout(500)
            box = page.locator("#advise-chart-target").bounding_box()
            found = None
            # one point: horizontally in the middle of the plot, vertically near the top (the axis starts at 0)
            for dy in range(0, int(box["height"]), 4):
                for dx in range(-80, 81, 4):
                    x, y = box["x"] + box["width"] * 0.47 + dx, box["y"] + dy
                    page.mouse.move(x, y)
                    tips = page.locator(".bk-Tooltip .bk-tooltip-content")
                    texts = [tips.nth(i).inner_text() for i in range(tips.count()) if tips.nth(i).is_visible()]
                    if any("layout" in t for t in texts):
                        found = (x, y, "\n".join(texts))
                        break
                if found:
                    break
            assert found is not None, "no tooltip anywhere around the point"
            assert f"onchip, note={HOSTILE}" in found[2]
            assert page.evaluate("() => document.querySelectorAll('#injected').length") == 0
            with page.context.expect_page() as opened:
                page.mouse.click(found[0], found[1])
            opened.value.wait_for_load_state()
            assert opened.value.url.endswith("/p1/report.html")
            assert problems == []
        finally:
            browser.close()


def _overlapping_page(tmp_path: Path) -> Path:
    """Two layouts at the same spot of the chart, each with a report page (a click there opened
    one tab per point), and one without a page elsewhere."""
    def point(label: str, note: str, rate: float, tile: float) -> Evaluated:
        metrics = {m: math.nan for m in POINT_METRICS}
        metrics.update({"samples_per_second": rate, "max_tile_bytes": tile, "tiles_over_budget": 0.0,
                        "bytes_per_tile": 638_976.0, "always_live_bytes": 1.0, "not_always_live_peak_bytes": 1.0,
                        "streaming_memory_bytes": 0.0, "code_bytes": 1.0, "num_replicas": 1.0})
        return Evaluated({"variant": "onchip", "note": note}, label, "ok", None, metrics)

    points = point_frame(("variant", "note"), [point("p1", "a", 1000.0, 200_000.0), point("p2", "b", 1000.0, 200_000.0),
                                               point("p3", "c", 400.0, 300_000.0)], [], Machine.of(4))
    facts = advise_verdict(points, workload="mnist", ipus=4, global_batch=256, method="exhaustive", valid_points=3,
                           pruned={})
    meta = {"name": "run", "workload": "mnist", "ipus": 4, "global_batch": 256, "global_batch_rule": "",
            "method": "exhaustive", "base_config": {}, "headline": ["note"], "notes": [],
            "streaming_memory_bytes": 450e9}
    for label in ("p1", "p2"):
        (tmp_path / label).mkdir()
        (tmp_path / label / "report.html").write_text(f"<!DOCTYPE html><title>{label}</title>", encoding="utf-8")
    path = tmp_path / "advise.html"
    path.write_text(render_advise_html(points, facts, " ".join(advise_sentences(facts)), meta,
                                       pages={"p1": "p1/report.html", "p2": "p2/report.html"}), encoding="utf-8")
    return path


#: where a data point (x in the axis's unit, y) is on the screen: BokehJS's scales of the figure
_SCREEN = """([x, y]) => {
    const view = Bokeh.index.roots.find(v => v.frame);
    const box = view.canvas_view.el.getBoundingClientRect();
    return [box.left + view.frame.x_scale.compute(x), box.top + view.frame.y_scale.compute(y)];
}"""


def test_one_click_opens_one_page(tmp_path):
    sync_api = pytest.importorskip("playwright.sync_api")
    path = _overlapping_page(tmp_path)
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            messages: list[str] = []
            page.on("pageerror", lambda e: messages.append(f"page error: {e}"))
            page.on("console", lambda m: messages.append(f"console {m.type}: {m.text}"))
            opened: list[str] = []
            page.context.on("page", lambda p: opened.append(p.url or "(blank)"))
            page.goto(path.as_uri())
            page.wait_for_function("() => typeof Bokeh !== 'undefined' && Bokeh.documents.length === 1 "
                                   "&& Bokeh.index.roots.some(v => v.frame)", timeout=60_000)
            page.locator("#advise-chart").scroll_into_view_if_needed()
            page.wait_for_timeout(300)
            # the two overlapping layouts: one click, one new page (the first point's)
            x, y = page.evaluate(_SCREEN, [200_000 / 1024, 1000.0])
            with page.context.expect_page() as first:
                page.mouse.click(x, y)
            first.value.wait_for_load_state()
            page.wait_for_timeout(500)
            assert len(opened) == 1 and first.value.url.endswith("/p1/report.html")
            # a layout without a report page: the click shows its row of the table on this page
            x, y = page.evaluate(_SCREEN, [300_000 / 1024, 400.0])
            page.mouse.click(x, y)
            page.wait_for_function("() => window.location.hash === '#point-2'")
            assert page.evaluate("() => document.querySelector(':target').id") == "point-2"
            assert len(opened) == 1
            # the page links only to pages that exist (no bare run directory)
            assert page.eval_on_selector_all("a[href]", "as => as.map(a => a.getAttribute('href'))") == [
                "p1/report.html", "p2/report.html", "p1/report.html", "p2/report.html"]
            assert messages == []
        finally:
            browser.close()
