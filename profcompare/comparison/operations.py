"""Comparing two reports' operations (``Report.operations``): ops paired, code and cycles diffed.

Two ops are the same op when their names match exactly; the ops left unpaired are then paired
by their normalised name (:func:`normalise_operation_name`: popxl's graph indices and every other
run of digits stand for any number, and the ``@k`` that tells repeated names apart is dropped,
so ``Adam_subgraph(2)/adamupdater@1`` of one build is ``Adam_subgraph(5)/adamupdater@1`` of the
next), the k-th occurrence of a normalised name in base with its k-th in new -- the way
variables fall back on normalised names (:mod:`profcompare.comparison.variables`). The
remainder rows ``(not attributed to an op)`` pair with each other.

Status: ``added`` / ``removed`` for an op only one side has; otherwise ``grew`` / ``shrank``
by its code bytes when they changed beyond the noise threshold (bytes and percent, as every
table), else by its cycles beyond the percentage threshold (cycles a side does not record count
as unchanged), else ``unchanged``.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from profcompare.comparison.join import STATUSES, _align_keys, _order_abs_delta_then_label, noise_threshold
from profcompare.model import Report

#: The columns of :func:`compare_operations`, in order.
OPERATION_COLUMNS: tuple[str, ...] = (
    "name", "type", "base_code_bytes", "new_code_bytes", "delta_code_bytes",
    "base_cycles", "new_cycles", "delta_cycles", "status",
)

_STATUS_DTYPE = pd.CategoricalDtype(list(STATUSES))
_DIGITS = re.compile(r"\d+")
_OCCURRENCE = re.compile(r"@\d+$")


def code_and_cycles_status(base_code: np.ndarray, delta_code: np.ndarray, base_cycles: pd.Series,
                           delta_cycles: pd.Series, in_base: np.ndarray, in_new: np.ndarray,
                           noise_bytes: float, noise_pct: float) -> np.ndarray:
    """Each row's status code (an index into STATUSES) from its code and cycles: added or removed
    where one side lacks it, else grew / shrank by its code change beyond the noise, else by its
    cycles change beyond ``noise_pct``, else unchanged. ``base_cycles`` / ``delta_cycles`` are
    nullable (<NA>: unknown, no change)."""
    codes = np.full(len(base_code), STATUSES.index("unchanged"), dtype=np.int8)
    cycles_delta = delta_cycles.to_numpy(dtype="float64", na_value=0.0)
    cycles_limit = noise_threshold(base_cycles.to_numpy(dtype="float64", na_value=0.0), np.inf, noise_pct)
    codes[cycles_delta > cycles_limit] = STATUSES.index("grew")
    codes[cycles_delta < -cycles_limit] = STATUSES.index("shrank")
    code_limit = noise_threshold(base_code.astype("float64"), noise_bytes, noise_pct)
    codes[delta_code > code_limit] = STATUSES.index("grew")
    codes[delta_code < -code_limit] = STATUSES.index("shrank")
    codes[in_new & ~in_base] = STATUSES.index("added")
    codes[in_base & ~in_new] = STATUSES.index("removed")
    return codes

def normalise_operation_name(name: str) -> str:
    """The name used to pair ops of two builds: without the trailing ``@k``, every run of digits ``#``."""
    return _DIGITS.sub("#", _OCCURRENCE.sub("", name))


