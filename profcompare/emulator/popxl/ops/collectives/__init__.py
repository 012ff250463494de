"""Replica collectives (popxl.ops.collectives): all-reduce, reduce-scatter, sharded slice, all-gather.

Shards use a plain layout (flatten, zero-pad to R*ceil(n/R), split), a consistent stand-in for
Poplar's collective-balanced reorder: element-wise maths on shards is identical.
"""

from __future__ import annotations

from ...errors import module_getattr
from ...replica_grouping import ReplicaGrouping
from ...tensor import Tensor
from .._util import add_op, gcg, out, single

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


__getattr__ = module_getattr("popxl.ops.collectives")

__all__ = [
    "replica_sharded_slice",
    "replicated_all_gather",
    "replicated_all_reduce",
    "replicated_all_reduce_",
    "replicated_reduce_scatter",
]
