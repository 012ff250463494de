"""One report's executed steps, each charged to what it does: the (parameter, role) whose data
it moves, else a named kind; its exposed cycles and the bytes it moves. The time diff
(:mod:`profcompare.comparison.time_diff`) aligns two reports' steps; the memory ledger's code
table (:mod:`profcompare.analysis.ledger_code`) sums one report's bytes moved per (parameter,
role). The rules (attribution, exposed and overlapped, bytes moved) are the time diff's module
docstring's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from profcompare.analysis.trace import choose_run, run_blocks
from profcompare.model import Report, runtime_rows
from profcompare.perf.memo import kept_copy

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

_STEP_COLUMNS = ("ipu", "step", "program", "type", "phase", "group", "kind", "parameter", "role",
                 "cycles", "exposed_cycles", "bytes_moved")



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
    definition) and bytes_moved (float64, per run).

    Worked out once per report and kept on it (the time diff, the ledger's code table and the
    JSON export all ask; a copy is returned each time)."""
    return kept_copy(report, "_memo_report_steps", lambda: _report_steps(report))


def _report_steps(report: Report) -> pd.DataFrame:
    """:func:`report_steps`, computed."""
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

    # per group: whether a step records its bytes (whole-column work, not a test per group)
    recorded_in = (np.logical_or.reduceat(~np.isnan(recorded), starts) if recorded is not None
                   else np.zeros(len(starts), dtype=bool))
    recorded_bytes = np.nan_to_num(recorded, nan=0.0) if recorded is not None else moved
    for number, g in enumerate(charged.tolist()):
        lo, hi = int(starts[g]), int(ends[g])
        who = _charge(attribution, ranges(attribution, number))
        parameter[lo:hi], role[lo:hi] = who[0], who[1]
        if group_kind[g] in MOVING_KINDS and recorded_in[g]:
            moved[lo:hi] = recorded_bytes[lo:hi]
            continue
        if group_kind[g] in MOVING_KINDS and not who[2]:
            who = ("", "", _charge(every, ranges(every, number))[2])
        if group_kind[g] in MOVING_KINDS and who[2]:
            data = lo + np.flatnonzero(data_step[lo:hi])
            if not len(data):
                data = np.asarray([lo + int(np.argmax(cycles[lo:hi]))])
            moved[data] = who[2] / len(data)
    steps["kind"], steps["parameter"], steps["role"], steps["bytes_moved"] = kind, parameter, role, moved


