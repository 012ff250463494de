"""Lower a built simulator Ir into a :class:`~profcompare.emulator.program.LoweredProgram`.

The lowered program is what the compile model walks: plain records, no IR objects.

Conventions chosen here
-----------------------
- The main graph's id is :data:`MAIN_GRAPH_ID` (popxl's own main-graph id is the empty string;
  tensor ids of the main graph carry no scope either way).
- ``OpInfo.attrs`` holds plain values only. Besides the keys documented in program.py:
  ``aliases`` = {output id: input id} when an output shares an input's storage (in-place ops,
  reshapes/transposes/detach, and loads writing into their ``Init`` placeholder);
  ``merge_exchange`` = group id for transfers created inside ``transforms.merge_exchange()``;
  collectives also carry ``num_groups``, ``stride`` and ``rts`` / ``output_shape``; remote ops
  carry ``offset`` (int, or None when computed at run time).
- ``ops.repeat`` (IR op ``Loop``) and ``ops.conditional`` (IR op ``If``) lower to ``Call``
  records (the compile model treats them as calls) with ``attrs["program"]`` = "Repeat" / "If",
  plus ``repeat_count`` and ``loop_carried`` ((graph output, graph input) id pairs) for a repeat
  and ``other_graphs`` (the branch not executed) for a conditional. In the schedule a repeat's
  body is expanded once per iteration, with an ``ExecStep`` of phase ``"iterate"`` between
  iterations (the loop-carried copies); a conditional expands one branch (see :func:`_branch`).
  ``RemoteCodeLoad`` records carry ``code_graph`` (the id of the graph whose code is loaded).
  Calls carry ``constant_inputs`` = {graph input id: value} for integer scalar constants passed
  to the called graph, and Add / Sub records (:data:`INTEGER_ARITHMETIC`) {input id: value} for
  their integer scalar constant inputs (a loop counter's ``n + 1``).
- The pass-through op ending a popxl-addons custom op built from popxl ops (``CrossEntropySharded``,
  ``LayerNormDistributed``, ...) lowers to an ``Alias`` record (a view: no program steps)
  whose outputs alias the values it passes and whose ``custom_op`` attribute is the op's type.
  A ``ReplicatedAllReduceTP`` with ``identical_inputs`` lowers to ``Identity`` (PopART's
  OpToIdentityPattern), an elementwise copy rather than a collective.
- ``flops`` per replica for one execution: MatMul 2*M*K*N (popxl's matmul FLOPs); the
  per-element counts of the other ops (:data:`FLOPS_PER_ELEMENT`) are assumptions of this
  model, not measured on hardware.

Variable kinds (``TensorInfo.kind``), first rule that applies
---------------------------------------------------------------
1. stream tensors: ``stream``; constants: ``constant``.
2. Variables (on chip or remote) are classified by how the program uses them, following
   aliases, call sites (parent tensor -> graph input) and remote loads (buffer entry ->
   loaded tensor):
   ``accumulator`` if its name has an ``accum.`` component or is ``mean_accum_counter``, or it
   is updated by Accumulate/AccumulateMean/AccumulatorScale;
   ``optimizer_state`` if it is the state of a moving average (Adam first/second moment) or
   the time step of an AdamUpdater;
   ``kv_cache`` if it is written in place by a DynamicUpdate and read by a MatMul (an inference
   program's key/value cache: a position written each step, read back by the attention) and
   never updated as a weight (ScaledAdd / CopyVarUpdate / AdamVarUpdate);
   ``weight`` if it is read by a MatMul or Add (or is a Conv / ConvTranspose weight, float8
   scaled or not, or a GroupNormalization scale or bias), or updated by ScaledAdd/CopyVarUpdate;
   ``other`` otherwise.
3. Op outputs: RemoteLoad outputs are ``remote_staging``; collective outputs are
   ``gradient`` when their input is a gradient or accumulator (a mean-reduced or
   reduce-scattered gradient is the gradient the optimizer consumes, not an accumulator),
   ``weight`` / ``optimizer_state`` when they slice or gather such data, and
   ``collective_buffer`` otherwise (an in-place collective's output is its input); other
   outputs sharing an input's storage (in-place updates, reshapes)
   take that input's kind; the remaining op outputs of a gradient graph (made by autodiff) and
   the ``dx`` of nll_loss_with_softmax_grad are ``gradient``; Call outputs take the kind of the called graph's output; Init outputs are
   ``other``, except the placeholder a HostLoad / RemoteLoad writes into, which takes the
   kind of the loaded tensor; all other op outputs are ``activation``.
4. Gradient-graph inputs for FwdGrad entries are ``gradient``. Other graph inputs take the kind
   of the parent tensor at their first call site (``activation`` when never called).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import numpy as np

from profcompare.emulator.lowering_placement import NOT_LOWERED, is_placed, pipelines, tensor_placement
from profcompare.emulator.lowering_placement import ipus_per_replica as placement_ipus
from profcompare.emulator.popxl.graph import Graph, Op
from profcompare.emulator.popxl.ir import Ir
from profcompare.emulator.popxl.tensor import Constant, Tensor, Variable, _ReplicaShard
from profcompare.emulator.program import (
    ExecStep,
    GraphInfo,
    LoweredProgram,
    OpInfo,
    RemoteBufferInfo,
    StreamInfo,
    TensorInfo,
)

MAIN_GRAPH_ID = "main_graph"

#: assumed floating-point operations per output element (per input element for reductions)
FLOPS_PER_ELEMENT: dict[str, int] = {
    "Add": 1, "AddLhsInplace": 1, "Sub": 1, "Mul": 1, "Div": 1, "Neg": 1, "Expand": 0,
    "Gelu": 8, "GeluInplace": 8, "GeluGrad": 12, "Softmax": 5, "NllLossWithSoftmaxGrad": 3,
    "ReduceSum": 1, "ScaledAdd": 3, "ScaledAddLhsInplace": 3, "Accumulate": 2, "AccumulateSquare": 3,
    "AccumulateMean": 4, "AccumulateMovingAverage": 3, "AccumulateMovingAverageSquare": 4,
    "AccumulatorScale": 1, "AdamUpdater": 6, "ReplicatedAllReduce": 1, "ReplicatedAllReduceInplace": 1,
    "ReplicatedReduceScatter": 1,
    # extended popxl ops (assumed like the rows above: one per basic operation of the formula)
    "Relu": 1, "ReluInplace": 1, "ReluGrad": 1, "Exp": 4, "ExpInplace": 4, "Log": 4, "Log2": 4, "Sqrt": 4,
    "Tanh": 6, "Sin": 6, "Cos": 6, "Abs": 1, "AbsGrad": 2, "Floor": 1, "Ceil": 1, "Sign": 1, "Swish": 6,
    "SwishInplace": 6, "SwishGrad": 9, "GeluErf": 10, "GeluErfInplace": 10, "GeluErfGrad": 14, "IsNaN": 1,
    "IsInf": 1, "IsFinite": 1, "Not": 1, "Equal": 1, "Greater": 1, "And": 1, "Or": 1, "Pow": 8, "Fmod": 2,
    "Max": 1, "Where": 1, "Clip": 2, "ReduceMean": 1, "ReduceMax": 1, "ReduceMin": 1, "ReduceProd": 1,
    "ReduceSumSquare": 2, "ReduceLogSumExp": 6, "ReduceLogSum": 1, "ReduceL1": 2, "ReduceL2": 2, "ArgMax": 1,
    "ArgMin": 1, "CumSum": 1,
    # neural-network and random ops; Conv, ConvTranspose (float8 scaled ones too), pools and their
    # gradients carry their own "flops" attribute (convolutions: 2 x multiply-accumulates; pools:
    # one per window element)
    "GroupNormalization": 8, "GroupNormalizationGrad": 12, "BatchNormalization": 4, "Dropout": 2,
    "DropoutGrad": 2, "ShapedDropout": 2, "ShapedDropoutGrad": 2, "RandomUniform": 2, "RandomNormal": 4,
}

_INPLACE_TYPES = {"AddLhsInplace", "GeluInplace", "ReluInplace", "ExpInplace", "SwishInplace", "GeluErfInplace", "ScaledAddLhsInplace", "ReplicatedAllReduceInplace",
                  "RemoteLoadInplace", "Accumulate", "AccumulateSquare", "AccumulateMean", "AccumulateMovingAverage",
                  "AccumulateMovingAverageSquare", "AccumulatorScale", "CopyVarUpdate"}
#: reductions: FLOPs per input element
_REDUCE_TYPES = {"ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSumSquare", "ReduceLogSumExp",
                 "ReduceLogSum", "ReduceL1", "ReduceL2", "ArgMax", "ArgMin"}
#: lowered type of a custom op's pass-through (compile.programs.VIEW_TYPES: no steps, no cycles)
PASS_THROUGH_TYPE = "Alias"
_VIEW_TYPES = {"Reshape", "ReshapeInplace", "Transpose", "Detach"}
_COLLECTIVES = {"ReplicatedAllReduce", "ReplicatedAllReduceInplace", "ReplicatedReduceScatter", "ReplicatedAllGather"}
# shape, indexing and collective ops: moving data costs no FLOPs, these count their arithmetic
# (GatherGrad, ScatterReduce, TopK and OnehotGrad per input element; all_reduce within a replica
# one per element)
FLOPS_PER_ELEMENT.update({"GatherGrad": 1, "ScatterReduce": 1, "TopK": 1, "OnehotGrad": 1, "AllReduce": 1})
_REDUCE_TYPES |= {"GatherGrad", "ScatterReduce", "TopK", "OnehotGrad"}
_INPLACE_TYPES |= {"DynamicUpdateInplace", "IncrementModInplace", "SparseAccumulate", "AdamVarUpdate"}
_VIEW_TYPES |= {"SliceInplace", "TransposeInplace", "DetachInplace"}
_COLLECTIVES |= {"AllReduce"}

#: (op type, input index) -> role of the variable feeding it
_ROLES: dict[tuple[str, int], str] = {
    ("Accumulate", 0): "accumulator", ("AccumulateSquare", 0): "accumulator", ("AccumulateMean", 0): "accumulator",
    ("AccumulatorScale", 0): "accumulator",
    ("AccumulateMovingAverage", 0): "optimizer_state", ("AccumulateMovingAverageSquare", 0): "optimizer_state",
    ("AdamUpdater", 0): "optimizer_state", ("AdamUpdater", 1): "optimizer_state",
    ("MatMul", 0): "weight", ("MatMul", 1): "weight", ("Add", 0): "weight", ("Add", 1): "weight",
    ("ScaledAddLhsInplace", 0): "weight", ("CopyVarUpdate", 0): "weight",
    ("Conv", 1): "weight", ("ConvTranspose", 1): "weight", ("ConvPow2Scaled", 1): "weight",
    ("ConvTransposePow2Scaled", 1): "weight", ("GroupNormalization", 1): "weight",
    ("GroupNormalization", 2): "weight", ("SparseAccumulate", 0): "accumulator", ("AdamVarUpdate", 0): "weight",
}
_ROLE_PRIORITY = ("accumulator", "optimizer_state", "kv_cache", "weight")
#: ops that update a variable as a weight (an optimizer's step): such a variable is no cache
_WEIGHT_UPDATES = frozenset({"ScaledAddLhsInplace", "CopyVarUpdate", "AdamVarUpdate"})


def lower(ir: Ir, device: str = "ipu_model") -> LoweredProgram:
    """Return the LoweredProgram of ``ir`` (tensors, ops, graphs, expanded schedule, buffers, streams)."""
    graphs = list(ir._graphs.values())
    gid = {g: (MAIN_GRAPH_ID if g is ir.main_graph else g.id) for g in graphs}
    stream_tensors = {s._tensor: s for s in (*ir._h2d_streams, *ir._d2h_streams)}
    call_sites = _call_sites(graphs)
    aliases = {op: _aliases(op) for g in graphs for op in g._ops}
    kinds = _tensor_kinds(ir, graphs, call_sites, aliases, stream_tensors)

    tensors: dict[str, TensorInfo] = {}
    for g in graphs:
        for t in g._tensors.values():
            tensors[t.id] = _tensor_info(t, gid[g], kinds[t], t in stream_tensors)
    placed = is_placed(ir)
    if placed:  # more than one IPU or I/O tiles: each tensor's IPU and tile set
        where = tensor_placement(ir)
        tensors = {tid: dataclasses.replace(info, ipu=where[t][0], tile_set=where[t][1])
                   for g in graphs for tid, t in g._tensors.items() for info in (tensors[tid],)}
    ops: dict[str, OpInfo] = {}
    for g in graphs:
        for op in g._ops:
            if op.type in NOT_LOWERED:
                continue  # simulator-only records (a pipeline's re-run)
            ops[op.id] = _op_info(op, gid, aliases[op])
    graph_infos = {gid[g]: GraphInfo(id=gid[g], name=gid[g] if g is not ir.main_graph else MAIN_GRAPH_ID,
                                     ops=tuple(op.id for op in g._ops if op.type not in NOT_LOWERED), inputs=tuple(t.id for t in g._inputs),
                                     outputs=tuple(t.id for t in g._outputs),
                                     by_ref_inputs=tuple(t.id for t in g._by_ref_inputs))
                   for g in graphs}
    schedule: list[ExecStep] = []
    _expand(ir.main_graph, (), schedule, depth=0)
    buffers = tuple(_buffer_info(b) for _, b in sorted(ir._remote_buffers.items()))
    streams = tuple(StreamInfo(name=s.tensor_id, direction="h2d" if i < len(ir._h2d_streams) else "d2h",
                               shape=tuple(s.shape), dtype=s.dtype.name)
                    for i, s in enumerate((*ir._h2d_streams, *ir._d2h_streams)))
    return LoweredProgram(replicas=ir.replication_factor, num_host_transfers=ir.num_host_transfers,
                          main_graph=MAIN_GRAPH_ID, tensors=tensors, ops=ops, graphs=graph_infos,
                          schedule=tuple(schedule), remote_buffers=buffers, streams=streams, device=device,
                          ipus_per_replica=placement_ipus(ir) if placed else 1,
                          num_io_tiles=int(getattr(ir, "num_io_tiles", 0)), pipelines=pipelines(ir),
                          session_options=_session_options(ir))


def _session_options(ir: Ir) -> dict[str, Any]:
    """The Ir's PopART session options as set (session_options.py), plus the pre-alias patterns
    level when ``popxl_addons.patterns.apply_pre_alias_patterns`` ran."""
    options = {}
    if "_session_options_object" in vars(ir):
        ir._session_options.available_memory_proportion  # noqa: B018 - ValueError for a bad value, as Poplar's
        options = ir._session_options.as_dict()
    if getattr(ir, "_pre_alias_patterns", None):
        options["preAliasPatterns"] = ir._pre_alias_patterns
    return options


# --- records ------------------------------------------------------------------------------------
def _tensor_info(t: Tensor, graph_id: str, kind: str, is_stream: bool) -> TensorInfo:
    if is_stream:
        storage = "stream"
    elif isinstance(t, Variable):
        storage = "remote" if t._remote_buffer is not None else "variable"
    elif isinstance(t, _ReplicaShard):
        # replica_sharded_variable's shard: on chip, shard shape, meta_shape full; its buffer
        # (entry 0) is where WeightsFromHost loads it from and WeightsToHost stores it
        storage = "variable"
    elif isinstance(t, Constant):
        storage = "constant"
    else:
        storage = "intermediate"
    shape, meta, buf, entry = tuple(t.shape), tuple(t.meta_shape), None, None
    if isinstance(t, Variable) and t._remote_buffer is not None:
        buf = t._remote_buffer.remote_buffer_id
        entry = int(t._offset)
        if t._sharded:
            shape, meta = tuple(t._remote_buffer.tensor_shape), tuple(t.shape)
    if isinstance(t, _ReplicaShard):
        buf, entry = t._full._remote_buffer.remote_buffer_id, 0
    return TensorInfo(id=t.id, name=t.name, graph=graph_id, shape=shape, dtype=t.dtype.name, kind=kind,
                      storage=storage, meta_shape=meta, remote_buffer=buf, remote_offset=entry)


def _is_pass_through(op: Op) -> bool:
    """Whether ``op`` ends a custom op built from popxl ops (popxl_addons.ops._custom_grad): its
    outputs are copies of its last inputs and carry the custom op's type and gradient rule."""
    return callable(op.attrs.get("grad")) and isinstance(op.attrs.get("differentiable"), int)


