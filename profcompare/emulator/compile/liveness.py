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
taken over the distinct live sets that can hold a peak (``tile_peaks``), never steps x tiles.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.compile.tile_bytes import TileBytes
from profcompare.emulator.program import LoweredProgram

MEMORY_STORAGES = ("variable", "constant", "intermediate")
#: seed of the class weights fingerprinting live sets (tile_peaks_and_span): fixed, so that a
#: program's figures are the same at every compile
_FINGERPRINT_SEED = 0x5EED


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


#: a (tensor, call path) whose instance :func:`instances` has not looked up yet
_UNRESOLVED: Any = object()


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
    epoch = [0]  # counts the changes of ``iteration``
    main = program.main_graph
    Key = tuple[int, tuple[str, ...], tuple[int, ...]]  # row, call path, iteration of each repeat on it
    rows_t: list[int] = []
    first_t: list[int] = []
    last_t: list[int] = []
    path_t: list[tuple[str, ...]] = []

    owner_paths: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}
    no_repeat: dict[tuple[str, ...], tuple[int, ...] | None] = {}  # path -> zeros when no repeat is on it

    def owner_path(graph: str, path: tuple[str, ...]) -> tuple[str, ...]:
        hit = owner_paths.get((graph, path))
        if hit is not None:
            return hit
        found = path
        if graph == main:
            found = ()
        else:
            for k in range(len(path) - 1, -1, -1):
                if called.get(path[k]) == graph:
                    found = path[:k + 1]
                    break
        owner_paths[(graph, path)] = found
        return found

    def iterations(path: tuple[str, ...], rid: str) -> tuple[int, ...]:
        if path not in no_repeat:
            no_repeat[path] = None if any(c in carried for c in path) else (0,) * len(path)
        zeros = no_repeat[path]
        if zeros is not None:
            return zeros
        # a body input that is not loop carried is one instance for the whole loop (-1)
        its = [iteration.get(c, 0) if c in carried else 0 for c in path]
        if path and path[-1] in carried and rid in invariant:
            its[-1] = -1
        return tuple(its)

    # per call path, tensor -> None when it has no row; the number of its instance key (an index
    # into ``keys``) on a path without a repeat; else [row, owner path, the repeat of each call on
    # the path or None, whether the last repeat's body holds it for the whole loop, the epoch and
    # key number last found]: the key then depends on the iterations at the time, which change
    # only when an epoch ends (a repeat is entered or iterates). Keyed by path first: a path is
    # hashed once per schedule entry, not once per tensor touched.
    resolved_by_path: dict[tuple[str, ...], dict[str, Any]] = {}
    key_number: dict[Key, int] = {}
    keys: list[Key] = []
    # every touch: (key number, executed step); first / last per key are reduced at the end
    touched_key: list[int] = []
    touched_step: list[int] = []

    def number(key: Key) -> int:
        found = key_number.get(key)
        if found is None:
            found = key_number[key] = len(keys)
            keys.append(key)
        return found

    def resolve(tid: str, path: tuple[str, ...], resolved: dict[str, Any]) -> Any:
        rid = root.get(tid, tid)
        r = row_of.get(rid)
        if r is None:
            resolved[tid] = None
            return None
        opath = owner_path(owner.get(rid, main), path)
        its = iterations(opath, rid)
        if no_repeat[opath] is not None:
            hit: Any = number((r, opath, its))
        else:
            loops = tuple(c if c in carried else None for c in opath)
            hit = [r, opath, loops, bool(opath and opath[-1] in carried and rid in invariant), -1, -1]
        resolved[tid] = hit
        return hit

    def key_of(tid: str, path: tuple[str, ...], resolved: dict[str, Any]) -> int:
        """The key number of the instance ``tid`` touched under ``path`` is now (-1: no row)."""
        hit = resolved.get(tid, _UNRESOLVED)
        if hit is _UNRESOLVED:
            hit = resolve(tid, path, resolved)
        if hit is None:
            return -1
        if hit.__class__ is int:
            return hit
        if hit[4] == epoch[0]:
            return hit[5]
        its = tuple([iteration.get(c, 0) if c is not None else 0 for c in hit[2]])
        if hit[3]:
            its = its[:-1] + (-1,)
        hit[4], hit[5] = epoch[0], number((hit[0], hit[1], its))
        return hit[5]

    def touch(tid: str, path: tuple[str, ...], step: int) -> None:
        resolved = resolved_by_path.get(path)
        if resolved is None:
            resolved = resolved_by_path[path] = {}
        k = key_of(tid, path, resolved)
        if k >= 0:
            touched_key.append(k)
            touched_step.append(step)

    # variables are written from the host by WeightsFromHost and stay live to the end
    end_of_all = steps.num_executed - 1
    for tid, at in steps.written_at.items():
        touch(tid, (), at)
        touch(tid, (), end_of_all)
    static = steps.static
    for entry, s, t in zip(program.schedule, steps.exec_ranges[:, 0].tolist(), steps.exec_ranges[:, 1].tolist()):
        if t == s:
            if entry.phase == "iterate" and entry.op in carried:
                # nothing loop carried: no copy steps, but the next iteration's body tensors
                # are new instances all the same
                iteration[entry.op] = iteration.get(entry.op, 0) + 1
                epoch[0] += 1
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
                epoch[0] += 1
            if op.id in carried and entry.phase == "iterate":
                # LoopOpx copies each body output (this iteration's) to its body input (the next one's)
                pairs = carried[op.id]
                copied = [str(static[int(steps.exec_static[k])].tensor) for k in range(s, t)]
                for k, g_out in zip(range(s, t), copied):
                    touch(g_out, inner, k)
                iteration[op.id] = iteration.get(op.id, 0) + 1
                epoch[0] += 1
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
        resolved = resolved_by_path.get(path)
        if resolved is None:
            resolved = resolved_by_path[path] = {}
        for tid in op.outputs:
            k = key_of(tid, path, resolved)
            if k >= 0:
                touched_key.append(k)
                touched_step.append(s)
                touched_key.append(k)
                touched_step.append(end)
        for tids in (op.inputs, op.modified):
            for tid in tids:
                k = key_of(tid, path, resolved)
                if k >= 0:
                    touched_key.append(k)
                    touched_step.append(end)
        temps = temp_rows.get(op.id, ())
        if temps:
            roles = [static[int(steps.exec_static[k])].role for k in range(s, t)]
            for row, temp in temps:
                lo = roles.index(temp.first) if temp.first in roles else 0
                # to the op's last step of that role (a matmul reduces in several compute sets)
                hi = len(roles) - 1 - roles[::-1].index(temp.last) if temp.last in roles else len(roles) - 1
                rows_t.append(row)
                first_t.append(s + lo)
                last_t.append(s + max(lo, hi))
                path_t.append(path)
    # the first and last step each key was touched at, keys in the order first touched
    key_no = np.asarray(touched_key, dtype=np.int64)
    step_no = np.asarray(touched_step, dtype=np.int64)
    f = np.full(len(keys), np.iinfo(np.int64).max, dtype=np.int64)
    la = np.full(len(keys), -1, dtype=np.int64)
    if len(key_no):
        order = np.lexsort((step_no, key_no))
        key_sorted, step_sorted = key_no[order], step_no[order]
        starts = np.flatnonzero(np.r_[True, key_sorted[1:] != key_sorted[:-1]])
        ends = np.r_[starts[1:], len(key_sorted)] - 1
        f[key_sorted[starts]] = step_sorted[starts]
        la[key_sorted[starts]] = step_sorted[ends]
    rows = np.fromiter((k[0] for k in keys), dtype=np.int64, count=len(keys))
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


