"""Helpers of the renderer and CLI tests: the sample reports, scrubbing and golden files."""

from __future__ import annotations

import importlib.util
import os
import pathlib
import re
import sys
from types import ModuleType
from typing import Any

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


def ledger_pair() -> tuple[Any, Any]:
    """Two tiny hand-built reports whose ledgers differ in known ways (bytes per replica):

    - base: fc1.weight weight 3,200,000 B always-live, its optimizer state 3,200,000 B
      always-live, an activation 100,000 B live over steps 1-2 (the peak, step 1);
    - new: the weight unchanged, the optimizer state 800,000 B in Streaming Memory plus
      800,000 B of remote staging live over steps 2-3 (the peak, step 2), the activation
      unchanged, a parameter named ``<b>x|y</b>`` (1,000 B always-live) and an unattributed
      4 B always-live.
    """
    from profcompare.model import Report, ReportMeta, Target, make_frame

    target = Target("Mk2", 1, 4, 1_000_000, 1.0e9)

    def build(variant: str, rows: list[tuple[Any, ...]], remote: list[tuple[str, int, str, str]],
              curve: list[int]) -> Report:
        columns = ("name", "bytes", "always_live", "first_step", "last_step", "parameter", "role", "which")
        data = {c: [r[j] for r in rows] for j, c in enumerate(columns)}
        n = len(rows)
        data.update(kind=["weight"] * n, dtype=["float32"] * n, shape=[f"[{r[1] // 4}]" for r in rows], tiles=[1] * n)
        meta = ReportMeta(source="", format="store", producer="profcompare-sim test", simulated=True,
                          target=target, variant=variant)
        buffers = make_frame("remote_buffers", {
            "name": [b[0] for b in remote], "entries": [1] * len(remote), "shape": [f"[{b[1] // 4}]" for b in remote],
            "dtype": ["float32"] * len(remote), "sharded": [True] * len(remote), "bytes": [b[1] for b in remote],
            "parameter": [b[2] for b in remote], "role": [b[3] for b in remote], "which": ["first_order"] * len(remote),
        })
        liveness = make_frame("liveness", {
            "step": list(range(len(curve))), "program": [f"p{i}" for i in range(len(curve))],
            "program_type": ["OnTileExecute"] * len(curve), "not_always_live_bytes": curve,
        })
        return Report.build(meta, variables=make_frame("variables", data), remote_buffers=buffers, liveness=liveness)

    weight = ("fc1/w", 3_200_000, True, None, None, "fc1.weight", "weight", "")
    activation = ("fc1/out", 100_000, False, 1, 2, "", "activation", "")
    base = build("base", [weight, ("fc1/w/adam_m", 3_200_000, True, None, None, "fc1.weight", "optimizer_state",
                                   "first_order"), activation], [], [0, 100_000, 100_000, 0])
    new = build("new", [weight, activation,
                        ("fc1/w/adam_m/staging", 800_000, False, 2, 3, "fc1.weight", "remote_staging", ""),
                        ("odd", 1_000, True, None, None, "<b>x|y</b>", "weight", ""),
                        ("step", 4, True, None, None, "", "other", "")],
                [("fc1/w/adam_m", 800_000, "fc1.weight", "optimizer_state")], [0, 100_000, 900_000, 800_000])
    return base, new
