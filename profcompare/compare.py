"""Comparing two reports: ``compare(base, new) -> Comparison`` (delta = new - base).

Every table is an outer join of the two reports on a key, the missing side filled with 0,
with fixed ``base_*`` / ``new_*`` / ``delta_*`` columns, ``delta_pct`` (100 * delta / base;
NaN when base is 0) and ``status`` in {added, removed, grew, shrank, unchanged}. A change is
``unchanged`` only when it is noise by both measures: at most ``noise_bytes`` (byte columns) and
at most ``noise_pct`` percent of base, so a large relative change (9 B -> 25 B, +177.8%) or a
large absolute one is never called unchanged.
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

Details every consumer may rely on:

- ``status`` (and ``match``) columns of the tables are categoricals with the fixed categories
  :data:`STATUSES` (and :data:`MATCHES`). ``added`` = key only in new, ``removed`` = only in
  base; ``grew`` / ``shrank`` = |delta| above the noise threshold, else ``unchanged``. The
  threshold is ``min(noise_bytes, noise_pct / 100 * |base|)`` for byte columns and
  ``noise_pct / 100 * |base|`` for everything else (cycles, tile counts, samples/s); see
  :func:`noise_threshold`.
- ``summary.status`` is a plain str column with the same values plus ``"n/a"``: a summary
  metric that is NaN on either side (e.g. cycles without an execution profile) keeps NaN in
  base/new/delta/delta_pct and gets status ``"n/a"`` (summary metrics have no added/removed).
- Value columns (``base_*`` / ``new_*`` / ``delta_*`` sizes) are int64 (bytes) or float64
  (cycles per step) with the missing side counted as 0, so ``base + delta == new`` on every
  row. Descriptive columns of a missing side are missing: ``base_name`` / ``base_shape`` None,
  ``base_always_live`` / ``base_sharded`` <NA> (nullable boolean), ``base_entries`` 0.
- ``variables``: rows are paired only within the same parameter and role: first by
  attribution (parameter, role, name without graph indices), then by exact name, then by
  normalised name (:func:`normalise_variable_name`) when unique on each side; see
  :func:`_compare_variables`. A graph-scoped name's index (``Adam_subgraph(2)/``) never pairs
  rows by itself. Unpaired rows are added/removed. ``name`` is the new name when the row
  exists in new, else the base name.
- ``liveness``: ``liveness.attrs["alignment"]`` says how the curves were aligned:
  ``"program"`` (by program-name sequence: steps on a longest common subsequence of names paired,
  differing stretches between them paired by position) or
  ``"position"`` (step i with step i; used when the sequences are large and different or
  too dissimilar). ``program`` is the base program name where base has a step, else new's.
- Rows are ordered: categories by group then PopVision category order; variables, code and
  remote_buffers by |delta| descending then name; tiles by tile; execution in
  :data:`profcompare.model.PHASES` order.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import sys
import types
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from profcompare.ledger import ledger_by_parameter, ledger_moves, peak_composition
from profcompare.analysis import TopN, top_n
from profcompare.errors import ProfcompareError, SameReportWarning
from profcompare.readable import readable
from profcompare.model import (
    combined_confidence,
    metric_confidence,
    HIGHER_IS_BETTER,
    CATEGORY_GROUP_NAMES,
    CATEGORY_GROUPS,
    METRIC_UNITS,
    METRICS,
    PHASES,
    Report,
)

STATUSES = ("added", "removed", "grew", "shrank", "unchanged")
MATCHES = ("attributed", "exact", "normalised", "unmatched")
#: Status of a summary metric that is NaN on either side.
NOT_AVAILABLE = "n/a"

_ADDED, _REMOVED, _GREW, _SHRANK, _UNCHANGED = range(5)
_STATUS_DTYPE = pd.CategoricalDtype(list(STATUSES))
_MATCH_DTYPE = pd.CategoricalDtype(list(MATCHES))

#: Work budget (diagonal probes + equal steps followed) of the program-name alignment of two
#: liveness curves' differing middle parts; beyond it the curves are aligned by position.
#: Chosen so that the worst accepted case takes about half a second in CPython.
_ALIGN_WORK_LIMIT = 2_000_000
#: Aligned by program name only when at least this share of steps pair up with equal names
#: (2 x pairs / (base steps + new steps)); otherwise the curves are aligned by position.
_ALIGN_MIN_SIMILARITY = 0.5


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
        ``base_total`` / ``new_total`` / ``delta_total``; largest |delta_total| first."""
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


# --------------------------------------------------------------------------------------------
# Status and deltas (vectorised)


def noise_threshold(base: np.ndarray | float, noise_abs: float, noise_pct: float) -> np.ndarray | float:
    """The largest |delta| that is still noise: within ``noise_abs`` *and* within ``noise_pct``
    percent of |base| (``noise_abs`` = inf for columns without an absolute threshold). One rule
    for every table, so the status never disagrees with the delta shown beside it."""
    return np.minimum(noise_abs, noise_pct / 100.0 * np.abs(base))


def _status_codes(
    base: np.ndarray,
    new: np.ndarray,
    in_base: np.ndarray,
    in_new: np.ndarray,
    noise_abs: float,
    noise_pct: float,
) -> np.ndarray:
    """int8 codes into STATUSES for each row (see the module docstring for the rules)."""
    base_f = base.astype("float64")
    delta = new.astype("float64") - base_f
    threshold = noise_threshold(base_f, noise_abs, noise_pct)
    codes = np.full(len(base_f), _UNCHANGED, dtype=np.int8)
    codes[delta > threshold] = _GREW
    codes[delta < -threshold] = _SHRANK
    codes[in_new & ~in_base] = _ADDED
    codes[in_base & ~in_new] = _REMOVED
    return codes


