"""Lowering a LoweredProgram to Poplar-like program steps.

Every op becomes zero or more *program steps* of the types PopVision shows (StreamCopy,
OnTileExecute, DoExchange, RemoteLoad, RemoteStore, the collectives, Call, Copy). Steps exist
statically once per op (and per Call phase), however often the op runs: a called graph's steps
are outlined, so its code and vertex state exist once. The executed sequence of one run of the
main program follows ``LoweredProgram.schedule`` (already in ``in_sequence`` order), each
executed op expanding to its static steps.

Op classes and their steps (see docs/ipu-model.md "Program steps"):

- HostLoad / HostStore: one StreamCopy.
- RemoteLoad / RemoteStore: one RemoteLoad / RemoteStore (Streaming Memory).
- Replicated*: one step named after the collective (ReplicatedAllReduce, ...).
- Call: "Call" on enter (inputs copied into the graph) and "Copy" on exit (outputs and
  modified by-ref inputs copied back).
- MatMul: DoExchange (operand copies), OnTileExecute (AMP), DoExchange (partials),
  OnTileExecute (reduce partials).
- Reduce*: OnTileExecute (per-tile partials), DoExchange, OnTileExecute (final reduction).
- views (Reshape, Flatten, ...): no step; the output aliases the input.
- Init 'undef' (the placeholder of a host or remote load): one WriteUndef, which marks the
  tensor dead for liveness and has no code, vertices, sync or cycles. Init 'zero' is an
  OnTileExecute (a zero fill).
- anything else: OnTileExecute, preceded by a DoExchange when an input is broadcast.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from profcompare.emulator.program import LoweredProgram, OpInfo

VIEW_TYPES = frozenset(
    {"Reshape", "ReshapeInplace", "Flatten", "FlattenInplace", "Squeeze", "Unsqueeze", "Identity_view",
     "TransposeInplace", "Detach", "DetachInplace", "Alias", "View"}
)
COLLECTIVE_PREFIX = "Replicated"

#: Program types that exist only for liveness analysis: no code, vertices, sync or cycles.
NO_CODE_STEP_TYPES = frozenset({"WriteUndef"})

#: Codelet kind (vertex code) per op-type keyword; the first keyword found in the type wins.
_CODELET_KEYWORDS: tuple[tuple[str, str], ...] = (
    ("Adam", "optimizer"),
    ("Accumulat", "optimizer"),
    ("ScaledAdd", "optimizer"),
    ("VarUpdate", "optimizer"),
    ("Gelu", "nonlinearity"),
    ("Softmax", "nonlinearity"),
    ("Tanh", "nonlinearity"),
    ("Sigmoid", "nonlinearity"),
    ("Relu", "nonlinearity"),
    ("Nll", "loss"),
    ("Loss", "loss"),
    ("CrossEntropy", "loss"),
    ("Init", "copy"),
    ("Copy", "copy"),
)


@dataclass(frozen=True)
class StaticStep:
    """One step of the compiled program (exists once, whatever the number of executions)."""

    index: int
    op: str  # OpInfo id
    phase: str  # "" | "enter" | "exit"
    type: str  # program type
    name: str  # program name shown in reports


@dataclass(frozen=True)
class ProgramSteps:
    """Static steps plus the executed sequence of one run of the main program."""

    static: tuple[StaticStep, ...]
    exec_static: np.ndarray  # executed step -> static step index (int64)
    exec_ranges: tuple[tuple[int, int], ...]  # schedule entry -> [start, end) in executed steps
    op_class: Mapping[str, str] = field(default_factory=dict)  # op id -> class
    alias_root: Mapping[str, str] = field(default_factory=dict)  # tensor id -> storage root id

    @property
    def num_executed(self) -> int:
        """Number of executed program steps in one run."""
        return len(self.exec_static)


def classify(op: OpInfo, program: LoweredProgram) -> str:
    """The op's class: host_load, host_store, remote_load, remote_store, collective, call,
    matmul, reduce, view, init (zero fill), write_undef (undefined placeholder) or elementwise."""
    t = op.type
    if t == "HostLoad":
        return "host_load"
    if t == "HostStore":
        return "host_store"
    if t.startswith("RemoteLoad"):
        return "remote_load"
    if t.startswith("RemoteStore"):
        return "remote_store"
    if t.startswith((COLLECTIVE_PREFIX, "ReplicaSharded")):
        return "collective"
    if t == "Call":
        return "call"
    if t.startswith("MatMul"):
        return "matmul"
    if t in VIEW_TYPES:
        return "view"
    if t.startswith("Reduce"):
        return "reduce"
    if t == "Init":
        # an undefined placeholder (the target of a host or remote load) is Poplar's WriteUndef:
        # it only tells liveness analysis the tensor is dead, and runs no code
        return "write_undef" if op.attrs.get("init_type") == "undef" else "init"
    return "elementwise"


def codelet_kind(op: OpInfo, op_class: str) -> str:
    """Which vertex-code family an op's compute uses (keys of targets.CODELET_BYTES)."""
    if op_class == "matmul":
        return "matmul"
    if op_class == "reduce":
        return "reduce"
    if op_class == "collective":
        return "collective"
    if op_class in ("call", "init"):
        return "copy"
    for keyword, kind in _CODELET_KEYWORDS:
        if keyword in op.type:
            return kind
    return "elementwise"


