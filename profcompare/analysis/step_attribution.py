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
from profcompare.model import Report, runtime_rows, text_codes
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


def _run_holding(run: np.ndarray, cycles_from: np.ndarray, cycles_to: np.ndarray, start: int) -> int | None:
    """The first run (in run order) whose rows' intervals (``cycles_from`` to ``cycles_to``, NaN
    unknown) span ``start``; None when none does or no interval is known."""
    if np.isnan(cycles_from).all():
        return None
    for number in sorted(int(r) for r in pd.unique(run)):
        mine = run == number
        a, b = cycles_from[mine], cycles_to[mine]
        if np.isnan(a).all() or np.isnan(b).all():
            continue
        if np.nanmin(a) <= start < np.nanmax(b):
            return number
    return None


def _group_names(program: pd.Series, trace: pd.DataFrame) -> np.ndarray:
    """The op group of each step: the trace's parent of its program, else its name up to the
    first ``/`` (the whole name when none). Worked out once per distinct program name."""
    codes, names = pd.factorize(program.astype(str).to_numpy(dtype=object))
    groups = _groups_of(list(names), trace)
    return groups[codes] if len(codes) else np.zeros(0, dtype=object)


def _groups_of(names: list[str], trace: pd.DataFrame) -> np.ndarray:
    """The op group of each program name of ``names`` (:func:`_group_names`)."""
    parents = np.full(len(names), "", dtype=object)
    if len(trace):
        # the parent of each name's first block: the trace's names as codes, no row loop
        trace_codes, trace_names = text_codes(trace["program"])
        present, first_row = np.unique(trace_codes, return_index=True)
        del trace_codes
        first_of: dict[str, int] = {}
        for code, row in zip(present.tolist(), first_row.tolist()):
            name = trace_names[code]
            first_of[name] = min(row, first_of.get(name, row))
        parent = trace["parent"]
        parents[:] = [str(parent.iloc[first_of[name]]) if name in first_of else "" for name in names]
    return np.asarray([parent or str(name).split("/", 1)[0] for name, parent in zip(names, parents.tolist())],
                      dtype=object)


def _call_spans(group: np.ndarray, factorized: tuple[np.ndarray, np.ndarray] | None = None
                ) -> list[tuple[int, int, str]]:
    """(first, last) row positions of each call instance: a run of a ``--call--X`` group's rows
    (its copies in) up to the end of the next run of the same group (its copies out).
    ``factorized``: the groups as ``pd.factorize`` gives them, when the caller has them."""
    spans: list[tuple[int, int, str]] = []
    open_at: dict[str, int] = {}
    n = len(group)
    if not n:
        return spans
    codes, names = pd.factorize(group) if factorized is None else factorized
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], n] - 1
    call = np.asarray([str(name).startswith("--call--") for name in names], dtype=bool)[codes[starts]]
    for lo, hi in zip(starts[call].tolist(), ends[call].tolist()):
        name = str(group[lo])
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
    param_code: np.ndarray
    role_code: np.ndarray


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
                       pd.Series(role, dtype=object).map(_RANK).fillna(len(_RANK)).to_numpy(dtype="int64"),
                       pd.factorize(parameter)[0], pd.factorize(role)[0])


_RANK = {role: i for i, role in enumerate(ROLE_PRIORITY)}


