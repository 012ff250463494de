"""Reverse-mode automatic differentiation of a subgraph (popxl.transforms.autodiff).

The gradient graph ``<fwd id>_bwd`` has inputs: first the gradients of ``grads_provided``
(``Gradient___<name>``, in that order), then the forward tensors its gradient ops connect
(activations and constants, named as in the forward graph; PopART's gradient ops connect some
they do not use, see ``_BINARY_GRAD_INPUTS``). Forward tensors it needs that are neither inputs nor outputs of the
forward graph become extra forward-graph outputs, so call sites created *after* autodiff expose
them. Its outputs are the gradients of ``grads_required`` in order (``Gradient___<name>``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import Enum

import numpy as np

from .. import ops
from ..context import get_current_context
from ..errors import SimulatorNotImplementedError, not_implemented_message
from ..graph import Graph, Op, add_op
from ..ops.call import CallSiteInfo
from ..ops.core import _expand, _gelu_grad
from ..tensor import Constant, Tensor, constant, graph_input, graph_output
from .grad_rules import reduce_to as _reduce_to
from .grad_rules_control import if_grad
from .grad_rules_shape import ALL_OUTPUT_GRADS


class ExpectedConnectionType(Enum):
    """Whether a gradient-graph input/output is a forward tensor or the gradient of one."""

    Fwd = "Fwd"
    FwdGrad = "FwdGrad"


class ExpectedConnection:
    """One gradient-graph input or output, described by the forward tensor it relates to."""

    __slots__ = ("_fwd_tensor", "_type")

    def __init__(self, fwd_tensor: Tensor, connection_type: ExpectedConnectionType) -> None:
        self._fwd_tensor = fwd_tensor
        self._type = connection_type

    @property
    def fwd_tensor(self) -> Tensor:
        """The forward-graph tensor."""
        return self._fwd_tensor

    @property
    def connection_type(self) -> ExpectedConnectionType:
        """Fwd (the tensor itself) or FwdGrad (its gradient)."""
        return self._type

    def __repr__(self) -> str:
        return f"({self._type}, {self._fwd_tensor})"


class GradGraphInfo:
    """Result of :func:`autodiff`: the gradient graph and how to connect it."""

    def __init__(self, graph: Graph, forward_graph: Graph, expected_inputs: list[ExpectedConnection],
                 expected_outputs: list[ExpectedConnection]) -> None:
        self._graph = graph
        self._fwd = forward_graph
        self._expected_inputs = tuple(expected_inputs)
        self._expected_outputs = tuple(expected_outputs)

    @property
    def graph(self) -> Graph:
        """The gradient graph."""
        return self._graph

    @property
    def forward_graph(self) -> Graph:
        """The differentiated graph."""
        return self._fwd

    @property
    def expected_inputs(self) -> tuple[ExpectedConnection, ...]:
        """Gradient-graph inputs: FwdGrad entries (grads_provided order), then Fwd activations."""
        return self._expected_inputs

    @property
    def expected_outputs(self) -> tuple[ExpectedConnection, ...]:
        """Gradient-graph outputs: FwdGrad entries matching grads_required."""
        return self._expected_outputs

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """Forward tensors of every expected input."""
        return tuple(e.fwd_tensor for e in self._expected_inputs)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        """Forward tensors whose gradients are the outputs."""
        return tuple(e.fwd_tensor for e in self._expected_outputs)

    def inputs_dict(self, fwd_call_info: CallSiteInfo) -> dict[Tensor, Tensor]:
        """Map the gradient graph's activation inputs to the tensors at a forward call site.

        Raises TypeError when the call site calls another graph."""
        if fwd_call_info.called_graph != self._fwd:
            raise TypeError("The called graph does not match the graph that was differentiated.")
        return {self._graph._inputs[i]: fwd_call_info.graph_to_parent(e.fwd_tensor)
                for i, e in enumerate(self._expected_inputs) if e.connection_type is ExpectedConnectionType.Fwd}

    def fwd_graph_ins_to_grad_parent_outs(self, grad_call_info: CallSiteInfo) -> dict[Tensor, Tensor]:
        """Map forward-graph tensors to the parent tensors receiving their gradients."""
        return {t: grad_call_info.graph_to_parent(self._graph._outputs[i]) for i, t in enumerate(self.outputs)}

    def fwd_parent_ins_to_grad_parent_outs(self, fwd_call_info: CallSiteInfo,
                                           grad_call_info: CallSiteInfo) -> dict[Tensor, Tensor]:
        """Map the forward call site's parent inputs to the parent tensors receiving their gradients."""
        return {fwd_call_info.graph_to_parent(t): grad_call_info.graph_to_parent(self._graph._outputs[i])
                for i, t in enumerate(self.outputs)}

    def __repr__(self) -> str:
        ins = "".join(f"    {e!r}\n" for e in self._expected_inputs)
        outs = "".join(f"    {e!r}\n" for e in self._expected_outputs)
        return (f"GradGraphInfo[\n  graph={self._graph.id}\n  expected_inputs=[\n{ins}  ]\n"
                f"  expected_outputs=[\n{outs}  ]\n]")


