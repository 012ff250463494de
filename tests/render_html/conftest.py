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