def _aliases(op: Op) -> dict[Tensor, Tensor]:
    """{output: input} for an op whose output shares its first input's storage (a custom op's
    pass-through: each output shares the storage of the value it passes)."""
    if _is_pass_through(op):
        return dict(zip(op.outputs, op.inputs[len(op.inputs) - len(op.outputs):]))
    if op.outputs and (op.type in _VIEW_TYPES or op.type in _INPLACE_TYPES or op.type in ("HostLoad", "RemoteLoad")):
        return {op.outputs[0]: op.inputs[0]}
    return {}


def _flops(op: Op) -> int:
    if "flops" in op.attrs:  # computed by the op builder (convolutions, pools)
        return int(op.attrs["flops"])
    if op.type == "MatMul":
        out = op.outputs[0]
        return 2 * _nelms(out.shape) * int(op.attrs["k"])
    per = FLOPS_PER_ELEMENT.get(op.type, 0)
    if not per:
        return 0
    if op.type in ("ReduceSum", "ReplicatedReduceScatter", "NllLossWithSoftmaxGrad") or op.type in _REDUCE_TYPES:
        return per * _nelms(op.inputs[0].shape)
    if op.type == "AdamUpdater" and op.attrs.get("weight"):
        per += 2
    return per * _nelms(op.outputs[0].shape)


