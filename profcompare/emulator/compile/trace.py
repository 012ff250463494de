"""The simulated execution trace: Graph Analyser's blocks per IPU from the modelled steps.

Every executed step of each profiled run of the main program becomes one block per IPU it runs on
(run 0's blocks drawn here, later runs the same blocks moved to their run's start: ``every_run``), from
the execution table's interval of that step (the first ``cycles_from`` to the last ``cycles_to``
of its back-to-back phase rows; a pipeline stage's step placed again later is another block), so
the trace adds no time of its own. Nothing here is fitted. Where the real trace in shared/data
draws more (docs/ipu-model.md section 12): a host transfer's Begin step is drawn as its control
copy and the data copy's Begin (the run's first also as the run's opening copies), its Begin and
End run on every IPU of the replica, and in a pipelined program an IPU that waits for the others
at a synchronising step has its block start when it arrived (and stays in its last sync until the
run ends).

- Type: the step's pva program type in Graph Analyser's names (:data:`TRACE_TYPE_OF_PROGRAM`):
  a ``Sync`` step is ExternalSync or InternalSync by its program name, StreamCopyMid is
  StreamCopy; RemoteLoad / RemoteStore keep their pva names (no Graph Analyser trace of a remote
  transfer is public to name them by). SyncAns blocks (an IPU waiting for the others or for the
  host, overlapping the blocks it waits for) are not modelled: a wait is inside the waiting step's
  own block (docs/ipu-model.md).
- IPU: the IPU of the step's op (the IPU of its outputs, else of its inputs; IPU 0 for steps
  without an op). An IpuCopy's sync and global exchange run on its source and destination IPUs, one block on
  each; its on-chip move before them on the source IPU, after them on the destination IPU.
  A call's copy in or out runs on the IPU of the called graph's tensor it writes or reads.
- Place in the program tree: ``parent`` is the op's name (the group Graph Analyser draws a
  program's steps under), ``depth`` 1, ``name`` the step's name inside it ("Internal Sync" of
  ``mul/Internal Sync``), ``program`` the step's full program name; steps without an op sit at
  the top level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from profcompare.emulator.compile.cycles import BroadcastPart, RunOpening, switch_broadcast_parts
from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram
from profcompare.emulator.targets import DeviceSpec
from profcompare.model import make_frame, runtime_rows

#: pva program type -> Graph Analyser block type (``Sync`` is decided by the program name).
TRACE_TYPE_OF_PROGRAM: Mapping[str, str] = MappingProxyType({"StreamCopyMid": "StreamCopy"})


def trace_type(program_type: str, program_name: str) -> str:
    """Graph Analyser's block type of a step of pva type ``program_type`` named ``program_name``."""
    if program_type == "Sync":
        return "ExternalSync" if program_name.endswith("External Sync") else "InternalSync"
    return TRACE_TYPE_OF_PROGRAM.get(program_type, program_type)


def _label(name: str, parent: str) -> str:
    return name[len(parent) + 1:] if parent and name.startswith(parent + "/") and len(name) > len(parent) + 1 else name


@dataclass(frozen=True)
class HostCopyShape:
    """The parts a host transfer's Begin step is drawn as (cycles; targets.py sources them)."""

    sync_begin: int  # the control copy's Begin
    mid: int  # its Mid (on the replica's first IPU)
    sync_end: int  # its End
    data_begin: int  # the data copy's Begin
    run_start_wait: int  # the run's second opening control copy waits this long for the host
    #: per IPU of the replica: the program Switch's control broadcast after the opening copies
    broadcast: tuple[tuple[BroadcastPart, ...], ...] = ()

    @classmethod
    def of(cls, device: DeviceSpec, ipus: int = 1) -> HostCopyShape:
        n = max(1, int(ipus))
        return cls(device.host_sync_begin_cycles, device.stream_copy_mid_cycles, device.host_sync_end_cycles,
                   device.stream_copy_begin_cycles, device.run_start_wait_cycles,
                   tuple(switch_broadcast_parts(device, n, i) for i in range(n)))

    @property
    def sync(self) -> int:
        return self.sync_begin + self.mid + self.sync_end


