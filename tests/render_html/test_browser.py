"""The HTML diff in a real browser: headless Chromium driven by Playwright (no browser download).

Checks what a user does with the page: it loads without console errors or network requests,
clicking a header sorts the variable table, typing in the filter box filters it. Writes a
full-page screenshot to tests/artifacts/html_diff.png for a human look.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from html_fixtures import ESCAPE_NAME

from profcompare.compare import compare
from profcompare.model import Report
from profcompare.render.html import HtmlRenderer

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is not installed (apt-get install chromium)"),
]

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def comparison(onchip: Report, offchip: Report):
    return compare(onchip, offchip)


@pytest.fixture(scope="module")
def page_file(tmp_path_factory: pytest.TempPathFactory, comparison) -> Path:
    path = tmp_path_factory.mktemp("html") / "diff.html"
    path.write_text(HtmlRenderer().render(comparison, top=30), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _names(page) -> list[str]:
    return page.eval_on_selector_all(
        "#variables-table tbody tr:not([hidden])", "rows => rows.map(r => r.getAttribute('data-name'))"
    )


def _column(page, index: int) -> list[float | None]:
    return page.eval_on_selector_all(
        "#variables-table tbody tr:not([hidden])",
        f"""rows => rows.map(r => {{
            const v = r.cells[{index}].getAttribute('data-sort');
            return v === null ? null : parseFloat(v);
        }})""",
    )


def test_html_diff_in_chromium(browser, page_file: Path, comparison) -> None:
    compare_rows = comparison.variables
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    problems: list[str] = []
    requests: list[str] = []
    page.on(
        "console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning") else None
    )
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("request", lambda r: requests.append(r.url) if not r.url.startswith(("file:", "data:", "about:")) else None)
    page.goto(page_file.as_uri())
    page.wait_for_load_state("load")

    assert page.title() == "profcompare: onchip (base) vs offchip-sharded (new)"
    assert page.locator(".badge-sim").count() == 2
    assert page.locator("svg").count() == 5
    # the hostile name is a table row's text, and nothing injected a <b> element
    assert ESCAPE_NAME in _names(page)
    assert page.locator("#variables-table b").count() == 0

    headers = page.locator("#variables-table thead th")
    titles = [t.strip() for t in headers.all_inner_texts()]
    new_col = next(i for i, t in enumerate(titles) if t.startswith("New"))
    # first click on a numeric header: largest first; second click: smallest first
    headers.nth(new_col).locator("button").click()
    values = _column(page, new_col)
    assert values == sorted(values, reverse=True) and values[0] > values[-1]
    assert headers.nth(new_col).get_attribute("aria-sort") == "descending"
    headers.nth(new_col).locator("button").click()
    assert _column(page, new_col) == sorted(values)
    # text column: A to Z
    headers.nth(0).locator("button").click()
    names = _names(page)
    assert names == sorted(names, key=str.lower)

    total = len(names)
    page.fill("#variable-filter", "staging")
    filtered = _names(page)
    assert filtered and all("staging" in n for n in filtered) and len(filtered) < total
    # every variable is in the page (under its row bound): the count is over all of them
    assert total == len(compare_rows)
    assert page.inner_text("#variable-count") == f"{len(filtered)} of {total} rows match"
    page.select_option("#variable-status", "added")
    assert _names(page) == filtered  # every staging buffer is new
    page.select_option("#variable-status", "removed")
    assert _names(page) == []
    page.select_option("#variable-status", "")
    page.fill("#variable-filter", r"^layer[01]/weight/(first|second)_moment$")
    page.check("#variable-regex")
    assert sorted(_names(page)) == sorted(f"layer{i}/weight/{m}_moment" for i in (0, 1) for m in ("first", "second"))
    page.fill("#variable-filter", "(")  # an invalid regex is reported, not thrown
    assert page.inner_text("#variable-error") == "invalid regular expression"
    page.fill("#variable-filter", "")
    page.uncheck("#variable-regex")
    assert len(_names(page)) == total

    # other tables sort too
    page.locator("#categories-table thead th").nth(0).locator("button").click()
    categories = page.eval_on_selector_all(
        "#categories-table tbody tr", "rows => rows.map(r => r.cells[0].textContent)"
    )
    assert categories == sorted(categories, key=str.lower)

    ARTIFACTS.mkdir(exist_ok=True)
    page.goto(page_file.as_uri())
    page.screenshot(path=str(ARTIFACTS / "html_diff.png"), full_page=True)
    assert (ARTIFACTS / "html_diff.png").stat().st_size > 50_000
    assert problems == []
    assert requests == []
    page.close()
