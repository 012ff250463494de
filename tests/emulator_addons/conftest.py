"""Shared helpers for the popxl-addons emulator tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _no_autoreport(monkeypatch: pytest.MonkeyPatch) -> None:
    # the Session compiles on creation; these tests check numerics and must not write reports
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
