"""The :class:`Comparison` object: the joined tables of two reports, with the ledger views,
plots and top-N cuts over them. Build it with :func:`profcompare.comparison.compare`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

import numpy as np
import pandas as pd

from profcompare.base import presenters
from profcompare.analysis.views import TopN, top_n
from profcompare.analysis.ledger_code import moved_bytes
from profcompare.comparison.ledger_code import compare_ledger_code
from profcompare.comparison.operations import compare_operations
from profcompare.comparison.programs import compare_programs
from profcompare.comparison.vertices import empty_diff
from profcompare.comparison.config_diff import config_differences, config_warnings
from profcompare.comparison.tables import _empty_ledger_diff
from profcompare.errors import ProfcompareError
from profcompare.analysis.ledger import ledger_by_parameter, ledger_moves, peak_composition
from profcompare.analysis.lifetimes import LIFETIME_ROWS, lifetimes
from profcompare.perf.memo import kept_copy, memoized_copy
from profcompare.model import Report

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from profcompare.comparison.time_diff import TimeDiffSummary


def _empty_programs_diff() -> pd.DataFrame:
    """The ``programs`` table of two reports without program trees (its columns, no rows)."""
    from profcompare.model import make_frame

    return compare_programs(make_frame("programs"), make_frame("programs"))


def _empty_operations_diff() -> pd.DataFrame:
    """The ``operations`` table of two reports without operations (its columns, no rows)."""
    from profcompare.model import make_frame

    return compare_operations(make_frame("operations"), make_frame("operations"))


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
    #: the two program trees aligned (profcompare.comparison.programs.compare_programs)
    programs: pd.DataFrame = dataclasses.field(default_factory=lambda: _empty_programs_diff())
    #: the two reports' ops paired (profcompare.comparison.operations.compare_operations)
    operations: pd.DataFrame = dataclasses.field(default_factory=lambda: _empty_operations_diff())
    #: the two reports' vertex types, compute sets and exchanges paired
    #: (profcompare.comparison.vertices.compare_by_name)
    vertices: pd.DataFrame = dataclasses.field(default_factory=lambda: empty_diff("vertices"))
    compute_sets: pd.DataFrame = dataclasses.field(default_factory=lambda: empty_diff("compute_sets"))
    exchanges: pd.DataFrame = dataclasses.field(default_factory=lambda: empty_diff("exchanges"))

    @property
    def config_differences(self) -> pd.DataFrame:
        """What differs in the two reports' configuration, one row per setting: setting, base,
        new, kind (intended: the layout knobs; unexpected: the rest), moves_figures, note;
        intended rows first (:func:`profcompare.comparison.config_diff.config_differences`).
        Empty when the configurations agree."""
        return kept_copy(self, "_memo_config_differences",
                         lambda: config_differences(self.base.meta, self.new.meta))

    @property
    def time_diff(self) -> pd.DataFrame:
        """Where the device cycles of one run went: the two reports' steps aligned per IPU, one
        row per step added, removed, slower, faster or unchanged, each charged to a (parameter,
        role) where it moves that parameter's data and to a named kind otherwise, its change split
        into exposed and overlapped cycles, with the bytes it moves; the rows' ``delta_cycles``
        add up to the change of ``cycles_per_step``. Columns and definitions:
        :mod:`profcompare.comparison.time_diff`."""
        from profcompare.comparison.time_diff import time_diff

        return kept_copy(self, "_memo_time_diff", lambda: time_diff(self.base, self.new))

    def time_diff_summary(self) -> TimeDiffSummary:
        """The totals of :attr:`time_diff`: the two device spans per run and their change, the
        share charged to parameters or named kinds, and the change of exposed and overlapped
        cycles (:class:`~profcompare.comparison.time_diff.TimeDiffSummary`)."""
        from profcompare.comparison.time_diff import time_diff_summary

        kept = self.__dict__.get("_memo_time_diff_summary")
        if kept is None:
            kept = time_diff_summary(self.time_diff, self.base, self.new)
            object.__setattr__(self, "_memo_time_diff_summary", kept)
        return kept

    def time_causes(self) -> pd.DataFrame:
        """:attr:`time_diff` summed per (parameter, role, kind), largest change first, with the
        bytes moved and the bandwidth they imply
        (:func:`~profcompare.comparison.time_diff.time_causes`)."""
        from profcompare.comparison.time_diff import time_causes

        return kept_copy(self, "_memo_time_causes",
                         lambda: time_causes(self.time_diff, self.time_diff_summary().clock_hz))

    def config_warnings(self) -> tuple[str, ...]:
        """One sentence per unexpected difference of configuration that can move the figures
        (the model size, the target, the SDK or simulator version, ...); empty when none."""
        return config_warnings(self.config_differences)

    def ledger_moves(self, n: int | None = 8) -> pd.DataFrame:
        """How each (parameter, role)'s bytes moved between locations, largest move first.

        One row per (parameter, role) whose bytes changed anywhere: parameter, role, then
        ``base_<location>`` / ``new_<location>`` bytes for each of
        :data:`profcompare.model.LOCATIONS`, ``base_steps`` / ``new_steps`` (the
        not-always-live steps as "first-last", "" when none) and ``moved_bytes`` (the sum of
        |delta| over locations, the sort key). ``n`` rows at most (None: all).
        """
        moves = self._all_ledger_moves()
        return moves if n is None else moves.head(n).reset_index(drop=True)

    @memoized_copy
    def _all_ledger_moves(self) -> pd.DataFrame:
        return ledger_moves(self.ledger, None)

    @memoized_copy
    def ledger_by_parameter(self) -> pd.DataFrame:
        """The ledger per parameter (roles summed): parameter, then base_/new_/delta_ bytes per
        location (``base_always_live``, ``new_always_live``, ``delta_always_live``, ...), and
        ``base_tile_memory`` / ``new_tile_memory`` / ``delta_tile_memory``: always-live +
        not-always-live, the tile memory the parameter costs (Streaming Memory is off chip and
        has its own columns); largest |delta_tile_memory| first, then |delta_streaming_memory|."""
        return ledger_by_parameter(self.ledger)

    @memoized_copy
    def ledger_code(self) -> pd.DataFrame:
        """The code and cycles of the ops acting on each (parameter, role), base and new: one row
        per (parameter, role) or named row ("(activations)", "(several parameters)", ...,
        "(not attributed to an op)"): base_/new_/delta_code_bytes, base_/new_/delta_cycles (per
        run), base_ops / new_ops, status, largest_op and largest_op_delta_code_bytes (the op of
        the row whose code changed most), base_/new_/delta_bytes_moved (what the row's transfers
        and collectives move per run, from the time diff's attribution of steps); the column sums
        are the two operations tables' (:func:`profcompare.comparison.ledger_code.compare_ledger_code`)."""
        return compare_ledger_code(self.base.operations, self.new.operations,
                                   noise_bytes=self.noise_bytes, noise_pct=self.noise_pct,
                                   base_moves=moved_bytes(self.base), new_moves=moved_bytes(self.new))

    def peak_composition(self) -> pd.DataFrame:
        """How the not-always-live peak's composition changed: one row per (parameter, role) with
        tile memory live at either report's peak step: parameter, role, base_bytes, new_bytes,
        delta_bytes (bytes live at each report's own peak); largest |delta_bytes| first. The
        deltas add up to the change of ``not_always_live_peak_bytes``."""
        return peak_composition(self.ledger)

    def lifetimes(self, n: int | None = LIFETIME_ROWS) -> pd.DataFrame:
        """Each (parameter, role)'s live span in tile memory, base and new
        (:func:`profcompare.analysis.lifetimes.lifetimes`): the first/last step of each report
        it is live at, always-live groups over the whole run; ``n`` rows, the rest folded."""
        return lifetimes(self.ledger, len(self.base.liveness_per_step()), len(self.new.liveness_per_step()), n)

    def plot_lifetimes(self) -> Figure:
        """One row per (parameter, role): its live span over program steps, base bar over new
        bar; always-live groups hatched across the whole run (matplotlib Figure)."""
        return cast("Figure", presenters.present("Comparison.plot_lifetimes", self))

    # Notebook display, the REPL summary and plots are the render layer's: it registers them
    # with profcompare.base.presenters, so the comparison never imports it.
    def plot_ledger(self) -> Figure:
        """Stacked bar per parameter, base vs new, coloured by location (matplotlib Figure)."""
        return cast("Figure", presenters.present("Comparison.plot_ledger", self))

    def _repr_html_(self) -> str:
        return str(presenters.present("Comparison._repr_html_", self))

    def __repr__(self) -> str:
        """A short text summary (a plain REPL): which report is which, the summary metrics and
        the tables there are; the full tables are attributes (``diff.variables``, ...)."""
        return str(presenters.present("Comparison.__repr__", self))

    def plot_liveness(self) -> Figure:
        """Overlay of both liveness curves, always-live levels marked (matplotlib Figure)."""
        return cast("Figure", presenters.present("Comparison.plot_liveness", self))

    def plot_memory_by_category(self) -> Figure:
        """Stacked memory-by-category bars for both reports (matplotlib Figure)."""
        return cast("Figure", presenters.present("Comparison.plot_memory_by_category", self))

    def plot_tiles(self) -> Figure:
        """Memory per tile for both reports with the tile budget line (matplotlib Figure)."""
        return cast("Figure", presenters.present("Comparison.plot_tiles", self))

    def plot_trace(self) -> Figure:
        """Both execution traces, base above new, on the same time axis (matplotlib Figure)."""
        return cast("Figure", presenters.present("Comparison.plot_trace", self))

    def plot_execution(self) -> Figure:
        """The same figure as :meth:`plot_trace` (Graph Analyser calls the view Execution Trace)."""
        return cast("Figure", presenters.present("Comparison.plot_trace", self))

    def tile_detail(self, tile: int | None = None) -> pd.DataFrame:
        """The tiles worth explaining side by side, one row per (tile, figure): with ``tile``,
        that tile; otherwise each side's fullest tile and the tile whose bytes changed most.
        Columns: tile (int64), reasons (str: "fullest in base", "largest change", ... joined by
        ", "), figure (str, as :meth:`Report.tile_detail`), base, new, delta (Int64 bytes, <NA>
        where a side does not record the figure). See
        :func:`profcompare.comparison.tile_detail.tile_detail_frame`."""
        return cast(pd.DataFrame, presenters.present("Comparison.tile_detail", self, tile))

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
