"""Fixtures of the runner tests: the fake workload registered in the registry, a clean environment."""

from __future__ import annotations

import os
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


def launcher_code(args: list[str]) -> str:
    """Python code running the CLI with the fake workload registered (for real subprocess tests)."""
    return (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); import fake_workloads, workloads; "
        "workloads.list_workloads = lambda: [fake_workloads.WORKLOAD]; "
        f"from profcompare.cli import main; sys.exit(main({args!r}))"
    )


def subprocess_env() -> dict[str, str]:
    """The environment for launching the CLI in a subprocess (importing this checkout)."""
    env = dict(os.environ)
    env.pop("POPLAR_ENGINE_OPTIONS", None)
    root = str(HERE.parents[1])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env