def autodiff(graph: Graph, grads_provided: Iterable[Tensor] | None = None,
             grads_required: Iterable[Tensor] | None = None,
             called_graphs_grad_info: Mapping[Graph, GradGraphInfo] | None = None,
             return_all_grad_graphs: bool = False) -> GradGraphInfo | dict[Graph, GradGraphInfo]:
    """Differentiate ``graph`` and return the :class:`GradGraphInfo` of its gradient graph (with
    ``return_all_grad_graphs``: ``{graph: GradGraphInfo}`` for it and every graph it calls).

    ``grads_provided`` defaults to all forward outputs, ``grads_required`` to all inputs. A Call
    op is differentiated by calling the gradient graph of the called graph: the one given in
    ``called_graphs_grad_info``, else one made by differentiating the called graph (all its
    outputs provided, all its inputs required), as PopART does."""
    if not isinstance(graph, Graph):
        raise TypeError(f"autodiff needs a popxl Graph, got {type(graph).__name__}")
    if graph is graph.ir.main_graph:
        raise ValueError("autodiff needs a subgraph created with ir.create_graph, not the main graph")
    known = dict(called_graphs_grad_info or {})
    made: dict[Graph, GradGraphInfo] = {}
    info = _autodiff(graph, grads_provided, grads_required, known, made)
    if return_all_grad_graphs:
        return {**{g: i for g, i in known.items() if g in made}, **made}
    return info


