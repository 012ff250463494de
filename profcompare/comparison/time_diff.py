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

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from profcompare.analysis.trace import choose_run, run_blocks
from profcompare.comparison.liveness import _align_sequences
from profcompare.model import Report, run_span_cycles, runtime_rows

#: Statuses of a time-diff row.
TIME_STATUSES: tuple[str, ...] = ("added", "removed", "slower", "faster", "unchanged", "span")

#: Kinds a step is charged to when it moves no parameter's data (and the kinds of those that do).
TIME_KINDS: tuple[str, ...] = ("remote load", "remote store", "remote transfer", "host transfer", "collective",
                               "update", "compute", "exchange", "sync", "not in a step")
#: The kinds that move data: their rows carry bytes moved.
MOVING_KINDS: frozenset[str] = frozenset({"remote load", "remote store", "remote transfer", "host transfer",
                                          "collective"})
#: The kind of the row holding the run span no step covers.
SPAN_KIND = "not in a step"

#: Op or called-graph names of optimizer updates and gradient accumulation (case-insensitive).
UPDATE_PATTERN = re.compile(r"adam|lamb|sgd|updat|optimi[sz]er|accumulat|scaled_add", re.IGNORECASE)

#: Which role a step is charged to when it writes or reads several: the first in this order.
ROLE_PRIORITY: tuple[str, ...] = ("optimizer_state", "gathered_weight", "shard", "accumulator", "gradient",
                                  "weight", "weight_copy", "kv_cache", "remote_staging", "activation",
                                  "partials", "other")

#: Program types of the steps that carry a transfer's or a collective's data.
DATA_STEP_TYPES: frozenset[str] = frozenset({"RemoteLoad", "RemoteStore", "StreamCopyMid", "StreamCopy",
                                             "GlobalExchange"})

#: What a report's bytes moved come from (:func:`bytes_source`).
BYTES_RECORDED = "recorded by the profile"
BYTES_FROM_VARIABLES = "from the variables moved"

#: Columns of the time diff, in order (cycles are per run of the main program, float64).
TIME_DIFF_COLUMNS: tuple[str, ...] = (
    "ipu", "program", "base_step", "new_step", "status", "kind", "parameter", "role",
    "base_cycles", "new_cycles", "delta_cycles",
    "base_exposed_cycles", "new_exposed_cycles", "delta_exposed_cycles", "delta_overlapped_cycles",
    "base_bytes_moved", "new_bytes_moved", "base_bytes_per_second", "new_bytes_per_second",
)

_STEP_COLUMNS = ("ipu", "step", "program", "type", "phase", "group", "kind", "parameter", "role",
                 "cycles", "exposed_cycles", "bytes_moved")


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
# One report's steps