def _charge_all(attribution: _Attributed, first_step: np.ndarray, last_step: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per range [first_step, last_step] of steps: (parameter, role, bytes) of what it writes (the
    variables whose liveness starts in it), else reads (ends in it); ("", "", 0) when none. Among
    them the first by role priority, then bytes (largest first), then liveness order; its bytes
    are those of every variable there of the same (parameter, role). All ranges at once."""
    n = len(first_step)
    parameter = np.full(n, "", dtype=object)
    role = np.full(n, "", dtype=object)
    nbytes = np.zeros(n, dtype="int64")
    todo = np.ones(n, dtype=bool)
    keys = (attribution.param_code, attribution.role_code, attribution.nbytes, attribution.rank)
    for order, sorted_steps in ((attribution.by_first, attribution.first_sorted),
                                (attribution.by_last, attribution.last_sorted)):
        lo = np.searchsorted(sorted_steps, first_step, side="left")
        hi = np.searchsorted(sorted_steps, last_step, side="right")
        count = np.where(todo, np.maximum(hi - lo, 0), 0)
        ranges = np.flatnonzero(count)
        if not len(ranges):
            continue
        # every (range, variable) pair: positions into ``order``, the range of each
        counts = count[ranges]
        segment = np.repeat(np.arange(len(ranges)), counts)
        seg_start = np.r_[0, np.cumsum(counts)[:-1]]
        position = lo[ranges][segment] + (np.arange(len(segment)) - seg_start[segment])
        hit = order[position]
        code, role_code, size, rank = (k[hit] for k in keys)
        pick = np.lexsort((position, -size, rank, segment))
        best = pick[seg_start]
        same = (code == code[best][segment]) & (role_code == role_code[best][segment])
        sums = np.add.reduceat(np.where(same, size, 0), seg_start)
        parameter[ranges] = attribution.parameter[hit[best]]
        role[ranges] = attribution.role[hit[best]]
        nbytes[ranges] = sums
        todo[ranges] = False
    return parameter, role, nbytes


def bytes_source(report: Report) -> str:
    """Where the time diff's bytes moved of ``report`` come from: :data:`BYTES_RECORDED` when
    its execution table records the bytes of any device step, else :data:`BYTES_FROM_VARIABLES`."""
    execution = report.execution
    if not len(execution) or "bytes_moved" not in execution.columns:
        return BYTES_FROM_VARIABLES
    device = ~runtime_rows(execution["phase"])
    return BYTES_RECORDED if bool(execution["bytes_moved"][device].notna().any()) else BYTES_FROM_VARIABLES


def _recorded_bytes(execution: pd.DataFrame, rows: np.ndarray, step_of: np.ndarray, n: int, runs: int) -> np.ndarray:
    """Bytes each of the ``n`` steps records per run (the mean over runs), NaN where none of its
    rows records any; ``rows`` are the device rows' positions, ``step_of`` their step codes."""
    if "bytes_moved" not in execution.columns:
        return np.full(n, np.nan)
    moved = execution["bytes_moved"].to_numpy(dtype="float64", na_value=np.nan)[rows]
    known = ~np.isnan(moved)
    total = np.bincount(step_of[known], weights=moved[known], minlength=n)
    out: np.ndarray = np.where(np.bincount(step_of[known], minlength=n) > 0, total / runs, np.nan)
    return out


def _top_phase(phase: pd.Series, rows: np.ndarray, step_of: np.ndarray, cycles: np.ndarray, n: int) -> np.ndarray:
    """The phase of most of each step's cycles (of equals, the first in the column's order: a
    categorical's categories, else sorted), from the device ``rows`` with step codes ``step_of``."""
    codes, names = text_codes(phase)
    order = (np.arange(len(names)) if isinstance(phase.dtype, pd.CategoricalDtype)
             else np.argsort(np.argsort(np.asarray(names, dtype=object), kind="stable"), kind="stable"))
    by_order = np.empty(len(names), dtype=object)
    by_order[order] = names
    rank = order[codes[rows]]
    del codes
    # one phase at a time, in order: a later phase takes a step only with more cycles (a table of
    # steps x phases would be hundreds of MB for millions of steps)
    best = np.full(n, -np.inf)
    top = np.zeros(n, dtype="int64")
    for number in np.unique(rank).tolist():
        mine = rank == number
        of = step_of[mine]
        sums = np.bincount(of, weights=cycles[mine], minlength=n)
        better = (np.bincount(of, minlength=n) > 0) & (sums > best)
        best[better] = sums[better]
        top[better] = number
    chosen: np.ndarray = by_order[top]
    return chosen


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
    keep = ~runtime_rows(execution["phase"]) if len(execution) else np.zeros(0, dtype=bool)
    if not keep.any():
        return pd.DataFrame({c: pd.Series(dtype=object) for c in _STEP_COLUMNS})
    # the device rows by position (no copy of the table), each row's step as a code
    rows = np.flatnonzero(keep)
    del keep
    step_no, first_row, step_of = np.unique(execution["step"].to_numpy(dtype="int64")[rows],
                                            return_index=True, return_inverse=True)
    n = len(step_no)
    run_of = execution["run"].to_numpy(dtype="int64")[rows]
    runs = max(len(pd.unique(run_of)), 1)
    row_cycles = execution["cycles"].to_numpy(dtype="float64")[rows]
    first = rows[first_row]
    del first_row
    # text as codes into the distinct names: one string object per name, not per step
    program_codes, program_names = text_codes(execution["program"].iloc[first])
    type_codes, type_names = text_codes(execution["type"].iloc[first])
    steps = pd.DataFrame({
        "step": step_no.astype("int64"),
        "program": np.asarray(program_names, dtype=object)[program_codes],
        "type": np.asarray(type_names, dtype=object)[type_codes],
        "phase": _top_phase(execution["phase"], rows, step_of, row_cycles, n),
        "cycles": np.bincount(step_of, weights=row_cycles, minlength=n) / runs,
    })
    del row_cycles
    recorded = _recorded_bytes(execution, rows, step_of, n, runs)
    trace = shown_blocks(report)
    group_of_name = _groups_of(program_names, trace)
    # the groups as codes in order of first appearance (what _charge_groups needs)
    group_id, unique_groups = pd.factorize(group_of_name)
    group_codes, firsts = pd.factorize(group_id[program_codes])
    groups = (group_codes, np.asarray(unique_groups, dtype=object)[firsts])
    steps["group"] = group_of_name[program_codes]

    # the trace run's intervals of each step, the IPUs its blocks are on, and the overlap
    run = None
    cycles_from = execution["cycles_from"].to_numpy(dtype="float64", na_value=np.nan)[rows]
    cycles_to = execution["cycles_to"].to_numpy(dtype="float64", na_value=np.nan)[rows]
    if len(trace):
        run = _run_holding(run_of, cycles_from, cycles_to, int(trace["cycles_from"].min()))
    if run is not None:
        in_run = run_of == run
        a = np.full(n, np.nan)
        b = np.full(n, np.nan)
        np.fmin.at(a, step_of[in_run], cycles_from[in_run])
        np.fmax.at(b, step_of[in_run], cycles_to[in_run])
        del in_run
    del cycles_from, cycles_to, run_of, step_of, rows
    ipu, overlapped_share = (_trace_overlap(trace, steps, a, b) if run is not None
                             else (np.zeros(n, dtype="int64"), np.zeros(n, dtype="float64")))
    if run is not None:
        del a, b
    steps.insert(0, "ipu", ipu)
    steps["exposed_cycles"] = steps["cycles"].to_numpy() * (1.0 - np.clip(overlapped_share, 0.0, 1.0))
    _charge_groups(steps, report, recorded, groups)
    return steps[list(_STEP_COLUMNS)]


def _trace_overlap(trace: pd.DataFrame, steps: pd.DataFrame, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the lowest IPU the trace draws each step on, 0 when none; the share of each step's
    interval [a, b) (NaN unknown) that compute elsewhere overlaps). A function of its own: its
    arrays of a step or a block each go when it returns."""
    ipu = np.zeros(len(steps), dtype="int64")
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
    del order, a_sorted, at, ok, owner
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
    type_codes, type_names = text_codes(trace["type"])
    compute = (np.asarray(type_names, dtype=object) == "OnTileExecute")[type_codes]
    is_compute = (steps["type"] == "OnTileExecute").to_numpy() | (steps["phase"] == "compute").to_numpy()
    length = np.where(known, b - a, 0.0)
    covered = np.zeros(len(steps), dtype="float64")
    idx = np.flatnonzero(known & ~is_compute)
    covered[idx] = _covered(t_from[compute], t_to[compute], a[idx], b[idx])
    if len(t_ipu) and t_ipu.min() != t_ipu.max():
        # a compute step: compute on the IPUs it does not run on
        by_set: dict[frozenset[int], list[int]] = {}
        for k in np.flatnonzero(known & is_compute & several).tolist():
            by_set.setdefault(lane_sets[k], []).append(k)
        members_of = {lanes: np.asarray(members, dtype="int64") for lanes, members in by_set.items()}
        single = known & is_compute & ~several
        for lane in np.unique(ipu[single]).tolist():
            members_of[frozenset({lane})] = np.flatnonzero(single & (ipu == lane))
        for lane_set, where in members_of.items():
            others = compute & ~np.isin(t_ipu, list(lane_set))
            if others.any():
                covered[where] = _covered(t_from[others], t_to[others], a[where], b[where])
    overlapped_share = np.divide(covered, length, out=np.zeros_like(covered), where=length > 0)
    return ipu, overlapped_share


#: The kind of a step outside a moving or update group, by its phase.
_PHASE_KIND = {"compute": "compute", "exchange": "exchange", "sync": "sync", "host_io": "host transfer",
               "streaming_memory": "remote transfer", "collective": "collective"}


def _charge_groups(steps: pd.DataFrame, report: Report, recorded: np.ndarray | None = None,
                   groups: tuple[np.ndarray, np.ndarray] | None = None) -> None:
    """Fill ``kind``, ``parameter``, ``role`` and ``bytes_moved`` of ``steps`` in place; a moving
    group with a step in ``recorded`` (bytes per step and run, NaN unrecorded) takes those.
    ``groups``: the ``group`` column as ``pd.factorize`` gives it, when the caller has it."""
    n = len(steps)
    group = steps["group"].to_numpy(dtype=object)
    step_no = steps["step"].to_numpy(dtype="int64")
    # names as codes, each distinct name tested once (no string comparison per step)
    codes, names = pd.factorize(group) if groups is None else groups
    type_codes, type_names = pd.factorize(steps["type"].to_numpy(dtype=object))
    phase_codes, phase_names = pd.factorize(steps["phase"].to_numpy(dtype=object))
    type_names, phase_names = np.asarray(type_names, dtype=object), np.asarray(phase_names, dtype=object)
    cycles = steps["cycles"].to_numpy(dtype="float64")
    parameter = np.full(n, "", dtype=object)
    role = np.full(n, "", dtype=object)
    moved = np.zeros(n, dtype="float64")
    attribution = _attribution(report.variables, report.remote_buffers)
    # update calls: every step inside the copies in/out of an optimizer graph's call
    update_span = np.full(n, -1, dtype="int64")
    call_spans = [s for s in _call_spans(group, (codes, names)) if UPDATE_PATTERN.search(s[2])]
    for number, (lo, hi, _) in enumerate(call_spans):
        update_span[lo:hi + 1] = number
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]) if n else np.zeros(0, dtype="int64")
    ends = np.r_[starts[1:], n]
    if not n:
        steps["kind"], steps["parameter"], steps["role"], steps["bytes_moved"] = [], [], [], []
        return
    update_name = np.asarray([bool(UPDATE_PATTERN.search(str(name))) for name in names], dtype=bool)

    def any_in_group(mask: np.ndarray) -> np.ndarray:
        return np.logical_or.reduceat(mask, starts)

    def is_type(name: str) -> np.ndarray:
        hit: np.ndarray = (type_names == name)[type_codes]
        return hit

    def in_phase(name: str) -> np.ndarray:
        hit: np.ndarray = (phase_names == name)[phase_codes]
        return hit

    group_kind = np.select(
        [any_in_group(is_type("RemoteLoad")), any_in_group(is_type("RemoteStore")),
         any_in_group(in_phase("collective")), any_in_group(in_phase("host_io")),
         any_in_group(in_phase("streaming_memory")), update_name[codes[starts]] | (update_span[starts] >= 0)],
        ["remote load", "remote store", "collective", "host transfer", "remote transfer", "update"], "")
    group_of = np.repeat(np.arange(len(starts)), ends - starts)
    own = np.asarray([_PHASE_KIND.get(str(p), "compute") for p in phase_names], dtype=object)[phase_codes]
    kind = np.where((group_kind != "")[group_of], group_kind.astype(object)[group_of], own)
    data_step = np.isin(type_names, list(DATA_STEP_TYPES))[type_codes]
    charged = np.flatnonzero(group_kind != "")
    # the steps each charged group spans (an update inside a call: the call's), and the
    # variables whose liveness starts / ends there, found for every group at once
    span_of = update_span[starts[charged]]
    in_call = (group_kind[charged] == "update") & (span_of >= 0)
    call_first = np.asarray([step_no[c[0]] for c in call_spans] or [0], dtype="int64")
    call_last = np.asarray([step_no[c[1]] for c in call_spans] or [0], dtype="int64")
    first_step = np.where(in_call, call_first[np.maximum(span_of, 0)], step_no[starts[charged]])
    last_step = np.where(in_call, call_last[np.maximum(span_of, 0)], step_no[ends[charged] - 1])
    who_parameter, who_role, who_bytes = _charge_all(attribution, first_step, last_step)
    group_of_charged = np.full(len(starts), -1, dtype="int64")
    group_of_charged[charged] = np.arange(len(charged))
    number_of = group_of_charged[group_of]
    in_charged = number_of >= 0
    parameter[in_charged] = who_parameter[number_of[in_charged]]
    role[in_charged] = who_role[number_of[in_charged]]
    # bytes moved: a moving group's recorded bytes where a step records them, else the bytes of
    # what it moves (of no parameter: any variable's) spread over its data steps (else over its
    # longest step)
    recorded_in = (np.logical_or.reduceat(~np.isnan(recorded), starts) if recorded is not None
                   else np.zeros(len(starts), dtype=bool))
    moving = np.isin(group_kind[charged], list(MOVING_KINDS))
    take_recorded = moving & recorded_in[charged]
    if recorded is not None:
        from_record = np.isin(number_of, np.flatnonzero(take_recorded))
        moved[from_record] = np.nan_to_num(recorded, nan=0.0)[from_record]
    spread = moving & ~take_recorded
    fallback = np.flatnonzero(spread & (who_bytes == 0))
    if len(fallback):
        # a transfer of no parameter's data (a host input, an activation stored off chip): its bytes
        every = _attribution(report.variables, report.remote_buffers, parametered=False)
        who_bytes[fallback] = _charge_all(every, first_step[fallback], last_step[fallback])[2]
    spread &= who_bytes != 0
    if spread.any():
        data_count = np.add.reduceat(data_step.astype("int64"), starts)[charged]
        spread_step = spread[np.maximum(number_of, 0)] & in_charged
        with_data = spread_step & data_step & (data_count[np.maximum(number_of, 0)] > 0)
        moved[with_data] = who_bytes[number_of[with_data]] / data_count[number_of[with_data]]
        # a group with no data step: its longest step (the first of equals)
        no_data = np.flatnonzero(spread & (data_count == 0))
        if len(no_data):
            rows = np.flatnonzero(np.isin(number_of, no_data))
            pick = np.lexsort((rows, -cycles[rows], number_of[rows]))
            firsts = pick[np.r_[True, np.diff(number_of[rows][pick]) != 0]]
            longest = rows[firsts]
            moved[longest] = who_bytes[number_of[longest]] / 1.0
    steps["kind"], steps["parameter"], steps["role"], steps["bytes_moved"] = kind, parameter, role, moved


