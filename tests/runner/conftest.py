"""Fixtures of the runner tests: the fake workload registered in the registry, a clean environment."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import fake_workloads

import workloads


@pytest.fixture
def fake_registry(monkeypatch: pytest.MonkeyPatch) -> object:
    """Make the registry list only the fake workload (the subprocess imports it by reference)."""
    monkeypatch.setattr(workloads, "list_workloads", lambda: [fake_workloads.WORKLOAD])
    return fake_workloads.WORKLOAD


@pytest.fixture(autouse=True)
def _clean_engine_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
    monkeypatch.delenv("PROFCOMPARE_BACKEND", raising=False)
