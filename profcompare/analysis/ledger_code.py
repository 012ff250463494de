"""The memory ledger's code and cycles: what the ops acting on each parameter's data cost.

Pure functions over a report's ``operations`` table (model.SCHEMAS): each op carries the
parameter whose data it acts on and what of it the op serves (``parameter``, ``role``; the
simulator records them exactly, emulator/compile/op_attribution.py has the rule). The ops' code
bytes and cycles per run are summed per (parameter, role); the ops that act on no single
parameter's data go to named rows, so the column sums over every row equal the operations
table's (which reconcile with the report's code bytes and device cycles per run):

- :data:`ACTIVATIONS_ROW` -- ops moving no parameter's data (activations, the loss, host streams);
- :data:`SHARED_ROW` -- ops moving several parameters' data (a call of the whole model, an
  optimizer subgraph shared by several parameters);
- :data:`UNKNOWN_ROW` -- ops whose report does not say (Poplar profiles, stores before version 9);
- :data:`~profcompare.model.UNATTRIBUTED_OPERATION` -- what no op is given (the operations
  table's remainder row: the program's base control code, vertex code, ...).

**Bytes moved.** Each row also carries the bytes its host and remote transfers and collectives
move per run: the time diff's steps of the report (:func:`profcompare.analysis.step_attribution.report_steps`:
its attribution of steps to a (parameter, role), and its bytes, recorded by the profile where
the report records them, else from the variables moved), summed per (parameter, role); a
transfer of no parameter's data counts in :data:`ACTIVATIONS_ROW`. A (parameter, role) whose
transfers move bytes but that no op is charged to gets a row of its own (no code, no ops).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from profcompare.model import UNATTRIBUTED_OPERATION, Report

ACTIVATIONS_ROW = "(activations)"
SHARED_ROW = "(several parameters)"
UNKNOWN_ROW = "(parameter not recorded)"

#: The named rows, in the order they close the ledger's code rows.
NAMED_ROWS: tuple[str, ...] = (ACTIVATIONS_ROW, SHARED_ROW, UNKNOWN_ROW, UNATTRIBUTED_OPERATION)

#: The roles an op serves for its parameter, in ledger order.
CODE_ROLES: tuple[str, ...] = ("weight", "gradient", "accumulator", "optimizer_state", "kv_cache", "other")

#: Columns of :func:`ledger_code`, in order.
LEDGER_CODE_COLUMNS: tuple[str, ...] = ("parameter", "role", "code_bytes", "cycles", "ops", "bytes_moved")


def op_rows(operations: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(parameter, role) of each row of an ``operations`` table as the ledger's code rows name
    it: the op's own parameter and role, else a named row (:data:`NAMED_ROWS`) with role ""."""
    names = operations["name"].astype(str).to_numpy(dtype=object)
    parameter = operations["parameter"].astype(str).to_numpy(dtype=object)
    role = operations["role"].astype(str).to_numpy(dtype=object)
    named = np.where(role == "activation", ACTIVATIONS_ROW,
                     np.where(role == "shared", SHARED_ROW, UNKNOWN_ROW)).astype(object)
    named = np.where(names == UNATTRIBUTED_OPERATION, UNATTRIBUTED_OPERATION, named).astype(object)
    own = parameter != ""
    return np.where(own, parameter, named).astype(object), np.where(own, role, "").astype(object)


def ledger_code(report: Report) -> pd.DataFrame:
    """The code and cycles of ``report``'s ops per (parameter, role) (module docstring).

    Columns (:data:`LEDGER_CODE_COLUMNS`): parameter (str: the parameter, or a named row),
    role (str: :data:`CODE_ROLES`; "" for a named row), code_bytes (int64: control and exchange
    code of the ops), cycles (Int64: device cycles of the ops in one run of the main program;
    <NA> when none of its ops records them), ops (int64: ops in the row; 0 for the remainder),
    bytes_moved (Int64: bytes its transfers and collectives move per run, module docstring;
    <NA> throughout when the report has no execution profile).
    Parameter rows first (by parameter, then role in :data:`CODE_ROLES` order), then the named
    rows that have ops, in :data:`NAMED_ROWS` order. Empty when the report has no operations.
    """
    return rollup(report.operations, moved_bytes(report))


