"""Replicated tensor sharding helpers with the threshold rule of popxl-addons Gen A
(reference popxl.md section 2.7): a tensor is sharded across the replicas when it has at least
``threshold`` elements and its element count divides evenly by the replica count."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import not_supported, ops, popxl
from profcompare.emulator.popxl_addons.graph import GraphWithNamedArgs
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors

__all__ = [
    "replica_sharded_spec",
    "reduce_replica_sharded_graph",
    "reduce_replica_sharded_tensor",
    "is_sharded_by_rule",
]


def _replicas() -> int:
    ir = popxl.gir()
    return int(getattr(ir, "instance_replication_factor", ir.replication_factor))


def is_sharded_by_rule(nelms: int, threshold: float, replicas: int) -> bool:
    """Return True when a tensor of ``nelms`` elements is sharded over ``replicas`` replicas
    under ``threshold`` (more than one replica, nelms >= threshold, nelms divisible)."""
    return replicas > 1 and nelms >= threshold and nelms % replicas == 0


def replica_sharded_spec(t: Any, threshold: float = 1024, replica_grouping: Any = None) -> Any:
    """Return the TensorSpec of ``t``'s shard, ``((nelms // replicas,), dtype, meta_shape=t.shape)``,
    when ``t`` is not sharded yet and the threshold rule shards it; otherwise ``t.spec``."""
    if replica_grouping is not None:
        raise not_supported("rts.replica_sharded_spec(replica_grouping=...)")
    replicas = _replicas()
    nelms = int(np.prod(t.shape, dtype=np.int64))
    if not t.meta_shape and is_sharded_by_rule(nelms, threshold, replicas):
        return popxl.TensorSpec((nelms // replicas,), t.dtype, meta_shape=tuple(t.shape))
    return t.spec


def reduce_replica_sharded_tensor(t: Any, op: str = "add", threshold: float = 1024) -> Any:
    """Return ``t`` reduced over all replicas with ``op``: a reduce-scatter to this replica's
    shard (meta_shape = t.shape) when the threshold rule shards it, else an all-reduce;
    ``t`` itself with one replica."""
    replicas = _replicas()
    if replicas == 1:
        return t
    if is_sharded_by_rule(t.nelms, threshold, replicas):
        return ops.collectives.replicated_reduce_scatter(
            t, op=op, configure_output_for_replicated_tensor_sharding=True
        )
    return ops.collectives.replicated_all_reduce(t, op=op)


def reduce_replica_sharded_graph(
    tensors: NamedTensors,
    op: str = "add",
    threshold: float = 1024,
    use_io_tiles: bool = False,
    shard_groups: Any = None,
    replica_group: Any = None,
) -> tuple[GraphWithNamedArgs, list[str]]:
    """Return (graph "replica_reduce", output names): one named input per tensor of ``tensors``
    and one output each, in key-sorted order, each reduced by :func:`reduce_replica_sharded_tensor`.
    Bind it to ``tensors`` and call it with no positional arguments."""
    if use_io_tiles:
        raise not_supported("rts.reduce_replica_sharded_graph(use_io_tiles=True)")
    if shard_groups is not None or replica_group is not None:
        raise not_supported("rts.reduce_replica_sharded_graph(shard_groups/replica_group)", "Gen B API")
    names, specs = tensors.unpack()
    named_inputs: dict[str, Any] = {}

    def replica_reduce() -> list[Any]:
        outputs = []
        for name, spec in zip(names, specs):
            graph_input = popxl.graph_input(
                tuple(spec.shape), spec.dtype, name, meta_shape=tuple(spec.meta_shape) or None
            )
            named_inputs[name] = graph_input
            outputs.append(reduce_replica_sharded_tensor(graph_input, op, threshold))
        return outputs

    replica_reduce.__qualname__ = "replica_reduce"
    graph = popxl.gir().create_graph(replica_reduce)
    return GraphWithNamedArgs(graph, NamedTensors.from_dict(named_inputs)), list(names)


def all_gather_replica_sharded_graph(tensors: Iterable[Any], *args: Any, **kwargs: Any) -> Any:
    """Outside the emulated subset (used only by the phased-execution example)."""
    raise not_supported("rts.all_gather_replica_sharded_graph")
