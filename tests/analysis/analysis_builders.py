"""Small in-memory Reports for the analysis tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profcompare.model import Report, ReportMeta, Target, make_frame

TARGET = Target(architecture="Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=1000, clock_hz=1.0e9)
META = ReportMeta(source="", format="store", producer="profcompare-sim test", simulated=True, target=TARGET)


def variable_frame(rows: Sequence[tuple[str, int, bool, str]]) -> Any:
    """A variables frame from (name, bytes, always_live, kind) rows."""
    n = len(rows)
    return make_frame(
        "variables",
        {
            "name": [r[0] for r in rows],
            "bytes": [r[1] for r in rows],
            "always_live": [r[2] for r in rows],
            "kind": [r[3] for r in rows],
            "dtype": ["float32"] * n,
            "shape": ["[1]"] * n,
            "tiles": list(range(1, n + 1)),
            "first_step": [None if r[2] else i for i, r in enumerate(rows)],
            "last_step": [None if r[2] else i + 1 for i, r in enumerate(rows)],
        },
    )


def report(**tables: Any) -> Report:
    """A Report with the given frames (others empty)."""
    return Report.build(META, **tables)