def step_places(program: LoweredProgram, steps: ProgramSteps, ipus_per_replica: int = 1
                ) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
    """Per static step: the IPUs it runs on and its parent group's name ("" for none). A host
    transfer's Begin and End run on every IPU of the replica (a stream copy synchronises them)."""
    ipus: list[tuple[int, ...]] = []
    parents: list[str] = []
    every = tuple(range(max(1, int(ipus_per_replica))))
    for step in steps.static:
        if step.role in ("host_begin", "host_end") and len(every) > 1:
            ipus.append(every)
            parents.append(program.ops[step.op].name if step.op in program.ops else "")
            continue
        op = program.ops.get(step.op) if step.op else None
        if op is None:
            ipus.append((0,))
            parents.append("")
            continue
        if step.role in ("copy_in", "copy_out") and step.tensor in program.tensors:
            # a call's copy runs where its called graph's tensor is (PopART's CallOpx copies
            # into the called graph's input and out of its output, on their virtual graphs)
            ipus.append((int(program.tensors[step.tensor].ipu),))
            parents.append(op.name)
            continue
        outs = [program.tensors[t].ipu for t in op.outputs if t in program.tensors]
        ins = [program.tensors[t].ipu for t in op.inputs if t in program.tensors]
        if op.type == "IpuCopy" and ins and outs:
            # its on-chip moves: before the exchange on the source IPU, after it on the destination
            side = {"ipu_copy_pre": (int(ins[0]),), "ipu_copy_buffer": (int(ins[0]),), "pipeline_iterator": (0,),
                    "ipu_copy_post": (int(outs[0]),)}.get(step.role)
            ipus.append(side or tuple(sorted({int(ins[0]), int(outs[0])})))
        else:
            ipus.append((int((outs or ins or [0])[0]),))
        parents.append(op.name)
    return tuple(ipus), tuple(parents)


def _host_begin_parts(start: int, end: int, ipu: int, shape: HostCopyShape, opening: int
                      ) -> list[tuple[int, int, str, str]] | None:
    """A host transfer's Begin block [start, end) on ``ipu`` as Graph Analyser draws it: (from, to,
    type, label) of the run's opening control copies (when ``opening``), the control copy (its
    Mid on IPU 0; elsewhere its End covers the Mid) and the data copy's Begin. Waiting before the
    step (start earlier than the modelled parts) is in the first Begin. None when too short."""
    modelled = shape.sync + shape.data_begin + opening
    if end - start < modelled:
        return None
    copies = (["run start/"] * 2 if opening else []) + ["host sync/"]
    parts: list[tuple[int, int, str, str]] = []
    at = end - shape.data_begin
    parts.append((at, end, "StreamCopyBegin", "Begin"))
    switch = shape.broadcast[min(ipu, len(shape.broadcast) - 1)] if opening and shape.broadcast else ()
    for k, prefix in reversed(list(enumerate(copies))):
        if k == 1 and switch:
            # between the opening copies and the host sync copy: the Switch's control broadcast
            for part in reversed(switch):
                parts.append((at - part.cycles, at, part.type, "switchControlBroadcast/" + part.label))
                at -= part.cycles
        if ipu == 0:
            parts.append((at - shape.sync_end, at, "StreamCopyEnd", prefix + "End"))
            parts.append((at - shape.sync_end - shape.mid, at - shape.sync_end, "StreamCopy", prefix + "Mid"))
        else:
            parts.append((at - shape.sync_end - shape.mid, at, "StreamCopyEnd", prefix + "End"))
        at -= shape.sync_end + shape.mid
        begin = shape.sync_begin + (shape.run_start_wait if opening and k == 1 else 0)
        first = k == 0
        parts.append((start if first else at - begin, at, "StreamCopyBegin", prefix + "Begin"))
        at -= begin
    return sorted(parts)


