"""Small in-memory Reports for the comparison tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profcompare.model import Report, ReportMeta, Target, make_frame

TARGET = Target(architecture="Mk2", num_ipus=1, tiles_per_ipu=8, bytes_per_tile=1000, clock_hz=1.0e9)


def meta(variant: str = "base", samples_per_step: int | None = None) -> ReportMeta:
    """Metadata of an in-memory report named ``variant``."""
    return ReportMeta(
        source="",
        format="store",
        producer="profcompare-sim test",
        simulated=True,
        target=TARGET,
        variant=variant,
        samples_per_step=samples_per_step,
    )


def variables(rows: Sequence[tuple[str, int]] | Sequence[tuple[str, int, bool]], **columns: Any) -> Any:
    """A variables frame from (name, bytes[, always_live]) rows; other columns get plain defaults."""
    names = [r[0] for r in rows]
    n = len(rows)
    data = {
        "name": names,
        "bytes": [r[1] for r in rows],
        "always_live": [r[2] if len(r) > 2 else True for r in rows],  # type: ignore[misc]
        "kind": ["weight"] * n,
        "dtype": ["float32"] * n,
        "shape": [f"[{r[1] // 4}]" for r in rows],
        "tiles": [1] * n,
        "first_step": [None] * n,
        "last_step": [None] * n,
    }
    data.update(columns)
    return make_frame("variables", data)


def liveness(programs: Sequence[str], bytes_: Sequence[int]) -> Any:
    """A liveness frame: one step per program name."""
    return make_frame(
        "liveness",
        {
            "step": list(range(len(programs))),
            "program": list(programs),
            "program_type": ["OnTileExecute"] * len(programs),
            "not_always_live_bytes": list(bytes_),
        },
    )


def tiles(used: Sequence[int], always_live: Sequence[int] | None = None) -> Any:
    """A tiles frame with bytes_including_gaps = ``used`` (one IPU)."""
    n = len(used)
    always = list(always_live) if always_live is not None else [u // 2 for u in used]
    return make_frame(
        "tiles",
        {
            "tile": list(range(n)),
            "ipu": [0] * n,
            "bytes_including_gaps": list(used),
            "bytes_excluding_gaps": list(used),
            "always_live_bytes": always,
            "not_always_live_peak_bytes": [u - a for u, a in zip(used, always)],
        },
    )


def report(variant: str = "base", samples_per_step: int | None = None, **tables: Any) -> Report:
    """A Report with the given frames (others empty)."""
    return Report.build(meta(variant, samples_per_step), **tables)
