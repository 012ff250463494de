"""Replicated tensor sharding helpers (``popxl_addons.rts``), in the API of the emulated
popxl-addons generation (reference popxl.md section 2.7; profcompare.backend.addons_generation):

- 3.0, the threshold API: a tensor is sharded when its shard group has more than one replica,
  it has at least ``threshold`` elements and its element count divides by the group size;
- 3.4, replica groupings: ``replica_sharded_spec(t, shard_over)`` shards when
  ``shard_over.group_size > 1`` and the count divides; ``reduce_replica_sharded_graph`` takes
  ``shard_groups`` (a NamedReplicaGrouping, per tensor) and ``replica_group``.

The reductions use popxl-addons' own collectives (``ops.replicated_strided_collectives``), as
the real helpers do; the emulator runs them as popxl's collectives with the same groups (their
op names in a real profile differ).
"""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons._compat import not_supported, ops, popxl
from profcompare.emulator.popxl_addons._generation import Generational, generational_getattr
from profcompare.emulator.popxl_addons.graph import GraphWithNamedArgs
from profcompare.emulator.popxl_addons.named_replica_grouping import NamedReplicaGrouping
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.ops.replicated_strided_collectives import (
    replicated_all_gather_strided,
    replicated_all_reduce_strided,
    replicated_reduce_scatter_strided,
)

__all__ = [
    "all_gather_replica_sharded_graph",
    "gather_replica_sharded_tensor",
    "reduce_replica_sharded_graph",
    "reduce_replica_sharded_tensor",
    "replica_sharded_spec",
]


def _ir() -> Any:
    return popxl.gcg().ir


def _instance_replicas() -> int:
    ir = _ir()
    return int(getattr(ir, "instance_replication_factor", ir.replication_factor))


