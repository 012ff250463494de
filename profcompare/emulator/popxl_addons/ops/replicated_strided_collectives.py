"""popxl-addons' own collectives (``popxl_addons.ops.replicated_strided_collectives``, the same
names and parameters in 3.0 and 3.4), which its rts helpers reduce and gather with.

In popxl-addons these are C++ custom ops (``ReplicatedAllReduceStrided``, ...) compiled with
cppimport; their semantics over a ReplicaGrouping (stride, group size) are those of popxl's
collectives with ``group=``, which is what the emulator runs. Approximation: in a simulated
report the ops and their output tensors carry popxl's collective names and costs, not the
custom ops' (``replicated_all_reduce_strided_out``, ...).
"""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons._compat import ops

__all__ = [
    "replicated_all_gather_strided",
    "replicated_all_reduce_strided",
    "replicated_all_reduce_strided_identical_grad_inputs",
    "replicated_all_reduce_strided_identical_inputs",
    "replicated_reduce_scatter_strided",
]


def replicated_all_reduce_strided(t: Any, op: str = "add", group: Any = None) -> Any:
    """Return ``t`` reduced with ``op`` over the replicas of ``group`` (default: all). Unlike
    popxl's, it has a gradient: the same all-reduce of the gradient (its custom op's getGradOps)."""
    out = ops.collectives.replicated_all_reduce(t, op=op, group=group)
    out._producer.attrs["addons_strided"] = True
    return out


def replicated_all_reduce_strided_identical_inputs(t: Any, op: str = "add", group: Any = None) -> Any:
    """Return ``t``, identical on every replica of ``group``, whose gradient is all-reduced over
    it: popxl-addons' ReplicatedAllReduceStridedOp with ``identical_inputs``, the same op as
    ``replicated_all_reduce_identical_inputs`` (replicated_all_reduce_TP) over a grouping."""
    from profcompare.emulator.popxl_addons.ops.replicated_all_reduce_TP.replicated_all_reduce_TP import (
        replicated_all_reduce_identical_inputs,
    )

    return replicated_all_reduce_identical_inputs(t, op=op, group=group)


def replicated_all_reduce_strided_identical_grad_inputs(t: Any, op: str = "add", group: Any = None) -> Any:
    """Return ``t`` all-reduced over ``group``, whose gradient (identical on every replica)
    passes unchanged: ``identical_grad_inputs``, as ``replicated_all_reduce_identical_grad_inputs``."""
    from profcompare.emulator.popxl_addons.ops.replicated_all_reduce_TP.replicated_all_reduce_TP import (
        replicated_all_reduce_identical_grad_inputs,
    )

    return replicated_all_reduce_identical_grad_inputs(t, op=op, group=group)


def replicated_reduce_scatter_strided(t: Any, op: str = "add", group: Any = None,
                                      configure_output_for_replicated_tensor_sharding: bool = False) -> Any:
    """Return this replica's part of ``t`` reduced over ``group``: the flattened, padded shard
    ``(ceil(nelms / group_size),)``, with ``meta_shape`` = t's shape when configured for RTS."""
    return ops.collectives.replicated_reduce_scatter(
        t, op=op, group=group,
        configure_output_for_replicated_tensor_sharding=configure_output_for_replicated_tensor_sharding)


def replicated_all_gather_strided(t: Any, group: Any = None) -> Any:
    """Return the shards of ``t`` from every replica of ``group``: flat, ``(group_size * nelms,)``
    in replica order, as popxl-addons' ReplicatedAllGatherStridedOp shapes its output
    (``setup``), and a sharded ``t`` reshaped to its meta_shape (padding dropped)."""
    if t.meta_shape:
        return ops.collectives.replicated_all_gather(t, group=group)
    gathered = ops.collectives.replicated_all_gather(t, group=group, output_shape="new_axis")
    return gathered.reshape((gathered.nelms,))