def _autodiff(graph: Graph, grads_provided: Iterable[Tensor] | None, grads_required: Iterable[Tensor] | None,
              known: dict[Graph, GradGraphInfo], made: dict[Graph, GradGraphInfo]) -> GradGraphInfo:
    provided = list(graph._outputs) if grads_provided is None else list(grads_provided)
    required = list(graph._inputs) if grads_required is None else list(grads_required)
    for t in provided + required:
        if not isinstance(t, Tensor) or t._graph is not graph:
            raise ValueError(f"autodiff: {t!r} is not a tensor of graph {graph.name!r}")

    depends = {t for t in required}
    for op in graph._ops:
        if any(t in depends for t in op.inputs):
            depends.update(op.outputs)
    contributes = {t for t in provided}
    relevant: list[Op] = []
    for op in reversed(graph._ops):
        if any(t in contributes for t in op.outputs) and any(t in depends for t in op.inputs):
            contributes.update(op.inputs)
            relevant.append(op)

    for op in graph._ops:
        for m in op.modified:
            if m in depends or m in contributes:
                # PopART's autodiff refuses any graph holding a modifying op (checkForModifyingOps);
                # the simulator refuses only those on the gradient path
                raise RuntimeError(f"autodiff of op {op.type} ({op.name}): it modifies {m.id} in place on the "
                                   "gradient path, and PopART's autodiff cannot differentiate graphs with in-place "
                                   "modifying ops; use the out-of-place op")

    ir = graph.ir
    base = f"{graph.id}_bwd"
    gid, n = base, 0
    while gid in ir._graphs:
        gid, n = f"{base}_{n}", n + 1
    bwd = ir._add_graph(gid)

    # popxl's autodiff stitches with PopART's SafeAddFwdOutputs: an activation the gradient graph
    # needs becomes a new forward output when every call site is a Call (AddFwdOutputStitcher);
    # a graph called by an If (a conditional's branch) cannot grow outputs, so the gradient graph
    # recomputes it from the forward inputs instead (RecomputeStitcher, Minimal)
    recompute = not _only_call_sites(graph)
    ctx = get_current_context()
    saved_seq, saved_scopes = ctx.seq, ctx.name_scopes
    ctx.seq, ctx.name_scopes = [], []
    expected_in: list[ExpectedConnection] = []
    fwd_map: dict[Tensor, Tensor] = {}
    consumed: set[int] = set()  # ids of gradient-graph tensors PopART's binary gradient ops consume
    try:
        with bwd:
            grads: dict[Tensor, list[Tensor]] = {}
            for t in provided:
                gi = graph_input(t.shape, t.dtype, "Gradient___" + t.name, meta_shape=t.meta_shape)
                grads.setdefault(t, []).append(gi)
                expected_in.append(ExpectedConnection(t, ExpectedConnectionType.FwdGrad))

            def fwd(t: Tensor) -> Tensor:
                if t not in fwd_map:
                    if isinstance(t, Constant) and recompute:
                        fwd_map[t] = constant(t._data, t.dtype, t.name)
                    elif recompute and t._producer is not None and t not in graph._outputs:
                        _recompute(t._producer, fwd, fwd_map)
                    else:
                        fwd_map[t] = graph_input(t.shape, t.dtype, t.name, meta_shape=t.meta_shape)
                        expected_in.append(ExpectedConnection(t, ExpectedConnectionType.Fwd))
                return fwd_map[t]

            for op in relevant:
                out_grads = [_total(grads.get(o)) for o in op.outputs]
                if all(g is None for g in out_grads):
                    continue
                consumed.update(id(t) for t in _connect_binary_grad_inputs(op, depends, fwd))
                if op.type == "Call":
                    in_grads = _call_grad(op, out_grads, fwd, known, made)
                elif op.type == "If":
                    in_grads = if_grad(op, out_grads, fwd, lambda g: _branch_grad_info(g, known, made))
                else:
                    in_grads = _grad_rule(op, out_grads, fwd)
                for t, g in zip(op.inputs, in_grads):
                    if g is not None and t in depends:
                        grads.setdefault(t, []).append(g)

            expected_out = []
            for t in required:
                g = _total(grads.get(t))
                if g is None:
                    g = ops.init(t.shape, t.dtype, "Gradient___" + t.name, "zero")
                elif g._producer is not None and g not in bwd._outputs:
                    _rename(g, "Gradient___" + t.name)
                graph_output(g)
                expected_out.append(ExpectedConnection(t, ExpectedConnectionType.FwdGrad))
    finally:
        ctx.seq, ctx.name_scopes = saved_seq, saved_scopes

    expected_in = _prune(bwd, expected_in, fwd_map, consumed)
    for e in expected_in:
        t = e.fwd_tensor
        if recompute:
            break  # every activation was recomputed: the forward graph keeps its outputs
        if e.connection_type is ExpectedConnectionType.Fwd and t not in graph._inputs and t not in graph._outputs:
            graph._outputs.append(t)
            _stitch_call_sites(graph, t)
    info = GradGraphInfo(bwd, graph, expected_in, expected_out)
    bwd._grad_graph_info = info
    made[graph] = info
    return info


#: op type -> the inputs whose gradient op is PopART's ElementWiseBinaryGradOp, which connects
#: the forward op's two inputs and its output whether it uses them or not (willow/include/popart/
#: op/elementwise.hpp, gradInputInfo; mul.hpp, div.hpp, pow.hpp, fmod.hpp, atan2.hpp: both
#: inputs; subtract.hpp: the second only, the first's is a ReduceSumOp, as both of add.hpp's)
_BINARY_GRAD_INPUTS = {"Mul": (0, 1), "Div": (0, 1), "Pow": (0, 1), "Fmod": (0,), "Atan2": (0, 1), "Sub": (1,)}


def _connect_binary_grad_inputs(op: Op, depends: set[Tensor], fwd: Callable[[Tensor], Tensor]) -> list[Tensor]:
    """Bring the forward tensors a kept ElementWiseBinaryGradOp of ``op`` connects into the
    gradient graph (its first input, second input, then output: PopART's order). PopART grows
    every gradient op of the op and prunes those whose gradient nothing uses
    (BackwardsGraphCreatorHelper::doPrune), so one is kept when its input leads to a required
    gradient (is in ``depends``). Returns them as the gradient graph has them (the op consumes
    them there, so the pruning keeps them)."""
    if any(op.inputs[i] in depends for i in _BINARY_GRAD_INPUTS.get(op.type, ())):
        return [fwd(t) for t in (*op.inputs[:2], op.outputs[0])]
    return []


