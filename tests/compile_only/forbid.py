"""Makes numeric execution fail, so a compile-only test proves no kernel or device state ran."""

from __future__ import annotations

import pytest

from profcompare.emulator.popxl import execution


def forbid_numeric_execution(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every numeric kernel, the numeric executor and its device state raise AssertionError."""

    def fail(*args, **kwargs):
        raise AssertionError("numeric execution in compile-only mode")

    monkeypatch.setattr(execution.Executor, "__init__", fail)
    monkeypatch.setattr(execution.Executor, "run", fail)
    monkeypatch.setattr(execution.DeviceState, "__init__", fail)
    for name in list(execution._KERNELS):
        monkeypatch.setitem(execution._KERNELS, name, fail)
