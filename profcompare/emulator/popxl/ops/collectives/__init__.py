"""Replica collectives (popxl.ops.collectives): all-reduce, reduce-scatter, sharded and replicated
slices, all-gather; and all_reduce across the IPUs of one replica.

Shards use a plain layout (flatten, zero-pad to R*ceil(n/R), split), a consistent stand-in for
Poplar's collective-balanced reorder: element-wise maths on shards is identical.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence

from ...errors import module_getattr
from ...replica_grouping import ReplicaGrouping
from ...tensor import Tensor
from .._util import add_op, gcg, out, same_dtype, single
from ..core import reshape, transpose

#: popxl op strings -> collective operator; 'mul' maps to mean (a popxl quirk, kept on purpose)
OP_MAP = {"add": "add", "mean": "mean", "mul": "mean", "min": "min", "max": "max",
          "and": "and", "or": "or", "square_add": "square_add"}


def _op(op: str) -> str:
    try:
        return OP_MAP[op]
    except (KeyError, TypeError):
        raise ValueError(f"Not a valid op: {op}. Must choose from: {', '.join(OP_MAP)}") from None


def _group(group: ReplicaGrouping | None) -> ReplicaGrouping:
    g = gcg().ir.replica_grouping() if group is None else group
    if not isinstance(g, ReplicaGrouping):
        raise TypeError(f"group must be a ReplicaGrouping, got {type(g).__name__}")
    g._require_const("popxl.ops.collectives")
    if g.num_replicas != gcg().ir.replication_factor:
        raise ValueError(f"group {g} was made for another replication factor than the Ir's "
                         f"({gcg().ir.replication_factor})")
    return g


def _attrs(op: str, g: ReplicaGrouping, **extra: object) -> dict:
    return {"op": op, "group": g, "group_size": g.group_size, **extra}


def replicated_all_reduce(t: Tensor, op: str = "add", group: ReplicaGrouping | None = None) -> Tensor:
    """Reduce ``t`` over the replicas of ``group``; same shape ('mean' = sum / group size)."""
    g = _group(group)
    return single(add_op("ReplicatedAllReduce", "replicated_all_reduce", [t],
                         [out(t.name + "_all_reduce", t.shape, t.dtype, t.meta_shape)], _attrs(_op(op), g)))


def replicated_all_reduce_(t: Tensor, op: str = "add", group: ReplicaGrouping | None = None) -> Tensor:
    """In-place all-reduce of ``t``; returns t's alias."""
    g = _group(group)
    return single(add_op("ReplicatedAllReduceInplace", "replicated_all_reduce_inplace", [t],
                         [out(t.name + "_all_reduce", t.shape, t.dtype, t.meta_shape)], _attrs(_op(op), g),
                         modified=[t]))


def _reduce_scatter(t: Tensor, op: str, group: ReplicaGrouping | None, rts: bool, suffix: str) -> Tensor:
    g = _group(group)
    shard = -(-t.nelms // g.group_size)
    return single(add_op("ReplicatedReduceScatter", "replicated_reduce_scatter", [t],
                         [out(t.name + suffix, (shard,), t.dtype, t.shape if rts else ())],
                         _attrs(op, g, rts=rts)))


def replicated_reduce_scatter(t: Tensor, op: str = "add", group: ReplicaGrouping | None = None,
                              configure_output_for_replicated_tensor_sharding: bool = False) -> Tensor:
    """Reduce ``t`` (flattened) over the group; each replica keeps its ``(ceil(n/R),)`` shard
    (last shard zero padded). With RTS configured the output's meta_shape is t's shape."""
    return _reduce_scatter(t, _op(op), group, bool(configure_output_for_replicated_tensor_sharding),
                           "_reduce_scattered")


def replica_sharded_slice(t: Tensor, group: ReplicaGrouping | None = None) -> Tensor:
    """This replica's RTS shard of ``t`` (no reduction): ``(ceil(n/R),)``, meta_shape t's shape."""
    return _reduce_scatter(t, "local", group, True, "_sharded_slice")


def replicated_all_gather(t: Tensor, axis: int = 0, group: ReplicaGrouping | None = None,
                          output_shape: str = "auto") -> Tensor:
    """Gather ``t`` from every replica of the group.

    output_shape: 'new_axis' -> (group, *shape); 'concat' -> concatenated on ``axis``;
    'meta_shape' -> t.meta_shape with the padding dropped; 'auto' -> meta_shape if t has one."""
    if not isinstance(axis, int):
        raise ValueError(f"Axis should be an int. Type: {type(axis)}. Value: {axis}")
    g = _group(group)
    if output_shape == "auto":
        output_shape = "meta_shape" if t.meta_shape else "concat"
    if output_shape == "new_axis":
        shape = (g.group_size, *t.shape)
    elif output_shape == "concat":
        if t.rank == 0:
            raise ValueError("replicated_all_gather: cannot concatenate scalars; use output_shape='new_axis'")
        ax = axis % t.rank
        shape = tuple(s * g.group_size if i == ax else s for i, s in enumerate(t.shape))
        axis = ax
    elif output_shape == "meta_shape":
        if not t.meta_shape:
            raise ValueError(f"replicated_all_gather: {t.id} has no meta_shape")
        shape = t.meta_shape
    else:
        raise ValueError("output_shape must equal one of 'new_axis', 'concat', 'meta_shape', 'auto'. "
                         f"Value: {output_shape}")
    return single(add_op("ReplicatedAllGather", "replicated_all_gathered", [t],
                         [out(t.name + "_all_gathered", shape, t.dtype)],
                         _attrs("gather", g, output_shape=output_shape, axis=axis)))


def replicated_slice(t: Tensor, axis: int = 0, group: ReplicaGrouping | None = None) -> Tensor:
    """This replica's equal part of ``t`` along ``axis`` (replica rank i of the group takes part i);
    the axis is dropped when each part has length one. Built as popxl builds it: the axis moved
    first and flattened, a local reduce-scatter (no RTS), then reshaped and moved back."""
    g = _group(group)
    if not isinstance(axis, int) or not -t.rank <= axis < t.rank:
        raise ValueError(f"replicated_slice: axis {axis!r} is out of range for {t.id} of rank {t.rank}")
    axis %= t.rank
    if t.shape[axis] % g.group_size != 0:
        raise ValueError(f"Replicated slice must equally divide axis. Axis size: {t.shape[axis]}. "
                         f"Replica group size: {g.group_size}")
    x = t
    if axis > 0:
        perm = list(range(t.rank))
        perm.insert(0, perm.pop(axis))
        x = transpose(x, perm)
    new_shape = list(x.shape)
    x = reshape(x, (x.nelms,))
    if new_shape[0] == g.group_size:
        new_shape.pop(0)
    else:
        new_shape[0] //= g.group_size
    y = _reduce_scatter(x, "local", g, False, "_replicated_slice")
    y = reshape(y, new_shape)
    if axis > 0:
        # as popxl does, also when the axis was dropped: the first remaining axis moves to ``axis``
        perm = list(range(y.rank))
        perm.insert(axis, perm.pop(0))
        y = transpose(y, perm)
    return y


class CommGroupType(enum.Enum):
    """Kinds of replica group of the older collectives API (popart.CommGroupType)."""

    All = 0
    Consecutive = 1
    Orthogonal = 2
    None_ = 3


class CommGroup:
    """A replica group by kind and size (popart.CommGroup); All with size 0 by default."""

    def __init__(self, type: CommGroupType = CommGroupType.All, replicaGroupSize: int = 0) -> None:
        if not isinstance(type, CommGroupType):
            raise TypeError(f"CommGroup: type must be a CommGroupType, got {type!r}")
        self.type = type
        self.replicaGroupSize = int(replicaGroupSize)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CommGroup) and (other.type, other.replicaGroupSize) == (
            self.type, self.replicaGroupSize)

    def __hash__(self) -> int:
        return hash((self.type, self.replicaGroupSize))

    def __repr__(self) -> str:
        return f"CommGroup(type={self.type}, replicaGroupSize={self.replicaGroupSize})"


