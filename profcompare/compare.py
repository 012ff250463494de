"""Comparing two reports: ``compare(base, new) -> Comparison`` (delta = new - base).

Every table is an outer join of the two reports on a key, the missing side filled with 0,
with fixed ``base_*`` / ``new_*`` / ``delta_*`` columns, ``delta_pct`` (100 * delta / base;
NaN when base is 0) and ``status`` in {added, removed, grew, shrank, unchanged}. A change
whose magnitude is at most ``max(noise_bytes, noise_pct% of base)`` is ``unchanged``.
Which report is which lives in ``Comparison.base.meta`` / ``Comparison.new.meta``, never in
column names.

Tables (columns, in order):

``summary`` -- index: metric (profcompare.model.METRICS)
    unit, base, new, delta, delta_pct (float64), status
``categories`` -- category, group, base_bytes, new_bytes, delta_bytes, delta_pct, status
``variables`` -- name, match (exact | normalised | unmatched), base_name, new_name, kind,
    base_bytes, new_bytes, delta_bytes, delta_pct, status, base_always_live, new_always_live,
    base_shape, new_shape, dtype; sorted by |delta_bytes| descending, then name
``tiles`` -- tile, ipu, base_bytes, new_bytes, delta_bytes, delta_pct, status,
    base_always_live_bytes, new_always_live_bytes (bytes = bytes_including_gaps)
``code`` -- name, type, base_code_bytes, new_code_bytes, delta_code_bytes, delta_pct, status
    (summed over code categories per program/operation name)
``liveness`` -- the two curves kept as two aligned series: position (int64, 0..n-1), program,
    base_step, new_step (Int64, <NA> where that side has no step at this position),
    base_not_always_live_bytes, new_not_always_live_bytes (Int64, <NA> likewise)
``execution`` -- phase, base_cycles, new_cycles, delta_cycles, delta_pct, status
    (cycles per step, i.e. per run of the main program)
``remote_buffers`` -- name, base_bytes, new_bytes, delta_bytes, delta_pct, status, base_entries,
    new_entries, base_sharded, new_sharded
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from profcompare.model import Report

STATUSES = ("added", "removed", "grew", "shrank", "unchanged")


@dataclass(frozen=True, eq=False)
class Comparison:
    """The comparison of two reports; build it with :func:`compare`."""

    base: Report
    new: Report
    summary: pd.DataFrame
    categories: pd.DataFrame
    variables: pd.DataFrame
    tiles: pd.DataFrame
    code: pd.DataFrame
    liveness: pd.DataFrame
    execution: pd.DataFrame
    remote_buffers: pd.DataFrame
    noise_bytes: int
    noise_pct: float

    def _repr_html_(self) -> str:
        from profcompare.render.notebook import comparison_repr_html

        return comparison_repr_html(self)

    def plot_liveness(self) -> Any:
        """Overlay of both liveness curves, always-live levels marked (matplotlib Figure)."""
        from profcompare.render import plots

        return plots.plot_liveness([self.base, self.new])

    def plot_memory_by_category(self) -> Any:
        """Stacked memory-by-category bars for both reports (matplotlib Figure)."""
        from profcompare.render import plots

        return plots.plot_categories([self.base, self.new])

    def plot_tiles(self) -> Any:
        """Memory per tile for both reports with the tile budget line (matplotlib Figure)."""
        from profcompare.render import plots

        return plots.plot_tiles([self.base, self.new])
