"""A test that hangs fails and names itself (pytest-timeout), instead of running into CI's limit."""

from __future__ import annotations

import pytest


def test_every_test_has_a_generous_time_limit(request: pytest.FixtureRequest) -> None:
    assert request.config.pluginmanager.hasplugin("timeout")
    limit = float(request.config.getini("timeout"))
    # minutes, not a timing assertion: long enough for the slowest test on a loaded machine,
    # short enough that a hang fails well inside CI's 90 minutes
    assert 120 <= limit <= 1200
