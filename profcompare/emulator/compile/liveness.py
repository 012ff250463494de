"""Which tensors own tile memory, when they are live, and the not-always-live bytes per step.

Rules (docs/ipu-model.md "Liveness"):

- Constants are always live. popxl variables are not: the engine's WeightsFromHost program
  writes each one from the host, and it is live from that step to the end (Graph Analyser shows
  a popxl program's variables as not-always-live memory; a Poplar program whose variables are
  created with initial values shows them always-live, as the old tut4 report does).
- Tensors with storage "remote" live in Streaming Memory and take no tile memory; "stream"
  tensors are host-side.
- Views, outputs of in-place ops and zero-copy graph inputs share their root's storage
  (programs.alias_roots).
- Other tensors are live, per instance (storage row + the call path of the graph owning it),
  from the step that writes them to the last step that reads them. An op's outputs are written
  from its first step; its inputs are read up to its last step.
- Calls (PopART CallOpx): a copied graph input is written by its own copy step and lives to its
  last use in the body, or to the copy back when the call modifies it; a graph output lives
  from its producer to its copy-out step, and the caller's tensor from there on.
- Repeats (PopART LoopOp, Poplar Repeat): the body is outlined and its tensors are live within
  each iteration, so an instance is also keyed by the iteration of every enclosing repeat. A body
  intermediate lives from its write to its last read in one iteration; a loop-carried body input
  is written by the copy-in (first iteration) or by the loop-carry copy at the end of the previous
  iteration and lives to its last read; a body output lives from its producer to the loop-carry
  (or copy-out) step that reads it. A copied body input that is not loop carried is written once
  by the copy-in and read in every iteration, so it lives across the whole loop.
- A WriteUndef (the undefined placeholder of a host or remote load) makes nothing live: the
  placeholder is live from the load that writes it.
- Op temporaries (the matmul plan's operand copies and partials, see cycles.matmul_plan)
  are live only during the op's own steps that use them.

Not-always-live bytes per step are summed over instances; per tile, the peak over steps is
computed block by block with numpy (steps x tiles), never per tile in Python.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram

MEMORY_STORAGES = ("variable", "constant", "intermediate")


@dataclass(frozen=True)
class Temporary:
    """A compiler temporary of one static op, live over some of the op's steps."""

    op: str
    name: str
    nbytes: int
    offset_key: str  # tensor id whose mapping offset the temporary follows
    first: str  # role of the op's step where it becomes live (programs.templates roles)
    last: str  # role of the op's last step where it is live
    interleaved: bool


@dataclass(frozen=True)
class Instances:
    """Live intervals of not-always-live storage in executed program steps."""

    row: np.ndarray  # index into the storage rows (tensors, then temporaries)
    first: np.ndarray  # first live executed step
    last: np.ndarray  # last live executed step (inclusive)
    path: tuple[tuple[str, ...], ...] = ()  # call path of each instance (Call op ids, outermost first)


def _owner_paths(program: LoweredProgram) -> tuple[dict[str, str], dict[str, str]]:
    """(tensor id -> owning graph id, Call op id -> called graph id)."""
    owner = {tid: info.graph for tid, info in program.tensors.items()}
    called = {op.id: str(op.attrs.get("called_graph")) for op in program.ops.values() if op.type == "Call"}
    return owner, called


def _repeats(program: LoweredProgram) -> tuple[dict[str, dict[str, str]], set[str]]:
    """({repeat op id: {body output id: body input id}} of the loop-carried pairs, the ids of the
    body inputs that are not loop carried and so hold the same value in every iteration)."""
    carried: dict[str, dict[str, str]] = {}
    invariant: set[str] = set()
    for op in program.ops.values():
        if op.type == "Call" and op.attrs.get("program") == "Repeat":
            pairs = {str(o): str(i) for o, i in (op.attrs.get("loop_carried") or ())}
            carried[op.id] = pairs
            inputs = set(pairs.values())
            invariant.update(str(g) for g in (op.attrs.get("inputs") or {}) if str(g) not in inputs)
    return carried, invariant