def _prune(bwd: Graph, expected_in: list[ExpectedConnection], fwd_map: dict[Tensor, Tensor],
           consumed: set[int] | None = None) -> list[ExpectedConnection]:
    """Remove the gradient graph's dead code, as PopART's autodiff does after growing it
    (BackwardsGraphCreatorHelper::doPrune): to a fixed point, ops none of whose outputs is consumed
    or a graph output (an unrequired input gradient, e.g. a matmul's left-hand gradient when only
    the weight's is required), then forward tensors brought in as inputs that nothing consumes any
    more (so the forward graph is not given outputs for them). Ops that modify a tensor in place
    are kept. The gradient inputs stay, in order (PopART keeps explicitly provided ones; when none
    are given it could drop an unused one too, which the simulator does not). ``consumed`` holds
    the ids of tensors PopART's gradient ops consume though the simulator's rules do not read them
    (:func:`_connect_binary_grad_inputs`): they are kept."""
    while True:
        used = {id(t) for op in bwd._ops for t in op.inputs} | {id(t) for t in bwd._outputs} | (consumed or set())
        dead = [op for op in bwd._ops if op.outputs and not op.modified
                and not any(id(o) in used for o in op.outputs)]
        if not dead:
            break
        gone = {id(op) for op in dead}
        ids = {op.id for op in dead}
        bwd._ops = [op for op in bwd._ops if id(op) not in gone]
        bwd._topo_constraints = [(a, b) for a, b in bwd._topo_constraints if a not in ids and b not in ids]
        for op in dead:
            for o in op.outputs:
                bwd._tensors.pop(o._id, None)
    for t in [t for t in bwd._tensors.values() if isinstance(t, Constant) and id(t) not in used]:
        del bwd._tensors[t._id]
    if len(expected_in) != len(bwd._inputs):
        return expected_in
    kept: list[ExpectedConnection] = []
    for e, t in zip(expected_in, list(bwd._inputs)):
        if e.connection_type is ExpectedConnectionType.Fwd and id(t) not in used:
            bwd._inputs.remove(t)
            bwd._tensors.pop(t._id, None)
            fwd_map.pop(e.fwd_tensor, None)
            continue
        kept.append(e)
    return kept


def _only_call_sites(graph: Graph) -> bool:
    """True when every op calling ``graph`` is a Call (none is an If or a Loop)."""
    for g in graph.ir._graphs.values():
        for op in g._ops:
            if op.type == "If" and graph in (op.attrs["then_branch"], op.attrs["else_branch"]):
                return False
            if op.type == "Loop" and op.attrs["called_graph"] is graph:
                return False
    return True


def _recompute(op: Op, fwd: Callable[[Tensor], Tensor], fwd_map: dict[Tensor, Tensor]) -> None:
    """Clone forward ``op`` into the current (gradient) graph, its inputs brought in by ``fwd``,
    and map its outputs to the clones (PopART's RecomputeStitcher copies the forward ops it needs)."""
    inputs = [fwd(t) for t in op.inputs]
    modified = [inputs[op.inputs.index(m)] for m in op.modified if m in op.inputs]
    prefix = op.graph._scope_prefix
    outs = [(o.id.removeprefix(prefix), o.shape, o.dtype, o.meta_shape) for o in op.outputs]
    clone = add_op(op.type, op.name, inputs, outs, dict(op.attrs), modified=modified)
    for o, c in zip(op.outputs, clone.outputs):
        fwd_map[o] = c


def _branch_grad_info(branch: Graph, known: dict[Graph, GradGraphInfo],
                      made: dict[Graph, GradGraphInfo]) -> GradGraphInfo:
    """The gradient graph of a conditional's branch: given in ``known``, else made here (all its
    outputs provided, all its inputs required, as PopART differentiates called graphs)."""
    info = known.get(branch)
    if info is None:
        if getattr(branch, "_no_recursive_autodiff", False):
            raise ValueError(f"autodiff: graph {branch.name!r} is marked as unsafe to autodiff recursively; "
                             "give its gradient graph in called_graphs_grad_info")
        info = _autodiff(branch, None, None, known, made)
        known[branch] = info
    return info