def _all_reduce_op(ts: Sequence[Tensor], ipus: list[int] | None, op: str, identical_inputs: bool = False,
                   identical_grad_inputs: bool = False) -> list[Tensor]:
    ts = list(ts)
    red = _op(op)
    gcg()  # inside a graph
    if not ts:
        raise ValueError("all_reduce: there must be at least one input")
    for i, t in enumerate(ts):
        if not isinstance(t, Tensor):
            raise TypeError(f"The input `t{i}` is not a Tensor. Type: {type(t)}. Value: {t}.")
    if ipus is None:
        try:
            ipus = [int(t.ipu) for t in ts]  # type: ignore[attr-defined]
        except (AttributeError, TypeError, ValueError) as e:
            raise ValueError("Could not automatically infer the IPU of all input Tensors `ts`. "
                             "Please specify the IPUs via the `ipus` parameter.") from e
    ipus = [int(i) for i in ipus]
    if len(ts) != len(ipus):
        raise ValueError(f"Number of specified tensor does not equal number of specified IPUs. "
                         f"{len(ts)} != {len(ipus)}")
    same_dtype("all_reduce", *ts)
    if any(t.shape != ts[0].shape for t in ts):
        raise ValueError(f"all_reduce: inputs must have the same shape, got {[t.shape for t in ts]}")
    attrs = {"op": red, "ipus": tuple(ipus), "identical_inputs": bool(identical_inputs),
             "identical_grad_inputs": bool(identical_grad_inputs), "group_size": len(ts)}
    outs = [out(f"all_reduce_out_{i}", t.shape, t.dtype) for i, t in enumerate(ts)]
    return list(add_op("AllReduce", "all_reduce", ts, outs, attrs).outputs)


def all_reduce(ts: list[Tensor], ipus: list[int] | None = None, op: str = "add") -> list[Tensor]:
    """Reduce ``ts`` (one tensor per IPU of the same replica); every output holds the result."""
    return _all_reduce_op(ts, ipus, op)


def all_reduce_identical_inputs(ts: list[Tensor], ipus: list[int] | None = None, op: str = "add") -> list[Tensor]:
    """all_reduce over inputs known to be equal: an identity forward, an all-reduce of the gradients."""
    return _all_reduce_op(ts, ipus, op, identical_inputs=True)


def all_reduce_identical_grad_inputs(ts: list[Tensor], ipus: list[int] | None = None,
                                     op: str = "add") -> list[Tensor]:
    """all_reduce whose gradients are known to be equal: an all-reduce forward, identity gradients."""
    return _all_reduce_op(ts, ipus, op, identical_grad_inputs=True)


__getattr__ = module_getattr("popxl.ops.collectives")

__all__ = [
    "CommGroup",
    "CommGroupType",
    "all_reduce",
    "all_reduce_identical_grad_inputs",
    "all_reduce_identical_inputs",
    "replica_sharded_slice",
    "replicated_all_gather",
    "replicated_all_reduce",
    "replicated_all_reduce_",
    "replicated_reduce_scatter",
    "replicated_slice",
]
