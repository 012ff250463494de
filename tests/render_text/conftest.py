"""Fixtures for the renderer tests: the two sample reports of tests/cli, kept in memory."""

from __future__ import annotations

import pytest
from render_text_helpers import samples

from profcompare.comparison import Comparison, compare
from profcompare.model import Report


@pytest.fixture(scope="session")
def onchip() -> Report:
    return samples.build_report("onchip", source="reports/r1/onchip/profile.sqlite")


@pytest.fixture(scope="session")
def offchip() -> Report:
    return samples.build_report("offchip-sharded", source="reports/r1/offchip-sharded/profile.sqlite")


@pytest.fixture(scope="session")
def comparison(onchip: Report, offchip: Report) -> Comparison:
    return compare(onchip, offchip)