def _nelms(shape: Iterable[int]) -> int:
    shape = tuple(shape)
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def _plain(value: Any) -> Any:
    from profcompare.emulator.popxl.dtypes import dtype
    if isinstance(value, dtype):
        return value.name
    if isinstance(value, (tuple, list)):
        return tuple(_plain(v) for v in value)
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


#: op types whose integer scalar constant inputs are recorded (``attrs["constant_inputs"]``)
INTEGER_ARITHMETIC = frozenset({"Add", "Sub", "AddLhsInplace"})


def _int_scalar(t: Any) -> int | None:
    """The value of ``t`` when it is a one-element integer constant, else None."""
    if not isinstance(t, Constant) or getattr(t, "_data", None) is None:
        return None
    data = np.asarray(t._data)
    return int(data.reshape(-1)[0]) if data.size == 1 and np.issubdtype(data.dtype, np.integer) else None


def _op_info(op: Op, gid: dict[Graph, str], aliases: dict[Tensor, Tensor]) -> OpInfo:
    attrs: dict[str, Any] = {}
    for k, v in op.attrs.items():
        if k in ("called_graph", "stream", "remote_buffer", "group", "then_branch", "else_branch", "code_graph"):
            continue
        attrs[k] = _plain(v)
    op_type = op.type
    if _is_pass_through(op):
        # the custom op's last computation writes its outputs: the copy the simulator makes is
        # no Poplar program, so the record is a view whose ``custom_op`` is the op's type
        op_type = PASS_THROUGH_TYPE
        attrs["custom_op"] = op.type
        attrs.pop("grad", None)
    if op.type == "ReplicatedAllReduceTP" and op.attrs.get("identical_inputs"):
        # PopART's OpToIdentityPattern replaces it by an IdentityOp (a copy): no collective
        op_type = "Identity"
    if op.type in _CALL_LIKE:
        # repeat and conditional lower to Call records (the compile model treats them as calls)
        # whose ``program`` says which Poplar program they are; see _control_attrs
        op_type = "Call"
        callee, g_ins, g_outs = _bindings(op)[_branch(op)]
        attrs["called_graph"] = gid[callee]
        attrs["inputs"] = {g.id: p.id for g, p in zip(callee._inputs, g_ins)}
        attrs["outputs"] = {g.id: p.id for g, p in zip(callee._outputs, g_outs)}
        attrs["by_ref"] = tuple(t.id for t in callee._by_ref_inputs)
        # integer scalars passed as constants (the entry index of popxl-addons' load and store
        # graphs): attribution resolves which buffer entry a remote transfer in the call touches
        attrs["constant_inputs"] = {g.id: _int_scalar(p) for g, p in zip(callee._inputs, g_ins)
                                    if _int_scalar(p) is not None}
        attrs.update(_control_attrs(op, gid))
    elif op.type in INTEGER_ARITHMETIC:
        # integer scalar constants of the arithmetic a loop counter takes (``n + 1``): attribution
        # follows the layer index of a repeat to the buffer entry each iteration transfers
        constants = {t.id: _int_scalar(t) for t in op.inputs if _int_scalar(t) is not None}
        if constants:
            attrs["constant_inputs"] = constants
    if op.type == "RemoteCodeLoad":
        attrs["code_graph"] = gid[op.attrs["code_graph"]]
    if "stream" in op.attrs:
        attrs["stream"] = op.attrs["stream"].tensor_id
    if "remote_buffer" in op.attrs:
        attrs["remote_buffer"] = op.attrs["remote_buffer"].remote_buffer_id
        off = op.inputs[1]
        attrs["offset"] = int(np.asarray(off._data).reshape(-1)[0]) if isinstance(off, Constant) else None
    if "group" in op.attrs:
        g = op.attrs["group"]
        attrs["group_size"] = g.group_size
        attrs["num_groups"] = g.num_groups
        attrs["stride"] = g.stride
    if aliases:
        attrs["aliases"] = {o.id: i.id for o, i in aliases.items()}
    return OpInfo(id=op.id, graph=gid[op.graph], type=op_type, name=op.name, inputs=tuple(t.id for t in op.inputs),
                  outputs=tuple(t.id for t in op.outputs), modified=tuple(t.id for t in op.modified),
                  flops=_flops(op), attrs=attrs)


