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
