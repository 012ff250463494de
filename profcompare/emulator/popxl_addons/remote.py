"""Remote (Streaming Memory) helpers: one remote buffer per named variable, and graphs that
load / store all of them at one entry (reference popxl.md section 2.6)."""

from __future__ import annotations

from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import not_supported, ops, popxl
from profcompare.emulator.popxl_addons.dot_tree import DotTree
from profcompare.emulator.popxl_addons.graph import GraphWithNamedArgs
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.rts import _replicas, is_sharded_by_rule, replica_sharded_spec
from profcompare.emulator.popxl_addons.variable_factory import NamedVariableFactories

__all__ = [
    "NamedRemoteBuffers",
    "create_remote_buffer",
    "named_buffers",
    "named_variable_buffers",
    "load_remote_graph",
    "store_remote_graph",
    "load_remote",
    "store_remote",
]


class NamedRemoteBuffers(DotTree[Any]):
    """A DotTree of popxl RemoteBuffers."""


def create_remote_buffer(
    shape: tuple[int, ...], dtype: Any, meta_shape: tuple[int, ...] | None, entries: int, sharded_threshold: float
) -> Any:
    """Return a remote buffer for one variable: a plain buffer of the shard shape (meta_shape
    set) for an already-sharded variable; a replica-sharded buffer when the threshold rule
    shards the full shape; otherwise a plain buffer of the full shape."""
    if meta_shape:
        buffer = popxl.remote_buffer(tuple(shape), dtype, entries)
        buffer.meta_shape = tuple(meta_shape)
        return buffer
    nelms = int(np.prod(shape, dtype=np.int64))
    if is_sharded_by_rule(nelms, sharded_threshold, _replicas()):
        return popxl.replica_sharded_buffer(tuple(shape), dtype, entries=entries)
    return popxl.remote_buffer(tuple(shape), dtype, entries)


def named_variable_buffers(
    factories: NamedVariableFactories, entries: int = 1, sharded_threshold: float = 1024, shard_groups: Any = None
) -> NamedRemoteBuffers:
    """Return one remote buffer per factory (same keys), with ``entries`` entries each."""
    if shard_groups is not None:
        raise not_supported("remote.named_variable_buffers(shard_groups=...)", "Gen B API")
    buffers = {
        key: create_remote_buffer(f.shape, f.dtype, f.meta_shape, entries, sharded_threshold)
        for key, f in factories.to_dict().items()
    }
    return NamedRemoteBuffers.from_dict(buffers)


def named_buffers(tensors: NamedTensors, entries: int = 1, sharded_threshold: float = 1024) -> NamedRemoteBuffers:
    """Return one remote buffer per tensor (same keys), shaped by ``replica_sharded_spec`` with
    the buffer's meta_shape set for sharded tensors."""
    buffers = {}
    for key, tensor in tensors.to_dict().items():
        spec = replica_sharded_spec(tensor, threshold=sharded_threshold)
        buffer = popxl.remote_buffer(tuple(spec.shape), spec.dtype, entries)
        if spec.meta_shape:
            buffer.meta_shape = tuple(spec.meta_shape)
        buffers[key] = buffer
    return NamedRemoteBuffers.from_dict(buffers)


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
        with popxl.in_sequence(False):
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
        with popxl.in_sequence(False):
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
    return NamedTensors.from_dict({k: ops.remote_load(b, entry, k) for k, b in buffers.to_dict().items()})


def store_remote(buffers: NamedRemoteBuffers, tensors: NamedTensors, entry: int | Any = 0) -> None:
    """``remote_store`` every tensor of ``tensors`` into the buffer with the same key at ``entry``."""
    by_key = buffers.to_dict()
    for key, tensor in tensors.to_dict().items():
        ops.remote_store(by_key[key], entry, tensor)