def _call_grad(op: Op, out_grads: list[Tensor | None], fwd: Callable[[Tensor], Tensor],
               known: dict[Graph, GradGraphInfo], made: dict[Graph, GradGraphInfo]) -> list[Tensor | None]:
    """Gradients of a Call op's inputs: a call of the called graph's gradient graph (given in
    ``known`` or made here), fed with the gradients of the call's outputs (zeros where none
    flows) and the forward tensors it expects, taken at this call site."""
    called: Graph = op.attrs["called_graph"]
    info = known.get(called)
    if info is None:
        if getattr(called, "_no_recursive_autodiff", False):
            raise ValueError(f"autodiff: graph {called.name!r} is marked as unsafe to autodiff recursively; "
                             "give its gradient graph in called_graphs_grad_info")
        info = _autodiff(called, None, None, known, made)  # stitches this call site's new outputs
        known[called] = info
    args: list[Tensor] = []
    for e in info.expected_inputs:
        t = e.fwd_tensor
        if e.connection_type is ExpectedConnectionType.FwdGrad:
            k = called._outputs.index(t)
            g = out_grads[k] if k < len(out_grads) else None
            args.append(g if g is not None else ops.init(t.shape, t.dtype, "Gradient___" + t.name, "zero"))
        elif t in called._inputs:
            args.append(fwd(op.inputs[called._inputs.index(t)]))
        elif t in called._outputs:
            args.append(fwd(op.outputs[called._outputs.index(t)]))
        else:
            raise ValueError(f"autodiff: the gradient graph of {called.name!r} expects {t.id}, which is neither "
                             "an input nor an output of the called graph")
    outs = ops.call(info.graph, *args)
    in_grads: list[Tensor | None] = [None] * len(op.inputs)
    for e, g in zip(info.expected_outputs, outs):
        if e.fwd_tensor in called._inputs:
            in_grads[called._inputs.index(e.fwd_tensor)] = g
    return in_grads


def _stitch_call_sites(graph: Graph, output: Tensor) -> None:
    """Give every existing call site of ``graph`` an output for its new graph output ``output``,
    as PopART's AddFwdOutputStitcher does (a parent tensor ``autodiff_output__t<N>``), so a
    forward graph may be called before it is differentiated."""
    for g in graph.ir._graphs.values():
        for op in g._ops:
            if op.type != "Call" or op.attrs.get("called_graph") is not graph:
                continue
            if len(op.outputs) != len(graph._outputs) - 1:
                continue  # already stitched
            tid = g._ir._intermediate_tensor_id(g._scope_prefix + "autodiff_output")
            t = Tensor._create(g, tid, output.shape, output.dtype, output.meta_shape)
            t._producer = op
            op.outputs.append(t)


def _rename(t: Tensor, name: str) -> None:
    g = t._graph
    new_id = g._scope_prefix + name
    if new_id in g._tensors or t in g._inputs:
        return
    del g._tensors[t._id]
    t._id = new_id
    g._tensors[new_id] = t


def _total(gs: list[Tensor] | None) -> Tensor | None:
    if not gs:
        return None
    total = gs[0]
    for g in gs[1:]:
        total = ops.add(total, g)
    return total


