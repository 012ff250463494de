"""Gradients of control flow and placement ops, used by :func:`.autodiff.autodiff`.

- ``If`` (popxl.ops.conditional): PopART's IfOp has a gradient op, IfGradOp, which is itself an
  If on the same condition whose branches are the gradient graphs of the two branches
  (willow/src/op/if.cpp). It has one output per forward input but the condition; the outputs the
  executed branch does not produce are zeroed (IfOpx::copyOutputs, willow/src/popx/op/ifx.cpp),
  so the inputs of the branch not taken get zero gradients. The condition gets no gradient
  (its IfConditionGradOp is an identity of a boolean). Here each grad branch is a small graph
  that calls the branch's gradient graph and adds the zeros for the other branch's inputs
  (popxl's If op needs both branches to have the same outputs).
- Ops without a gradient in PopART, refused with the API named and the reason: ``IpuCopy`` and
  ``IoTileCopy`` (IpuCopyOp and IoTileCopyOp define no grad ops, so no gradient crosses them and
  PopART's autodiff cannot provide the required gradients behind them), ``MatMulPow2Scaled``
  (MatMulOp::getGradOps refuses a pow2-scaled matmul) and the float8 casts
  (Pow2ScaleThenCastOp / CastThenPow2ScaleOp::getGradOps refuse float8 training) and
  ``ReplicatedAllReduce`` (ReplicatedAllReduceOp defines no grad op; AllReduceOp does; popxl-addons'
  strided all-reduce, a custom op of its own, has one: the same all-reduce of the gradient).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import ops
from ..graph import Graph, Op
from ..tensor import Tensor, graph_input, graph_output

Fwd = Callable[[Tensor], Tensor]
Rule = Callable[[Op, list, Fwd], list]


def if_grad(op: Op, out_grads: list[Tensor | None], fwd: Fwd, branch_info: Callable[[Graph], Any]
            ) -> list[Tensor | None]:
    """Gradients of a conditional's inputs (None for the condition): a conditional on the same
    condition whose branches call the branches' gradient graphs (``branch_info(graph)`` returns
    a GradGraphInfo) and give zeros for the inputs of the other branch."""
    then_g: Graph = op.attrs["then_branch"]
    else_g: Graph = op.attrs["else_branch"]
    n_then = int(op.attrs["n_then"])
    parents = [op.inputs[1:1 + n_then], op.inputs[1 + n_then:]]
    wrappers: list[Graph] = []
    args: list[list[Tensor]] = []
    for k, branch in enumerate((then_g, else_g)):
        info = branch_info(branch)
        branch_args: list[Tensor] = []
        for e in info.expected_inputs:
            t = e.fwd_tensor
            if e.connection_type.value == "FwdGrad":
                i = branch._outputs.index(t)
                g = out_grads[i] if i < len(out_grads) else None
                branch_args.append(g if g is not None else ops.init(t.shape, t.dtype, "Gradient___" + t.name, "zero"))
            elif t in branch._inputs:
                branch_args.append(fwd(parents[k][branch._inputs.index(t)]))
            elif t in branch._outputs:
                branch_args.append(fwd(op.outputs[branch._outputs.index(t)]))
            else:
                raise ValueError(f"autodiff: the gradient graph of conditional branch {branch.name!r} expects "
                                 f"{t.id}, which is neither an input nor an output of the branch (PopART's IfGradOp "
                                 "can only connect branch inputs, outputs and output gradients)")
        wrappers.append(_grad_branch(op, k, branch, info, branch_args, parents))
        args.append(branch_args)
    outs = ops.conditional(fwd(op.inputs[0]), wrappers[0], wrappers[1], args[0], args[1])
    return [None, *outs]


def _grad_branch(op: Op, k: int, branch: Graph, info: Any, like: Sequence[Tensor],
                 parents: Sequence[Sequence[Tensor]]) -> Graph:
    """Branch ``k`` of the gradient conditional: inputs like ``like``; outputs one gradient per
    forward input of both branches (then inputs, else inputs), this branch's from its gradient
    graph and zeros for the other's."""
    ir = branch.ir
    base = f"{branch.id}_if_grad"
    gid, n = base, 0
    while gid in ir._graphs:
        gid, n = f"{base}_{n}", n + 1
    wrapper = ir._add_graph(gid)
    with wrapper:
        ins = [graph_input(t.shape, t.dtype, t.name, meta_shape=t.meta_shape) for t in like]
        grads = ops.call(info.graph, *ins)
        by_input = {e.fwd_tensor: g for e, g in zip(info.expected_outputs, grads)}
        for j, group in enumerate(parents):
            for i, p in enumerate(group):
                g = by_input.get(branch._inputs[i]) if j == k else None
                if g is None:
                    g = ops.init(p.shape, p.dtype, "Gradient___" + p.name, "zero")
                graph_output(g)
    return wrapper


def _refuse(reason: str) -> Rule:
    def rule(op: Op, grads: list, fwd: Fwd) -> list:
        raise RuntimeError(f"autodiff of {op.name} ({op.type}): {reason}")
    return rule


_NO_ALL_REDUCE_GRAD = _refuse("popxl.ops.collectives.replicated_all_reduce has no gradient: PopART's "
                              "ReplicatedAllReduceOp defines no grad op (popxl.ops.collectives.all_reduce has one)")


def _replicated_all_reduce_grad(op: Op, grads: list, fwd: Fwd) -> list:
    """popxl's replicated all-reduce has no gradient (refused); popxl-addons' strided one
    (``replicated_all_reduce_strided``, marked ``addons_strided``) has: its ReplicatedAllReduceStridedOp's
    grad op is the same all-reduce over the same grouping (getGradOps)."""
    if not op.attrs.get("addons_strided"):
        return _NO_ALL_REDUCE_GRAD(op, grads, fwd)
    from ..ops.collectives import replicated_all_reduce

    grad = replicated_all_reduce(grads[0], op=op.attrs["op"], group=op.attrs["group"])
    grad._producer.attrs["addons_strided"] = True
    return [grad]


_NO_COPY_GRAD = ("PopART's {} defines no gradient op, so no gradient flows back through the copy and PopART's "
                 "autodiff cannot provide the gradients of the tensors behind it; differentiate the part on each "
                 "IPU or tile set as its own graph and copy the gradients with {} yourself")

GRAD_RULES_CONTROL: dict[str, Rule] = {
    "IpuCopy": _refuse(_NO_COPY_GRAD.format("IpuCopyOp (popxl.ops.ipu_copy / Tensor.copy_to_ipu)",
                                            "popxl.ops.ipu_copy")),
    "IoTileCopy": _refuse(_NO_COPY_GRAD.format("IoTileCopyOp (popxl.ops.io_tile_copy)", "popxl.ops.io_tile_copy")),
    "ReplicatedAllReduce": _replicated_all_reduce_grad,
    "MatMulPow2Scaled": _refuse("popxl.ops.matmul_pow2scaled has no gradient: PopART's MatMulOp refuses a "
                                "pow2-scaled (float8) matmul in a backward pass"),
    "Pow2ScaleThenCast": _refuse("popxl.ops.pow2scale_cast_to_fp8 has no gradient: PopART does not support "
                                 "float8 for training"),
    "CastThenPow2Scale": _refuse("popxl.ops.pow2scale_cast_from_fp8 has no gradient: PopART does not support "
                                 "float8 for training"),
}

__all__ = ["GRAD_RULES_CONTROL", "if_grad"]