def _covered(starts: np.ndarray, ends: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per interval [a, b): how much of it the union of the intervals [starts, ends) covers."""
    if not len(starts) or not len(a):
        return np.zeros(len(a), dtype="float64")
    order = np.argsort(starts, kind="stable")
    s, e = starts[order].astype("float64"), ends[order].astype("float64")
    # merge: a new piece starts where the start is beyond every earlier end
    reach = np.maximum.accumulate(e)
    new_piece = np.r_[True, s[1:] > reach[:-1]]
    first = np.flatnonzero(new_piece)
    merged_s = s[first]
    merged_e = np.maximum.reduceat(e, first)
    before = np.r_[0.0, np.cumsum(merged_e - merged_s)]

    def upto(x: np.ndarray) -> np.ndarray:
        i = np.searchsorted(merged_s, x, side="right") - 1
        inside = np.where(i >= 0, np.minimum(x, merged_e[np.maximum(i, 0)]) - merged_s[np.maximum(i, 0)], 0.0)
        return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0.0)

    covered: np.ndarray = np.maximum(upto(b.astype("float64")) - upto(a.astype("float64")), 0.0)
    return covered


def shown_blocks(report: Report) -> pd.DataFrame:
    """The blocks of the trace run the views draw (``report.trace_run``, else the first
    steady-state run: analysis.trace.choose_run), so the time diff's intervals and marks are
    that run's."""
    return run_blocks(report.trace, choose_run(report.trace, report.trace_run))


def _trace_run(execution: pd.DataFrame, trace: pd.DataFrame) -> int | None:
    """The run of ``execution`` whose intervals the trace holds (None when it cannot tell)."""
    if not len(trace) or not len(execution) or execution["cycles_from"].isna().all():
        return None
    start = int(trace["cycles_from"].min())
    spans = execution.groupby("run", sort=True).agg(a=("cycles_from", "min"), b=("cycles_to", "max"))
    hit = spans[(spans["a"] <= start) & (spans["b"] > start)]
    return int(hit.index[0]) if len(hit) else None


def _group_names(program: pd.Series, trace: pd.DataFrame) -> np.ndarray:
    """The op group of each step: the trace's parent of its program, else its name up to the
    first ``/`` (the whole name when none). Worked out once per distinct program name."""
    codes, names = pd.factorize(program.astype(str).to_numpy(dtype=object))
    parent_of: dict[str, str] = {}
    if len(trace):
        for name, parent in zip(trace["program"].astype(str).to_numpy(dtype=object).tolist(),
                                trace["parent"].astype(str).to_numpy(dtype=object).tolist()):
            parent_of.setdefault(name, parent)
    groups = np.asarray([parent_of.get(name) or str(name).split("/", 1)[0] for name in names.tolist()], dtype=object)
    return groups[codes] if len(codes) else np.zeros(0, dtype=object)


def _call_spans(group: np.ndarray) -> list[tuple[int, int, str]]:
    """(first, last) row positions of each call instance: a run of a ``--call--X`` group's rows
    (its copies in) up to the end of the next run of the same group (its copies out)."""
    spans: list[tuple[int, int, str]] = []
    open_at: dict[str, int] = {}
    n = len(group)
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if n else np.zeros(0, dtype="int64")
    ends = np.r_[starts[1:], n] - 1
    for lo, hi in zip(starts, ends):
        name = str(group[lo])
        if not name.startswith("--call--"):
            continue
        if name in open_at:
            spans.append((open_at.pop(name), int(hi), name))
        else:
            open_at[name] = int(lo)
    return spans


@dataclass(frozen=True)
class _Attributed:
    """The attributed variables of a report as arrays: liveness interval, bytes, parameter, role;
    ``by_first`` / ``by_last`` order them by first and by last step (for range searches)."""

    first: np.ndarray
    last: np.ndarray
    nbytes: np.ndarray
    parameter: np.ndarray
    role: np.ndarray
    by_first: np.ndarray
    by_last: np.ndarray
    first_sorted: np.ndarray
    last_sorted: np.ndarray
    rank: np.ndarray


def _attribution(variables: pd.DataFrame, remote_buffers: pd.DataFrame, *, parametered: bool = True) -> _Attributed:
    """The attributed variables (with ``parametered=False`` every not-always-live variable) with
    the role of Streaming Memory copies resolved through the remote buffers."""
    keep = variables["first_step"].notna()
    if parametered:
        keep &= variables["parameter"].astype(str) != ""
    attributed = variables[keep]
    remote_role = {(str(p), str(w)): str(r) for p, w, r in
                   zip(remote_buffers["parameter"].to_numpy(dtype=object),
                       remote_buffers["which"].astype(str).to_numpy(dtype=object),
                       remote_buffers["role"].astype(str).to_numpy(dtype=object)) if str(p)}
    parameter = attributed["parameter"].astype(str).to_numpy(dtype=object)
    role = attributed["role"].astype(str).to_numpy(dtype=object).copy()
    which = attributed["which"].astype(str).to_numpy(dtype=object)
    for k in np.flatnonzero(role == "remote_staging").tolist():
        role[k] = remote_role.get((parameter[k], which[k]), "optimizer_state" if which[k] else role[k])
    first = attributed["first_step"].to_numpy(dtype="int64")
    last = attributed["last_step"].to_numpy(dtype="int64", na_value=-1)
    by_first, by_last = np.argsort(first, kind="stable"), np.argsort(last, kind="stable")
    return _Attributed(first, last, attributed["bytes"].to_numpy(dtype="int64"), parameter, role,
                       by_first, by_last, first[by_first], last[by_last],
                       pd.Series(role, dtype=object).map(_RANK).fillna(len(_RANK)).to_numpy(dtype="int64"))


_RANK = {role: i for i, role in enumerate(ROLE_PRIORITY)}


def _charge(attribution: _Attributed, ranges: tuple[tuple[int, int], tuple[int, int]]) -> tuple[str, str, int]:
    """(parameter, role, bytes) of what a group writes (the variables whose liveness starts in
    it: ``ranges[0]``, positions in first-step order), else reads (ends in it: ``ranges[1]``, in
    last-step order); ("", "", 0) when none."""
    nbytes, parameter, role = attribution.nbytes, attribution.parameter, attribution.role
    for (lo, hi), order in zip(ranges, (attribution.by_first, attribution.by_last)):
        hit = order[lo:hi]
        if len(hit):
            best = int(hit[np.lexsort((-nbytes[hit], attribution.rank[hit]))[0]])
            same = hit[(parameter[hit] == parameter[best]) & (role[hit] == role[best])]
            return str(parameter[best]), str(role[best]), int(nbytes[same].sum())
    return "", "", 0


def bytes_source(report: Report) -> str:
    """Where the time diff's bytes moved of ``report`` come from: :data:`BYTES_RECORDED` when
    its execution table records the bytes of any device step, else :data:`BYTES_FROM_VARIABLES`."""
    execution = report.execution
    if not len(execution) or "bytes_moved" not in execution.columns:
        return BYTES_FROM_VARIABLES
    device = ~runtime_rows(execution["phase"])
    return BYTES_RECORDED if bool(execution["bytes_moved"][device].notna().any()) else BYTES_FROM_VARIABLES


def _recorded_bytes(device: pd.DataFrame, steps: pd.Index, runs: int) -> np.ndarray:
    """Bytes each step records per run (the mean over runs), NaN where none of its rows records any."""
    if "bytes_moved" not in device.columns:
        return np.full(len(steps), np.nan)
    moved = device["bytes_moved"].astype("Float64")
    per_step = moved.groupby(device["step"].to_numpy(), sort=True).sum(min_count=1)
    out: np.ndarray = (per_step.reindex(steps) / runs).to_numpy(dtype="float64", na_value=np.nan)
    return out


def report_steps(report: Report) -> pd.DataFrame:
    """One row per executed step of ``report`` (device phases), in step order: ipu (int64, the
    lowest IPU the trace draws it on, 0 without a trace), step, program, type, phase (the phase
    of most of its cycles), group (its op), kind, parameter and role (where charged, else ""),
    cycles (float64, per run: the mean over runs), exposed_cycles (float64, see the module's
    definition) and bytes_moved (float64, per run)."""
    execution = report.execution
    device = execution[~runtime_rows(execution["phase"])] if len(execution) else execution
    if not len(device):
        return pd.DataFrame({c: pd.Series(dtype=object) for c in _STEP_COLUMNS})
    runs = max(int(device["run"].nunique()), 1)
    cycles_by_phase = device.groupby(["step", "phase"], observed=True, sort=True)["cycles"].sum().reset_index()
    top_phase = cycles_by_phase.sort_values(["step", "cycles"], ascending=[True, False], kind="stable") \
        .drop_duplicates("step").set_index("step")["phase"].astype(str)
    first = device.drop_duplicates("step").set_index("step").sort_index()
    steps = pd.DataFrame({
        "step": first.index.to_numpy(dtype="int64"),
        "program": first["program"].astype(str).to_numpy(dtype=object),
        "type": first["type"].astype(str).to_numpy(dtype=object),
        "phase": top_phase.reindex(first.index).to_numpy(dtype=object),
        "cycles": (device.groupby("step", sort=True)["cycles"].sum() / runs).reindex(first.index)
        .to_numpy(dtype="float64"),
    })
    trace = shown_blocks(report)
    steps["group"] = _group_names(steps["program"], trace)
    recorded = _recorded_bytes(device, first.index, runs)

    # the trace run's intervals of each step, the IPUs its blocks are on, and the overlap
    ipu = np.zeros(len(steps), dtype="int64")
    overlapped_share = np.zeros(len(steps), dtype="float64")
    run = _trace_run(device, trace)
    if run is not None:
        in_run = device[device["run"] == run]
        spans = in_run.groupby("step", sort=True).agg(a=("cycles_from", "min"), b=("cycles_to", "max"))
        spans = spans.reindex(steps["step"].to_numpy())
        a = spans["a"].to_numpy(dtype="float64", na_value=np.nan)
        b = spans["b"].to_numpy(dtype="float64", na_value=np.nan)
        known = ~np.isnan(a) & ~np.isnan(b)
        t_from = trace["cycles_from"].to_numpy(dtype="int64")
        t_to = trace["cycles_to"].to_numpy(dtype="int64")
        t_ipu = trace["ipu"].to_numpy(dtype="int64")
        # each block to the step whose interval holds its start
        order = np.argsort(np.where(known, a, np.inf), kind="stable")
        a_sorted = np.where(known, a, np.inf)[order]
        at = np.searchsorted(a_sorted, t_from, side="right") - 1
        ok = at >= 0
        owner = np.where(ok, order[np.maximum(at, 0)], -1)
        ok &= owner >= 0
        ok[ok] &= t_from[ok] < np.where(known, b, -np.inf)[owner[ok]]
        owners, lanes_of = owner[ok], t_ipu[ok]
        low = np.full(len(steps), np.iinfo(np.int64).max, dtype="int64")
        high = np.full(len(steps), -1, dtype="int64")
        np.minimum.at(low, owners, lanes_of)
        np.maximum.at(high, owners, lanes_of)
        drawn = high >= 0
        ipu[drawn] = low[drawn]
        # the IPUs of a step drawn on several (an IpuCopy, a host copy's Begin): few, so in Python
        several = drawn & (low != high)
        lane_sets: dict[int, frozenset[int]] = {}
        if several.any():
            on_several = several[owners]
            for k, lane in zip(owners[on_several].tolist(), lanes_of[on_several].tolist()):
                lane_sets[k] = lane_sets.get(k, frozenset()) | {lane}
        compute = (trace["type"].astype(str) == "OnTileExecute").to_numpy()
        is_compute = (steps["type"] == "OnTileExecute").to_numpy() | (steps["phase"] == "compute").to_numpy()
        length = np.where(known, b - a, 0.0)
        covered = np.zeros(len(steps), dtype="float64")
        idx = np.flatnonzero(known & ~is_compute)
        covered[idx] = _covered(t_from[compute], t_to[compute], a[idx], b[idx])
        if len(set(t_ipu.tolist())) > 1:
            # a compute step: compute on the IPUs it does not run on
            by_set: dict[frozenset[int], list[int]] = {}
            for k in np.flatnonzero(known & is_compute & several).tolist():
                by_set.setdefault(lane_sets[k], []).append(k)
            single = known & is_compute & ~several
            for lane in np.unique(ipu[single]).tolist():
                by_set[frozenset({lane})] = np.flatnonzero(single & (ipu == lane)).tolist()
            for lane_set, members in by_set.items():
                others = compute & ~np.isin(t_ipu, list(lane_set))
                if others.any():
                    where = np.asarray(members, dtype="int64")
                    covered[where] = _covered(t_from[others], t_to[others], a[where], b[where])
        overlapped_share = np.divide(covered, length, out=np.zeros_like(covered), where=length > 0)
    steps.insert(0, "ipu", ipu)
    steps["exposed_cycles"] = steps["cycles"].to_numpy() * (1.0 - np.clip(overlapped_share, 0.0, 1.0))
    _charge_groups(steps, report, recorded)
    return steps[list(_STEP_COLUMNS)]


#: The kind of a step outside a moving or update group, by its phase.
_PHASE_KIND = {"compute": "compute", "exchange": "exchange", "sync": "sync", "host_io": "host transfer",
               "streaming_memory": "remote transfer", "collective": "collective"}


def _charge_groups(steps: pd.DataFrame, report: Report, recorded: np.ndarray | None = None) -> None:
    """Fill ``kind``, ``parameter``, ``role`` and ``bytes_moved`` of ``steps`` in place; a moving
    group with a step in ``recorded`` (bytes per step and run, NaN unrecorded) takes those."""
    n = len(steps)
    group = steps["group"].to_numpy(dtype=object)
    step_no = steps["step"].to_numpy(dtype="int64")
    types = steps["type"].to_numpy(dtype=object)
    phases = steps["phase"].to_numpy(dtype=object)
    cycles = steps["cycles"].to_numpy(dtype="float64")
    parameter = np.full(n, "", dtype=object)
    role = np.full(n, "", dtype=object)
    moved = np.zeros(n, dtype="float64")
    attribution = _attribution(report.variables, report.remote_buffers)
    # a transfer of no parameter's data (a host input, an activation stored off chip): its bytes
    every = _attribution(report.variables, report.remote_buffers, parametered=False)
    # update calls: every step inside the copies in/out of an optimizer graph's call
    update_span = np.full(n, -1, dtype="int64")
    call_spans = [s for s in _call_spans(group) if UPDATE_PATTERN.search(s[2])]
    for number, (lo, hi, _) in enumerate(call_spans):
        update_span[lo:hi + 1] = number
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]]) if n else np.zeros(0, dtype="int64")
    ends = np.r_[starts[1:], n]
    if not n:
        steps["kind"], steps["parameter"], steps["role"], steps["bytes_moved"] = [], [], [], []
        return
    codes, names = pd.factorize(pd.Series(group, dtype=object))
    update_name = np.asarray([bool(UPDATE_PATTERN.search(str(name))) for name in names], dtype=bool)

    def any_in_group(mask: np.ndarray) -> np.ndarray:
        return np.logical_or.reduceat(mask, starts)

    group_kind = np.select(
        [any_in_group(types == "RemoteLoad"), any_in_group(types == "RemoteStore"),
         any_in_group(phases == "collective"), any_in_group(phases == "host_io"),
         any_in_group(phases == "streaming_memory"), update_name[codes[starts]] | (update_span[starts] >= 0)],
        ["remote load", "remote store", "collective", "host transfer", "remote transfer", "update"], "")
    group_of = np.repeat(np.arange(len(starts)), ends - starts)
    own = pd.Series(phases, dtype=object).map(_PHASE_KIND).fillna("compute").to_numpy(dtype=object)
    kind = np.where(group_kind[group_of] != "", group_kind[group_of], own).astype(object)
    data_step = np.isin(types, list(DATA_STEP_TYPES))
    charged = np.flatnonzero(group_kind != "")
    # the steps each charged group spans (an update inside a call: the call's), and the
    # variables whose liveness starts / ends there, found for every group at once
    span_of = update_span[starts[charged]]
    in_call = (group_kind[charged] == "update") & (span_of >= 0)
    call_first = np.asarray([step_no[c[0]] for c in call_spans] or [0], dtype="int64")
    call_last = np.asarray([step_no[c[1]] for c in call_spans] or [0], dtype="int64")
    first_step = np.where(in_call, call_first[np.maximum(span_of, 0)], step_no[starts[charged]])
    last_step = np.where(in_call, call_last[np.maximum(span_of, 0)], step_no[ends[charged] - 1])
    written = (np.searchsorted(attribution.first_sorted, first_step, side="left"),
               np.searchsorted(attribution.first_sorted, last_step, side="right"))
    read = (np.searchsorted(attribution.last_sorted, first_step, side="left"),
            np.searchsorted(attribution.last_sorted, last_step, side="right"))

    def ranges(of: _Attributed, number: int) -> tuple[tuple[int, int], tuple[int, int]]:
        if of is attribution:
            return ((int(written[0][number]), int(written[1][number])), (int(read[0][number]), int(read[1][number])))
        start, end = int(first_step[number]), int(last_step[number])
        return ((int(np.searchsorted(of.first_sorted, start, side="left")),
                 int(np.searchsorted(of.first_sorted, end, side="right"))),
                (int(np.searchsorted(of.last_sorted, start, side="left")),
                 int(np.searchsorted(of.last_sorted, end, side="right"))))

    for number, g in enumerate(charged.tolist()):
        lo, hi = int(starts[g]), int(ends[g])
        who = _charge(attribution, ranges(attribution, number))
        parameter[lo:hi], role[lo:hi] = who[0], who[1]
        if group_kind[g] in MOVING_KINDS and recorded is not None and not np.isnan(recorded[lo:hi]).all():
            moved[lo:hi] = np.nan_to_num(recorded[lo:hi], nan=0.0)
            continue
        if group_kind[g] in MOVING_KINDS and not who[2]:
            who = ("", "", _charge(every, ranges(every, number))[2])
        if group_kind[g] in MOVING_KINDS and who[2]:
            data = lo + np.flatnonzero(data_step[lo:hi])
            if not len(data):
                data = np.asarray([lo + int(np.argmax(cycles[lo:hi]))])
            moved[data] = who[2] / len(data)
    steps["kind"], steps["parameter"], steps["role"], steps["bytes_moved"] = kind, parameter, role, moved


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
    rows = {c: np.concatenate([p[c] for p in pieces]) for c in pieces[0]}
    frame = pd.DataFrame(rows)
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
    device = execution[~runtime_rows(execution["phase"])]
    run = _trace_run(device, shown_blocks(new))
    if run is None:
        return empty
    rows = diff[diff["status"].isin(MARKED_STATUSES) & diff["new_step"].notna()]
    if limit is not None and len(rows) > limit:
        rows = rows.iloc[np.argsort(-np.abs(rows["delta_cycles"].to_numpy()), kind="stable")[:limit]]
    spans = device[device["run"] == run].groupby("step", sort=True).agg(a=("cycles_from", "min"), b=("cycles_to", "max"))
    steps = rows["new_step"].to_numpy(dtype="int64")
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