def step_totals_per_ipu(inst: Instances, tile_bytes: TileBytes, num_steps: int, ipus: int) -> np.ndarray:
    """Not-always-live bytes per executed step and IPU: an int64 (steps, ``ipus``) array whose
    rows sum to :func:`step_totals` (each storage row's bytes split by the IPU of each tile,
    tiles numbered IPU after IPU)."""
    per_pattern = tile_bytes.patterns.reshape(len(tile_bytes.patterns), ipus, -1).sum(axis=2)
    diff = np.zeros((num_steps + 1, ipus), dtype=np.int64)
    if len(inst.row):
        b = per_pattern[tile_bytes.pattern_of[inst.row]]
        np.add.at(diff, inst.first, b)
        np.add.at(diff, inst.last + 1, -b)
    return np.cumsum(diff, axis=0)[:num_steps]


def _candidate_steps(ev_step: np.ndarray, ev_sign: np.ndarray) -> np.ndarray:
    """The event steps whose live set can hold a peak: steps with a + event not followed (at the
    next event step) by + events only. Between events nothing changes; after - events only, or
    before + events only, the live set is a subset of a neighbour's, whose bytes are at least as
    large on every tile. ``ev_step`` is sorted."""
    steps, start = np.unique(ev_step, return_index=True)
    if not len(steps):
        return steps
    plus = np.add.reduceat((ev_sign > 0).astype(np.int64), start) > 0
    minus = np.add.reduceat((ev_sign < 0).astype(np.int64), start) > 0
    next_has_minus = np.r_[minus[1:], True]
    return steps[plus & next_has_minus]