def _has_broadcast_input(op: OpInfo, program: LoweredProgram) -> bool:
    if not op.outputs:
        return False
    out_n = max(program.tensors[t].nelms for t in op.outputs if t in program.tensors)
    for t in op.inputs:
        info = program.tensors.get(t)
        if info is not None and 1 < info.nelms < out_n:
            return True
    return False


def templates(op: OpInfo, op_class: str, phase: str, program: LoweredProgram) -> tuple[tuple[str, str], ...]:
    """The (program type, name suffix) steps of one op in one phase (see module docstring)."""
    if op_class == "host_load" or op_class == "host_store":
        return (("StreamCopy", ""),)
    if op_class == "remote_load":
        return (("RemoteLoad", ""),)
    if op_class == "remote_store":
        return (("RemoteStore", ""),)
    if op_class == "collective":
        return ((op.type.replace("Inplace", ""), ""),)
    if op_class == "call":
        return (("Call", "/enter"),) if phase != "exit" else (("Copy", "/exit"),)
    if op_class == "view":
        return ()
    if op_class == "write_undef":
        return (("WriteUndef", ""),)
    if op_class == "matmul":
        return (("DoExchange", "/rearrange"), ("OnTileExecute", ""), ("DoExchange", "/partials_exchange"),
                ("OnTileExecute", "/reduce_partials"))
    if op_class == "reduce":
        return (("OnTileExecute", "/partials"), ("DoExchange", "/exchange"), ("OnTileExecute", ""))
    if op_class == "elementwise" and _has_broadcast_input(op, program):
        return (("DoExchange", "/broadcast"), ("OnTileExecute", ""))
    return (("OnTileExecute", ""),)


def alias_roots(program: LoweredProgram, op_class: Mapping[str, str]) -> dict[str, str]:
    """Map every tensor id that shares storage with another to that tensor's storage root.

    Views alias their first input; outputs of in-place ops alias the modified input of the
    same shape and dtype (popxl's in-place ops return an alias); ``attrs["aliases"]``
    ({output id: input id}) is honoured when present. Tensors not in the map own storage.
    """
    parent: dict[str, str] = {}

    def root(t: str) -> str:
        seen = 0
        while t in parent and seen < 1000:
            t = parent[t]
            seen += 1
        return t

    for op in program.ops.values():
        explicit = op.attrs.get("aliases") if isinstance(op.attrs, Mapping) else None
        if isinstance(explicit, Mapping):
            for out, src in explicit.items():
                if out != src:
                    parent[out] = root(src)
            continue
        if op_class.get(op.id) == "view" and op.inputs:
            for out in op.outputs:
                parent[out] = root(op.inputs[0])
            continue
        if op.modified and op_class.get(op.id) != "call":
            for out in op.outputs:
                o = program.tensors.get(out)
                if o is None:
                    continue
                for m in op.modified:
                    mi = program.tensors.get(m)
                    if mi is not None and mi.shape == o.shape and mi.dtype == o.dtype and m != out:
                        parent[out] = root(m)
                        break
    return {t: root(t) for t in parent}


def reachable_graphs(program: LoweredProgram) -> set[str]:
    """Ids of the main graph and every graph it calls, directly or not."""
    seen = {program.main_graph}
    todo = [program.main_graph]
    by_graph: dict[str, list[OpInfo]] = {}
    for op in program.ops.values():
        by_graph.setdefault(op.graph, []).append(op)
    while todo:
        g = todo.pop()
        for op in by_graph.get(g, ()):
            called = op.attrs.get("called_graph") if op.type == "Call" else None
            if called and called not in seen:
                seen.add(called)
                todo.append(called)
    return seen


def lower_to_steps(program: LoweredProgram) -> ProgramSteps:
    """Build the static program steps and the executed sequence of one run.

    Returns :class:`ProgramSteps`. Static steps are created for every op of every graph
    (calls outlined) in graph/op order; the executed sequence follows ``program.schedule``.
    """
    op_class = {op_id: classify(op, program) for op_id, op in program.ops.items()}
    static: list[StaticStep] = []
    by_key: dict[tuple[str, str], tuple[int, ...]] = {}

    def add(op: OpInfo, phase: str) -> None:
        idx = []
        for ptype, suffix in templates(op, op_class[op.id], phase, program):
            step = StaticStep(len(static), op.id, phase, ptype, (op.name or op.id) + suffix)
            static.append(step)
            idx.append(step.index)
        by_key[(op.id, phase)] = tuple(idx)

    reachable = reachable_graphs(program)
    for op in program.ops.values():
        if op.graph not in reachable:
            continue  # graphs never called are not compiled
        if op_class[op.id] == "call":
            add(op, "enter")
            add(op, "exit")
        else:
            add(op, "")
    executed: list[int] = []
    ranges: list[tuple[int, int]] = []
    for entry in program.schedule:
        op = program.ops[entry.op]
        phase = entry.phase if op_class[op.id] == "call" else ""
        if op_class[op.id] == "call" and phase not in ("enter", "exit"):
            phase = "enter"
        start = len(executed)
        executed.extend(by_key[(op.id, phase)])
        ranges.append((start, len(executed)))
    return ProgramSteps(
        static=tuple(static),
        exec_static=np.asarray(executed, dtype=np.int64),
        exec_ranges=tuple(ranges),
        op_class=op_class,
        alias_root=alias_roots(program, op_class),
    )