def _swap_last(t: Tensor) -> Tensor:
    perm = list(range(t.rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    return ops.transpose(t, perm)


def _phased(t: Tensor, phase: str) -> Tensor:
    """``t``, the output of a gradient matmul, with PopART's matmul phase recorded on its op:
    MatMulGradPattern replaces MatMulLhsGradOp / MatMulRhsGradOp by a MatMul of phase BwdLHS /
    BwdRHS, which MatMulOpx turns into PopLibs' fullyConnectedPass TRAINING_BWD / TRAINING_WU
    (popart willow/src/patterns/matmulgradpattern.cpp, willow/src/popx/op/matmulx.cpp)."""
    t._producer.attrs["phase"] = phase
    return t


def _matmul_grad(op: Op, g: Tensor, fwd: Callable[[Tensor], Tensor]) -> list[Tensor | None]:
    a_f, b_f = op.inputs
    if g.dtype != a_f.dtype:
        g = ops.cast(g, a_f.dtype)
    if a_f.rank >= 2 and b_f.rank == 2:
        a, b = fwd(a_f), fwd(b_f)
        da = _phased(ops.matmul(g, ops.transpose(b)), "BwdLHS")
        k, n = b_f.shape
        a2 = a if a.rank == 2 else ops.reshape(a, (-1, k))
        g2 = g if g.rank == 2 else ops.reshape(g, (-1, n))
        db = _phased(ops.matmul(ops.transpose(a2), g2), "BwdRHS")
        return [da, db]
    if a_f.rank == b_f.rank and a_f.rank > 2 and a_f.shape[:-2] == b_f.shape[:-2]:
        a, b = fwd(a_f), fwd(b_f)
        return [_phased(ops.matmul(g, _swap_last(b)), "BwdLHS"), _phased(ops.matmul(_swap_last(a), g), "BwdRHS")]
    raise SimulatorNotImplementedError(not_implemented_message(
        f"autodiff of matmul with shapes {a_f.shape} @ {b_f.shape}"))


def _grad_rule(op: Op, out_grads: list[Tensor | None], fwd: Callable[[Tensor], Tensor]) -> list[Tensor | None]:
    """Gradients w.r.t. op's inputs (None where none flows), built as ops of the current graph."""
    t = op.type
    g = out_grads[0] if out_grads else None
    ins = op.inputs
    if g is None and (t not in ALL_OUTPUT_GRADS or all(x is None for x in out_grads)):
        return [None] * len(ins)
    if t == "Add":
        return [_reduce_to(g, ins[0].shape), _reduce_to(g, ins[1].shape)]
    if t == "Sub":
        return [_reduce_to(g, ins[0].shape), ops.negate(_reduce_to(g, ins[1].shape))]
    if t == "Mul":
        return [_reduce_to(ops.mul(g, fwd(ins[1])), ins[0].shape), _reduce_to(ops.mul(g, fwd(ins[0])), ins[1].shape)]
    if t == "Div":
        a, b = fwd(ins[0]), fwd(ins[1])
        da = _reduce_to(ops.div(g, b), ins[0].shape)
        db = _reduce_to(ops.negate(ops.div(ops.mul(g, a), ops.mul(b, b))), ins[1].shape)
        return [da, db]
    if t == "Neg":
        return [ops.negate(g)]
    if t == "MatMul":
        return _matmul_grad(op, g, fwd)
    if t == "Gelu":
        return [_gelu_grad(g, fwd(ins[0]))]
    if t in ("Reshape", "ReshapeInplace"):
        return [ops.reshape(g, ins[0].shape)]
    if t == "Transpose":
        inv = list(np.argsort(op.attrs["perm"]))
        return [ops.transpose(g, inv)]
    if t == "Cast":
        return [ops.cast(g, ins[0].dtype)]
    if t == "Detach":
        return [None]
    if t == "Softmax":
        y = fwd(op.outputs[0])
        s = ops.sum(ops.mul(g, y), op.attrs["axis"], keepdims=True)
        return [ops.mul(y, ops.sub(g, s))]
    if t == "ReduceSum":
        x = ins[0]
        keep = tuple(1 if i in op.attrs["axes"] else s for i, s in enumerate(x.shape))
        g2 = g if g.shape == keep else ops.reshape(g, keep)
        return [_expand(g2, x.shape)]
    if t == "Expand":
        return [_reduce_to(g, ins[0].shape)]
    if t == "ScaledAdd" and not op.attrs["a_tensor"] and not op.attrs["b_tensor"]:
        x, y = ins[0], ins[1]
        dx = ops.mul(g, constant(op.attrs["a"], g.dtype))
        dy = ops.mul(g, constant(op.attrs["b"], g.dtype))
        return [dx, dy if y.dtype == g.dtype else ops.cast(dy, y.dtype)]
    if t == "Init":
        return []
    if t == "Loop":
        # PopART's LoopOp defines no gradient ops, so popxl cannot differentiate a repeat
        raise SimulatorNotImplementedError(
            f"autodiff through popxl.ops.repeat ({op.name}): PopART's LoopOp has no gradient")
    from .grad_rules import GRAD_RULES

    rule = GRAD_RULES.get(t)
    if rule is not None:
        return rule(op, out_grads, fwd)
    raise SimulatorNotImplementedError(not_implemented_message(f"autodiff of op {t} ({op.name})"))