def _buffer_info(buf: Any) -> RemoteBufferInfo:
    names = [v.name for v in sorted(buf._variables, key=lambda v: v._offset)]
    name = names[0] if names else f"remote_buffer_{buf.remote_buffer_id}"
    held = tuple(v.id for v in sorted(buf._variables, key=lambda v: v._offset))
    return RemoteBufferInfo(id=buf.remote_buffer_id, name=name, shape=tuple(buf.tensor_shape),
                            dtype=buf.tensor_dtype.name, entries=buf.entries, meta_shape=tuple(buf.meta_shape),
                            variables=held)


#: IR op types that call graphs: ops.call, ops.repeat (PopART LoopOp), ops.conditional (IfOp)
_CALL_LIKE = ("Call", "Loop", "If")
#: largest schedule the lowering expands (a repeat's body is expanded once per iteration)
MAX_SCHEDULE_ENTRIES = 5_000_000


def _bindings(op: Op) -> list[tuple[Graph, list[Tensor], list[Tensor]]]:
    """(called graph, parent tensors of its inputs, parent tensors of its outputs) per graph
    ``op`` calls: one for Call and Loop, (then, else) for If."""
    if op.type == "If":
        n = int(op.attrs["n_then"])
        return [(op.attrs["then_branch"], op.inputs[1:1 + n], op.outputs),
                (op.attrs["else_branch"], op.inputs[1 + n:], op.outputs)]
    return [(op.attrs["called_graph"], op.inputs, op.outputs)]


