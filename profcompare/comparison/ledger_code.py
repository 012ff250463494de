"""The memory ledger's code and cycles of two reports, per (parameter, role), side by side.

Each report's ops are summed per (parameter, role) and into the named rows
(:func:`profcompare.analysis.ledger_code.ledger_code`); the two are joined on (parameter, role),
so every column's base and new sums equal the two operations tables' (and the reports' code bytes
and device cycles per run). Each row also names the op of the row whose code change explains
most of the row's (the largest change of the row's sign): the
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
from profcompare.comparison.join import STATUSES
from profcompare.comparison.operations import _pair, code_and_cycles_status

#: The columns of :func:`compare_ledger_code`, in order.
LEDGER_CODE_DIFF_COLUMNS: tuple[str, ...] = (
    "parameter", "role", "base_code_bytes", "new_code_bytes", "delta_code_bytes",
    "base_cycles", "new_cycles", "delta_cycles", "base_ops", "new_ops", "status",
    "largest_op", "largest_op_delta_code_bytes", "base_bytes_moved", "new_bytes_moved", "delta_bytes_moved",
)

_STATUS_DTYPE = pd.CategoricalDtype(list(STATUSES))


def _op_changes(base: pd.DataFrame, new: pd.DataFrame) -> dict[tuple[str, str], list[tuple[str, int]]]:
    """Per (parameter, role) row, (op name, code change) of each paired op whose code changed."""
    base_names = base["name"].astype(str).to_numpy(dtype=object)
    new_names = new["name"].astype(str).to_numpy(dtype=object)
    bi, ni = _pair(base_names, new_names)
    base_param, base_role = op_rows(base)
    new_param, new_role = op_rows(new)
    base_code = base["code_bytes"].to_numpy(dtype=np.int64)
    new_code = new["code_bytes"].to_numpy(dtype=np.int64)
    changes: dict[tuple[str, str], list[tuple[str, int]]] = {}
    for b, n in zip(bi.tolist(), ni.tolist()):
        delta = (int(new_code[n]) if n >= 0 else 0) - (int(base_code[b]) if b >= 0 else 0)
        if not delta:
            continue
        key = (str(new_param[n]), str(new_role[n])) if n >= 0 else (str(base_param[b]), str(base_role[b]))
        changes.setdefault(key, []).append((str(new_names[n]) if n >= 0 else str(base_names[b]), delta))
    return changes


def _largest(changes: list[tuple[str, int]], row_delta: int) -> tuple[str, int]:
    """The change of ``changes`` that explains most of ``row_delta``: the largest of its sign (of
    any sign when the row's code did not change), the first name on a tie; ("", 0) for none."""
    pool = [c for c in changes if (c[1] > 0) == (row_delta > 0)] if row_delta else changes
    if not pool:
        return "", 0
    return min(pool, key=lambda c: (-abs(c[1]), c[0]))


def compare_ledger_code(base: pd.DataFrame, new: pd.DataFrame, *, noise_bytes: float = 64,
                        noise_pct: float = 1.0, base_moves: pd.DataFrame | None = None,
                        new_moves: pd.DataFrame | None = None) -> pd.DataFrame:
    """Two ``operations`` tables rolled up per (parameter, role) and joined (module docstring).

    Returns one row per (parameter, role) or named row of either side
    (:data:`LEDGER_CODE_DIFF_COLUMNS`): parameter, role, base_/new_/delta_code_bytes (int64 bytes,
    0 for a side without the row), base_/new_/delta_cycles (Int64 cycles of one run; <NA> where a
    side has the row and does not record its cycles), base_ops / new_ops (int64), status
    (:data:`~profcompare.comparison.join.STATUSES`), largest_op (the name of the row's op whose
    code change explains most of the row's, "" when none changed) and largest_op_delta_code_bytes (int64, its change),
    base_/new_/delta_bytes_moved (Int64: the bytes the row's transfers and collectives move per
    run, from ``base_moves`` / ``new_moves``, :func:`profcompare.analysis.ledger_code.moved_bytes`;
    0 for a side without the row, <NA> for a side without an execution profile).
    In ledger order (parameter rows, then the named rows).
    """
    left, right = rollup(base, base_moves), rollup(new, new_moves)
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

    def moved(column: str, moves: pd.DataFrame | None) -> pd.arrays.IntegerArray:
        values = merged[column].astype("Int64").fillna(0).to_numpy(dtype=np.int64)
        return pd.arrays.IntegerArray(values, np.full(len(values), moves is None))

    delta_code = new_code - base_code
    delta_cycles = new_cycles - base_cycles
    codes = code_and_cycles_status(base_code, delta_code, base_cycles, delta_cycles, in_base, in_new,
                                   noise_bytes, noise_pct)
    changes = _op_changes(base, new)
    keys = list(zip(merged["parameter"].astype(str), merged["role"].astype(str)))
    largest = [_largest(changes.get(k, []), int(d)) for k, d in zip(keys, delta_code.tolist())]
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
        "largest_op": pd.Series([name for name, _ in largest], dtype=object),
        "largest_op_delta_code_bytes": np.array([delta for _, delta in largest], dtype=np.int64),
        "base_bytes_moved": moved("bytes_moved_base", base_moves),
        "new_bytes_moved": moved("bytes_moved_new", new_moves),
    })
    frame["delta_bytes_moved"] = frame["new_bytes_moved"] - frame["base_bytes_moved"]
    return sort_ledger_code(frame)[list(LEDGER_CODE_DIFF_COLUMNS)]


__all__ = ["LEDGER_CODE_DIFF_COLUMNS", "compare_ledger_code"]