def trace_frame(execution: pd.DataFrame, steps: ProgramSteps, step_ipus: Sequence[tuple[int, ...]],
                step_parents: Sequence[str], *, host: HostCopyShape | None = None,
                arrivals: Mapping[tuple[int, int], Mapping[int, int]] | None = None,
                opening: RunOpening | None = None,
                holds: Mapping[tuple[int, int], Mapping[int, int]] | None = None) -> pd.DataFrame:
    """The ``trace`` table of run 0 of ``execution`` (see the module docstring).

    One row per (executed step, IPU it runs on), the runtime phase (host time outside the
    device) left out; sorted by (ipu, cycles_from, step). With ``host`` a host transfer's Begin
    step is drawn as its control copy and the data copy's Begin (the run's first also as its
    opening control copies, ``opening`` (executed step, cycles)); an IPU that does not receive a
    transfer's data has an End block from the end of the Begin. ``arrivals`` ((executed step,
    start) -> {IPU: arrival}, placement.timeline_arrivals): an IPU's block of a synchronising step
    starts when the IPU arrived (it waits in the step); ``holds`` (placement.timeline_holds): an
    IPU's block ends when the IPU leaves it (an IPU that ends the run early waits in its last sync).
    """
    columns = trace_columns(execution, steps, step_ipus, step_parents, host=host, arrivals=arrivals,
                            opening=opening, holds=holds)
    return make_frame("trace", columns, adopt=True) if columns is not None else make_frame("trace")