def instances(program: LoweredProgram, steps: ProgramSteps, row_of: Mapping[str, int],
              temp_rows: Mapping[str, Sequence[tuple[int, Temporary]]]) -> Instances:
    """Live intervals of every not-always-live instance and temporary: WeightsFromHost, then one run.

    ``row_of`` maps storage root tensor ids (variables and intermediates) to storage rows;
    ``temp_rows`` maps op id to its (row, Temporary) pairs. An instance is a storage row at one
    call path: the path of the graph that owns the row's root tensor, so a zero-copy graph input
    (an alias of its caller's tensor) extends the caller's instance instead of making its own.
    Returns :class:`Instances` (arrays of equal length).
    """
    root = steps.alias_root
    owner, called = _owner_paths(program)
    carried, invariant = _repeats(program)
    iteration: dict[str, int] = {}  # current iteration of each repeat op
    main = program.main_graph
    Key = tuple[int, tuple[str, ...], tuple[int, ...]]  # row, call path, iteration of each repeat on it
    first: dict[Key, int] = {}
    last: dict[Key, int] = {}
    rows_t: list[int] = []
    first_t: list[int] = []
    last_t: list[int] = []
    path_t: list[tuple[str, ...]] = []

    def owner_path(graph: str, path: tuple[str, ...]) -> tuple[str, ...]:
        if graph == main:
            return ()
        for k in range(len(path) - 1, -1, -1):
            if called.get(path[k]) == graph:
                return path[:k + 1]
        return path

    def iterations(path: tuple[str, ...], rid: str) -> tuple[int, ...]:
        # a body input that is not loop carried is one instance for the whole loop (-1)
        its = [iteration.get(c, 0) if c in carried else 0 for c in path]
        if path and path[-1] in carried and rid in invariant:
            its[-1] = -1
        return tuple(its)

    def touch(tid: str, path: tuple[str, ...], step: int) -> None:
        rid = root.get(tid, tid)
        r = row_of.get(rid)
        if r is None:
            return
        opath = owner_path(owner.get(rid, main), path)
        key = (r, opath, iterations(opath, rid))
        if key in first:
            first[key] = min(first[key], step)
            last[key] = max(last[key], step)
        else:
            first[key] = step
            last[key] = step

    # variables are written from the host by WeightsFromHost and stay live to the end
    end_of_all = steps.num_executed - 1
    for tid, at in steps.written_at.items():
        touch(tid, (), at)
        touch(tid, (), end_of_all)
    static = steps.static
    for entry, (s, t) in zip(program.schedule, steps.exec_ranges):
        if t == s:
            continue
        op = program.ops[entry.op]
        path = tuple(entry.call_path)
        cls = steps.op_class.get(op.id)
        if cls == "call":
            inner = path + (op.id,)
            g_inputs = dict(op.attrs.get("inputs", {}))
            g_outputs = dict(op.attrs.get("outputs", {}))
            if op.id in carried and entry.phase == "enter":
                iteration[op.id] = 0
            if op.id in carried and entry.phase == "iterate":
                # LoopOpx copies each body output (this iteration's) to its body input (the next one's)
                pairs = carried[op.id]
                copied = [str(static[int(steps.exec_static[k])].tensor) for k in range(s, t)]
                for k, g_out in zip(range(s, t), copied):
                    touch(g_out, inner, k)
                iteration[op.id] = iteration.get(op.id, 0) + 1
                for k, g_out in zip(range(s, t), copied):
                    touch(pairs.get(g_out, ""), inner, k)
                continue
            for k in range(s, t):
                st = static[int(steps.exec_static[k])]
                if st.role == "copy_in":
                    touch(g_inputs.get(st.tensor, ""), path, k)
                    touch(st.tensor, inner, k)
                elif st.role == "copy_out":
                    parent = g_outputs.get(st.tensor, g_inputs.get(st.tensor, ""))
                    touch(st.tensor, inner, k)
                    touch(parent, path, k)
            continue
        if cls == "write_undef":
            continue  # marks the placeholder dead; it becomes live when the load writes it
        end = t - 1
        for tid in op.outputs:
            touch(tid, path, s)
            touch(tid, path, end)
        for tid in op.inputs:
            touch(tid, path, end)
        for tid in op.modified:
            touch(tid, path, end)
        temps = temp_rows.get(op.id, ())
        if temps:
            roles = [static[int(steps.exec_static[k])].role for k in range(s, t)]
            for row, temp in temps:
                lo = roles.index(temp.first) if temp.first in roles else 0
                hi = roles.index(temp.last) if temp.last in roles else len(roles) - 1
                rows_t.append(row)
                first_t.append(s + lo)
                last_t.append(s + max(lo, hi))
                path_t.append(path)
    keys = list(first)
    rows = np.fromiter((k[0] for k in keys), dtype=np.int64, count=len(keys))
    f = np.fromiter((first[k] for k in keys), dtype=np.int64, count=len(keys))
    la = np.fromiter((last[k] for k in keys), dtype=np.int64, count=len(keys))
    return Instances(
        row=np.concatenate([rows, np.asarray(rows_t, dtype=np.int64)]),
        first=np.concatenate([f, np.asarray(first_t, dtype=np.int64)]),
        last=np.concatenate([la, np.asarray(last_t, dtype=np.int64)]),
        path=tuple(k[1] for k in keys) + tuple(path_t),
    )