def _branch(op: Op) -> int:
    """Index (in :func:`_bindings`) of the graph the compile model executes. For a conditional
    the condition is a run-time value, so the model takes the branch with more ops (the then
    branch on a tie): an upper bound of the run's cycles (docs/ipu-model.md)."""
    if op.type != "If":
        return 0
    return 1 if len(op.attrs["else_branch"]._ops) > len(op.attrs["then_branch"]._ops) else 0


def _control_attrs(op: Op, gid: dict[Graph, str]) -> dict[str, Any]:
    """Attributes of a lowered repeat or conditional: ``program`` (the Poplar program type:
    Call, Repeat or If), ``repeat_count`` and ``loop_carried`` ((graph output id, graph input
    id) pairs) of a repeat, ``other_graphs`` (the conditional's branch not executed by the
    model; its code is compiled all the same)."""
    if op.type == "Loop":
        g = op.attrs["called_graph"]
        return {"program": "Repeat", "repeat_count": int(op.attrs["repeat_count"]),
                "loop_carried": tuple((o.id, i.id) for o, i in zip(g._outputs, g._inputs))}
    if op.type == "If":
        graphs = [b[0] for b in _bindings(op)]
        return {"program": "If", "other_graphs": (gid[graphs[1 - _branch(op)]],)}
    return {}


