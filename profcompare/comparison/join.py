"""The outer join every comparison table is built on (vectorised, without pandas.merge).

Rows of the two reports are aligned on a key (:func:`_align_keys`), then each table gets its
``base_*`` / ``new_*`` / ``delta_*``, ``delta_pct`` and ``status`` columns
(:func:`_value_columns`); the rules are in :mod:`profcompare.comparison`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

STATUSES = ("added", "removed", "grew", "shrank", "unchanged")
MATCHES = ("attributed", "exact", "normalised", "unmatched")
#: Status of a summary metric that is NaN on either side.
NOT_AVAILABLE = "n/a"

_ADDED, _REMOVED, _GREW, _SHRANK, _UNCHANGED = range(5)
_STATUS_DTYPE = pd.CategoricalDtype(list(STATUSES))
_MATCH_DTYPE = pd.CategoricalDtype(list(MATCHES))


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
    """int8 codes into STATUSES for each row (see :mod:`profcompare.comparison` for the rules)."""
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
