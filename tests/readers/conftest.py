from __future__ import annotations

import pytest
from readers_builders import build_report

from profcompare.model import Report


@pytest.fixture
def report() -> Report:
    """A small Report with every table filled."""
    return build_report()