def _expand(graph: Graph, path: tuple[str, ...], out: list[ExecStep], depth: int) -> None:
    if depth > 64:
        raise RecursionError(f"graph {graph.id!r}: calls nested more than 64 deep")
    if len(out) > MAX_SCHEDULE_ENTRIES:
        from profcompare.emulator.popxl.errors import SimulatorNotImplementedError, not_implemented_message
        raise SimulatorNotImplementedError(not_implemented_message(
            f"a program of more than {MAX_SCHEDULE_ENTRIES} executed ops (popxl.ops.repeat counts expanded)"))
    for op in graph._ops:
        if op.type in _CALL_LIKE:
            callee = _bindings(op)[_branch(op)][0]
            count = int(op.attrs["repeat_count"]) if op.type == "Loop" else 1
            out.append(ExecStep(index=len(out), op=op.id, call_path=path, phase="enter"))
            for it in range(count):
                if it:  # loop-carried outputs copied to the inputs of the next iteration
                    out.append(ExecStep(index=len(out), op=op.id, call_path=path, phase="iterate"))
                _expand(callee, path + (op.id,), out, depth + 1)
            out.append(ExecStep(index=len(out), op=op.id, call_path=path, phase="exit"))
        elif op.type not in NOT_LOWERED:
            out.append(ExecStep(index=len(out), op=op.id, call_path=path))


