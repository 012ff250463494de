"""Comparing two reports' vertex types, compute sets and exchanges (``Report.vertices``,
``Report.compute_sets``, ``Report.exchanges``): rows paired by name, two figures diffed.

Rows pair as ops do (:mod:`profcompare.comparison.operations`): by exact name, then the rest by
normalised name (every run of digits stands for any number, a trailing ``@k`` is dropped), the
k-th occurrence with the k-th. The remainder rows pair with each other.

Each table is diffed on two figures, the first deciding the status before the second:

- ``vertices``: code bytes, then vertex state bytes;
- ``compute_sets``: vertex state bytes, then cycles of one execution;
- ``exchanges``: code bytes, then cycles of one execution.

Status: ``added`` / ``removed`` for a row only one side has; otherwise ``grew`` / ``shrank`` by
the first figure beyond the noise threshold (bytes and percent, as every table), else by the
second beyond its threshold (cycles: the percentage only; cycles a side does not record count as
unchanged), else ``unchanged``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pandas as pd

from profcompare.comparison.join import STATUSES, _order_abs_delta_then_label, noise_threshold
from profcompare.comparison.operations import _column, _pair
from profcompare.model import Report, make_frame

#: Per table: (the figure deciding the status first, the second figure, extra label columns).
DIFFED: Mapping[str, tuple[str, str, tuple[str, ...]]] = MappingProxyType({
    "vertices": ("code_bytes", "vertex_state_bytes", ()),
    "compute_sets": ("vertex_state_bytes", "cycles", ()),
    "exchanges": ("code_bytes", "cycles", ("type",)),
})

_STATUS_DTYPE = pd.CategoricalDtype(list(STATUSES))


def diff_columns(table: str) -> tuple[str, ...]:
    """The columns of :func:`compare_by_name` for ``table``, in order."""
    first, second, extra = DIFFED[table]
    return ("name", *extra, *(f"{side}_{first}" for side in ("base", "new", "delta")),
            *(f"{side}_{second}" for side in ("base", "new", "delta")), "status")


def compare_by_name(table: str, base: pd.DataFrame, new: pd.DataFrame, *, noise_bytes: float = 64,
                    noise_pct: float = 1.0) -> pd.DataFrame:
    """Two ``table`` frames (vertices, compute_sets or exchanges) paired row by row (see the
    module docstring).

    Returns one row per name of either side: name (new's where it has the row, else base's),
    the extra label columns of :data:`DIFFED` (likewise), base_/new_/delta_ of the two figures
    (Int64; 0 for a side without the row, <NA> where a side does not record the value), status
    in :data:`~profcompare.comparison.join.STATUSES`. Ordered by the size of the first figure's
    change, then of the second's, then by name.
    """
    first, second, extra = DIFFED[table]
    base_names = base["name"].astype(str).to_numpy(dtype=object)
    new_names = new["name"].astype(str).to_numpy(dtype=object)
    bi, ni = _pair(base_names, new_names)

    def labels(column: str) -> np.ndarray:
        b = base[column].astype(str).to_numpy(dtype=object)
        n = new[column].astype(str).to_numpy(dtype=object)
        from_new = n[np.where(ni >= 0, ni, 0)] if len(n) else np.full(len(ni), None, dtype=object)
        from_base = b[np.where(bi >= 0, bi, 0)] if len(b) else np.full(len(bi), None, dtype=object)
        return np.where(ni >= 0, from_new, from_base)

    columns: dict[str, object] = {"name": pd.Series(labels("name"), dtype=object)}
    for column in extra:
        columns[column] = pd.Series(labels(column), dtype=object)
    codes = np.full(len(bi), STATUSES.index("unchanged"), dtype=np.int8)
    deltas: list[np.ndarray] = []
    # the second figure first, so that the first overrides it
    for figure in (second, first):
        base_values = _column(base, figure, bi, nullable=True)
        new_values = _column(new, figure, ni, nullable=True)
        delta = new_values - base_values
        columns[f"base_{figure}"], columns[f"new_{figure}"], columns[f"delta_{figure}"] = base_values, new_values, delta
        change = delta.to_numpy(dtype="float64", na_value=0.0)
        limit = noise_threshold(base_values.to_numpy(dtype="float64", na_value=0.0),
                                noise_bytes if figure.endswith("_bytes") else np.inf, noise_pct)
        codes[change > limit] = STATUSES.index("grew")
        codes[change < -limit] = STATUSES.index("shrank")
        deltas.append(change)
    codes[(ni >= 0) & (bi < 0)] = STATUSES.index("added")
    codes[(bi >= 0) & (ni < 0)] = STATUSES.index("removed")
    columns["status"] = pd.Categorical.from_codes(codes, dtype=_STATUS_DTYPE)
    frame = pd.DataFrame(columns)
    second_delta, first_delta = deltas
    by_second = _order_abs_delta_then_label(second_delta, frame["name"].to_numpy(dtype=object))
    order = by_second[np.argsort(-np.abs(first_delta[by_second]), kind="stable")]
    return frame.take(order).reset_index(drop=True)[list(diff_columns(table))]


def empty_diff(table: str) -> pd.DataFrame:
    """The diff of two reports without ``table`` (its columns, no rows)."""
    return compare_by_name(table, make_frame(table), make_frame(table))


def _compare_vertex_tables(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> dict[str, pd.DataFrame]:
    """:func:`compare_by_name` of two reports' vertices, compute sets and exchanges, keyed by table."""
    return {table: compare_by_name(table, getattr(base, table), getattr(new, table), noise_bytes=noise_bytes,
                                   noise_pct=noise_pct) for table in DIFFED}


__all__ = ["DIFFED", "compare_by_name", "diff_columns", "empty_diff"]