def _pair(base_names: np.ndarray, new_names: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(base row, new row) per output row, -1 where a side has none: exact names first, then
    the rest by normalised name."""
    bi, ni = _align_keys(base_names, new_names)
    paired = (bi >= 0) & (ni >= 0)
    only_base, only_new = bi[(bi >= 0) & (ni < 0)], ni[(ni >= 0) & (bi < 0)]
    if not len(only_base) or not len(only_new):
        return bi, ni
    normal_base = np.array([normalise_operation_name(str(n)) for n in base_names[only_base]], dtype=object)
    normal_new = np.array([normalise_operation_name(str(n)) for n in new_names[only_new]], dtype=object)
    b2, n2 = _align_keys(normal_base, normal_new)
    b2 = np.where(b2 >= 0, only_base[np.maximum(b2, 0)], -1)
    n2 = np.where(n2 >= 0, only_new[np.maximum(n2, 0)], -1)
    return np.r_[bi[paired], b2], np.r_[ni[paired], n2]


def _column(frame: pd.DataFrame, name: str, rows: np.ndarray, *, nullable: bool) -> pd.arrays.IntegerArray:
    """``frame[name]`` at ``rows`` as Int64: 0 where the side has no row, <NA> where it does not
    record the value (``nullable``) and has the row."""
    values = frame[name].to_numpy(dtype="int64", na_value=0) if len(frame) else np.zeros(0, np.int64)
    unknown = frame[name].isna().to_numpy() if len(frame) else np.zeros(0, bool)
    present = rows >= 0
    out = np.zeros(len(rows), dtype=np.int64)
    mask = np.zeros(len(rows), dtype=bool)
    out[present] = values[rows[present]]
    if nullable:
        mask[present] = unknown[rows[present]]
    return pd.arrays.IntegerArray(out, mask)


def compare_operations(base: pd.DataFrame, new: pd.DataFrame, *, noise_bytes: float = 64,
                       noise_pct: float = 1.0) -> pd.DataFrame:
    """Two ``operations`` tables paired op by op (see the module docstring).

    Returns one row per op of either side: name (new's where it has the op, else base's),
    type (likewise), base_/new_/delta_code_bytes (int64 bytes, 0 for a side without the op),
    base_/new_/delta_cycles (Int64 cycles of one run; <NA> where a side does not record them),
    status in :data:`~profcompare.comparison.join.STATUSES`. Ordered by the size of the code
    change, then of the cycles change, then by name.
    """
    base_names = base["name"].astype(str).to_numpy(dtype=object)
    new_names = new["name"].astype(str).to_numpy(dtype=object)
    bi, ni = _pair(base_names, new_names)
    take = np.where(ni >= 0, ni, 0)
    names = np.where(ni >= 0, new_names[take] if len(new_names) else None,
                     base_names[np.where(bi >= 0, bi, 0)] if len(base_names) else None)
    base_types = base["type"].astype(str).to_numpy(dtype=object)
    new_types = new["type"].astype(str).to_numpy(dtype=object)
    types = np.where(ni >= 0, new_types[take] if len(new_types) else None,
                     base_types[np.where(bi >= 0, bi, 0)] if len(base_types) else None)
    base_code = _column(base, "code_bytes", bi, nullable=False).to_numpy(dtype="int64")
    new_code = _column(new, "code_bytes", ni, nullable=False).to_numpy(dtype="int64")
    base_cycles = _column(base, "cycles", bi, nullable=True)
    new_cycles = _column(new, "cycles", ni, nullable=True)
    delta_code = new_code - base_code
    delta_cycles = new_cycles - base_cycles
    codes = code_and_cycles_status(base_code, delta_code, base_cycles, delta_cycles, bi >= 0, ni >= 0,
                                   noise_bytes, noise_pct)
    frame = pd.DataFrame({
        "name": pd.Series(names, dtype=object),
        "type": pd.Series(types, dtype=object),
        "base_code_bytes": base_code,
        "new_code_bytes": new_code,
        "delta_code_bytes": delta_code,
        "base_cycles": base_cycles,
        "new_cycles": new_cycles,
        "delta_cycles": delta_cycles,
        "status": pd.Categorical.from_codes(codes, dtype=_STATUS_DTYPE),
    })
    # the largest code change first; among equal code changes, the largest cycles change
    by_cycles = _order_abs_delta_then_label(delta_cycles.to_numpy(dtype="float64", na_value=0.0), frame["name"].to_numpy(dtype=object))
    order = by_cycles[np.argsort(-np.abs(delta_code[by_cycles]), kind="stable")]
    return frame.take(order).reset_index(drop=True)[list(OPERATION_COLUMNS)]


def _compare_operations(base: Report, new: Report, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    """:func:`compare_operations` of two reports' operations."""
    return compare_operations(base.operations, new.operations, noise_bytes=noise_bytes, noise_pct=noise_pct)


__all__ = ["OPERATION_COLUMNS", "code_and_cycles_status", "compare_operations", "normalise_operation_name"]