def step_totals(inst: Instances, row_bytes: np.ndarray, num_steps: int) -> np.ndarray:
    """Not-always-live bytes per executed step, summed over tiles (int64 array, one per step)."""
    diff = np.zeros(num_steps + 1, dtype=np.int64)
    if len(inst.row):
        b = row_bytes[inst.row]
        np.add.at(diff, inst.first, b)
        np.add.at(diff, inst.last + 1, -b)
    return np.cumsum(diff)[:num_steps]


def _add_events(diff: np.ndarray, steps_rel: np.ndarray, rows: np.ndarray, signs: np.ndarray,
                tile_bytes32: np.ndarray) -> None:
    """diff[step] += sign * tile_bytes[row] for every event; events are sorted by step."""
    for sign in (1, -1):
        sel = signs == sign
        if not sel.any():
            continue
        s = steps_rel[sel]
        uniq, starts = np.unique(s, return_index=True)
        sums = np.add.reduceat(tile_bytes32[rows[sel]], starts, axis=0, dtype=np.int64)
        if sign > 0:
            diff[uniq] += sums
        else:
            diff[uniq] -= sums


def tile_peaks(inst: Instances, tile_bytes: np.ndarray, interleaved: np.ndarray, num_steps: int,
               block: int = 1024) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-tile peaks over steps of not-always-live bytes.

    ``tile_bytes`` is the (rows, tiles) storage matrix and ``interleaved`` a bool per row.
    Returns three int64 arrays of length tiles: the peak of all not-always-live bytes, the peak
    of those in the interleaved class and the peak of the rest (each peak taken separately).
    """
    num_tiles = tile_bytes.shape[1]
    peak_all = np.zeros(num_tiles, dtype=np.int64)
    peak_il = np.zeros(num_tiles, dtype=np.int64)
    peak_flex = np.zeros(num_tiles, dtype=np.int64)
    if not len(inst.row) or num_steps == 0:
        return peak_all, peak_il, peak_flex
    ev_step = np.concatenate([inst.first, inst.last + 1])
    ev_row = np.concatenate([inst.row, inst.row])
    ev_sign = np.concatenate([np.ones(len(inst.row), np.int64), -np.ones(len(inst.row), np.int64)])
    keep = ev_step < num_steps
    ev_step, ev_row, ev_sign = ev_step[keep], ev_row[keep], ev_sign[keep]
    order = np.argsort(ev_step, kind="stable")
    ev_step, ev_row, ev_sign = ev_step[order], ev_row[order], ev_sign[order]
    # The running totals change only at steps where an event happens, so their peaks are the
    # peaks over those steps alone: number them densely (most steps start or end nothing).
    # Steps before the first event hold zero, which the peaks start from.
    event_steps, ev_step = np.unique(ev_step, return_inverse=True)
    ev_step = ev_step.reshape(-1).astype(np.int64)
    num_steps = len(event_steps)
    ev_il = interleaved[ev_row]
    # per-tile bytes of one tensor always fit in 32 bits; gathering them halves memory traffic
    tb32 = tile_bytes.astype(np.int32) if tile_bytes.max(initial=0) < 2**31 else tile_bytes
    carry_il = np.zeros(num_tiles, dtype=np.int64)
    carry_flex = np.zeros(num_tiles, dtype=np.int64)
    bounds = np.searchsorted(ev_step, np.arange(0, num_steps + block, block))
    for bi, b0 in enumerate(range(0, num_steps, block)):
        b1 = min(num_steps, b0 + block)
        lo, hi = bounds[bi], bounds[bi + 1]
        if lo == hi:
            # no event in this block: the running totals stay as they are
            peak_il = np.maximum(peak_il, carry_il)
            peak_flex = np.maximum(peak_flex, carry_flex)
            peak_all = np.maximum(peak_all, carry_il + carry_flex)
            continue
        d_il = np.zeros((b1 - b0, num_tiles), dtype=np.int64)
        d_flex = np.zeros((b1 - b0, num_tiles), dtype=np.int64)
        s = ev_step[lo:hi] - b0
        r = ev_row[lo:hi]
        g = ev_sign[lo:hi]
        m = ev_il[lo:hi]
        _add_events(d_il, s[m], r[m], g[m], tb32)
        _add_events(d_flex, s[~m], r[~m], g[~m], tb32)
        c_il = np.cumsum(d_il, axis=0)
        c_il += carry_il
        c_flex = np.cumsum(d_flex, axis=0)
        c_flex += carry_flex
        peak_il = np.maximum(peak_il, c_il.max(axis=0))
        peak_flex = np.maximum(peak_flex, c_flex.max(axis=0))
        peak_all = np.maximum(peak_all, (c_il + c_flex).max(axis=0))
        carry_il = c_il[-1]
        carry_flex = c_flex[-1]
    return peak_all, peak_il, peak_flex
