"""Lowering a LoweredProgram to Poplar-like program steps.

Every op becomes zero or more *program steps* of the types Graph Analyser shows (pva's
``Program.Type``: OnTileExecute, DoExchange, GlobalExchange, StreamCopyBegin / StreamCopyMid /
StreamCopyEnd, Sync, ...). Steps exist statically once per op (and per Call phase and copied
tensor), however often the op runs: a called graph's steps are outlined, so its code and vertex
state exist once. The executed sequence of one run of the main program follows
``LoweredProgram.schedule`` (already in ``in_sequence`` order), each executed op expanding to
its static steps. The liveness view starts with the engine's ``WeightsFromHost`` program: one
host stream copy per on-chip variable (a popxl Session writes every variable from the host
before the first run), so a variable is live from the step that writes it.

Which steps each op becomes (docs/ipu-model.md "Program steps"; the shapes follow the real
Graph Analyser trace in ``shared/data``, where a matmul is a rearrangement copy, a Convolve
compute set and Reduce compute sets separated by internal syncs, and a host transfer is
StreamCopyBegin / Mid / End):

- HostLoad / HostStore: StreamCopyBegin, StreamCopyMid, StreamCopyEnd.
- RemoteLoad / RemoteStore: StreamCopyBegin, RemoteLoad / RemoteStore (the data, through the
  gateway), StreamCopyEnd; the transfers of one merged exchange (remote_exchange.py) share one
  Begin (before the first one's data) and one End (after the last one's).
- Collectives over N > 1 replicas: a DoExchange into the transfer buffers, then per ring step
  an external Sync and a GlobalExchange (plus an OnTileExecute for reducing steps); local
  slices: an OnTileExecute copy and a Sync.
- Call: a Call step, then one OnTileExecute copy per copied input (CallOp's CopyInput); after
  the body one copy per output and per copied-back modified input (CopyOutput, CopyModified).
  An input that every call site feeds from the same tensor is aliased, not copied (popxl turns
  on PopART's aliasZeroCopy; see :func:`zero_copy_inputs`).
- repeat (a Call record with ``program`` "Repeat"): as a Call, but the first step is a Repeat
  step, and between iterations (schedule phase "iterate") one OnTileExecute copy per
  loop-carried output (LoopOpx's copies of the body outputs to the next iteration's inputs).
  The executed sequence holds the body once per iteration. Loop-carried inputs are never
  zero-copy (the body overwrites them).
- conditional (``program`` "If"): an If step, then the copies and body of the branch the
  lowering executes; the other branch's steps exist statically (its code is compiled) but are
  not executed.
- RemoteCodeLoad: StreamCopyBegin, RemoteLoad (the graph's code, role ``code_load``),
  StreamCopyEnd.
- MatMul: WriteUndef (its rearranged operand's life begins), OnTileExecute (weights rearranged: a
  copy), Sync, OnTileExecute (Convolve, which receives the operand copies it reads from other
  tiles), Sync, then when the contraction is split one OnTileExecute per poplin reduction stage
  (Reduce0, Reduce1, ..., each receiving its partials), each with a Sync. An input gradient
  whose transposed weights take PopLibs' copy path (fc_weight_transpose.py) starts instead with
  a DoExchange into poplin's preRegroup variable, an OnTileExecute (the transpose), Sync, a
  DoExchange of the operands to the plan's layout and a Sync; its Transpose op is then a view.
- Reduce*: OnTileExecute (partials), Sync, OnTileExecute (reduce, receiving the partials), Sync.
- views (Reshape, ...): no step; the output aliases the input.
- Init 'undef' (placeholder of a host or remote load): one WriteUndef (a liveness marker).
  Init 'zero': OnTileExecute and Sync.
- NllLossWithSoftmaxGrad: the labels' one-hot encoding as popops::encodeOneHot does it
  (OnTileExecute zero, Sync, OnTileExecute OneHotEncode, Sync, DoExchange copy to the one-hot
  tensor), then OnTileExecute (the loss and gradient), Sync.
- PipelineStash / PipelineRestore: OnTileExecute (the stash's dynamic update or slice),
  OnTileExecute (its counter's increment modulo the stash size), Sync.
- AccumulateMean (accum = a accum + b x with a = n / (n + 1), b = 1 / (n + 1)): as the real trace
  shows PopART's: OnTileExecute counter + 1 and b, Sync, OnTileExecute a, Sync, OnTileExecute the
  update (its sync shared with the next compute set's).
- anything else: OnTileExecute and Sync (a broadcast input is received by the compute set).

The executed sequence then keeps a sync only where Poplar needs one, before a step that receives
data from other tiles (:func:`place_syncs`). Every run opens with the program Switch's control
broadcast (cycles.switch_broadcast_parts), part of the run's opening, not a step here.

Which steps are DoExchange: only copies between tiles (io_tile_copy, a collective's transfer
into its buffers, an inter-IPU copy's moves to its sending tiles and from its receiving tiles,
the copies of an input gradient's weights on PopLibs' copy path). A compute set whose vertices read data held on other tiles receives it in its
own exchange (poplin's Convolution.cpp: "poplar will rearrange the data using exchange code"),
which Graph Analyser draws inside that compute set's block: in the real trace every DoExchange
block is a Copy program's (``copyN_Copy_<from>_to_<to>/ExchangePre``) and no Convolve, Reduce or
element-wise compute set has one (:data:`EXCHANGE_INSIDE_ROLES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from profcompare.emulator.program import LoweredProgram, OpInfo
from profcompare.emulator.compile.remote_exchange import member_templates, merged_exchanges

VIEW_TYPES = frozenset(
    {"Reshape", "ReshapeInplace", "Flatten", "FlattenInplace", "Squeeze", "Unsqueeze", "Identity_view",
     "TransposeInplace", "Detach", "DetachInplace", "Alias", "View"}
)
COLLECTIVE_PREFIX = "Replicated"

#: Program types that exist only for liveness analysis: no code, vertices, sync or cycles.
NO_CODE_STEP_TYPES = frozenset({"WriteUndef"})

#: Name of the engine program that writes variables from the host before the first run.
WEIGHTS_FROM_HOST = "WeightsFromHost"

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
    op: str  # OpInfo id ("" for WeightsFromHost steps)
    phase: str  # "" | "enter" | "exit" | "iterate" (between a repeat's iterations) | "setup"
    type: str  # program type (pva Program.Type name)
    name: str  # program name shown in reports
    role: str = ""  # what the step does, for the cost and code models (see templates)
    tensor: str = ""  # the tensor a copy or transfer step moves ("" otherwise)


@dataclass(frozen=True)
class ProgramSteps:
    """Static steps plus the executed sequence: WeightsFromHost, then one run of the main program."""

    static: tuple[StaticStep, ...]
    exec_static: np.ndarray  # executed step -> static step index (int64)
    #: schedule entry -> [start, end) in executed steps, one row each (int64, shape (entries, 2):
    #: about a million entries at LLM sizes, held while the execution profile is written)
    exec_ranges: np.ndarray
    op_class: Mapping[str, str] = field(default_factory=dict)  # op id -> class
    alias_root: Mapping[str, str] = field(default_factory=dict)  # tensor id -> storage root id
    setup_steps: int = 0  # executed steps of WeightsFromHost before the main program
    written_at: Mapping[str, int] = field(default_factory=dict)  # variable id -> executed step writing it
    zero_copy: frozenset[str] = frozenset()  # graph input ids aliased to their (single) parent tensor
    #: input-gradient matmuls whose transposed weights take PopLibs' copy path (a preRegroup copy first)
    weights_by_copy: frozenset[str] = frozenset()

    @property
    def num_executed(self) -> int:
        """Number of executed program steps (WeightsFromHost plus one run)."""
        return len(self.exec_static)

    @property
    def run_steps(self) -> np.ndarray:
        """Executed step indices of one run of the main program."""
        return np.arange(self.setup_steps, len(self.exec_static), dtype=np.int64)


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
    if t in ("IpuCopy", "IoTileCopy"):
        return "ipu_copy" if t == "IpuCopy" else "io_tile_copy"
    if t == "Call":
        return "call"
    if t == "RemoteCodeLoad":
        return "code_load"
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


def ring_steps(op: OpInfo, replicas: int) -> tuple[int, bool]:
    """(ring steps, whether the steps reduce) of a collective op over its replica group.

    facts 2.7: reduce-scatter and all-gather take N-1 steps, all-reduce 2(N-1) (its first N-1
    reduce); a local slice or a group of one takes none.
    """
    n = int(op.attrs.get("group_size") or replicas or 1)
    kind = str(op.attrs.get("op", "add")).lower()
    t = op.type
    if n <= 1 or kind == "local" or "Slice" in t:
        return 0, False
    if "AllGather" in t:
        return n - 1, False
    if "ReduceScatter" in t:
        return n - 1, True
    return 2 * (n - 1), True


#: Roles of compute sets that receive data from other tiles in their own exchange (module
#: docstring): a matmul's Convolve (the operand copies) and Reduce (the partials), a reduction's
#: final compute set (the partials), an element-wise op's compute set with a broadcast input.
#: Not yet among them: the matmul's rearrangement copy (``mm_rearrange``), whose cycles include
#: the exchange of the operands it moves (conv_rearrange.py) but whose exchange code code.py
#: does not charge (a known gap: its code is counted as an on-tile copy's).
EXCHANGE_INSIDE_ROLES = frozenset({"mm_convolve", "mm_reduce", "reduce_final", "broadcast_compute"})

#: Roles of OnTileExecute steps that read only data held on their own tiles (a ring step's
#: reduction adds what the global exchange before it delivered): no exchange, so Poplar needs no
#: sync before them (:func:`place_syncs`). A PipelineStash / Restore's compute
#: reads its counter from the tile holding it, so it is not one.
ON_TILE_ROLES = frozenset({"compute", "scalar_update", "copy_in", "copy_out", "local_copy", "onehot_fill",
                           "reduce_partials", "mm_regroup", "ring_reduce"})

#: A step template: (program type, name suffix, role).
Template = tuple[str, str, str]

_SYNC: Template = ("Sync", "/Internal Sync", "sync_internal")


def templates(op: OpInfo, op_class: str, program: LoweredProgram, *, split_contraction: int = 1,
              weights_by_copy: bool = False) -> tuple[Template, ...]:
    """The (program type, name suffix, role) steps of one non-Call op (see module docstring).

    ``split_contraction`` is the number of compute sets a matmul's plan reduces its partials in
    (0 when it does not split its contraction; poplin's reduction stages, conv_reduce.py; True
    counts as one); ``weights_by_copy`` whether an input-gradient matmul's transposed weights
    take PopLibs' copy path (fc_weight_transpose.py).
    """
    if op_class in ("host_load", "host_store"):
        return (("StreamCopyBegin", "/Begin", "host_begin"), ("StreamCopyMid", "/Mid", "host_mid"),
                ("StreamCopyEnd", "/End", "host_end"))
    if op_class == "code_load":
        return (("StreamCopyBegin", "/Begin", "remote_begin"), ("RemoteLoad", "/code", "code_load"),
                ("StreamCopyEnd", "/End", "remote_end"))
    if op_class in ("remote_load", "remote_store"):
        mid = "RemoteLoad" if op_class == "remote_load" else "RemoteStore"
        return (("StreamCopyBegin", "/Begin", "remote_begin"), (mid, "", "remote_mid"),
                ("StreamCopyEnd", "/End", "remote_end"))
    if op_class == "collective":
        n_steps, reducing = ring_steps(op, program.replicas)
        if not n_steps:
            return (("OnTileExecute", "/OnTileCopy", "local_copy"), _SYNC)
        out: list[Template] = [("DoExchange", "/ExchangePre", "collective_pre")]
        for k in range(n_steps):
            out.append(("Sync", f"/step{k}/External Sync", "sync_external"))
            out.append(("GlobalExchange", f"/step{k}/GlobalExchange", "ring_exchange"))
            # all-reduce = reduce-scatter (reducing steps) then all-gather; reduce-scatter reduces every step
            if reducing and ("AllReduce" not in op.type or k < n_steps // 2):
                out.append(("OnTileExecute", f"/step{k}/Reduce", "ring_reduce"))
        out.append(_SYNC)
        return tuple(out)
    if op_class == "ipu_copy":
        # an inter-IPU copy is a global exchange over IPU-Links between external syncs
        # (as the real trace shows it) the data first moves on chip to the tiles that send it
        # over the links, and after the global exchange from the receiving tiles to the tiles of
        # the destination: a DoExchange on each side of the external sync and global exchange
        steps = (("DoExchange", "/ExchangePre", "ipu_copy_pre"), ("Sync", "/External Sync", "ipu_copy_sync"),
                 ("GlobalExchange", "/IpuCopy", "ipu_copy"), ("DoExchange", "/ExchangePost", "ipu_copy_post"))
        if op.attrs.get("pipeline") is None:
            return steps
        # in a pipeline the copies between stages go through the pipeline's buffers: the stage that
        # produces a copied tensor moves it into its buffer when it runs (the real trace's
        # <stage output>_to_<pipeline buffer> DoExchange, once per micro-batch), and the main
        # cycles, a repeat loop, copy its iterator into the loop body every iteration (the real
        # trace's ..._loop_...iterator DoExchange on the first IPU; held by the pipeline's first copy)
        buffer: tuple[Template, ...] = (("DoExchange", "/PipelineBuffer/ExchangePre", "ipu_copy_buffer"),)
        if any(pipe.copies and pipe.copies[0] == op.id for pipe in program.pipelines):
            buffer += (("DoExchange", "/PipelineIterator/ExchangePre", "pipeline_iterator"),)
        return buffer + steps
    if op_class == "io_tile_copy":
        return (("DoExchange", "/IoTileCopy", "io_tile_copy"), _SYNC)
    if op_class == "view":
        return ()
    if op_class == "write_undef":
        return (("WriteUndef", "", "write_undef"),)
    if op_class == "matmul":
        # the plan's rearranged operand begins its life undefined (the program tree's WriteUndef
        # before a matmul's copies, program_tree.png)
        steps: list[Template] = [("WriteUndef", "/rearranged/WriteUndef", "write_undef")]
        if weights_by_copy:
            # the weights regrouped (poplin regroupIfBeneficialForPlan): copied into the preRegroup
            # variable spread over the tiles, transposed, then both operands copied to the plan's
            # layout in one exchange (Poplar merges the post-transpose copies, as the real trace's
            # {...partialTranspose, ...}_to_{...actsRearranged, ...weightsRearranged} shows)
            steps += [("DoExchange", "/preRegroup/ExchangePre", "mm_preregroup"),
                      ("OnTileExecute", "/Transpose", "mm_regroup"), _SYNC,
                      ("DoExchange", "/rearranged/ExchangePre", "mm_rearrange_exchange"), _SYNC,
                      ("OnTileExecute", "/Convolve", "mm_convolve"), _SYNC]
        else:
            steps += [("OnTileExecute", "/weightsRearranged/OnTileCopy", "mm_rearrange"), _SYNC,
                      ("OnTileExecute", "/Convolve", "mm_convolve"), _SYNC]
        # one compute set per reduction stage, each receiving its partials (the real trace's Reduce0,
        # Reduce1, each after an internal sync)
        for k in range(int(split_contraction)):
            steps += [("OnTileExecute", f"/Reduce{k}", "mm_reduce"), _SYNC]
        return tuple(steps)
    if op_class == "reduce":
        return (("OnTileExecute", "/partials", "reduce_partials"), _SYNC,
                ("OnTileExecute", "/Reduce", "reduce_final"), _SYNC)
    if op_class == "init":
        return (("OnTileExecute", "/Fill", "compute"), _SYNC)
    if op.type == "NllLossWithSoftmaxGrad":
        # the labels' one-hot encoding (popops::encodeOneHot, lib/popops/Encoding.cpp): the encoder's
        # own tensor zeroed, the OneHotEncode compute set, then a Copy to the one-hot tensor laid out
        # like the probabilities (the real trace's nll/encodedOut_to_.../oneHot DoExchange); then the
        # loss and its gradient
        loss = "broadcast_compute" if _has_broadcast_input(op, program) else "compute"
        return (("OnTileExecute", "/nll/encodedOut/zero", "onehot_fill"), _SYNC,
                ("OnTileExecute", "/nll/OneHot/OneHotEncode", "onehot_fill"), _SYNC,
                ("DoExchange", "/nll/encodedOut/ExchangePre", "onehot_copy"), ("OnTileExecute", "", loss), _SYNC)
    if op.type in ("PipelineStash", "PipelineRestore"):
        # the stash written or read at its counter, and the counter's increment modulo the stash
        # size beside it (popxl-addons' stash: dynamic update / slice, then increment_mod_; the real
        # trace runs the two compute sets side by side, before one sync)
        return (("OnTileExecute", "", "compute"), ("OnTileExecute", "/increment_mod", "scalar_update"), _SYNC)
    if op.type == "AccumulateMean":
        # PopART's mean accumulation as the real trace shows it: the counter + 1 and b = 1 / (counter
        # + 1) (independent: no sync between), a = counter / (counter + 1), then accum = a accum + b x,
        # which shares its sync with the next compute set (the real trace: 54 syncs for 24 updates)
        return (("OnTileExecute", "/counter_1", "scalar_update"), ("OnTileExecute", "/b", "scalar_update"), _SYNC,
                ("OnTileExecute", "/a", "scalar_update"), _SYNC, ("OnTileExecute", "/AddTo", "compute"))
    if op_class == "elementwise" and _has_broadcast_input(op, program):
        return (("OnTileExecute", "", "broadcast_compute"), _SYNC)
    return (("OnTileExecute", "", "compute"), _SYNC)


def _smallest_tensor(op: OpInfo, program: LoweredProgram) -> str:
    """The op's tensor of fewest bytes ("" when it has none)."""
    known = [t for t in op.inputs + op.modified if t in program.tensors]
    return min(known, key=lambda t: (program.tensors[t].nbytes, t)) if known else ""


