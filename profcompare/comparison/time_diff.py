"""The time diff of a comparison: where the device cycles of one run went between two layouts.

Each report's executed steps (``Report.execution``, device phases, cycles per run: the mean over
the profiled runs) are placed on the IPU the trace draws them on, and the two reports' steps are
aligned per IPU by program-name sequence, the alignment the liveness curves use
(:func:`profcompare.comparison.liveness._align_sequences`). Each aligned pair is a row: ``added``
(only in new), ``removed`` (only in base), ``slower``, ``faster`` or ``unchanged``; a pair whose
program names differ is a removed row and an added row. A last row, kind ``not in a step``,
holds the part of each run's span no step covers (overlapping or idle time), so the rows'
``delta_cycles`` add up to the change of ``cycles_per_step`` exactly.

**Attribution.** A step that moves a parameter's data is charged to that (parameter, role)
through the ledger's attribution of the variables it writes or reads; every other step to a
named kind. Steps are taken in groups: consecutive steps of one op (the trace's ``parent``,
else the program name up to its first ``/``). A group's kind is ``remote load`` / ``remote
store`` (a RemoteLoad / RemoteStore step), ``collective`` (a step in phase collective), ``host
transfer`` (phase host_io), ``update`` (an optimizer or gradient-accumulation op by its name,
:data:`UPDATE_PATTERN`, or any op inside a call of such a graph), else the step's own phase
(``compute``, ``exchange``, ``sync``, ``remote transfer``). For the moving kinds the group's
parameter is that of the attributed variables whose liveness interval starts in the group (what
it writes), else ends in it (what it reads: a remote store); for an update, those of the call it
sits in (its copies in and out). Among several the role of :data:`ROLE_PRIORITY` first, then
the most bytes. Tile-memory copies of Streaming Memory data (role ``remote_staging``) take the
role of the remote buffer holding the same parameter's state (``optimizer_state``).

**Exposed and overlapped.** From the trace run's intervals: a step's *overlapped* cycles are
the part of its interval during which an ``OnTileExecute`` block runs on another IPU or, for a
step that is not itself compute, on any IPU (another tile set of its own IPU included): time the
program advances elsewhere while the step runs. Its *exposed* cycles are the rest: time during
which nothing computes but the step itself, so the run waits for it (it is on the critical
path). The split of the trace run is applied to the step's mean cycles over runs. Without a
trace, or without intervals, every cycle is exposed.

**Bytes moved.** For a remote load or store, a host transfer or a collective: the bytes of the
parameter's variables the group writes or reads (of no parameter's: of the variables it writes
or reads, a host input or an activation stored off chip, with the same rule) (tile memory per replica, exact shape x dtype in
the simulator), put on the group's data steps (RemoteLoad, RemoteStore, StreamCopyMid,
GlobalExchange; else its longest step) in equal parts; ``*_bytes_per_second`` is those bytes over
the step's time at the report's clock. **Recorded bytes come first**: where a report records the
bytes a step moves (``execution.bytes_moved``: the SDK's ``dataIn + dataOut`` per StreamCopyMid
and GlobalExchange step, measured; the simulator's exact shape x dtype of what its lowering
moves), a moving group with any recorded step takes its steps' recorded bytes (mean over runs)
instead of the variables' (:func:`bytes_source` says which a report's figures are).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from profcompare.analysis.step_attribution import (
    BYTES_FROM_VARIABLES,
    BYTES_RECORDED,
    DATA_STEP_TYPES,
    MOVING_KINDS,
    ROLE_PRIORITY,
    SPAN_KIND,
    TIME_KINDS,
    UPDATE_PATTERN,
    _run_holding,
    bytes_source,
    report_steps,
    shown_blocks,
)
from profcompare.comparison.liveness import _align_sequences
from profcompare.model import Report, run_span_cycles, runtime_rows

#: Statuses of a time-diff row.
TIME_STATUSES: tuple[str, ...] = ("added", "removed", "slower", "faster", "unchanged", "span")

#: Columns of the time diff, in order (cycles are per run of the main program, float64).
TIME_DIFF_COLUMNS: tuple[str, ...] = (
    "ipu", "program", "base_step", "new_step", "status", "kind", "parameter", "role",
    "base_cycles", "new_cycles", "delta_cycles",
    "base_exposed_cycles", "new_exposed_cycles", "delta_exposed_cycles", "delta_overlapped_cycles",
    "base_bytes_moved", "new_bytes_moved", "base_bytes_per_second", "new_bytes_per_second",
)


@dataclass(frozen=True)
class TimeDiffSummary:
    """The totals of a time diff, cycles per run: the two device spans (``cycles_per_step``)
    and their difference; ``gross_cycles`` the sum of |delta| over rows; ``attributed_share``
    the part of it charged to a parameter or a named kind (every row but the span row), and
    ``parameter_share`` the part charged to a parameter; the change of exposed and of overlapped
    cycles (they add up to ``delta_cycles``); the exposed totals of each side; the clock."""

    base_cycles: float
    new_cycles: float
    delta_cycles: float
    gross_cycles: float
    attributed_share: float
    parameter_share: float
    base_exposed_cycles: float
    new_exposed_cycles: float
    delta_exposed_cycles: float
    delta_overlapped_cycles: float
    clock_hz: float

    def seconds(self, cycles: float) -> float:
        """``cycles`` at the clock, in seconds."""
        return cycles / self.clock_hz if self.clock_hz else float("nan")


# --------------------------------------------------------------------------------------------
# The diff


def _empty_time_diff() -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.Series(dtype="float64") for c in TIME_DIFF_COLUMNS})
    for c in ("program", "status", "kind", "parameter", "role"):
        frame[c] = pd.Series(dtype=object)
    frame["ipu"] = pd.Series(dtype="int64")
    frame["base_step"] = pd.Series(dtype="Int64")
    frame["new_step"] = pd.Series(dtype="Int64")
    return frame


def _rate(nbytes: np.ndarray, cycles: np.ndarray, clock_hz: float) -> np.ndarray:
    seconds = cycles / clock_hz if clock_hz else np.zeros_like(cycles)
    return np.where((nbytes > 0) & (seconds > 0), nbytes / np.where(seconds > 0, seconds, 1.0), np.nan)


def time_diff(base: Report, new: Report) -> pd.DataFrame:
    """The time diff of ``base`` and ``new``: one row per aligned step (see the module), then the
    span row; columns :data:`TIME_DIFF_COLUMNS`: ipu (int64), program, base_step / new_step
    (Int64, <NA> where that side has no step), status (:data:`TIME_STATUSES`), kind
    (:data:`TIME_KINDS`), parameter, role ("" where the row is charged to a kind only), cycles per
    run (float64): base_, new_, delta_cycles, base_ / new_ / delta_exposed_cycles,
    delta_overlapped_cycles (delta_cycles - delta_exposed_cycles), bytes moved per run
    (float64) and the bandwidth they imply (bytes per second, NaN where none). Rows of an IPU
    are in step order; the span row (ipu -1) is last. The rows' delta_cycles sum to the change of
    the device cycles per run (``cycles_per_step``)."""
    b_steps, n_steps = report_steps(base), report_steps(new)
    if not len(b_steps) and not len(n_steps):
        return _empty_time_diff()
    pieces: list[dict[str, np.ndarray]] = []
    ipus = sorted(set(b_steps["ipu"].tolist()) | set(n_steps["ipu"].tolist()))
    for lane in ipus:
        bl = b_steps[b_steps["ipu"] == lane].reset_index(drop=True)
        nl = n_steps[n_steps["ipu"] == lane].reset_index(drop=True)
        names = np.r_[bl["program"].to_numpy(dtype=object), nl["program"].to_numpy(dtype=object)]
        codes, _ = pd.factorize(pd.Series(names, dtype=object), use_na_sentinel=False)
        codes = codes.astype(np.int64)
        bi, ni, _method = _align_sequences(codes[: len(bl)], codes[len(bl):])
        # differing names paired by position become a removed and an added row
        paired = (bi >= 0) & (ni >= 0)
        split = np.zeros(len(bi), dtype=bool)
        split[paired] = codes[bi[paired]] != codes[len(bl) + ni[paired]]
        at = np.repeat(np.arange(len(bi)), 1 + split.astype("int64"))
        second = np.r_[False, at[1:] == at[:-1]]
        bi_rows = np.where(split[at] & second, -1, bi[at])
        ni_rows = np.where(split[at] & ~second, -1, ni[at])
        pieces.append(_lane_rows(lane, bl, nl, bi_rows, ni_rows, base, new))
    # column by column, each lane's arrays let go as they are joined (a step's row is not held twice)
    frame = pd.DataFrame(index=pd.RangeIndex(sum(len(p["ipu"]) for p in pieces)))
    for column in list(pieces[0]):
        frame[column] = np.concatenate([p.pop(column) for p in pieces])
    del pieces
    for column in ("base_step", "new_step"):
        values = frame[column].to_numpy(dtype="int64")
        frame[column] = pd.arrays.IntegerArray(values, values < 0)
    span = _span_row(base, new, float(b_steps["cycles"].sum()) if len(b_steps) else 0.0,
                     float(n_steps["cycles"].sum()) if len(n_steps) else 0.0)
    if span is not None:
        frame = pd.concat([frame, pd.DataFrame([span]).astype({"base_step": "Int64", "new_step": "Int64"})],
                          ignore_index=True)
    return frame[list(TIME_DIFF_COLUMNS)].reset_index(drop=True)


def _lane_rows(lane: int, bl: pd.DataFrame, nl: pd.DataFrame, bi: np.ndarray, ni: np.ndarray,
               base: Report, new: Report) -> dict[str, np.ndarray]:
    def take(frame: pd.DataFrame, column: str, index: np.ndarray, fill: object) -> np.ndarray:
        values = frame[column].to_numpy()
        out = np.full(len(index), fill, dtype=values.dtype if values.dtype != object else object)
        present = index >= 0
        out[present] = values[index[present]]
        return out

    b_cycles = take(bl, "cycles", bi, 0.0).astype("float64")
    n_cycles = take(nl, "cycles", ni, 0.0).astype("float64")
    b_exposed = take(bl, "exposed_cycles", bi, 0.0).astype("float64")
    n_exposed = take(nl, "exposed_cycles", ni, 0.0).astype("float64")
    b_moved = take(bl, "bytes_moved", bi, 0.0).astype("float64")
    n_moved = take(nl, "bytes_moved", ni, 0.0).astype("float64")
    delta = n_cycles - b_cycles
    status = np.where(bi < 0, "added", np.where(ni < 0, "removed", np.where(
        delta > 0, "slower", np.where(delta < 0, "faster", "unchanged")))).astype(object)
    n_param, b_param = take(nl, "parameter", ni, ""), take(bl, "parameter", bi, "")
    use_new = (ni >= 0) & ((n_param != "") | (b_param == ""))

    def pick(column: str) -> np.ndarray:
        return np.where(use_new, take(nl, column, ni, ""), take(bl, column, bi, "")).astype(object)

    return {
        "ipu": np.full(len(bi), lane, dtype="int64"),
        "program": np.where(ni >= 0, take(nl, "program", ni, ""), take(bl, "program", bi, "")).astype(object),
        "base_step": take(bl, "step", bi, -1).astype("int64"),
        "new_step": take(nl, "step", ni, -1).astype("int64"),
        "status": status,
        "kind": pick("kind"),
        "parameter": pick("parameter"),
        "role": pick("role"),
        "base_cycles": b_cycles,
        "new_cycles": n_cycles,
        "delta_cycles": delta,
        "base_exposed_cycles": b_exposed,
        "new_exposed_cycles": n_exposed,
        "delta_exposed_cycles": n_exposed - b_exposed,
        "delta_overlapped_cycles": delta - (n_exposed - b_exposed),
        "base_bytes_moved": b_moved,
        "new_bytes_moved": n_moved,
        "base_bytes_per_second": _rate(b_moved, b_cycles, base.meta.target.clock_hz),
        "new_bytes_per_second": _rate(n_moved, n_cycles, new.meta.target.clock_hz),
    }


def _span_row(base: Report, new: Report, base_steps: float, new_steps: float) -> dict[str, object] | None:
    """The row of the run span no step covers (None when it is nothing on both sides)."""
    b = (run_span_cycles(base.execution) if len(base.execution) else 0.0) - base_steps
    n = (run_span_cycles(new.execution) if len(new.execution) else 0.0) - new_steps
    b, n = (0.0 if np.isnan(b) else b), (0.0 if np.isnan(n) else n)
    if abs(b) < 1e-6 and abs(n) < 1e-6:
        return None
    return {"ipu": -1, "program": "(run span outside the steps: overlap or idle)", "base_step": pd.NA,
            "new_step": pd.NA, "status": "span", "kind": SPAN_KIND, "parameter": "", "role": "",
            "base_cycles": b, "new_cycles": n, "delta_cycles": n - b, "base_exposed_cycles": b,
            "new_exposed_cycles": n, "delta_exposed_cycles": n - b, "delta_overlapped_cycles": 0.0,
            "base_bytes_moved": 0.0, "new_bytes_moved": 0.0, "base_bytes_per_second": np.nan,
            "new_bytes_per_second": np.nan}


def time_diff_summary(diff: pd.DataFrame, base: Report, new: Report) -> TimeDiffSummary:
    """The totals of ``diff`` (:func:`time_diff` of ``base`` and ``new``)."""
    base_cycles = float(diff["base_cycles"].sum()) if len(diff) else 0.0
    new_cycles = float(diff["new_cycles"].sum()) if len(diff) else 0.0
    delta = diff["delta_cycles"].to_numpy(dtype="float64")
    gross = float(np.abs(delta).sum())
    named = (diff["kind"] != SPAN_KIND).to_numpy()
    charged = (diff["parameter"] != "").to_numpy()
    return TimeDiffSummary(
        base_cycles=base_cycles, new_cycles=new_cycles, delta_cycles=new_cycles - base_cycles,
        gross_cycles=gross,
        attributed_share=float(np.abs(delta[named]).sum() / gross) if gross else 1.0,
        parameter_share=float(np.abs(delta[charged]).sum() / gross) if gross else 0.0,
        base_exposed_cycles=float(diff["base_exposed_cycles"].sum()),
        new_exposed_cycles=float(diff["new_exposed_cycles"].sum()),
        delta_exposed_cycles=float(diff["delta_exposed_cycles"].sum()),
        delta_overlapped_cycles=float(diff["delta_overlapped_cycles"].sum()),
        clock_hz=float(new.meta.target.clock_hz or base.meta.target.clock_hz),
    )


def time_causes(diff: pd.DataFrame, clock_hz: float) -> pd.DataFrame:
    """``diff`` summed per cause, largest |delta_cycles| first: parameter, role, kind, steps
    (rows, int64), delta_cycles, delta_exposed_cycles, delta_overlapped_cycles, base_bytes_moved,
    new_bytes_moved (float64), base_bytes_per_second / new_bytes_per_second (the bytes over the
    cycles of the cause's moving steps; NaN where none). Rows of no change are left out."""
    columns = ["delta_cycles", "delta_exposed_cycles", "delta_overlapped_cycles", "base_bytes_moved",
               "new_bytes_moved"]
    changed = diff[diff["delta_cycles"] != 0]
    if not len(changed):
        out = pd.DataFrame({c: pd.Series(dtype=object) for c in ("parameter", "role", "kind")})
        out["steps"] = pd.Series(dtype="int64")
        for c in (*columns, "base_bytes_per_second", "new_bytes_per_second"):
            out[c] = pd.Series(dtype="float64")
        return out
    keyed = diff.assign(
        steps=1,
        base_moving_cycles=np.where(diff["base_bytes_moved"] > 0, diff["base_cycles"], 0.0),
        new_moving_cycles=np.where(diff["new_bytes_moved"] > 0, diff["new_cycles"], 0.0))
    keys = changed[["parameter", "role", "kind"]].drop_duplicates()
    grouped = keyed.merge(keys, on=["parameter", "role", "kind"]).groupby(
        ["parameter", "role", "kind"], sort=False, observed=True)
    sums = grouped[[*columns, "base_moving_cycles", "new_moving_cycles"]].sum()
    sums["steps"] = changed.groupby(["parameter", "role", "kind"], sort=False).size().reindex(sums.index) \
        .fillna(0).astype("int64")
    out = sums.reset_index()
    out["base_bytes_per_second"] = _rate(out["base_bytes_moved"].to_numpy(dtype="float64"),
                                         out["base_moving_cycles"].to_numpy(dtype="float64"), clock_hz)
    out["new_bytes_per_second"] = _rate(out["new_bytes_moved"].to_numpy(dtype="float64"),
                                        out["new_moving_cycles"].to_numpy(dtype="float64"), clock_hz)
    out = out.iloc[np.argsort(-np.abs(out["delta_cycles"].to_numpy()), kind="stable")].reset_index(drop=True)
    return out[["parameter", "role", "kind", "steps", *columns, "base_bytes_per_second", "new_bytes_per_second"]]


#: Statuses of the new run's steps the trace marks.
MARKED_STATUSES: tuple[str, ...] = ("added", "slower")


def marked_steps(diff: pd.DataFrame, new: Report, limit: int | None = 2000) -> pd.DataFrame:
    """Where the new run's added and slower steps lie in its trace run: ipu, cycles_from,
    cycles_to (int64), status, program, delta_cycles (float64), one row per step of ``diff`` (the
    time diff of some base and ``new``) with status in :data:`MARKED_STATUSES`, the ``limit``
    largest changes at most; empty without a trace or intervals."""
    columns = {"ipu": "int64", "cycles_from": "int64", "cycles_to": "int64", "status": object, "program": object,
               "delta_cycles": "float64"}
    empty = pd.DataFrame({c: pd.Series(dtype=t) for c, t in columns.items()})
    execution = new.execution
    if not len(diff) or not len(execution):
        return empty
    trace = shown_blocks(new)
    if not len(trace):
        return empty
    # the device rows by position (no copy of the table)
    device = np.flatnonzero(~runtime_rows(execution["phase"]))
    run_of = execution["run"].to_numpy(dtype="int64")[device]
    run = _run_holding(run_of, execution["cycles_from"].to_numpy(dtype="float64", na_value=np.nan)[device],
                       execution["cycles_to"].to_numpy(dtype="float64", na_value=np.nan)[device],
                       int(trace["cycles_from"].min()))
    if run is None:
        return empty
    rows = diff[diff["status"].isin(MARKED_STATUSES) & diff["new_step"].notna()]
    if limit is not None and len(rows) > limit:
        rows = rows.iloc[np.argsort(-np.abs(rows["delta_cycles"].to_numpy()), kind="stable")[:limit]]
    steps = rows["new_step"].to_numpy(dtype="int64")
    # the run's rows of the marked steps only
    in_run = device[run_of == run]
    del device, run_of
    step_of = execution["step"].to_numpy(dtype="int64")[in_run]
    wanted = in_run[np.isin(step_of, steps)]
    del in_run, step_of
    spans = execution[["step", "cycles_from", "cycles_to"]].iloc[wanted].groupby("step", sort=True).agg(
        a=("cycles_from", "min"), b=("cycles_to", "max"))
    spans = spans.reindex(steps)
    known = spans["a"].notna().to_numpy() & spans["b"].notna().to_numpy()
    return pd.DataFrame({
        "ipu": rows["ipu"].to_numpy(dtype="int64")[known],
        "cycles_from": spans["a"].to_numpy(dtype="float64")[known].astype("int64"),
        "cycles_to": spans["b"].to_numpy(dtype="float64")[known].astype("int64"),
        "status": rows["status"].to_numpy(dtype=object)[known],
        "program": rows["program"].to_numpy(dtype=object)[known],
        "delta_cycles": rows["delta_cycles"].to_numpy(dtype="float64")[known],
    })


__all__ = ["BYTES_FROM_VARIABLES", "BYTES_RECORDED", "DATA_STEP_TYPES", "bytes_source", "MARKED_STATUSES", "marked_steps", "MOVING_KINDS", "ROLE_PRIORITY", "SPAN_KIND", "TIME_DIFF_COLUMNS", "TIME_KINDS",
           "TIME_STATUSES", "TimeDiffSummary", "UPDATE_PATTERN", "report_steps", "time_causes", "time_diff",
           "time_diff_summary"]
