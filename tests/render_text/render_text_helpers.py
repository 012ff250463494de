"""Helpers of the renderer and CLI tests: the sample reports, scrubbing and golden files."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import sys
from types import ModuleType

GOLDEN = pathlib.Path(__file__).parent / "golden"


def _load_samples() -> ModuleType:
    name = "cli_sample_reports"
    if name in sys.modules:
        return sys.modules[name]
    path = pathlib.Path(__file__).parents[1] / "cli" / "cli_sample_reports.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


samples = _load_samples()


def scrub(text: str) -> str:
    """Replace volatile parts (simulator versions, timestamps) by placeholders."""
    text = re.sub(r"profcompare-sim \d+\.\d+\.\d+[\w.+-]*", "profcompare-sim X.Y.Z", text)
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?", "<TIMESTAMP>", text)


def check_golden(name: str, actual: str, directory: pathlib.Path = GOLDEN) -> None:
    """Assert ``actual`` equals the golden file ``name``; PROFCOMPARE_UPDATE_GOLDEN=1 rewrites it."""
    path = directory / name
    if os.environ.get("PROFCOMPARE_UPDATE_GOLDEN") == "1":
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"golden file {path} is missing; run with PROFCOMPARE_UPDATE_GOLDEN=1 to create it"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{name} differs from its golden file (PROFCOMPARE_UPDATE_GOLDEN=1 to update)"