#: rounds of zero-copy aliasing through nested calls (each round one call level deeper; a bound
#: against a pathological program, far above the nesting of real ones)
_ZERO_COPY_ROUNDS = 16


def _graph_ops(program: LoweredProgram) -> dict[str, list[OpInfo]]:
    by_graph: dict[str, list[OpInfo]] = {}
    for op in program.ops.values():
        by_graph.setdefault(op.graph, []).append(op)
    return by_graph


def zero_copy_inputs(program: LoweredProgram, base_root: Mapping[str, str]) -> dict[str, str]:
    """Graph inputs that need no copy: {graph input id: parent tensor id}.

    popxl turns on PopART's ``aliasZeroCopy``, which lets a subgraph input share the storage of
    the tensor its call site passes instead of copying it (PopART ``AliasZeroCopy``: the only
    candidate is the first call site's tensor). The model takes an input as aliased when every
    reachable call site of its graph passes the same tensor (same storage root): then sharing is
    always possible. A graph called with different tensors (one Adam graph for fc2.weight and
    fc3.weight) copies its inputs in at every call, and copies modified inputs back.
    """
    sites: dict[str, list[OpInfo]] = {}
    reachable = reachable_graphs(program)
    for op in program.ops.values():
        if op.type == "Call" and op.graph in reachable:
            sites.setdefault(str(op.attrs.get("called_graph")), []).append(op)
    out: dict[str, str] = {}
    carried = {g_in for calls in sites.values() for c in calls for _o, g_in in (c.attrs.get("loop_carried") or ())}
    for graph, calls in sites.items():
        info = program.graphs.get(graph)
        if info is None:
            continue
        for g_in in info.inputs:
            if g_in in carried:
                continue
            parents = {str((c.attrs.get("inputs") or {}).get(g_in, "")) for c in calls}
            roots = {base_root.get(p, p) for p in parents}
            if len(roots) == 1 and "" not in parents:
                out[g_in] = next(iter(parents))
    return out


