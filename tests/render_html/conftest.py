"""Fixtures of the HTML/plot/notebook tests (reports built by :mod:`html_fixtures`)."""

from __future__ import annotations

import pytest
from html_fixtures import ESCAPE_NAME, build_report

from profcompare.model import Report


@pytest.fixture(scope="session")
def onchip() -> Report:
    return build_report("onchip")


@pytest.fixture(scope="session")
def offchip() -> Report:
    return build_report("offchip-sharded", extra_names=[ESCAPE_NAME])


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium driven by Playwright, one per test module (the browser tests skip without
    Chromium: their modules' marks)."""
    from test_browser import CHROMIUM, CHROMIUM_ARGS

    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