def trace_columns(execution: pd.DataFrame, steps: ProgramSteps, step_ipus: Sequence[tuple[int, ...]],
                  step_parents: Sequence[str], *, host: HostCopyShape | None = None,
                  arrivals: Mapping[tuple[int, int], Mapping[int, int]] | None = None,
                  opening: RunOpening | None = None,
                  holds: Mapping[tuple[int, int], Mapping[int, int]] | None = None) -> dict[str, Any] | None:
    """:func:`trace_frame`'s columns before they become a frame (column name -> array, ``type`` a
    Categorical, no ``run``), or None when run 0 has no block: what :func:`every_run_columns`
    repeats for later runs without a frame of run 0 beside them."""
    if not len(execution):
        return None
    # the three columns the blocks need, of run 0's device rows (not a copy of the whole table:
    # a large program's execution table has tens of millions of rows)
    keep = (execution["run"].to_numpy() == 0) & ~runtime_rows(execution["phase"])
    if not keep.any():
        return None
    every = bool(keep.all())
    step = execution["step"].to_numpy(dtype="int64")
    start = execution["cycles_from"].to_numpy(dtype="int64")
    end = execution["cycles_to"].to_numpy(dtype="int64")
    if not every:
        step, start, end = step[keep], start[keep], end[keep]
    del keep
    # a step's phase rows are back to back; a pipeline stage that runs again later is a new block
    first = np.ones(len(step), dtype=bool)
    first[1:] = (step[1:] != step[:-1]) | (start[1:] != end[:-1])
    heads = np.flatnonzero(first)
    tails = np.append(heads[1:], len(step)) - 1
    head_step = step[heads]
    head_start = start[heads]
    head_end = end[tails]
    del step, start, end, first, heads, tails
    statics = steps.static
    static_of = np.asarray(steps.exec_static, dtype=np.int64)[head_step]
    # per static step: the block's type, parent, label and single IPU (-1 when it runs on several)
    parents = [step_parents[st.index] for st in statics]
    ipus_of = [tuple(step_ipus[st.index]) for st in statics]
    kinds = np.array([trace_type(st.type, st.name) for st in statics] + [""], dtype=object)
    names = np.array([st.name for st in statics] + [""], dtype=object)
    parent_of = np.array(parents + [""], dtype=object)
    labels = np.array([_label(st.name, parent) for st, parent in zip(statics, parents)] + [""], dtype=object)
    depths = np.array([1 if parent else 0 for parent in parents] + [0], dtype=np.int64)
    one_ipu = np.array([int(ipus[0]) if len(ipus) == 1 else -1 for ipus in ipus_of] + [-1], dtype=np.int64)
    drawn = np.array([st.role in ("host_begin", "host_mid", "host_end") for st in statics] + [False], dtype=bool)
    # blocks drawn one by one: host transfers, steps on several IPUs, waits and holds, the opening
    slow = (drawn | (one_ipu < 0))[static_of]
    if opening is not None:
        slow |= head_step == opening[0]
    waits = arrivals or {}
    held = holds or {}
    special = set(waits) | set(held)
    if special:
        candidates = np.flatnonzero(np.isin(head_step, np.array(sorted({k[0] for k in special}), dtype=np.int64)))
        for i in candidates.tolist():
            if (int(head_step[i]), int(head_start[i])) in special:
                slow[i] = True
    fast = np.flatnonzero(~slow)
    fast_static = static_of[fast]
    rows: list[tuple[int, int, int, int, str, str, str, int, int, int]] = []
    mid_of: dict[str, tuple[int, tuple[int, ...]]] = {}  # op -> (start of its last Mid, IPUs of the Mid)
    opened = False
    for i in np.flatnonzero(slow).tolist():
        e = int(head_step[i])
        static = statics[int(static_of[i])]
        parent = parents[static.index]
        block = trace_type(static.type, static.name)
        a, z = int(head_start[i]), int(head_end[i])
        early = waits.get((e, a), {})
        late = held.get((e, a), {})
        depth = 1 if parent else 0
        if static.role == "host_mid":
            mid_of[static.op] = (a, tuple(step_ipus[static.index]))
        first_opening = opening is not None and e == opening[0] and not opened
        if first_opening:
            opened = True
        sub = 0
        for ipu in step_ipus[static.index]:
            b = int(early.get(int(ipu), a))
            if static.role == "host_end" and static.op in mid_of and int(ipu) not in mid_of[static.op][1]:
                b = min(b, mid_of[static.op][0])  # no data for this IPU: its End covers the Mid
            lead = opening[1] if first_opening and opening is not None else 0
            parts = (_host_begin_parts(b, z, int(ipu), host, lead)
                     if host is not None and static.role == "host_begin" else None)
            if parts is None:
                rows.append((int(ipu), b, max(z, int(late.get(int(ipu), z))), e, block, static.name, parent, depth,
                             i, sub))
                sub += 1
                continue
            stem = static.name[: -len("Begin")] if static.name.endswith("Begin") else static.name + "/"
            for pa, pz, ptype, label in parts:
                rows.append((int(ipu), pa, pz, e, ptype, stem + label, parent, depth, i, sub))
                sub += 1
    cols = list(zip(*rows)) if rows else [()] * 10
    del rows, static_of, slow
    ipu_col = np.concatenate([one_ipu[fast_static], np.asarray(cols[0], dtype=np.int64)])
    from_col = np.concatenate([head_start[fast], np.asarray(cols[1], dtype=np.int64)])
    step_col = np.concatenate([head_step[fast], np.asarray(cols[3], dtype=np.int64)])
    block_col = np.concatenate([fast, np.asarray(cols[8], dtype=np.int64)])
    sub_col = np.concatenate([np.zeros(len(fast), dtype=np.int64), np.asarray(cols[9], dtype=np.int64)])
    # sorted by (ipu, start, step); ties keep the order the blocks are drawn in
    order = np.lexsort((sub_col, block_col, step_col, from_col, ipu_col))
    del step_col, block_col, sub_col, head_step
    # each column is made in block order and sorted at once, one at a time (tens of millions of
    # rows: no unsorted copy of every column is held beside the sorted ones)
    sorted_cols = {"ipu": ipu_col[order]}
    del ipu_col
    sorted_cols["cycles_from"] = from_col[order]
    del from_col, head_start
    sorted_cols["cycles_to"] = np.concatenate([head_end[fast], np.asarray(cols[2], dtype=np.int64)])[order]
    del head_end
    # the block types as codes into their few distinct names (not hashed row by row)
    kind_codes, kind_levels = pd.factorize(np.concatenate([kinds, np.asarray(cols[4], dtype=object)]))
    sorted_cols["type"] = pd.Categorical.from_codes(
        np.concatenate([kind_codes[:len(kinds)][fast_static], kind_codes[len(kinds):]])[order], categories=kind_levels)
    # the label is the step's name inside its group ("Internal Sync" of "mul/Internal Sync")
    sorted_cols["name"] = np.concatenate(
        [labels[fast_static], np.asarray([_label(n, p) for n, p in zip(cols[5], cols[6])], dtype=object)])[order]
    sorted_cols["program"] = np.concatenate([names[fast_static], np.asarray(cols[5], dtype=object)])[order]
    sorted_cols["parent"] = np.concatenate([parent_of[fast_static], np.asarray(cols[6], dtype=object)])[order]
    sorted_cols["depth"] = np.concatenate([depths[fast_static], np.asarray(cols[7], dtype=np.int64)])[order]
    del order, fast, fast_static
    return sorted_cols