def alias_roots(program: LoweredProgram, op_class: Mapping[str, str],
                zero_copy: Mapping[str, str] | None = None) -> dict[str, str]:
    """Map every tensor id that shares storage with another to that tensor's storage root.

    Views alias their first input; outputs of in-place ops alias the modified input of the
    same shape and dtype (popxl's in-place ops return an alias); ``attrs["aliases"]``
    ({output id: input id}) is honoured when present; zero-copy graph inputs alias the tensor
    their call sites pass. Tensors not in the map own storage.
    """
    parent: dict[str, str] = {}

    def root(t: str) -> str:
        seen = 0
        while t in parent and seen < 1000:
            t = parent[t]
            seen += 1
        return t

    for g_in, src in (zero_copy or {}).items():
        if g_in != src:
            parent[g_in] = src
    for op in program.ops.values():
        explicit = op.attrs.get("aliases") if isinstance(op.attrs, Mapping) else None
        if isinstance(explicit, Mapping):
            for out, src in explicit.items():
                if out != src and root(src) != out:
                    parent[out] = root(src)
            continue
        if op_class.get(op.id) == "view" and op.inputs:
            for out in op.outputs:
                if root(op.inputs[0]) != out:
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
    by_graph = _graph_ops(program)
    while todo:
        g = todo.pop()
        for op in by_graph.get(g, ()):
            if op.type == "Call":
                called = (op.attrs.get("called_graph"), *(op.attrs.get("other_graphs") or ()))
            elif op.type == "RemoteCodeLoad":
                called = (op.attrs.get("code_graph"),)
            else:
                continue
            for c in called:
                if c and c not in seen:
                    seen.add(c)
                    todo.append(c)
    return seen