# --- kinds ---------------------------------------------------------------------------------------
def _call_sites(graphs: list[Graph]) -> dict[Graph, list[list[Tensor]]]:
    """Called graph -> the parent tensors of its inputs at each call site (calls, repeats and
    both branches of conditionals)."""
    sites: dict[Graph, list[list[Tensor]]] = {}
    for g in graphs:
        for op in g._ops:
            if op.type in _CALL_LIKE:
                for callee, ins, _outs in _bindings(op):
                    sites.setdefault(callee, []).append(list(ins))
    return sites


def _variable_roles(ir: Ir, graphs: list[Graph], call_sites: dict[Graph, list[list[Tensor]]],
                    aliases: dict[Op, dict[Tensor, Tensor]]) -> dict[Variable, set[str]]:
    """Roles of every variable, following aliases, call sites and remote loads to its uses."""
    # the shards of replica_sharded_variable are on-chip state of their own (their full
    # variable only lives in its buffer), so they are origins like variables
    on_chip_state = (*ir._variables, *ir._replica_shards)
    origins: dict[Tensor, set[Variable]] = {v: {v} for v in on_chip_state}
    by_entry: dict[tuple[int, int], set[Variable]] = {}
    by_buffer: dict[int, set[Variable]] = {}
    for v in ir._variables:
        if v._remote_buffer is not None:
            bid = v._remote_buffer.remote_buffer_id
            by_entry.setdefault((bid, v._offset), set()).add(v)
            by_buffer.setdefault(bid, set()).add(v)
    for _ in range(len(graphs) + 2):
        changed = False

        def add(t: Tensor, vs: set[Variable]) -> None:
            nonlocal changed
            if vs and not vs <= origins.get(t, set()):
                origins.setdefault(t, set()).update(vs)
                changed = True

        for g in graphs:
            for op in g._ops:
                for o, i in aliases[op].items():
                    add(o, origins.get(i, set()))
                if op.type in ("RemoteLoad", "RemoteLoadInplace"):
                    bid = op.attrs["remote_buffer"].remote_buffer_id
                    off = op.inputs[1]
                    if isinstance(off, Constant):
                        vs = by_entry.get((bid, int(np.asarray(off._data).reshape(-1)[0])), set())
                    else:
                        vs = by_buffer.get(bid, set())
                    add(op.outputs[0], vs)
                if op.type == "ReplicatedReduceScatter" and op.attrs["op"] == "local":
                    add(op.outputs[0], origins.get(op.inputs[0], set()))
                if op.type in _CALL_LIKE:
                    for callee, ins, outs in _bindings(op):
                        for gi, p in zip(callee._inputs, ins):
                            add(gi, origins.get(p, set()))
                        for go, p in zip(callee._outputs, outs):
                            add(p, origins.get(go, set()))
        if not changed:
            break
    roles: dict[Variable, set[str]] = {v: set() for v in on_chip_state}
    for g in graphs:
        for op in g._ops:
            for idx, t in enumerate(op.inputs):
                role = _ROLES.get((op.type, idx))
                if op.type == "AdamUpdater" and t in op.modified:
                    role = "optimizer_state"
                if role:
                    for v in origins.get(t, ()):
                        roles[v].add(role)
    # a key/value cache: written in place by a DynamicUpdate (one position per step) and read by
    # a MatMul (the attention), never updated as a weight
    written: dict[Variable, set[str]] = {}
    for g in graphs:
        for op in g._ops:
            if op.type == "DynamicUpdateInplace" or op.type in _WEIGHT_UPDATES:
                for v in origins.get(op.inputs[0], ()):
                    written.setdefault(v, set()).add(op.type)
    for v, ops_writing in written.items():
        if "DynamicUpdateInplace" in ops_writing and not ops_writing & _WEIGHT_UPDATES and "weight" in roles.get(v, ()):
            roles[v].add("kv_cache")
    for shard in ir._replica_shards:
        roles[shard._full] |= roles[shard]  # the full variable holds what its shard holds
    return roles


