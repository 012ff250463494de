"""Gradient rules of the shape, indexing and collective ops, merged into :data:`.grad_rules.GRAD_RULES`.

They follow PopART's grad ops: slices pad the gradient back with zeros, concat slices it, split
concatenates, gather adds into zeros (GatherGrad), scatter splits the gradient between ``t``
(overwritten positions zeroed) and ``values`` (read at the indices), dynamic_update likewise,
onehot sums the gradient off and on the classes into ``values``, topk writes it back at the
chosen indices. Collectives: an all-gather's gradient is this replica's own slice of it, a local
reduce-scatter's (sharded or replicated slice) is an all-gather, all_reduce's is an all_reduce with
the identical-inputs flags swapped. In-place aliases (slice_, transpose_, concat_) have no rule:
PopART makes gradients before inplacing and refuses them too.

``ALL_OUTPUT_GRADS``: multi-output op types whose rule takes ``None`` for outputs without a
gradient (autodiff calls them when any output has one).
"""

from __future__ import annotations

from collections.abc import Callable

from .. import ops
from ..errors import SimulatorNotImplementedError, not_implemented_message
from ..graph import Op, add_op
from ..ops._util import out, single
from ..tensor import Tensor

Fwd = Callable[[Tensor], Tensor]
Rule = Callable[[Op, list, Fwd], list]

ALL_OUTPUT_GRADS = frozenset({"Split", "AllReduce"})


def _grad(op_type: str, inputs: list[Tensor], like: Tensor, **attrs: object) -> Tensor:
    name = op_type[0].lower() + op_type[1:]
    return single(add_op(op_type, name, inputs, [out(f"{name}_out", like.shape, like.dtype)], dict(attrs)))


def _slice(op: Op, gs: list, fwd: Fwd) -> list:
    at = op.attrs
    return [_grad("SliceGrad", [gs[0]], op.inputs[0], starts=at["starts"], stops=at["stops"], steps=at["steps"],
                  axes=at["axes"])]


def _concat(op: Op, gs: list, fwd: Fwd) -> list:
    ax = op.attrs["axis"]
    result, start = [], 0
    for t in op.inputs:
        n = t.shape[ax]
        result.append(ops.slice(gs[0], start, start + n, 1, ax))
        start += n
    return result


def _split(op: Op, gs: list, fwd: Fwd) -> list:
    parts = [g if g is not None else ops.init(o.shape, o.dtype, "split_grad_zero") for g, o in zip(gs, op.outputs)]
    return [ops.concat(parts, op.attrs["axis"])]


def _gather(op: Op, gs: list, fwd: Fwd) -> list:
    return [_grad("GatherGrad", [gs[0], fwd(op.inputs[1])], op.inputs[0], axis=op.attrs["axis"],
                  group_size=op.attrs["group_size"]), None]


def _scatter(op: Op, gs: list, fwd: Fwd) -> list:
    idx = fwd(op.inputs[1])
    ax = op.attrs["axis"]
    return [_grad("ScatterDataGrad", [gs[0], idx], op.inputs[0], axis=ax), None,
            _grad("ScatterUpdateGrad", [gs[0], idx], op.inputs[2], axis=ax)]


def _scatter_reduce(op: Op, gs: list, fwd: Fwd) -> list:
    at = op.attrs
    if at["reduction"] not in ("sum", "none"):
        raise SimulatorNotImplementedError(not_implemented_message(
            f"autodiff of popxl.ops.scatter_reduce(reduction={at['reduction']!r})"))
    idx = fwd(op.inputs[1])
    d_data = _grad("ScatterReduceGrad", [gs[0], idx], op.inputs[0], axis=at["axis"], broadcast=at["broadcast"])
    result = [d_data, None]
    if len(op.inputs) > 2:
        if at["reduction"] == "sum":
            result.append(gs[0])
        else:
            result.append(_grad("ScatterReduceInitialGrad", [gs[0], idx], op.inputs[2], axis=at["axis"],
                                broadcast=at["broadcast"], data_shape=op.inputs[0].shape))
    return result