def _delta_pct(base: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """100 * delta / base as float64, NaN where base is 0 (or NaN)."""
    base_f = base.astype("float64")
    out = np.full(len(base_f), np.nan)
    ok = base_f != 0
    out[ok] = 100.0 * delta[ok].astype("float64") / base_f[ok]
    return out


def _status(codes: np.ndarray) -> pd.Categorical:
    return pd.Categorical.from_codes(codes, dtype=_STATUS_DTYPE)


# --------------------------------------------------------------------------------------------
# Key alignment (vectorised outer join on a key, without pandas.merge)


def _occurrence(codes: np.ndarray) -> np.ndarray:
    """For each element, how many earlier elements have the same code (0 for the first)."""
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    starts = np.r_[0, np.flatnonzero(ordered[1:] != ordered[:-1]) + 1]
    run_lengths = np.diff(np.r_[starts, len(ordered)])
    occurrence_sorted = np.arange(len(ordered)) - np.repeat(starts, run_lengths)
    occurrence = np.empty(len(codes), dtype=np.int64)
    occurrence[order] = occurrence_sorted
    return occurrence


def _align_keys(base_keys: Sequence[Any] | np.ndarray, new_keys: Sequence[Any] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Outer-join two key arrays; the k-th occurrence of a key in base pairs with its k-th in new.

    Returns (base_index, new_index): int64 arrays of row positions, -1 where that side has no
    row. Order: the first appearance of the key in base, then keys only in new.
    """
    n_base = len(base_keys)
    both = pd.concat(
        [pd.Series(np.asarray(base_keys, dtype=object)), pd.Series(np.asarray(new_keys, dtype=object))],
        ignore_index=True,
    )
    codes, uniques = pd.factorize(both, use_na_sentinel=False)
    codes = codes.astype(np.int64)
    n_keys = len(uniques)
    base_codes, new_codes = codes[:n_base], codes[n_base:]
    if (np.bincount(base_codes, minlength=n_keys) > 1).any() or (np.bincount(new_codes, minlength=n_keys) > 1).any():
        stride = int(max(len(base_codes), len(new_codes))) + 1
        composite = np.r_[base_codes * stride + _occurrence(base_codes), new_codes * stride + _occurrence(new_codes)]
        codes, _ = pd.factorize(composite)
        codes = codes.astype(np.int64)
        n_keys = int(codes.max()) + 1 if len(codes) else 0
        base_codes, new_codes = codes[:n_base], codes[n_base:]
    base_index = np.full(n_keys, -1, dtype=np.int64)
    new_index = np.full(n_keys, -1, dtype=np.int64)
    base_index[base_codes] = np.arange(len(base_codes))
    new_index[new_codes] = np.arange(len(new_codes))
    return base_index, new_index


def _take(values: np.ndarray, index: np.ndarray, fill: Any) -> np.ndarray:
    """values[index] with ``fill`` where index is -1."""
    present = index >= 0
    if values.dtype == object or fill is None:
        out = np.full(len(index), fill, dtype=object)
    else:
        out = np.full(len(index), fill, dtype=values.dtype)
    if len(values):
        out[present] = values[index[present]]
    return out


def _take_object(series: pd.Series, index: np.ndarray) -> pd.Series:
    """An object Series of series[index], None where index is -1."""
    return pd.Series(_take(series.to_numpy(dtype=object), index, None), dtype=object)


def _take_boolean(series: pd.Series, index: np.ndarray) -> pd.Series:
    """A nullable boolean Series of series[index], <NA> where index is -1."""
    values = _take(series.to_numpy(dtype=bool), index, False).astype(bool)
    return pd.Series(pd.arrays.BooleanArray(values, index < 0))


def _pick_categorical(base: pd.Series, new: pd.Series, base_index: np.ndarray, new_index: np.ndarray) -> pd.Series:
    """new's value where the row exists in new, else base's; a categorical over both sides' categories."""
    base_cat = base.astype("category") if not isinstance(base.dtype, pd.CategoricalDtype) else base
    new_cat = new.astype("category") if not isinstance(new.dtype, pd.CategoricalDtype) else new
    categories = list(dict.fromkeys([*base_cat.cat.categories, *new_cat.cat.categories]))
    position = {c: i for i, c in enumerate(categories)}
    base_map = np.array([position[c] for c in base_cat.cat.categories] + [-1], dtype=np.int64)
    new_map = np.array([position[c] for c in new_cat.cat.categories] + [-1], dtype=np.int64)
    base_codes = base_map[base_cat.cat.codes.to_numpy()] if len(base_cat) else np.zeros(0, dtype=np.int64)
    new_codes = new_map[new_cat.cat.codes.to_numpy()] if len(new_cat) else np.zeros(0, dtype=np.int64)
    codes = np.where(new_index >= 0, _take(new_codes, new_index, -1), _take(base_codes, base_index, -1))
    return pd.Series(pd.Categorical.from_codes(codes, categories=pd.Index(categories)))


def _order_abs_delta_then_label(delta: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Row positions sorted by |delta| descending, then label ascending.

    Labels are only compared inside groups of equal |delta| (sorting strings is the slow part).
    """
    magnitude = np.abs(delta.astype("float64"))
    first = np.argsort(-magnitude, kind="stable")
    ordered = magnitude[first]
    tied = np.zeros(len(first), dtype=bool)
    if len(first) > 1:
        same = ordered[1:] == ordered[:-1]
        tied[1:] |= same
        tied[:-1] |= same
    if not tied.any():
        return first
    label_rank = np.zeros(len(first), dtype=np.int64)
    tied_rows = first[tied]
    tied_labels = labels[tied_rows].tolist()
    order = sorted(range(len(tied_rows)), key=tied_labels.__getitem__)
    label_rank[tied_rows[np.asarray(order, dtype=np.int64)]] = np.arange(len(order))
    return np.lexsort((label_rank, -magnitude))


def _value_columns(
    prefix: str,
    base_values: np.ndarray,
    new_values: np.ndarray,
    base_index: np.ndarray,
    new_index: np.ndarray,
    noise_abs: float,
    noise_pct: float,
    dtype: str,
) -> dict[str, Any]:
    """base_<prefix>, new_<prefix>, delta_<prefix>, delta_pct, status for aligned rows."""
    base = _take(np.asarray(base_values).astype(dtype), base_index, 0).astype(dtype)
    new = _take(np.asarray(new_values).astype(dtype), new_index, 0).astype(dtype)
    delta = new - base
    codes = _status_codes(base, new, base_index >= 0, new_index >= 0, noise_abs, noise_pct)
    return {
        f"base_{prefix}": base,
        f"new_{prefix}": new,
        f"delta_{prefix}": delta,
        "delta_pct": _delta_pct(base, delta),
        "status": _status(codes),
    }


# --------------------------------------------------------------------------------------------
# Variable name normalisation

_SCOPE_PREFIX = re.compile(
    r"^(?:(?:main|main_graph|load_remote|store_remote|remote_load|remote_store"
    r"|<[^<>/]*>|[^/]*subgraph[^/]*|graph_?\d+)/)+"
)
_REPLICA_OR_NUMERIC_SUFFIX = re.compile(
    r"(?:__t\d+|_\d+|\.\d+|/shard\d*|__?shard(?:ed)?\d*|__?rts|_remote_loaded)+$"
)


def normalise_variable_name(name: str) -> str:
    """The name used to pair variables that were renamed between two reports.

    Strips, from the start, scope prefixes (``main/``, ``main_graph/``, ``load_remote/``,
    ``store_remote/``, ``remote_load/``, ``remote_store/``, graph scopes such as ``<graph>/``,
    ``Net_subgraph(0)/``, ``graph_3/``), and from the end numeric suffixes (``__t3``, ``_1``,
    ``.0``) and replica/shard markers (``/shard``, ``/shard0``, ``_rts``, ``__shard0``,
    ``_sharded``, ``_remote_loaded``), repeatedly. A name reduced to nothing stays as it was.
    """
    stripped = _REPLICA_OR_NUMERIC_SUFFIX.sub("", _SCOPE_PREFIX.sub("", name))
    return stripped or name


def _normalise_names(names: np.ndarray) -> np.ndarray:
    """Vectorised :func:`normalise_variable_name` over an object array of names."""
    if not len(names):
        return np.zeros(0, dtype=object)
    series = pd.Series(names, dtype=object)
    stripped = series.str.replace(_SCOPE_PREFIX, "", regex=True).str.replace(
        _REPLICA_OR_NUMERIC_SUFFIX, "", regex=True
    )
    stripped = stripped.where(stripped.str.len() > 0, series)
    return stripped.to_numpy(dtype=object)


# --------------------------------------------------------------------------------------------
# Tables


def _compare_summary(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    base_values = base.summary().to_numpy(dtype="float64")
    new_values = new.summary().to_numpy(dtype="float64")
    delta = new_values - base_values
    status: list[str] = []
    for metric, b, n, d in zip(METRICS, base_values, new_values, delta):
        if math.isnan(b) or math.isnan(n):
            status.append(NOT_AVAILABLE)
            continue
        noise_abs = noise_bytes if METRIC_UNITS[metric] == "bytes" else math.inf
        threshold = float(noise_threshold(b, noise_abs, noise_pct))
        status.append("grew" if d > threshold else "shrank" if d < -threshold else "unchanged")
    frame = pd.DataFrame(
        {
            "unit": pd.Series([METRIC_UNITS[m] for m in METRICS], dtype=object),
            "base": base_values,
            "new": new_values,
            "delta": delta,
            "delta_pct": _delta_pct(base_values, delta),
            "status": pd.Series(status, dtype=object),
            "confidence": pd.Series(
                [combined_confidence(metric_confidence(base.meta, m), metric_confidence(new.meta, m)) for m in METRICS],
                dtype=object,
            ),
        }
    )
    frame.index = pd.Index(list(METRICS), name="metric", dtype=object)
    return frame


def _compare_categories(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    b, n = base.categories, new.categories
    bi, ni = _align_keys(b["category"].to_numpy(dtype=object), n["category"].to_numpy(dtype=object))
    category = pd.Series(
        np.where(ni >= 0, _take(n["category"].to_numpy(dtype=object), ni, None), _take(b["category"].to_numpy(dtype=object), bi, None)),
        dtype=object,
    )
    group_values = np.where(
        ni >= 0, _take(n["group"].astype(str).to_numpy(dtype=object), ni, None), _take(b["group"].astype(str).to_numpy(dtype=object), bi, None)
    )
    frame = pd.DataFrame(
        {
            "category": category,
            "group": pd.Categorical(group_values, categories=list(CATEGORY_GROUP_NAMES)),
            **_value_columns("bytes", b["bytes"].to_numpy(), n["bytes"].to_numpy(), bi, ni, noise_bytes, noise_pct, "int64"),
        }
    )
    known = {c: i for i, c in enumerate(CATEGORY_GROUPS)}
    group_rank = {g: i for i, g in enumerate(CATEGORY_GROUP_NAMES)}
    frame["_g"] = [group_rank.get(g, len(group_rank)) for g in group_values]
    frame["_c"] = [known.get(c, len(known)) for c in category]
    frame = frame.sort_values(["_g", "_c", "category"], kind="mergesort")
    return frame.drop(columns=["_g", "_c"]).reset_index(drop=True)


#: A graph scope with popxl's per-graph index, ``Adam_subgraph(2)/``: the index depends on the
#: order graphs were created in, so two reports' ``(2)`` need not be the same graph.
_GRAPH_INDEX = re.compile(r"\(\d+\)(?=(?:_[A-Za-z]\w*)?/)")
#: The per-call-instance suffix of simulated reports (``name@2``) and the repeat suffix (``#2``).
_INSTANCE_SUFFIX = re.compile(r"(?:@\d+|#\d+)+$")


def _graph_stems(names: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Names without graph indices and instance suffixes: ``Adam_subgraph(2)/var@3`` ->
    ``Adam_subgraph/var`` (the attributed match key's name part), for the ``rows`` (mask) only;
    "" elsewhere. Only names holding ``(``, ``@`` or ``#`` go through the regular expressions."""
    stems = np.full(len(names), "", dtype=object)
    if not len(names):
        return stems
    stems[rows] = names[rows]
    marked = rows & np.fromiter((isinstance(n, str) and ("(" in n or "@" in n or "#" in n) for n in names),
                                dtype=bool, count=len(names))
    if marked.any():
        series = pd.Series(names[marked], dtype=object)
        stems[marked] = series.str.replace(_GRAPH_INDEX, "", regex=True).str.replace(
            _INSTANCE_SUFFIX, "", regex=True).to_numpy(dtype=object)
    return stems


def _has_graph_index(names: np.ndarray) -> np.ndarray:
    """Mask of the names with a graph index (``Adam_subgraph(2)/``); only names holding ``(``
    go through the regular expression."""
    mask = np.fromiter((isinstance(n, str) and "(" in n for n in names), dtype=bool, count=len(names))
    if mask.any():
        mask[mask] = pd.Series(names[mask], dtype=object).str.contains(_GRAPH_INDEX).to_numpy(dtype=bool)
    return mask


def _without_graph_index(names: np.ndarray) -> np.ndarray:
    """Names without popxl's graph indices, instance suffixes kept: ``Net_subgraph(0)/x@2`` ->
    ``Net_subgraph/x@2``."""
    return pd.Series(names, dtype=object).str.replace(_GRAPH_INDEX, "", regex=True).to_numpy(dtype=object)


def _codes(base_values: np.ndarray, new_values: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer codes of two arrays over their common values (vectorised)."""
    codes, uniques = pd.factorize(pd.Series(np.r_[base_values, new_values], dtype=object), use_na_sentinel=False)
    codes = codes.astype(np.int64)
    return codes[: len(base_values)], codes[len(base_values):], max(1, len(uniques))


def _combine(*parts: tuple[np.ndarray, np.ndarray, int]) -> tuple[np.ndarray, np.ndarray]:
    """One int64 key per row from several coded columns (mixed radix)."""
    base_key = np.zeros(len(parts[0][0]), dtype=np.int64)
    new_key = np.zeros(len(parts[0][1]), dtype=np.int64)
    for b, n, size in parts:
        base_key = base_key * size + b
        new_key = new_key * size + n
    return base_key, new_key


def _pair(base_key: np.ndarray, new_key: np.ndarray, base_free: np.ndarray, new_free: np.ndarray,
          base_partner: np.ndarray, new_partner: np.ndarray, match: np.ndarray, code: int, *,
          unique_only: bool) -> None:
    """Pair the free rows (mask) with equal keys: the k-th occurrence in base with the k-th in new
    (``unique_only``: only keys that occur once among each side's free rows). In place."""
    bi_rows = np.flatnonzero(base_free)
    ni_rows = np.flatnonzero(new_free)
    if not len(bi_rows) or not len(ni_rows):
        return
    bk, nk = base_key[bi_rows], new_key[ni_rows]
    if unique_only:
        codes, uniques = pd.factorize(np.r_[bk, nk])
        b_codes, n_codes = codes[: len(bk)], codes[len(bk):]
        once = (np.bincount(b_codes, minlength=len(uniques)) == 1) & (np.bincount(n_codes, minlength=len(uniques)) == 1)
        keep_b, keep_n = once[b_codes], once[n_codes]
        bi_rows, ni_rows, bk, nk = bi_rows[keep_b], ni_rows[keep_n], bk[keep_b], nk[keep_n]
        if not len(bi_rows) or not len(ni_rows):
            return
    b_pos, n_pos = _align_keys(bk, nk)
    both = (b_pos >= 0) & (n_pos >= 0)
    b_sel, n_sel = bi_rows[b_pos[both]], ni_rows[n_pos[both]]
    base_partner[b_sel] = n_sel
    new_partner[n_sel] = b_sel
    match[b_sel] = code


def _compare_variables(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    """The per-variable diff (module docstring). Rows are paired in three passes, each only
    between rows of the same parameter and role, so a pair never mixes two parameters' data:

    1. ``attributed``: rows with a parameter, on the key (parameter, role, name without graph
       indices and instance suffixes), k-th occurrence with k-th; then unattributed rows of
       called graphs on (role, name without graph index, call instance kept), when unique on
       each side;
    2. ``exact``: the same name (k-th with k-th);
    3. ``normalised``: the same normalised name (:func:`normalise_variable_name`), when unique on
       each side.

    A graph-scoped name with popxl's graph index (``Adam_subgraph(2)/var``) is paired only in
    pass 1: the index is creation order, not identity. Linear in the number of rows.
    """
    b, n = base.variables, new.variables
    base_names = b["name"].to_numpy(dtype=object)
    new_names = n["name"].to_numpy(dtype=object)
    base_param = b["parameter"].to_numpy(dtype=object)
    new_param = n["parameter"].to_numpy(dtype=object)
    base_role = b["role"].astype(str).to_numpy(dtype=object)
    new_role = n["role"].astype(str).to_numpy(dtype=object)
    n_base, n_new = len(b), len(n)
    base_partner = np.full(n_base, -1, dtype=np.int64)
    new_partner = np.full(n_new, -1, dtype=np.int64)
    match = np.full(n_base, 3, dtype=np.int8)
    param_codes = _codes(base_param, new_param)
    role_codes = _codes(base_role, new_role)

    base_attr, new_attr = base_param != "", new_param != ""
    if base_attr.any() and new_attr.any():
        stems = _codes(_graph_stems(base_names, base_attr), _graph_stems(new_names, new_attr))
        bk, nk = _combine(param_codes, role_codes, stems)
        _pair(bk, nk, base_attr, new_attr, base_partner, new_partner, match, 0, unique_only=False)

    base_indexed, new_indexed = _has_graph_index(base_names), _has_graph_index(new_names)
    base_loose = (base_partner < 0) & base_indexed & ~base_attr
    new_loose = (new_partner < 0) & new_indexed & ~new_attr
    if base_loose.any() and new_loose.any():
        # unattributed tensors of called graphs (activations, partials): the same role, the same
        # name within the graph and the same call instance, unique on each side
        local_b = np.full(n_base, "", dtype=object)
        local_n = np.full(n_new, "", dtype=object)
        local_b[base_loose] = _without_graph_index(base_names[base_loose])
        local_n[new_loose] = _without_graph_index(new_names[new_loose])
        bk, nk = _combine(role_codes, _codes(local_b, local_n))
        _pair(bk, nk, base_loose, new_loose, base_partner, new_partner, match, 0, unique_only=True)
    bk, nk = _combine(param_codes, role_codes, _codes(base_names, new_names))
    _pair(bk, nk, (base_partner < 0) & ~base_indexed, (new_partner < 0) & ~new_indexed, base_partner, new_partner,
          match, 1, unique_only=False)

    base_free = (base_partner < 0) & ~base_indexed
    new_free = (new_partner < 0) & ~new_indexed
    if base_free.any() and new_free.any():
        normalised_b = np.full(n_base, "", dtype=object)
        normalised_n = np.full(n_new, "", dtype=object)
        normalised_b[base_free] = _normalise_names(base_names[base_free])
        normalised_n[new_free] = _normalise_names(new_names[new_free])
        bk, nk = _combine(param_codes, role_codes, _codes(normalised_b, normalised_n))
        _pair(bk, nk, base_free, new_free, base_partner, new_partner, match, 2, unique_only=True)

    only_new = np.flatnonzero(new_partner < 0)
    bi = np.r_[np.arange(n_base, dtype=np.int64), np.full(len(only_new), -1, dtype=np.int64)]
    ni = np.r_[base_partner, only_new]
    match_codes = np.r_[match, np.full(len(only_new), 3, dtype=np.int8)]

    base_name = _take(base_names, bi, None)
    new_name = _take(new_names, ni, None)
    name = np.where(ni >= 0, new_name, base_name)
    values = _value_columns("bytes", b["bytes"].to_numpy(), n["bytes"].to_numpy(), bi, ni, noise_bytes, noise_pct, "int64")
    order = _order_abs_delta_then_label(values["delta_bytes"], name)
    frame = pd.DataFrame(
        {
            "name": pd.Series(name, dtype=object),
            "match": pd.Categorical.from_codes(match_codes, dtype=_MATCH_DTYPE),
            "base_name": pd.Series(base_name, dtype=object),
            "new_name": pd.Series(new_name, dtype=object),
            "kind": _pick_categorical(b["kind"], n["kind"], bi, ni),
            **{k: values[k] for k in ("base_bytes", "new_bytes", "delta_bytes", "delta_pct", "status")},
            "base_always_live": _take_boolean(b["always_live"], bi),
            "new_always_live": _take_boolean(n["always_live"], ni),
            "base_shape": _take_object(b["shape"], bi),
            "new_shape": _take_object(n["shape"], ni),
            "dtype": _pick_categorical(b["dtype"], n["dtype"], bi, ni),
            "base_parameter": pd.Series(_take(base_param, bi, None), dtype=object),
            "new_parameter": pd.Series(_take(new_param, ni, None), dtype=object),
            "base_role": pd.Series(_take(base_role, bi, None), dtype=object),
            "new_role": pd.Series(_take(new_role, ni, None), dtype=object),
        }
    )
    return frame.take(order).reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# Ledger


def _empty_ledger_diff() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=d) for c, d in _LEDGER_DIFF_COLUMNS})


_LEDGER_DIFF_COLUMNS: tuple[tuple[str, str], ...] = (
    ("parameter", "object"), ("role", "object"), ("location", "object"),
    ("base_bytes", "int64"), ("new_bytes", "int64"), ("delta_bytes", "int64"), ("delta_pct", "float64"),
    ("status", "category"), ("base_bytes_at_peak", "int64"), ("new_bytes_at_peak", "int64"),
    ("delta_bytes_at_peak", "int64"), ("base_first_step", "Int64"), ("base_last_step", "Int64"),
    ("new_first_step", "Int64"), ("new_last_step", "Int64"),
)


def _compare_ledger(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    """The ledger diff: :func:`profcompare.ledger.ledger` of both reports outer-joined on
    (parameter, role, location)."""
    b, n = base.ledger(), new.ledger()
    b_key = (b["parameter"] + "\x00" + b["role"] + "\x00" + b["location"]).to_numpy(dtype=object)
    n_key = (n["parameter"] + "\x00" + n["role"] + "\x00" + n["location"]).to_numpy(dtype=object)
    bi, ni = _align_keys(b_key, n_key)

    def pick(column: str) -> pd.Series:
        return pd.Series(np.where(ni >= 0, _take(n[column].to_numpy(dtype=object), ni, None),
                                  _take(b[column].to_numpy(dtype=object), bi, None)), dtype=object)

    def steps(frame: pd.DataFrame, index: np.ndarray, column: str) -> pd.Series:
        values = frame[column].to_numpy(dtype="float64", na_value=np.nan)
        taken = np.full(len(index), np.nan)
        present = index >= 0
        taken[present] = values[index[present]]
        return pd.Series(pd.array([None if v != v else int(v) for v in taken], dtype="Int64"))

    values = _value_columns("bytes", b["bytes"].to_numpy(), n["bytes"].to_numpy(), bi, ni, noise_bytes, noise_pct, "int64")
    at_peak_base = _take(b["bytes_at_peak"].to_numpy(dtype=np.int64), bi, 0).astype(np.int64)
    at_peak_new = _take(n["bytes_at_peak"].to_numpy(dtype=np.int64), ni, 0).astype(np.int64)
    frame = pd.DataFrame({
        "parameter": pick("parameter"), "role": pick("role"), "location": pick("location"),
        **values,
        "base_bytes_at_peak": at_peak_base, "new_bytes_at_peak": at_peak_new,
        "delta_bytes_at_peak": at_peak_new - at_peak_base,
        "base_first_step": steps(b, bi, "first_step"), "base_last_step": steps(b, bi, "last_step"),
        "new_first_step": steps(n, ni, "first_step"), "new_last_step": steps(n, ni, "last_step"),
    })
    if not len(frame):
        return _empty_ledger_diff()
    from profcompare.ledger import sort_ledger

    return sort_ledger(frame)


def _compare_tiles(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    b, n = base.tiles, new.tiles
    bi, ni = _align_keys(b["tile"].to_numpy(), n["tile"].to_numpy())
    tile = np.where(ni >= 0, _take(n["tile"].to_numpy(), ni, 0), _take(b["tile"].to_numpy(), bi, 0)).astype("int64")
    ipu = np.where(ni >= 0, _take(n["ipu"].to_numpy(), ni, 0), _take(b["ipu"].to_numpy(), bi, 0)).astype("int64")
    frame = pd.DataFrame(
        {
            "tile": tile,
            "ipu": ipu,
            **_value_columns(
                "bytes", b["bytes_including_gaps"].to_numpy(), n["bytes_including_gaps"].to_numpy(), bi, ni, noise_bytes, noise_pct, "int64"
            ),
            "base_always_live_bytes": _take(b["always_live_bytes"].to_numpy(dtype="int64"), bi, 0),
            "new_always_live_bytes": _take(n["always_live_bytes"].to_numpy(dtype="int64"), ni, 0),
        }
    )
    return frame.sort_values("tile", kind="mergesort").reset_index(drop=True)


def _code_totals(report: Report) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    code = report.code
    if not len(code):
        return np.zeros(0, dtype=object), np.zeros(0, dtype=object), np.zeros(0, dtype=np.int64)
    grouped = code.groupby("name", sort=False).agg(type=("type", "first"), code_bytes=("code_bytes", "sum"))
    return (
        grouped.index.to_numpy(dtype=object),
        grouped["type"].astype(object).to_numpy(dtype=object),
        grouped["code_bytes"].to_numpy(dtype="int64"),
    )


def _compare_code(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    b_name, b_type, b_bytes = _code_totals(base)
    n_name, n_type, n_bytes = _code_totals(new)
    bi, ni = _align_keys(b_name, n_name)
    name = np.where(ni >= 0, _take(n_name, ni, None), _take(b_name, bi, None))
    types = np.where(ni >= 0, _take(n_type, ni, None), _take(b_type, bi, None))
    categories = list(dict.fromkeys([*base.code["type"].cat.categories, *new.code["type"].cat.categories]))
    values = _value_columns("code_bytes", b_bytes, n_bytes, bi, ni, noise_bytes, noise_pct, "int64")
    frame = pd.DataFrame(
        {
            "name": pd.Series(name, dtype=object),
            "type": pd.Categorical(types, categories=categories),
            **values,
        }
    )
    return frame.take(_order_abs_delta_then_label(values["delta_code_bytes"], name)).reset_index(drop=True)


def _compare_execution(base: Report, new: Report, noise_pct: float) -> pd.DataFrame:
    from profcompare.analysis import execution_by_phase

    b, n = execution_by_phase(base), execution_by_phase(new)
    bi, ni = _align_keys(b["phase"].to_numpy(dtype=object), n["phase"].to_numpy(dtype=object))
    phase = np.where(ni >= 0, _take(n["phase"].to_numpy(dtype=object), ni, None), _take(b["phase"].to_numpy(dtype=object), bi, None))
    frame = pd.DataFrame(
        {
            "phase": pd.Series(phase, dtype=object),
            **_value_columns("cycles", b["cycles"].to_numpy(), n["cycles"].to_numpy(), bi, ni, math.inf, noise_pct, "float64"),
        }
    )
    rank = {p: i for i, p in enumerate(PHASES)}
    frame["_p"] = [rank.get(p, len(rank)) for p in phase]
    return frame.sort_values(["_p", "phase"], kind="mergesort").drop(columns="_p").reset_index(drop=True)


def _compare_remote_buffers(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    b, n = base.remote_buffers, new.remote_buffers
    b_name, n_name = b["name"].to_numpy(dtype=object), n["name"].to_numpy(dtype=object)
    bi, ni = _align_keys(b_name, n_name)
    name = np.where(ni >= 0, _take(n_name, ni, None), _take(b_name, bi, None))
    values = _value_columns("bytes", b["bytes"].to_numpy(), n["bytes"].to_numpy(), bi, ni, noise_bytes, noise_pct, "int64")
    frame = pd.DataFrame(
        {
            "name": pd.Series(name, dtype=object),
            **values,
            "base_entries": _take(b["entries"].to_numpy(dtype="int64"), bi, 0),
            "new_entries": _take(n["entries"].to_numpy(dtype="int64"), ni, 0),
            "base_sharded": _take_boolean(b["sharded"], bi),
            "new_sharded": _take_boolean(n["sharded"], ni),
        }
    )
    return frame.take(_order_abs_delta_then_label(values["delta_bytes"], name)).reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# Liveness alignment


def _pairs_by_position(n_base: int, n_new: int, base_offset: int = 0, new_offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Pair step i of base with step i of new; the longer side's tail stands alone."""
    length = max(n_base, n_new)
    position = np.arange(length, dtype=np.int64)
    base_index = np.where(position < n_base, position + base_offset, -1)
    new_index = np.where(position < n_new, position + new_offset, -1)
    return base_index, new_index


def _myers_matches(base: list[int], new: list[int], budget: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Pairs (base position, new position) of a longest common subsequence of two sequences.

    Myers' O((N+M)D) difference algorithm (D = number of inserted + deleted steps), which,
    unlike difflib's longest-block heuristic, stays optimal on the periodic program sequences
    of loops and repeated layers. Returns None when the work (diagonal probes + equal steps
    followed) would exceed ``budget``, so the caller can fall back to aligning by position.
    """
    n, m = len(base), len(new)
    d_limit = min(n + m, int(budget**0.5) + 1)
    offset = d_limit + 1
    furthest = [0] * (2 * d_limit + 3)
    trace: list[list[int]] = []
    work = 0
    found = -1
    for d in range(d_limit + 1):
        trace.append(furthest[offset - d - 1 : offset + d + 2])
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and furthest[offset + k - 1] < furthest[offset + k + 1]):
                x = furthest[offset + k + 1]
            else:
                x = furthest[offset + k - 1] + 1
            y = x - k
            start = x
            while x < n and y < m and base[x] == new[y]:
                x += 1
                y += 1
            work += 1 + x - start
            furthest[offset + k] = x
            if x >= n and y >= m:
                found = d
                break
        if found >= 0:
            break
        if work > budget:
            return None
    if found < 0:
        return None
    base_pairs: list[int] = []
    new_pairs: list[int] = []
    x, y = n, m
    for d in range(found, -1, -1):
        previous = trace[d]
        k = x - y
        if d == 0:
            mid_x, mid_y, prev_x, prev_y = 0, 0, 0, 0
        else:
            if k == -d or (k != d and previous[k - 1 + d + 1] < previous[k + 1 + d + 1]):
                prev_k = k + 1
                prev_x = previous[prev_k + d + 1]
                prev_y = prev_x - prev_k
                mid_x, mid_y = prev_x, prev_y + 1
            else:
                prev_k = k - 1
                prev_x = previous[prev_k + d + 1]
                prev_y = prev_x - prev_k
                mid_x, mid_y = prev_x + 1, prev_y
        while x > mid_x and y > mid_y:
            x -= 1
            y -= 1
            base_pairs.append(x)
            new_pairs.append(y)
        x, y = prev_x, prev_y
    return np.asarray(base_pairs[::-1], dtype=np.int64), np.asarray(new_pairs[::-1], dtype=np.int64)


def _pairs_from_matches(
    base_matches: np.ndarray, new_matches: np.ndarray, n_base: int, n_new: int
) -> tuple[np.ndarray, np.ndarray]:
    """Full alignment from matched pairs: each gap between matches is paired by position."""
    # Gap g is the stretch before match g (gap len(matches) runs to the end of both sides).
    starts_base = np.r_[-1, base_matches] + 1
    starts_new = np.r_[-1, new_matches] + 1
    gap_base = np.r_[base_matches, n_base] - starts_base
    gap_new = np.r_[new_matches, n_new] - starts_new
    pieces: list[tuple[np.ndarray, np.ndarray]] = []
    done = 0
    for gap in np.flatnonzero((gap_base > 0) | (gap_new > 0)):
        if gap > done:
            pieces.append((base_matches[done:gap], new_matches[done:gap]))
        pieces.append(
            _pairs_by_position(int(gap_base[gap]), int(gap_new[gap]), int(starts_base[gap]), int(starts_new[gap]))
        )
        done = int(gap)
    if done < len(base_matches):
        pieces.append((base_matches[done:], new_matches[done:]))
    if not pieces:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return (
        np.concatenate([p[0] for p in pieces]).astype(np.int64),
        np.concatenate([p[1] for p in pieces]).astype(np.int64),
    )


def _align_sequences(base_codes: np.ndarray, new_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """Align two program-name code sequences; returns (base_index, new_index, method).

    Steps with equal names on a longest common subsequence are paired; the differing stretches
    between them are paired by position, the longer side's extra steps standing alone. A common
    prefix and suffix are matched with numpy first, so only the differing middle goes to the
    (pure Python) difference algorithm, and only within a work budget; beyond it, or when
    less than half the steps pair up, the curves are aligned by position (method "position").
    """
    n_base, n_new = len(base_codes), len(new_codes)
    shortest = min(n_base, n_new)
    if shortest == 0:
        base_index, new_index = _pairs_by_position(n_base, n_new)
        return base_index, new_index, "position"
    differs = base_codes[:shortest] != new_codes[:shortest]
    prefix = int(np.argmax(differs)) if differs.any() else shortest
    rest = shortest - prefix
    tail_differs = base_codes[n_base - rest :][::-1] != new_codes[n_new - rest :][::-1]
    suffix = int(np.argmax(tail_differs)) if tail_differs.any() else rest
    mid_base = base_codes[prefix : n_base - suffix]
    mid_new = new_codes[prefix : n_new - suffix]

    matches: tuple[np.ndarray, np.ndarray] | None = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    if len(mid_base) and len(mid_new):
        matches = _myers_matches(mid_base.tolist(), mid_new.tolist(), _ALIGN_WORK_LIMIT)
    if matches is None:
        return (*_pairs_by_position(n_base, n_new), "position")
    matched = prefix + suffix + len(matches[0])
    if 2.0 * matched / (n_base + n_new) < _ALIGN_MIN_SIMILARITY:
        return (*_pairs_by_position(n_base, n_new), "position")
    base_matches = np.r_[np.arange(prefix), matches[0] + prefix, np.arange(n_base - suffix, n_base)].astype(np.int64)
    new_matches = np.r_[np.arange(prefix), matches[1] + prefix, np.arange(n_new - suffix, n_new)].astype(np.int64)
    base_index, new_index = _pairs_from_matches(base_matches, new_matches, n_base, n_new)
    return base_index, new_index, "program"


def _compare_liveness(base: Report, new: Report) -> pd.DataFrame:
    b, n = base.liveness, new.liveness
    base_programs = b["program"].to_numpy(dtype=object)
    new_programs = n["program"].to_numpy(dtype=object)
    codes, _ = pd.factorize(pd.Series(np.r_[base_programs, new_programs], dtype=object), use_na_sentinel=False)
    codes = codes.astype(np.int64)
    bi, ni, method = _align_sequences(codes[: len(b)], codes[len(b) :])

    def nullable(values: np.ndarray, index: np.ndarray) -> pd.Series:
        taken = _take(values.astype("int64"), index, 0)
        return pd.Series(pd.arrays.IntegerArray(taken, index < 0))

    frame = pd.DataFrame(
        {
            "position": np.arange(len(bi), dtype=np.int64),
            "program": pd.Series(np.where(bi >= 0, _take(base_programs, bi, None), _take(new_programs, ni, None)), dtype=object),
            "base_step": nullable(b["step"].to_numpy(), bi),
            "new_step": nullable(n["step"].to_numpy(), ni),
            "base_not_always_live_bytes": nullable(b["not_always_live_bytes"].to_numpy(), bi),
            "new_not_always_live_bytes": nullable(n["not_always_live_bytes"].to_numpy(), ni),
        }
    )
    frame.attrs["alignment"] = method
    return frame


# --------------------------------------------------------------------------------------------
# Public API


def _same_report(base: Report, new: Report) -> bool:
    if base is new:
        return True
    a, b = base.meta.source, new.meta.source
    if not a or not b:
        return False
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def compare(base: Report, new: Report, *, noise_bytes: int = 64, noise_pct: float = 1.0) -> Comparison:
    """Compare two reports (delta = new - base); see the module docstring for every table.

    ``noise_bytes`` / ``noise_pct``: a change of at most ``noise_bytes`` *and* at most
    ``noise_pct`` percent of base (only the percentage for cycles and counts) is ``unchanged``
    (:func:`noise_threshold`). Raises ProfcompareError for a negative or non-finite threshold.
    """
    if not isinstance(base, Report) or not isinstance(new, Report):
        raise ProfcompareError("compare() needs two Report objects (open them with profcompare.open_report)")
    for label, value in (("noise_bytes", noise_bytes), ("noise_pct", noise_pct)):
        if not isinstance(value, (int, float, np.integer, np.floating)) or not math.isfinite(value) or value < 0:
            raise ProfcompareError(f"{label} must be a non-negative number, got {value!r}")
    if _same_report(base, new):
        warnings.warn(
            f"base and new are the same report ({base.meta.source or base.label}): every delta is 0",
            SameReportWarning,
            stacklevel=2,
        )
    return Comparison(
        base=base,
        new=new,
        summary=readable(_compare_summary(base, new, noise_bytes, noise_pct)),
        categories=_compare_categories(base, new, noise_bytes, noise_pct),
        variables=_compare_variables(base, new, noise_bytes, noise_pct),
        tiles=_compare_tiles(base, new, noise_bytes, noise_pct),
        code=_compare_code(base, new, noise_bytes, noise_pct),
        liveness=_compare_liveness(base, new),
        execution=_compare_execution(base, new, noise_pct),
        remote_buffers=_compare_remote_buffers(base, new, noise_bytes, noise_pct),
        noise_bytes=noise_bytes,
        noise_pct=float(noise_pct),
        ledger=_compare_ledger(base, new, noise_bytes, noise_pct),
    )


@dataclass(frozen=True)
class Limit:
    """A ``--fail-if`` limit on one summary metric's relative change (new vs base).

    ``METRIC>PCT%`` fails when the metric changes by more than ``PCT`` percent (a growth limit:
    ``peak_liveness_bytes>2%``); ``METRIC<PCT%`` fails when it changes by less than ``PCT``
    percent (a drop limit: ``samples_per_second<-5%`` fails when throughput falls by more than
    5%). ``direction`` is ``">"`` or ``"<"``.
    """

    metric: str
    max_pct: float
    direction: str = ">"

    def __str__(self) -> str:
        return f"{self.metric}{self.direction}{self.max_pct:g}%"

    def violated_by(self, pct: float) -> bool:
        """Whether a change of ``pct`` percent breaks this limit."""
        return pct > self.max_pct if self.direction == ">" else pct < self.max_pct


_LIMIT_SYNTAX = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*([<>])\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*%?\s*$")


def parse_limit(text: str) -> Limit:
    """Parse ``METRIC>PCT%`` or ``METRIC<PCT%`` (e.g. ``peak_liveness_bytes>5%``,
    ``samples_per_second<-5%``; the ``%`` is optional).

    Returns a :class:`Limit`. Raises ProfcompareError with a one-line message on bad syntax or
    an unknown metric (the message lists the metrics).
    """
    match = _LIMIT_SYNTAX.match(text or "")
    if not match:
        raise ProfcompareError(
            f"bad limit {text!r}: expected METRIC>PCT% (a growth) or METRIC<PCT% (a drop), "
            "e.g. peak_liveness_bytes>5% or samples_per_second<-5%"
        )
    metric, direction, pct = match.group(1), match.group(2), float(match.group(3))
    if metric not in METRICS:
        raise ProfcompareError(f"unknown metric {metric!r} in limit {text!r}; metrics are {', '.join(METRICS)}")
    return Limit(metric=metric, max_pct=pct, direction=direction)


def _format_value(value: float, unit: str) -> str:
    if float(value).is_integer():
        return f"{int(value):,} {unit}"
    return f"{value:,.4g} {unit}"


def check_limits(comparison: Comparison, limits: Iterable[Limit]) -> list[str]:
    """One message per violated limit (empty list when all hold).

    A limit is violated when the metric's ``delta_pct`` is beyond it (see :class:`Limit`). The
    message says whether the change is *worse* or *better*: each metric declares whether higher
    is better (:data:`profcompare.model.HIGHER_IS_BETTER`: throughput; lower is better for
    memory and cycles). When base is 0 the percentage is undefined: growth from 0 violates a
    growth limit, nothing violates a drop limit. A metric that is not available in either report
    (NaN, e.g. cycles without an execution profile) cannot be checked and is reported as a
    violation, since the check the user asked for did not happen.
    """
    messages: list[str] = []
    summary = comparison.summary
    for limit in limits:
        row: pd.Series = summary.loc[limit.metric]
        base, new, pct = float(row["base"]), float(row["new"]), float(row["delta_pct"])
        unit = str(row["unit"])
        if math.isnan(base) or math.isnan(new):
            sides = [label for label, value in (("base", base), ("new", new)) if math.isnan(value)]
            messages.append(f"{limit}: cannot check, {limit.metric} is not available in {' and '.join(sides)}")
            continue
        if base == 0:
            if new > 0 and limit.direction == ">":
                verdict = "better" if limit.metric in HIGHER_IS_BETTER else "worse"
                messages.append(f"{limit}: {limit.metric} {verdict}: grew from 0 to {_format_value(new, unit)}")
            continue
        if limit.violated_by(pct):
            grew = pct > 0
            better = grew == (limit.metric in HIGHER_IS_BETTER)
            messages.append(
                f"{limit}: {limit.metric} {'better' if better else 'worse'} by {abs(pct):.2f}% "
                f"({'grew' if grew else 'dropped'} {_format_value(base, unit)} -> {_format_value(new, unit)}), "
                f"beyond the {limit.max_pct:g}% limit"
            )
    return messages


__all__ = [
    "MATCHES",
    "NOT_AVAILABLE",
    "STATUSES",
    "Comparison",
    "Limit",
    "check_limits",
    "compare",
    "ledger_by_parameter",
    "ledger_moves",
    "peak_composition",
    "noise_threshold",
    "normalise_variable_name",
    "parse_limit",
]


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`compare`.

    ``profcompare.compare`` names both this module and the function users call
    (``pc.compare(base, new)``). The package imports its public names lazily, so whichever is
    bound when this module loads, ``pc.compare(base, new)`` must compare: the module forwards a
    call to :func:`compare`.
    """

    def __call__(self, base: Report, new: Report, **options: Any) -> Comparison:
        return compare(base, new, **options)


sys.modules[__name__].__class__ = _CallableModule