def _variable_kind(v: Variable, roles: set[str]) -> str:
    base = v.name.split("__t")[0]
    parts = base.replace("/", ".").split(".")
    if "accum" in parts or parts[-1] == "mean_accum_counter":
        return "accumulator"
    for role in _ROLE_PRIORITY:
        if role in roles:
            return role
    return "other"


def _collective_kind(source: str | None) -> str:
    """Kind of a collective's output from the kind of the tensor it reduces, slices or gathers:
    a reduced (or sliced) gradient or accumulator is a ``gradient`` (the accumulator itself is
    not changed); a slice or gather of a weight or optimizer state is that data, sharded or
    whole; anything else is a ``collective_buffer``."""
    if source in ("accumulator", "gradient"):
        return "gradient"
    if source in ("weight", "optimizer_state"):
        return source
    return "collective_buffer"


def _tensor_kinds(ir: Ir, graphs: list[Graph], call_sites: dict[Graph, list[list[Tensor]]],
                  aliases: dict[Op, dict[Tensor, Tensor]], stream_tensors: dict[Tensor, Any]) -> dict[Tensor, str]:
    roles = _variable_roles(ir, graphs, call_sites, aliases)
    kinds: dict[Tensor, str] = {}
    for g in graphs:
        for t in g._tensors.values():
            if t in stream_tensors:
                kinds[t] = "stream"
            elif isinstance(t, Constant):
                kinds[t] = "constant"
            elif isinstance(t, (Variable, _ReplicaShard)):
                kinds[t] = _variable_kind(t, roles[t])
            else:
                kinds[t] = "activation"
    grad_inputs: dict[Tensor, str] = {}
    for g in graphs:
        info = g._grad_graph_info
        if info is not None:
            for gi, e in zip(g._inputs, info.expected_inputs):
                grad_inputs[gi] = "gradient" if e.connection_type.value == "FwdGrad" else "activation"
    for _ in range(len(graphs) + 2):
        changed = False

        def put(t: Tensor, kind: str) -> None:
            nonlocal changed
            if kinds.get(t) != kind:
                kinds[t] = kind
                changed = True

        for g in graphs:
            is_grad = g._grad_graph_info is not None
            for gi in g._inputs:
                sites = call_sites.get(g)
                if grad_inputs.get(gi) == "gradient":
                    put(gi, "gradient")
                elif sites:
                    put(gi, kinds[sites[0][g._inputs.index(gi)]])
                elif gi in grad_inputs:
                    put(gi, grad_inputs[gi])
            for op in g._ops:
                alias = aliases[op]
                for i, o in enumerate(op.outputs):
                    if op.type in ("RemoteLoad", "RemoteLoadInplace"):
                        kind = "remote_staging"
                    elif op.type in _COLLECTIVES and o not in alias:
                        kind = _collective_kind(kinds.get(op.inputs[0]) if op.inputs else None)
                    elif o in alias and op.type != "HostLoad":
                        kind = kinds[alias[o]]
                    elif is_grad:
                        kind = "gradient"
                    elif op.type in _CALL_LIKE:
                        kind = kinds[_bindings(op)[_branch(op)][0]._outputs[i]]
                    elif op.type == "Init":
                        kind = "other"
                    elif op.type == "NllLossWithSoftmaxGrad":
                        kind = "gradient" if i == 1 else "activation"
                    else:
                        kind = "activation"
                    put(o, kind)
        if not changed:
            break
    # an Init placeholder that a host or remote load writes into owns the loaded data's
    # storage, so it is reported as what is loaded (remote state: remote_staging)
    placeholders = {o for g in graphs for op in g._ops if op.type == "Init" for o in op.outputs}
    for g in graphs:
        for op in g._ops:
            if op.type in ("HostLoad", "RemoteLoad", "RemoteLoadInplace"):
                for loaded, target in aliases[op].items():
                    if target in placeholders:
                        kinds[target] = kinds[loaded]
    return kinds