def _spec_30(t: Any, threshold: int = 1024, replica_grouping: Any = None) -> Any:
    group = replica_grouping or _ir().replica_grouping()
    shard_size = _instance_replicas() // group.num_groups
    if shard_size > 1 and t.nelms >= threshold and not t.meta_shape and t.nelms % shard_size == 0:
        return popxl.TensorSpec((t.nelms // shard_size,), t.dtype, tuple(t.shape))
    return t.spec


def _spec_34(t: Any, shard_over: Any) -> Any:
    if t.meta_shape:
        return t.spec
    if shard_over.group_size == 1 or t.nelms % shard_over.group_size != 0:
        return t.spec
    return popxl.TensorSpec((t.nelms // shard_over.group_size,), t.dtype, tuple(t.shape))


def _reduce_scatter_or_slice(t: Any, op: str, replica_group: Any, shard_group: Any) -> Any:
    if replica_group == shard_group and replica_group.group_size > 1:
        return replicated_reduce_scatter_strided(
            t, op=op, group=replica_group, configure_output_for_replicated_tensor_sharding=True)
    if replica_group.group_size > 1:
        t = replicated_all_reduce_strided(t, op=op, group=replica_group)
    return ops.collectives.replica_sharded_slice(t, group=shard_group)


def _reduce_30(t: Any, op: str = "add", threshold: int = 1024, replica_group: Any = None,
               shard_group: Any = None) -> Any:
    replica_group = replica_group or _ir().replica_grouping()
    shard_group = shard_group or replica_group  # one instance: the instance grouping is the group
    if replica_group.group_size == 1:
        return t
    if t.nelms >= threshold and t.nelms % shard_group.group_size == 0:
        return _reduce_scatter_or_slice(t, op, replica_group, shard_group)
    return replicated_all_reduce_strided(t, op=op, group=replica_group)


def _reduce_34(t: Any, op: str = "add", replica_group: Any = None, shard_group: Any = None) -> Any:
    replica_group = replica_group or _ir().replica_grouping()
    shard_group = shard_group or replica_group
    if shard_group.group_size > 1 and t.nelms % shard_group.group_size == 0:
        return _reduce_scatter_or_slice(t, op, replica_group, shard_group)
    return replicated_all_reduce_strided(t, op=op, group=replica_group)


def _reduce_graph(tensors: NamedTensors, use_io_tiles: bool, reduce_one: Any) -> tuple[GraphWithNamedArgs, list[str]]:
    """Graph "replica_reduce": one named input per tensor and one output each, key-sorted."""
    if use_io_tiles:
        raise not_supported("rts.reduce_replica_sharded_graph(use_io_tiles=True)")
    names, specs = tensors.unpack()
    named_inputs: dict[str, Any] = {}

    def replica_reduce() -> list[Any]:
        outputs = []
        for name, spec in zip(names, specs):
            graph_input = popxl.graph_input(tuple(spec.shape), spec.dtype, name, meta_shape=tuple(spec.meta_shape or ()) or None)
            named_inputs[name] = graph_input
            outputs.append(reduce_one(name, graph_input))
        return outputs

    replica_reduce.__qualname__ = "replica_reduce"
    graph = popxl.gir().create_graph(replica_reduce)
    return GraphWithNamedArgs(graph, NamedTensors.from_dict(named_inputs)), list(names)


def _reduce_graph_30(tensors: NamedTensors, op: str = "add", threshold: int = 1024, use_io_tiles: bool = False,
                     shard_groups: NamedReplicaGrouping | None = None,
                     replica_group: Any = None) -> tuple[GraphWithNamedArgs, list[str]]:
    full = _ir().replica_grouping(stride=1, group_size=_instance_replicas())
    groups = (shard_groups or NamedReplicaGrouping.build_groups(list(tensors.named_tensors), full)).to_dict()
    return _reduce_graph(tensors, use_io_tiles,
                         lambda name, t: _reduce_30(t, op, threshold, replica_group=replica_group,
                                                    shard_group=groups[name]))


def _reduce_graph_34(tensors: NamedTensors, op: str = "add", use_io_tiles: bool = False,
                     shard_groups: NamedReplicaGrouping | None = None,
                     replica_group: Any = None) -> tuple[GraphWithNamedArgs, list[str]]:
    groups = shard_groups.to_dict() if shard_groups else {}
    return _reduce_graph(tensors, use_io_tiles,
                         lambda name, t: _reduce_34(t, op, replica_group=replica_group,
                                                    shard_group=groups.get(name, replica_group)))


_TO_34 = "the 3.0 threshold API was replaced by replica groupings"
_TO_30 = "the replica-grouping keywords arrived in sdk-release-3.1"

replica_sharded_spec = Generational("replica_sharded_spec", {"3.0": _spec_30, "3.4": _spec_34}, {
    "3.0": f"replica_sharded_spec(t, threshold=1024, replica_grouping=None); {_TO_30}",
    "3.4": f"replica_sharded_spec(t, shard_over) with shard_over a popxl ReplicaGrouping: ir.replica_grouping() "
           f"shards over all replicas, ir.replica_grouping(group_size=1) does not shard; {_TO_34}",
})
reduce_replica_sharded_tensor = Generational("reduce_replica_sharded_tensor", {"3.0": _reduce_30, "3.4": _reduce_34}, {
    "3.0": f"reduce_replica_sharded_tensor(t, op='add', threshold=1024, replica_group=None, shard_group=None); {_TO_30}",
    "3.4": f"reduce_replica_sharded_tensor(t, op='add', replica_group=None, shard_group=None), sharded when "
           f"shard_group.group_size > 1; {_TO_34}",
})
reduce_replica_sharded_graph = Generational(
    "reduce_replica_sharded_graph", {"3.0": _reduce_graph_30, "3.4": _reduce_graph_34}, {
        "3.0": "reduce_replica_sharded_graph(tensors, op='add', threshold=1024, use_io_tiles=False, "
               f"shard_groups=None, replica_group=None); {_TO_30}",
        "3.4": "reduce_replica_sharded_graph(tensors, op='add', use_io_tiles=False, shard_groups=None, "
               "replica_group=None): pass shard_groups=NamedReplicaGrouping.from_dict({name: grouping}) (from "
               "popxl_addons.named_replica_grouping; group_size 1 = all-reduced, not sharded) and "
               f"replica_group=ir.replica_grouping(); {_TO_34}",
    })

_GENERATIONAL = {g.name: g for g in (replica_sharded_spec, reduce_replica_sharded_tensor,
                                     reduce_replica_sharded_graph)}
# resolved per call through __getattr__, so the module never binds one generation's function
del replica_sharded_spec, reduce_replica_sharded_tensor, reduce_replica_sharded_graph

__getattr__ = generational_getattr(__name__, _GENERATIONAL)


def _gather_30(t: Any, use_io_tiles: bool = False, replica_group: Any = None) -> Any:
    from profcompare.emulator.popxl_addons.named_replica_grouping import get_instance_replica_grouping

    return _gather(t, use_io_tiles, get_instance_replica_grouping(replica_group or _ir().replica_grouping()))


def _gather_34(t: Any, use_io_tiles: bool = False, replica_group: Any = None) -> Any:
    return _gather(t, use_io_tiles, replica_group or _ir().replica_grouping())


def _gather(t: Any, use_io_tiles: bool, replica_group: Any) -> Any:
    """All-gather a sharded ``t`` (one with a meta_shape) over ``replica_group`` (on the I/O
    tiles when asked, then copied to the compute tiles); an unsharded ``t`` is only copied."""
    if t.meta_shape:
        if use_io_tiles:
            with popxl.io_tiles():
                t = replicated_all_gather_strided(t, group=replica_group)
        else:
            t = replicated_all_gather_strided(t, group=replica_group)
    if use_io_tiles:
        t = ops.io_tile_copy(t)
    return t


def all_gather_replica_sharded_graph(tensors: NamedTensors, use_io_tiles: bool = False,
                                     replica_groups: NamedReplicaGrouping | None = None
                                     ) -> tuple[GraphWithNamedArgs, list[str]]:
    """Return (graph ``all_gather``, output names): one named input per tensor of ``tensors``
    (key-sorted), each output the input all-gathered over its group of ``replica_groups``
    (default: all replicas; a grouping's ``const_rg`` is used)."""
    ir = _ir()
    groups = (replica_groups or NamedReplicaGrouping.build_groups(list(tensors.named_tensors),
                                                                  ir.replica_grouping())).to_dict()
    gather = _GENERATIONAL["gather_replica_sharded_tensor"].resolve()
    graph = ir.create_empty_graph("all_gather")
    names: list[str] = []
    args: dict[str, Any] = {}
    with graph, popxl.in_sequence(False):
        for name, tensor in zip(*tensors.unpack()):
            graph_input = popxl.graph_input(tensor.shape, tensor.dtype, tensor.name,
                                            meta_shape=tuple(tensor.meta_shape) or None)
            args[name] = graph_input
            names.append(name)
            popxl.graph_output(gather(graph_input, use_io_tiles=use_io_tiles, replica_group=groups[name].const_rg))
    return GraphWithNamedArgs(graph, NamedTensors.from_dict(args)), names


gather_replica_sharded_tensor = Generational(
    "gather_replica_sharded_tensor", {"3.0": _gather_30, "3.4": _gather_34}, {
        "3.0": "gather_replica_sharded_tensor(t, use_io_tiles=False, replica_group=None): the group is restricted "
               "to one instance",
        "3.4": "gather_replica_sharded_tensor(t, use_io_tiles=False, replica_group=None)",
    })
_GENERATIONAL[gather_replica_sharded_tensor.name] = gather_replica_sharded_tensor
del gather_replica_sharded_tensor
