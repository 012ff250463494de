"""Remote (Streaming Memory) helpers: one remote buffer per named variable, and graphs that
load / store all of them at one entry (reference popxl.md section 2.6).

As in popxl-addons (releases 2.6 to 3.4), the loads and the stores of each helper are made inside
``popxl.transforms.merge_exchange()`` and ``in_sequence(False)``, so PopART merges them into one
exchange (compile/remote_exchange.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import not_supported, ops, popxl
from profcompare.emulator.popxl_addons._generation import Generational, generational_getattr
from profcompare.emulator.popxl_addons.dot_tree import DotTree
from profcompare.emulator.popxl_addons.graph import GraphWithNamedArgs
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.rts import _spec_30, _spec_34
from profcompare.emulator.popxl_addons.variable_factory import NamedVariableFactories

# as popxl-addons (both generations): what ``from popxl_addons.remote import *`` exports
__all__ = ["load_remote_graph", "store_remote_graph", "named_buffers", "named_variable_buffers", "create_remote_buffer"]


class NamedRemoteBuffers(DotTree[Any]):
    """A DotTree of popxl RemoteBuffers."""


def _ir() -> Any:
    return popxl.gcg().ir


def _sharded_buffer(spec: Any, entries: int, replica_group: Any, shard_over: int) -> Any:
    nelms = int(np.prod(spec.shape, dtype=np.int64))
    if nelms % shard_over != 0:
        raise ValueError(f"Can't shard tensor with {nelms} elements over {shard_over} replicas")
    shape = (replica_group.num_groups, *spec.shape) if replica_group.num_groups > 1 else tuple(spec.shape)
    return popxl.replica_sharded_buffer(shape, spec.dtype, replica_group, shard_over, entries)


def _plain_buffer(spec: Any, entries: int) -> Any:
    buffer = popxl.remote_buffer(tuple(spec.shape), spec.dtype, entries)
    if spec.meta_shape:
        buffer.meta_shape = tuple(spec.meta_shape)  # an already-sharded tensor: its shard's buffer
    return buffer


def _create_30(spec: Any, entries: int = 1, sharded_threshold: int = 1024, replica_group: Any = None,
               shard_over: int | None = None) -> Any:
    ir = _ir()
    replica_group = replica_group or ir.replica_grouping()
    shard_over = min(shard_over or replica_group.group_size, ir.instance_replication_factor)
    nelms = int(np.prod(spec.shape, dtype=np.int64))
    if not spec.meta_shape and shard_over > 1 and nelms >= max(sharded_threshold, shard_over):
        return _sharded_buffer(spec, entries, replica_group, shard_over)
    return _plain_buffer(spec, entries)


def _create_34(spec: Any, entries: int = 1, replica_group: Any = None, shard_over: int | None = None) -> Any:
    replica_group = replica_group or _ir().replica_grouping()
    shard_over = shard_over or replica_group.group_size
    if not spec.meta_shape and shard_over > 1:
        return _sharded_buffer(spec, entries, replica_group, shard_over)
    return _plain_buffer(spec, entries)


def _factory_spec(f: Any) -> Any:
    return popxl.TensorSpec(tuple(f.shape), f.dtype, tuple(f.meta_shape or ()))


def _variable_buffers_30(factories: NamedVariableFactories, entries: int = 1, sharded_threshold: int = 1024,
                         shard_over_dict: Mapping[str, int] | None = None) -> NamedRemoteBuffers:
    buffers = {}
    for name, f in factories.to_dict().items():
        shard_over = shard_over_dict[name] if shard_over_dict and name in shard_over_dict else None
        buffers[name] = _create_30(_factory_spec(f), entries=entries, sharded_threshold=sharded_threshold,
                                   replica_group=f.replica_grouping, shard_over=shard_over)
    return NamedRemoteBuffers.from_dict(buffers)


def _variable_buffers_34(factories: NamedVariableFactories, entries: int = 1,
                         shard_over_dict: Mapping[str, int] | int | bool = True) -> NamedRemoteBuffers:
    buffers = {}
    for name, f in factories.to_dict().items():
        group_size = f.replica_grouping.group_size
        if isinstance(shard_over_dict, Mapping):
            shard_over = shard_over_dict.get(name)
        elif isinstance(shard_over_dict, bool):
            shard_over = group_size if shard_over_dict else 1
        elif isinstance(shard_over_dict, int):
            if shard_over_dict < 1 or shard_over_dict > group_size:
                raise ValueError(f"Invalid shard_over_dict int value: {shard_over_dict}")
            shard_over = shard_over_dict
        else:
            raise ValueError("shard_over_dict must be a dictionary, an integer or a boolean")
        buffers[name] = _create_34(_factory_spec(f), entries=entries, replica_group=f.replica_grouping,
                                   shard_over=shard_over)
    return NamedRemoteBuffers.from_dict(buffers)


def _named_buffers_30(tensors: NamedTensors, entries: int = 1, sharded_threshold: int = 1024) -> NamedRemoteBuffers:
    buffers = {}
    for key, tensor in tensors.to_dict().items():
        buffers[key] = _plain_buffer(_spec_30(tensor, sharded_threshold), entries)
    return NamedRemoteBuffers.from_dict(buffers)


def _named_buffers_34(tensors: NamedTensors, entries: int = 1) -> NamedRemoteBuffers:
    buffers = {}
    for key, tensor in tensors.to_dict().items():
        # popxl-addons 3.4 calls replica_sharded_spec(t) without its required shard_over here, so
        # this function raises that TypeError for any non-empty input; so does the emulation
        buffers[key] = _plain_buffer(_spec_34(tensor), entries)  # type: ignore[call-arg]
    return NamedRemoteBuffers.from_dict(buffers)


_TO_34 = "the 3.0 threshold API was replaced by replica groupings"
_TO_30 = "shard_over keywords replaced the threshold in sdk-release-3.1"
named_variable_buffers = Generational(
    "named_variable_buffers", {"3.0": _variable_buffers_30, "3.4": _variable_buffers_34}, {
        "3.0": f"named_variable_buffers(factories, entries=1, sharded_threshold=1024, shard_over_dict=None); {_TO_30}",
        "3.4": "named_variable_buffers(factories, entries=1, shard_over_dict=True): shard_over_dict=False keeps "
               "every factory's own sharding (already-sharded factories keep their shard buffers), True shards "
               "every other factory over its replica group, or give an int or {name: shard count}; " + _TO_34,
    })
named_buffers = Generational("named_buffers", {"3.0": _named_buffers_30, "3.4": _named_buffers_34}, {
    "3.0": f"named_buffers(tensors, entries=1, sharded_threshold=1024); {_TO_30}",
    "3.4": f"named_buffers(tensors, entries=1); {_TO_34}",
})
create_remote_buffer = Generational("create_remote_buffer", {"3.0": _create_30, "3.4": _create_34}, {
    "3.0": f"create_remote_buffer(spec, entries=1, sharded_threshold=1024, replica_group=None, shard_over=None); {_TO_30}",
    "3.4": f"create_remote_buffer(spec, entries=1, replica_group=None, shard_over=None); {_TO_34}",
})
_GENERATIONAL = {g.name: g for g in (named_variable_buffers, named_buffers, create_remote_buffer)}
del named_variable_buffers, named_buffers, create_remote_buffer

__getattr__ = generational_getattr(__name__, _GENERATIONAL)


def _grow(buffer: Any, entries: int) -> None:
    if buffer.entries < entries:
        buffer.entries = entries


def load_remote_graph(
    buffers: NamedRemoteBuffers, entries: int = 1, use_io_tiles: bool = False
) -> tuple[GraphWithNamedArgs, list[str]]:
    """Return (graph "load_remote", names): the graph takes an int32 scalar ``load_index`` and
    outputs ``remote_load(buffer, load_index)`` for every buffer, in key-sorted order (``names``).
    Each buffer grows to at least ``entries`` entries. Call it as ``graph.call(entry)``."""
    if use_io_tiles:
        raise not_supported("remote.load_remote_graph(use_io_tiles=True)")
    names, bufs = buffers.unpack()
    for buffer in bufs:
        _grow(buffer, entries)

    def load_remote(load_index: popxl.Tensor) -> list[Any]:
        with popxl.transforms.merge_exchange(), popxl.in_sequence(False):
            return [ops.remote_load(buffer, load_index, name) for name, buffer in zip(names, bufs)]

    load_remote.__qualname__ = "load_remote"  # the graph's name, as popxl-addons names it
    graph = popxl.gir().create_graph(load_remote, popxl.TensorSpec((), popxl.int32))
    return GraphWithNamedArgs(graph), list(names)


def store_remote_graph(buffers: NamedRemoteBuffers, entries: int = 1, use_io_tiles: bool = False) -> GraphWithNamedArgs:
    """Return graph "store_remote": input ``store_index`` (int32 scalar) plus one named input per
    buffer (the buffer's tensor shape and meta_shape), storing each at ``store_index``.
    Bind it to the loaded tensors and call it as ``graph.bind(tensors).call(entry)``."""
    if use_io_tiles:
        raise not_supported("remote.store_remote_graph(use_io_tiles=True)")
    names, bufs = buffers.unpack()
    for buffer in bufs:
        _grow(buffer, entries)
    named_inputs: dict[str, Any] = {}

    def store_remote(store_index: popxl.Tensor) -> None:
        with popxl.transforms.merge_exchange(), popxl.in_sequence(False):
            for name, buffer in zip(names, bufs):
                value = popxl.graph_input(
                    tuple(buffer.tensor_shape), buffer.tensor_dtype, name, meta_shape=tuple(buffer.meta_shape) or None
                )
                named_inputs[name] = value
                ops.remote_store(buffer, store_index, value)

    store_remote.__qualname__ = "store_remote"
    graph = popxl.gir().create_graph(store_remote, popxl.TensorSpec((), popxl.int32))
    return GraphWithNamedArgs(graph, NamedTensors.from_dict(named_inputs))


def load_remote(buffers: NamedRemoteBuffers, entry: int | Any = 0) -> NamedTensors:
    """Return ``remote_load`` of every buffer at ``entry`` in the current graph (same keys)."""
    with popxl.transforms.merge_exchange(), popxl.in_sequence(False):
        return NamedTensors.from_dict({k: ops.remote_load(b, entry, k) for k, b in buffers.to_dict().items()})


def store_remote(buffers: NamedRemoteBuffers, tensors: NamedTensors, entry: int | Any = 0) -> None:
    """``remote_store`` every tensor of ``tensors`` into the buffer with the same key at ``entry``."""
    by_key = buffers.to_dict()
    with popxl.transforms.merge_exchange(), popxl.in_sequence(False):
        for key, tensor in tensors.to_dict().items():
            ops.remote_store(by_key[key], entry, tensor)
