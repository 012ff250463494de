"""The memory ledger's code and cycles of two reports, per (parameter, role), side by side.

Each report's ops are summed per (parameter, role) and into the named rows
(:func:`profcompare.analysis.ledger_code.ledger_code`); the two are joined on (parameter, role),
so every column's base and new sums equal the two operations tables' (and the reports' code bytes
and device cycles per run). Each row also names the op of the row whose code changed most: the
ops are paired as the operations table pairs them
(:func:`profcompare.comparison.operations.compare_operations`), an op counting in the row of the
new report's attribution when new has it, else in base's.

Status: ``added`` / ``removed`` when only one report has ops in the row; otherwise ``grew`` /
``shrank`` by the code bytes beyond the noise threshold (bytes and percent, as every table), else
by the cycles beyond the percentage threshold, else ``unchanged``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from profcompare.analysis.ledger_code import op_rows, rollup, sort_ledger_code
from profcompare.comparison.join import STATUSES, noise_threshold
from profcompare.comparison.operations import _pair

#: The columns of :func:`compare_ledger_code`, in order.
LEDGER_CODE_DIFF_COLUMNS: tuple[str, ...] = (
    "parameter", "role", "base_code_bytes", "new_code_bytes", "delta_code_bytes",
    "base_cycles", "new_cycles", "delta_cycles", "base_ops", "new_ops", "status",
    "largest_op", "largest_op_delta_code_bytes",
)

_STATUS_DTYPE = pd.CategoricalDtype(list(STATUSES))


def _largest_ops(base: pd.DataFrame, new: pd.DataFrame) -> dict[tuple[str, str], tuple[str, int]]:
    """Per (parameter, role) row, the op with the largest |code change| and that change (ops
    whose code did not change left out)."""
    base_names = base["name"].astype(str).to_numpy(dtype=object)
    new_names = new["name"].astype(str).to_numpy(dtype=object)
    bi, ni = _pair(base_names, new_names)
    base_param, base_role = op_rows(base)
    new_param, new_role = op_rows(new)
    base_code = base["code_bytes"].to_numpy(dtype=np.int64)
    new_code = new["code_bytes"].to_numpy(dtype=np.int64)
    best: dict[tuple[str, str], tuple[str, int]] = {}
    for b, n in zip(bi.tolist(), ni.tolist()):
        delta = (int(new_code[n]) if n >= 0 else 0) - (int(base_code[b]) if b >= 0 else 0)
        if not delta:
            continue
        key = (str(new_param[n]), str(new_role[n])) if n >= 0 else (str(base_param[b]), str(base_role[b]))
        name = str(new_names[n]) if n >= 0 else str(base_names[b])
        held = best.get(key)
        if held is None or (abs(delta), held[0]) > (abs(held[1]), name):
            best[key] = (name, delta)
    return best


def compare_ledger_code(base: pd.DataFrame, new: pd.DataFrame, *, noise_bytes: float = 64,
                        noise_pct: float = 1.0) -> pd.DataFrame:
    """Two ``operations`` tables rolled up per (parameter, role) and joined (module docstring).

    Returns one row per (parameter, role) or named row of either side
    (:data:`LEDGER_CODE_DIFF_COLUMNS`): parameter, role, base_/new_/delta_code_bytes (int64 bytes,
    0 for a side without the row), base_/new_/delta_cycles (Int64 cycles of one run; <NA> where a
    side has the row and does not record its cycles), base_ops / new_ops (int64), status
    (:data:`~profcompare.comparison.join.STATUSES`), largest_op (the name of the row's op whose
    code changed most, "" when none changed) and largest_op_delta_code_bytes (int64, its change).
    In ledger order (parameter rows, then the named rows).
    """
    left, right = rollup(base), rollup(new)
    merged = left.merge(right, on=["parameter", "role"], how="outer", suffixes=("_base", "_new"), indicator=True)
    in_base = (merged["_merge"] != "right_only").to_numpy()
    in_new = (merged["_merge"] != "left_only").to_numpy()
    base_code = merged["code_bytes_base"].fillna(0).to_numpy(dtype=np.int64)
    new_code = merged["code_bytes_new"].fillna(0).to_numpy(dtype=np.int64)

    def cycles(column: str, present: np.ndarray) -> pd.arrays.IntegerArray:
        values = merged[column].astype("Int64")
        unknown = values.isna().to_numpy() & present
        return pd.arrays.IntegerArray(values.fillna(0).to_numpy(dtype=np.int64), unknown)

    base_cycles, new_cycles = cycles("cycles_base", in_base), cycles("cycles_new", in_new)
    delta_code = new_code - base_code
    delta_cycles = new_cycles - base_cycles
    codes = np.full(len(merged), STATUSES.index("unchanged"), dtype=np.int8)
    cycles_delta = delta_cycles.to_numpy(dtype="float64", na_value=0.0)
    cycles_limit = noise_threshold(base_cycles.to_numpy(dtype="float64", na_value=0.0), np.inf, noise_pct)
    codes[cycles_delta > cycles_limit] = STATUSES.index("grew")
    codes[cycles_delta < -cycles_limit] = STATUSES.index("shrank")
    code_limit = noise_threshold(base_code.astype("float64"), noise_bytes, noise_pct)
    codes[delta_code > code_limit] = STATUSES.index("grew")
    codes[delta_code < -code_limit] = STATUSES.index("shrank")
    codes[in_new & ~in_base] = STATUSES.index("added")
    codes[in_base & ~in_new] = STATUSES.index("removed")
    largest = _largest_ops(base, new)
    keys = list(zip(merged["parameter"].astype(str), merged["role"].astype(str)))
    frame = pd.DataFrame({
        "parameter": merged["parameter"].astype(object).to_numpy(),
        "role": merged["role"].astype(object).to_numpy(),
        "base_code_bytes": base_code,
        "new_code_bytes": new_code,
        "delta_code_bytes": delta_code,
        "base_cycles": base_cycles,
        "new_cycles": new_cycles,
        "delta_cycles": delta_cycles,
        "base_ops": merged["ops_base"].fillna(0).to_numpy(dtype=np.int64),
        "new_ops": merged["ops_new"].fillna(0).to_numpy(dtype=np.int64),
        "status": pd.Categorical.from_codes(codes, dtype=_STATUS_DTYPE),
        "largest_op": pd.Series([largest.get(k, ("", 0))[0] for k in keys], dtype=object),
        "largest_op_delta_code_bytes": np.array([largest.get(k, ("", 0))[1] for k in keys], dtype=np.int64),
    })
    return sort_ledger_code(frame)[list(LEDGER_CODE_DIFF_COLUMNS)]


__all__ = ["LEDGER_CODE_DIFF_COLUMNS", "compare_ledger_code"]
