"""The :class:`Comparison` object: the joined tables of two reports, with the ledger views,
plots and top-N cuts over them. Build it with :func:`profcompare.compare.compare`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from profcompare.analysis import TopN, top_n
from profcompare.compare.tables import _empty_ledger_diff
from profcompare.errors import ProfcompareError
from profcompare.ledger import ledger_by_parameter, ledger_moves, peak_composition
from profcompare.model import Report


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
    ledger: pd.DataFrame = dataclasses.field(default_factory=lambda: _empty_ledger_diff())

    def ledger_moves(self, n: int | None = 8) -> pd.DataFrame:
        """How each (parameter, role)'s bytes moved between locations, largest move first.

        One row per (parameter, role) whose bytes changed anywhere: parameter, role, then
        ``base_<location>`` / ``new_<location>`` bytes for each of
        :data:`profcompare.model.LOCATIONS`, ``base_steps`` / ``new_steps`` (the
        not-always-live steps as "first-last", "" when none) and ``moved_bytes`` (the sum of
        |delta| over locations, the sort key). ``n`` rows at most (None: all).
        """
        return ledger_moves(self.ledger, n)

    def ledger_by_parameter(self) -> pd.DataFrame:
        """The ledger per parameter (roles summed): parameter, then base_/new_/delta_ bytes per
        location (``base_always_live``, ``new_always_live``, ``delta_always_live``, ...), and
        ``base_tile_memory`` / ``new_tile_memory`` / ``delta_tile_memory``: always-live +
        not-always-live, the tile memory the parameter costs (Streaming Memory is off chip and
        has its own columns); largest |delta_tile_memory| first, then |delta_streaming_memory|."""
        return ledger_by_parameter(self.ledger)

    def peak_composition(self) -> pd.DataFrame:
        """How the not-always-live peak's composition changed: one row per (parameter, role) with
        tile memory live at either report's peak step: parameter, role, base_bytes, new_bytes,
        delta_bytes (bytes live at each report's own peak); largest |delta_bytes| first. The
        deltas add up to the change of ``not_always_live_peak_bytes``."""
        return peak_composition(self.ledger)

    def plot_ledger(self) -> Any:
        """Stacked bar per parameter, base vs new, coloured by location (matplotlib Figure)."""
        from profcompare.render import plots

        return plots.plot_ledger(self)

    def _repr_html_(self) -> str:
        from profcompare.render.notebook import comparison_repr_html

        return comparison_repr_html(self)

    def __repr__(self) -> str:
        """A short text summary (a plain REPL): which report is which, the summary metrics and
        the tables there are; the full tables are attributes (``diff.variables``, ...)."""
        from profcompare.render.format import format_metric

        def side(report: Report) -> str:
            return f"{report.label!r}" + (" (simulated)" if report.meta.simulated else "")

        lines = [f"<Comparison base={side(self.base)} new={side(self.new)}; delta = new - base, "
                 f"noise {self.noise_bytes} B or {self.noise_pct:g}%>"]
        width = max(len(m) for m in self.summary.index)
        for metric, row in self.summary.iterrows():
            pct = row["delta_pct"]
            pct_text = "" if pct != pct else f" ({pct:+.1f}%)"
            lines.append(f"  {metric:<{width}}  {format_metric(metric, row['base']):>12} -> "
                         f"{format_metric(metric, row['new']):>12}  {format_metric(metric, row['delta'], signed=True):>12}"
                         f"{pct_text}  {row['status']}")
        tables = ("ledger", "categories", "variables", "tiles", "code", "liveness", "execution", "remote_buffers")
        lines.append("  tables: " + ", ".join(f"{t} ({len(getattr(self, t)):,} rows)" for t in tables))
        return "\n".join(lines)

    def plot_liveness(self) -> Any:
        """Overlay of both liveness curves, always-live levels marked (matplotlib Figure)."""
        from profcompare.render import plots

        return plots.plot_liveness([self.base, self.new], aligned=self.liveness)

    def plot_memory_by_category(self) -> Any:
        """Stacked memory-by-category bars for both reports (matplotlib Figure)."""
        from profcompare.render import plots

        return plots.plot_categories([self.base, self.new])

    def plot_tiles(self) -> Any:
        """Memory per tile for both reports with the tile budget line (matplotlib Figure)."""
        from profcompare.render import plots

        return plots.plot_tiles([self.base, self.new])

    def top(self, table: str, n: int | None = 20) -> TopN:
        """The ``n`` rows of a joined table with the largest |delta|, plus an "other" row.

        ``table`` is one of categories, variables, tiles, code, execution, remote_buffers.
        Rows are ordered by |delta| descending then by the key column. The "other" row sums
        the base_/new_/delta_ value columns of the cut rows, its ``delta_pct`` is recomputed
        from those sums and its other columns are missing. Raises ProfcompareError for an
        unknown table.
        """
        if table not in _TOP_TABLES:
            raise ProfcompareError(f"no joined table {table!r}; choose one of {', '.join(_TOP_TABLES)}")
        label, value = _TOP_TABLES[table]
        frame = getattr(self, table)
        sums = [c for c in (f"base_{value}", f"new_{value}", f"delta_{value}")]
        result = top_n(frame, n, f"delta_{value}", label_column=label, sum_columns=sums, key=np.abs)
        if result.cut:
            rows = result.rows
            last = rows.index[-1]
            base_sum = float(rows[f"base_{value}"].to_numpy(dtype=float)[-1])
            delta_sum = float(rows[f"delta_{value}"].to_numpy(dtype=float)[-1])
            rows.at[last, "delta_pct"] = 100.0 * delta_sum / base_sum if base_sum else np.nan
        return result

    def top_variables(self, n: int | None = 20) -> TopN:
        """The ``n`` variables with the largest |delta_bytes| plus an "other" row (see :meth:`top`)."""
        return self.top("variables", n)


#: table -> (label column, value column suffix) used by :meth:`Comparison.top`.
_TOP_TABLES: dict[str, tuple[str, str]] = {
    "ledger": ("parameter", "bytes"),
    "categories": ("category", "bytes"),
    "variables": ("name", "bytes"),
    "tiles": ("tile", "bytes"),
    "code": ("name", "code_bytes"),
    "execution": ("phase", "cycles"),
    "remote_buffers": ("name", "bytes"),
}
