"""Launching the CLI in a real subprocess with the fake workload registered (runner tests)."""

from __future__ import annotations

import os
from pathlib import Path

HERE = Path(__file__).resolve().parent


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