def call_copies(op: OpInfo, phase: str, zero_copy: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The (graph tensor, parent tensor) pairs a Call copies on ``phase`` ("enter" or "exit").

    enter: every graph input that is not zero-copy (CopyInput). exit: every graph output
    (CopyOutput) and every copied input the call modifies (CopyModified). iterate (a repeat,
    between iterations): (graph output, graph input) per loop-carried pair.
    """
    g_inputs: Mapping[str, str] = op.attrs.get("inputs") or {}
    if phase == "iterate":
        return tuple((str(o), str(i)) for o, i in (op.attrs.get("loop_carried") or ()))
    if phase == "enter":
        return tuple((g, p) for g, p in g_inputs.items() if g not in zero_copy)
    g_outputs: Mapping[str, str] = op.attrs.get("outputs") or {}
    back = tuple((g, p) for g, p in g_inputs.items() if g not in zero_copy and p in op.modified)
    return tuple(g_outputs.items()) + back


def copy_path_views(program: LoweredProgram, weights_by_copy: frozenset[str]) -> frozenset[str]:
    """The Transpose ops that are views: those giving a copy-path matmul its transposed weights
    (PopLibs' ``fullyConnectedWeightTranspose`` then returns a dimShuffle of the weights: no
    compute; fc_weight_transpose.py)."""
    producer = {t: op for op in program.ops.values() for t in op.outputs}
    out = set()
    for op_id in weights_by_copy:
        op = program.ops.get(op_id)
        src = producer.get(op.inputs[1]) if op is not None and len(op.inputs) > 1 else None
        if src is not None and src.type == "Transpose":
            out.add(src.id)
    return frozenset(out)


def _on_tile(step: StaticStep, program: LoweredProgram, producer: Mapping[str, str]) -> bool:
    """Whether ``step`` reads only data held on its own tiles (:data:`ON_TILE_ROLES`, except a
    stash's dynamic update or slice, which reads its counter from the tile holding it, and a mean
    accumulation's ``a`` and update, which read the scalars computed on one tile before them: the
    real trace syncs before each)."""
    if step.type != "OnTileExecute" or step.role not in ON_TILE_ROLES:
        return False
    op = program.ops.get(step.op)
    if op is None:
        return True
    if op.type == "AccumulateMean":
        return step.name.endswith(("/counter_1", "/b"))
    if step.role == "compute" and op.type in ("PipelineStash", "PipelineRestore"):
        return False
    return not (step.role == "compute" and _mixed_producers(op, program, producer))


def _mixed_producers(op: OpInfo, program: LoweredProgram, producer: Mapping[str, str]) -> bool:
    """Whether an element-wise op reads two or more non-scalar tensors made by different ops
    (ASSUMPTION: each op lays its output out as its own plan or first input does, so two producers'
    tensors sit on different tiles and the op receives one of them; the real trace syncs before
    gelu_grad, which reads the gradient and the recomputed activation, and not before gelu). A
    tensor no op makes (a graph input, a variable) is its own layout."""
    made = {producer.get(t, t) for t in op.inputs
            if t in program.tensors and program.tensors[t].nelms > 1}
    return len(made) > 1


def place_syncs(static: list[StaticStep] | tuple[StaticStep, ...], executed: list[int],
                ranges: np.ndarray, setup: int, program: LoweredProgram
                ) -> tuple[list[int], np.ndarray]:
    """The run's executed steps with an internal sync before each step that receives data from
    other tiles, and none before a step that reads only its own tiles' data.

    Poplar synchronises the tiles before an exchange, so that every tile's data is ready to be
    sent; compute sets that read only their own tiles' data run one after another without a sync.
    The real trace in shared/data shows it: a sync before each rearrangement copy, Convolve,
    Reduce0, Reduce1, bias add (a broadcast) and DoExchange, and none in ``add -> copy -> gelu ->
    copy``. The lowering's templates put a sync after compute sets; here an executed internal
    sync followed by an OnTileExecute that reads only its own tiles (:data:`ON_TILE_ROLES`) is
    dropped, and an OnTileExecute that receives or a DoExchange with no sync before it gets its
    op's own sync step first; a sync before any other step (host and remote transfers, inter-IPU
    steps, the end of the run) stays. A sync stays in its op's steps; ``ranges`` (per schedule
    entry) follow.
    """
    marker = [st.type in NO_CODE_STEP_TYPES or st.role == "call" for st in static]
    producer = {t: op.id for op in program.ops.values() for t in op.outputs}
    on_tile = [_on_tile(st, program, producer) for st in static]
    own_sync: dict[str, int] = {}
    for st in static:
        if st.role == "sync_internal" and st.op and st.op not in own_sync:
            own_sync[st.op] = st.index
    # per static step (vectorised over the run's executed steps: a large program runs millions)
    is_sync_of = np.array([st.role == "sync_internal" for st in static] + [False], dtype=bool)
    real_of = np.array([not (m or st.role == "sync_internal") for st, m in zip(static, marker)] + [False], dtype=bool)
    on_tile_of = np.array([st.type == "OnTileExecute" and t for st, t in zip(static, on_tile)] + [False], dtype=bool)
    receives_of = np.array([(st.type == "OnTileExecute" and not t) or st.type == "DoExchange"
                            for st, t in zip(static, on_tile)] + [False], dtype=bool)
    own_of = np.array([own_sync.get(st.op, -1) for st in static] + [-1], dtype=np.int64)
    run = np.asarray(executed[setup:], dtype=np.int64)
    is_sync = is_sync_of[run]
    real_pos = np.flatnonzero(real_of[run])
    sync_pos = np.flatnonzero(is_sync)
    # a sync is decided by the next real step (markers skipped), and only the last sync before it
    nxt = np.searchsorted(real_pos, sync_pos, side="right")
    last = np.ones(len(sync_pos), dtype=bool)
    last[:-1] = nxt[:-1] != nxt[1:]
    decided = last & (nxt < len(real_pos))
    drop = np.zeros(len(sync_pos), dtype=bool)
    drop[decided] = on_tile_of[run[real_pos[nxt[decided]]]]
    keep = np.ones(len(run), dtype=bool)
    keep[sync_pos[drop]] = False
    # a step that receives with no sync since the previous real step gets its op's own sync first
    syncs_before = np.concatenate([[0], np.cumsum(is_sync)])
    prev_end = np.concatenate([[0], real_pos[:-1] + 1])
    alone = syncs_before[real_pos] == syncs_before[prev_end]
    want = alone & receives_of[run[real_pos]] & (own_of[run[real_pos]] >= 0)
    ins_pos = real_pos[want]
    kept_before = np.concatenate([[0], np.cumsum(keep)])
    out_run = np.insert(run[keep], kept_before[ins_pos], own_of[run[ins_pos]])

    # every range bound at once (a large program's schedule has about a million entries)
    r = np.asarray(ranges, dtype=np.int64).reshape(-1, 2) - setup
    out = list(executed[:setup]) + out_run.tolist()
    return out, setup + kept_before[r] + np.searchsorted(ins_pos, r, side="left")


def lower_to_steps(program: LoweredProgram, split_contraction: Mapping[str, int] | None = None,
                   weights_by_copy: frozenset[str] = frozenset()) -> ProgramSteps:
    """Build the static program steps and the executed sequence (WeightsFromHost, one run).

    ``split_contraction`` maps matmul op ids to the compute sets their plan reduces its partials
    in (0: the contraction is not split; default 1); ``weights_by_copy`` holds the input-gradient matmuls whose transposed
    weights take PopLibs' copy path (their Transpose is then a view). Returns
    :class:`ProgramSteps`. Static steps are created for every op of every reachable graph (calls
    outlined) in graph/op order; the executed sequence follows ``program.schedule``.
    """
    op_class = {op_id: classify(op, program) for op_id, op in program.ops.items()}
    for op_id in copy_path_views(program, weights_by_copy):
        op_class[op_id] = "view"
    base_root = alias_roots(program, op_class)
    zero_copy = zero_copy_inputs(program, base_root)
    roots = alias_roots(program, op_class, zero_copy)
    # a graph called from several graphs (popxl-addons' batch serialisation calls one step
    # graph from the prologue, the repeated body and the epilogue) is passed their inputs, which
    # are themselves zero-copy aliases of one tensor: each round sees one call level deeper
    for _ in range(_ZERO_COPY_ROUNDS):
        deeper = zero_copy_inputs(program, roots)
        if deeper == zero_copy:
            break
        zero_copy = deeper
        roots = alias_roots(program, op_class, zero_copy)
    splits = split_contraction or {}
    merged = merged_exchanges(program, op_class)
    static: list[StaticStep] = []
    by_key: dict[tuple[str, str], tuple[int, ...]] = {}

    def add(op: OpInfo, phase: str) -> None:
        idx = []
        base = op.name or op.id
        if op_class[op.id] == "call":
            made: list[tuple[str, str, str, str]] = []
            if phase == "enter":
                made.append((str(op.attrs.get("program") or "Call"), base, "call", ""))
            for g, _p in call_copies(op, phase, zero_copy):
                label = {"enter": "copy_in", "iterate": "loop_carry"}.get(phase, "copy_out")
                name = program.tensors[g].name if g in program.tensors else g
                role = "copy_out" if label == "loop_carry" else label
                made.append(("OnTileExecute", f"{base}/{label}/{name}/OnTileCopy", role, g))
            for ptype, name, role, tensor in made:
                step = StaticStep(len(static), op.id, phase, ptype, name, role, tensor)
                static.append(step)
                idx.append(step.index)
        else:
            # a remote transfer inside a merged exchange: one Begin and one End for the exchange
            for ptype, suffix, role in member_templates(templates(op, op_class[op.id], program,
                                                                  split_contraction=int(splits.get(op.id, 1)),
                                                                  weights_by_copy=op.id in weights_by_copy),
                                                        merged.get(op.id)):
                # a scalar update works on the op's smallest tensor (its counter) only
                scalar = _smallest_tensor(op, program) if role == "scalar_update" else ""
                step = StaticStep(len(static), op.id, phase, ptype, base + suffix, role, scalar)
                static.append(step)
                idx.append(step.index)
        by_key[(op.id, phase)] = tuple(idx)

    # WeightsFromHost: one host stream copy per on-chip variable, in creation order
    executed: list[int] = []
    written_at: dict[str, int] = {}
    for tid, info in program.tensors.items():
        if info.storage != "variable" or tid in roots:
            continue
        for ptype, suffix, role in (("StreamCopyBegin", "/Begin", "setup_begin"),
                                    ("StreamCopyMid", "/Mid", "setup_mid"),
                                    ("StreamCopyEnd", "/End", "setup_end")):
            step = StaticStep(len(static), "", "setup", ptype, f"{WEIGHTS_FROM_HOST}/{info.name}{suffix}", role, tid)
            static.append(step)
            if role == "setup_mid":
                written_at[tid] = len(executed)
            executed.append(step.index)
    setup = len(executed)

    reachable = reachable_graphs(program)
    for op in program.ops.values():
        if op.graph not in reachable:
            continue  # graphs never called are not compiled
        if op_class[op.id] == "call":
            add(op, "enter")
            add(op, "exit")
            if op.attrs.get("program") == "Repeat":
                add(op, "iterate")
        else:
            add(op, "")
    starts: list[int] = []
    ends: list[int] = []
    for entry in program.schedule:
        op = program.ops[entry.op]
        phase = entry.phase if op_class[op.id] == "call" else ""
        if op_class[op.id] == "call" and phase not in ("enter", "exit", "iterate"):
            phase = "enter"
        start = len(executed)
        executed.extend(by_key[(op.id, phase)])
        starts.append(start)
        ends.append(len(executed))
    ranges = np.column_stack([np.asarray(starts, dtype=np.int64), np.asarray(ends, dtype=np.int64)])
    del starts, ends
    executed, ranges = place_syncs(static, executed, ranges, setup, program)
    return ProgramSteps(
        static=tuple(static),
        exec_static=np.asarray(executed, dtype=np.int64),
        exec_ranges=ranges,
        op_class=op_class,
        alias_root=roots,
        setup_steps=setup,
        written_at=written_at,
        zero_copy=frozenset(zero_copy),
        weights_by_copy=frozenset(weights_by_copy),
    )