def moved_bytes(report: Report) -> pd.DataFrame | None:
    """The bytes ``report``'s steps move per run, per ledger row: parameter, role, bytes_moved
    (int64, rounded); None when the report has no execution profile."""
    from profcompare.analysis.step_attribution import report_steps

    if not len(report.execution):
        return None
    steps = report_steps(report)
    moving = steps[steps["bytes_moved"].astype("float64") > 0] if len(steps) else steps
    parameter = moving["parameter"].astype(str).to_numpy(dtype=object)
    role = moving["role"].astype(str).to_numpy(dtype=object)
    own = parameter != ""
    frame = pd.DataFrame({"parameter": np.where(own, parameter, ACTIVATIONS_ROW).astype(object),
                          "role": np.where(own, role, "").astype(object),
                          "bytes_moved": moving["bytes_moved"].to_numpy(dtype="float64")})
    summed = frame.groupby(["parameter", "role"], sort=False)["bytes_moved"].sum().reset_index()
    summed["bytes_moved"] = np.round(summed["bytes_moved"].to_numpy(dtype="float64")).astype(np.int64)
    return summed


def rollup(operations: pd.DataFrame, moves: pd.DataFrame | None = None) -> pd.DataFrame:
    """:func:`ledger_code` of an ``operations`` table and the bytes moved per row (:func:`moved_bytes`;
    None: <NA>, no execution profile)."""
    parameter, role = op_rows(operations)
    frame = pd.DataFrame({
        "parameter": parameter, "role": role,
        "code_bytes": operations["code_bytes"].to_numpy(dtype=np.int64),
        "cycles": operations["cycles"].astype("Int64").to_numpy(),
        "ops": (operations["name"].astype(str) != UNATTRIBUTED_OPERATION).to_numpy(dtype=np.int64),
    })
    frame["cycles"] = frame["cycles"].astype("Int64")
    grouped = frame.groupby(["parameter", "role"], sort=False, dropna=False).agg(
        code_bytes=("code_bytes", "sum"), cycles=("cycles", lambda s: s.sum(min_count=1)), ops=("ops", "sum"))
    grouped = grouped.reset_index()
    out = pd.DataFrame({
        "parameter": grouped["parameter"].astype(object).to_numpy(),
        "role": grouped["role"].astype(object).to_numpy(),
        "code_bytes": grouped["code_bytes"].to_numpy(dtype=np.int64),
        "cycles": pd.array(grouped["cycles"].to_numpy(dtype=object), dtype="Int64"),
        "ops": grouped["ops"].to_numpy(dtype=np.int64),
    })
    if moves is None:
        out["bytes_moved"] = pd.array([pd.NA] * len(out), dtype="Int64")
        return sort_ledger_code(out)
    if len(moves):
        extra = moves[~pd.MultiIndex.from_frame(moves[["parameter", "role"]]).isin(
            pd.MultiIndex.from_frame(out[["parameter", "role"]]) if len(out) else pd.MultiIndex.from_tuples(
                [], names=["parameter", "role"]))]
        if len(extra):
            out = pd.concat([out, pd.DataFrame({
                "parameter": extra["parameter"].to_numpy(dtype=object), "role": extra["role"].to_numpy(dtype=object),
                "code_bytes": np.zeros(len(extra), dtype=np.int64),
                "cycles": pd.array([pd.NA] * len(extra), dtype="Int64"),
                "ops": np.zeros(len(extra), dtype=np.int64)})], ignore_index=True)
    keyed = out.merge(moves, on=["parameter", "role"], how="left") if len(out) else out.assign(bytes_moved=[])
    out["bytes_moved"] = pd.array(keyed["bytes_moved"].fillna(0).to_numpy(dtype=np.int64), dtype="Int64")
    return sort_ledger_code(out)


def sort_ledger_code(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of a ledger-code frame (or its diff) in ledger order: parameter rows by parameter and
    role (:data:`CODE_ROLES` order), then the named rows in :data:`NAMED_ROWS` order."""
    role_rank = {r: i for i, r in enumerate(CODE_ROLES)}
    named_rank = {n: i for i, n in enumerate(NAMED_ROWS)}
    key = pd.DataFrame({
        "named": [named_rank.get(p, -1) for p in frame["parameter"]],
        "parameter": frame["parameter"].astype(str).to_numpy(dtype=object),
        "role": [role_rank.get(r, len(role_rank)) for r in frame["role"]],
    })
    order = key.sort_values(["named", "parameter", "role"], kind="mergesort").index
    return frame.take(order).reset_index(drop=True)


__all__ = [
    "ACTIVATIONS_ROW",
    "CODE_ROLES",
    "LEDGER_CODE_COLUMNS",
    "NAMED_ROWS",
    "SHARED_ROW",
    "UNKNOWN_ROW",
    "ledger_code",
    "moved_bytes",
    "op_rows",
    "rollup",
    "sort_ledger_code",
]