def _dynamic_slice(op: Op, gs: list, fwd: Fwd) -> list:
    at = op.attrs
    return [_grad("DynamicSlicePadGrad", [gs[0], fwd(op.inputs[1])], op.inputs[0], axes=at["axes"],
                  sizes=at["sizes"], no_overlap=at["no_overlap"]), None]


def _dynamic_update(op: Op, gs: list, fwd: Fwd) -> list:
    at = op.attrs
    idx = fwd(op.inputs[1])
    d_t = _grad("DynamicUpdateUpdaterGrad", [gs[0], idx], op.inputs[0], axes=at["axes"], sizes=at["sizes"],
                no_overlap=at["no_overlap"])
    d_update = ops.dynamic_slice(gs[0], idx, list(at["axes"]), list(at["sizes"]), at["no_overlap"])
    return [d_t, None, d_update]


def _onehot(op: Op, gs: list, fwd: Fwd) -> list:
    return [None, None, _grad("OnehotGrad", [gs[0], fwd(op.inputs[0])], op.inputs[2], axis=op.attrs["axis"],
                              depth=op.attrs["depth"])]


def _topk(op: Op, gs: list, fwd: Fwd) -> list:
    return [_grad("TopKGrad", [gs[0], fwd(op.outputs[1])], op.inputs[0], axis=op.attrs["axis"])]


def _subsample(op: Op, gs: list, fwd: Fwd) -> list:
    return [_grad("SubsampleGrad", [gs[0]], op.inputs[0], strides=op.attrs["strides"])]


def _all_gather(op: Op, gs: list, fwd: Fwd) -> list:
    from ..ops import collectives

    x = op.inputs[0]
    group = op.attrs["group"]
    mode = op.attrs["output_shape"]
    if mode == "meta_shape":
        shard = collectives.replica_sharded_slice(gs[0], group)
        return [shard if shard.shape == x.shape else ops.reshape(shard, x.shape)]
    return [collectives.replicated_slice(gs[0], 0 if mode == "new_axis" else op.attrs["axis"], group)]


def _reduce_scatter(op: Op, gs: list, fwd: Fwd) -> list:
    from ..ops import collectives

    if op.attrs["op"] != "local":
        raise SimulatorNotImplementedError(not_implemented_message(
            f"autodiff of popxl.ops.collectives.replicated_reduce_scatter(op={op.attrs['op']!r}) "
            "(PopART has a gradient only for the local slice)"))
    x = op.inputs[0]
    full = collectives.replicated_all_gather(gs[0], 0, op.attrs["group"], "concat")
    if full.shape[0] != x.nelms:
        full = ops.slice(full, 0, x.nelms, 1, 0)  # drop the last shard's padding
    return [full if full.shape == x.shape else ops.reshape(full, x.shape)]


def _all_reduce(op: Op, gs: list, fwd: Fwd) -> list:
    from ..ops.collectives import _all_reduce_op

    if op.attrs["op"] != "add":
        raise SimulatorNotImplementedError(not_implemented_message(
            f"autodiff of popxl.ops.collectives.all_reduce(op={op.attrs['op']!r}) (PopART: 'add' only)"))
    grads = [g if g is not None else ops.init(o.shape, o.dtype, "all_reduce_grad_zero")
             for g, o in zip(gs, op.outputs)]
    return _all_reduce_op(grads, list(op.attrs["ipus"]), "add", identical_inputs=op.attrs["identical_grad_inputs"],
                          identical_grad_inputs=op.attrs["identical_inputs"])


SHAPE_GRAD_RULES: dict[str, Rule] = {
    "Slice": _slice,
    "Concat": _concat,
    "Split": _split,
    "Subsample": _subsample,
    "DetachInplace": lambda op, gs, fwd: [None],
    "Gather": _gather,
    "TiedGather": _gather,
    "Scatter": _scatter,
    "ScatterReduce": _scatter_reduce,
    "DynamicSlice": _dynamic_slice,
    "DynamicUpdate": _dynamic_update,
    "Onehot": _onehot,
    "TopK": _topk,
    "ReplicatedAllGather": _all_gather,
    "ReplicatedReduceScatter": _reduce_scatter,
    "AllReduce": _all_reduce,
}

__all__ = ["ALL_OUTPUT_GRADS", "SHAPE_GRAD_RULES"]