def every_run(first: pd.DataFrame, execution: pd.DataFrame) -> pd.DataFrame:
    """The trace of every run of ``execution``: run 0's blocks (``first``, :func:`trace_frame`)
    again for each later run, moved by the cycles from run 0's first device row to that run's
    (the simulator's runs are the same steps, one after the other), ``run`` set. Sorted by
    (run, ipu, cycles_from)."""
    if not len(first) or not len(execution):
        return first
    return every_run_columns({c: first[c].to_numpy() for c in first.columns if c != "run"}, execution)


def every_run_columns(first: dict[str, Any] | None, execution: pd.DataFrame) -> pd.DataFrame:
    """:func:`every_run` of run 0's columns (:func:`trace_columns`), which it takes away: each
    column leaves ``first`` as its repeats for every run are made, so run 0's table and the
    whole trace are never held together (tens of millions of rows at LLM sizes)."""
    if first is None:
        return make_frame("trace")
    runs, starts = _run_starts(execution)
    n = len(next(iter(first.values()))) if first else 0
    if n == 0 or len(runs) <= 1:
        return make_frame("trace", first, adopt=True)
    offsets = starts - starts[0]
    columns: dict[str, object] = {}
    for name in list(first):
        column = first.pop(name)
        if name == "type":
            kinds = pd.Series(column, copy=False).astype("category")
            del column
            columns["type"] = pd.Categorical.from_codes(np.tile(kinds.cat.codes.to_numpy(), len(runs)),
                                                        categories=kinds.cat.categories)
            del kinds
            continue
        repeated = np.tile(np.asarray(column), len(runs))
        del column
        if name in ("cycles_from", "cycles_to"):
            for r in range(1, len(runs)):  # in place: no column of shifts beside it
                repeated[r * n:(r + 1) * n] += offsets[r]
        columns[name] = repeated
    columns["run"] = np.repeat(runs, n)
    return make_frame("trace", columns, adopt=True)  # arrays made here


def _run_starts(execution: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The runs of ``execution`` that have device rows (the runtime phase left out), in order, and
    the start cycle of each one's first device row."""
    device = ~runtime_rows(execution["phase"])
    run = execution["run"].to_numpy(dtype="int64")[device]
    start = execution["cycles_from"].to_numpy(dtype="int64", na_value=0)[device]
    runs = np.unique(run)
    return runs, np.array([start[run == r].min() for r in runs], dtype=np.int64)


__all__ = ["TRACE_TYPE_OF_PROGRAM", "HostCopyShape", "every_run", "every_run_columns", "step_places", "trace_columns",
           "trace_frame", "trace_type"]