def tile_peaks(inst: Instances, tile_bytes: TileBytes | np.ndarray, interleaved: np.ndarray, num_steps: int,
               block: int = 1024) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-tile peaks over steps of not-always-live bytes: (all, interleaved class, the rest),
    each peak taken separately (:func:`tile_peaks_and_span`)."""
    peaks = tile_peaks_and_span(inst, tile_bytes, interleaved, num_steps, None, block)
    return peaks[0], peaks[1], peaks[2]


#: a tile's span from the bytes live at one step: (interleaved-class bytes, other bytes), each
#: (live sets, tiles), to bytes per tile (live sets, tiles)
SpanOf = Callable[[np.ndarray, np.ndarray], np.ndarray]


def tile_peaks_and_span(inst: Instances, tile_bytes: TileBytes | np.ndarray, interleaved: np.ndarray,
                        num_steps: int, span: SpanOf | None, block: int = 1024
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None, np.ndarray]:
    """Per-tile peaks over steps of not-always-live bytes.

    ``tile_bytes`` holds the bytes per tile of every storage row (one pattern per distinct
    mapping; a dense (rows, tiles) matrix is compressed first) and ``interleaved`` is a bool per
    row. Returns int64 arrays of length tiles: the peak of all not-always-live bytes, the peak of
    those in the interleaved class, the peak of the rest (each peak taken separately) and the
    peak of ``span`` (None without one), and the interleaved-class bytes live at each tile's
    peak of all not-always-live bytes (the first live set reaching it): what splits the peak
    into regions (memory.py).

    Rows are grouped in classes of equal pattern and interleaving; the live set of a step is a
    vector of live instances per class. Only the live sets at candidate steps
    (:func:`_candidate_steps`) can hold a peak, and programs repeat them (every micro-batch of
    an unrolled loop, every call of one layer graph), so the distinct ones are kept and the peaks
    are the maxima of ``counts @ patterns`` over them: time and memory grow with the instances and
    the distinct live sets, never with steps x tiles.
    """
    if isinstance(tile_bytes, np.ndarray):
        tile_bytes = TileBytes.from_dense(tile_bytes)
    num_tiles = tile_bytes.num_tiles
    peak_all = np.zeros(num_tiles, dtype=np.int64)
    peak_il = np.zeros(num_tiles, dtype=np.int64)
    peak_flex = np.zeros(num_tiles, dtype=np.int64)
    il_at_peak = np.zeros(num_tiles, dtype=np.int64)
    nothing = np.zeros((1, num_tiles), dtype=np.float64)
    peak_span = None if span is None else np.rint(span(nothing, nothing)[0]).astype(np.int64)
    if not len(inst.row) or num_steps == 0:
        return peak_all, peak_il, peak_flex, peak_span, il_at_peak
    il = np.asarray(interleaved, dtype=bool)
    cls_key = tile_bytes.pattern_of * 2 + il
    classes, inst_cls = np.unique(cls_key[inst.row], return_inverse=True)
    inst_cls = np.asarray(inst_cls, dtype=np.int64).reshape(-1)
    ev_step = np.concatenate([inst.first, inst.last + 1])
    ev_cls = np.concatenate([inst_cls, inst_cls])
    ev_sign = np.concatenate([np.ones(len(inst.row), np.int64), -np.ones(len(inst.row), np.int64)])
    keep = ev_step < num_steps
    ev_step, ev_cls, ev_sign = ev_step[keep], ev_cls[keep], ev_sign[keep]
    order = np.argsort(ev_step, kind="stable")
    ev_step, ev_cls, ev_sign = ev_step[order], ev_cls[order], ev_sign[order]
    candidates = _candidate_steps(ev_step, ev_sign)
    num_classes = len(classes)
    # the distinct live sets among the candidates, found from a 128-bit fingerprint of each (two
    # random 64-bit weights per class, summed with wrap-around over the events up to the step);
    # two different sets share one with a probability below 2**-80 for the largest programs
    weights = np.random.default_rng(_FINGERPRINT_SEED).integers(0, 2**63, size=(2, num_classes), dtype=np.int64)
    with np.errstate(over="ignore"):
        running = np.cumsum(weights[:, ev_cls].astype(np.uint64) * ev_sign.astype(np.uint64), axis=1)
    upto = np.searchsorted(ev_step, candidates, side="right") - 1
    _, first = np.unique(running[:, upto].T, axis=0, return_index=True)
    representatives = candidates[np.sort(first)]
    # live count of class c at step s = its + events at or before s minus its - events before s+1
    by_class = np.lexsort((ev_step, ev_cls))
    cs, st, sg = ev_cls[by_class], ev_step[by_class], ev_sign[by_class]
    bounds = np.searchsorted(cs, np.arange(num_classes + 1))
    per_class = []
    for c in range(num_classes):
        steps_c, signs_c = st[bounds[c]:bounds[c + 1]], sg[bounds[c]:bounds[c + 1]]
        per_class.append((steps_c[signs_c > 0], steps_c[signs_c < 0]))
    patterns = tile_bytes.patterns[classes // 2].astype(np.float64)
    is_il = (classes % 2).astype(bool)
    # float64 products and sums of byte counts are exact below 2**53
    p_il = patterns * is_il[:, None]
    p_flex = patterns * ~is_il[:, None]
    for b0 in range(0, len(representatives), block):
        chunk = representatives[b0:b0 + block]
        u = np.zeros((len(chunk), num_classes), dtype=np.float64)
        for c, (plus_c, minus_c) in enumerate(per_class):
            u[:, c] = np.searchsorted(plus_c, chunk, side="right") - np.searchsorted(minus_c, chunk, side="right")
        v_il = u @ p_il
        v_flex = u @ p_flex
        peak_il = np.maximum(peak_il, np.rint(v_il.max(axis=0)).astype(np.int64))
        peak_flex = np.maximum(peak_flex, np.rint(v_flex.max(axis=0)).astype(np.int64))
        total = v_il + v_flex
        at = total.argmax(axis=0)
        columns = np.arange(num_tiles)
        chunk_peak = np.rint(total[at, columns]).astype(np.int64)
        higher = chunk_peak > peak_all
        il_at_peak = np.where(higher, np.rint(v_il[at, columns]).astype(np.int64), il_at_peak)
        peak_all = np.maximum(peak_all, chunk_peak)
        if peak_span is not None and span is not None:
            peak_span = np.maximum(peak_span, np.rint(span(v_il, v_flex).max(axis=0)).astype(np.int64))
    return peak_all, peak_il, peak_flex, peak_span, il_at_peak
