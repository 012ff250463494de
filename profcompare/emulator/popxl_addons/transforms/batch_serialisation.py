"""Batch serialisation (``popxl_addons.transforms.batch_serialisation``): a graph run ``steps``
times in a loop, each step loading its inputs (from host streams or remote buffers), calling
the graph and storing chosen inputs and outputs (to host streams or remote buffers).

Remote buffers are laid out as a matrix: step ``i`` of row ``r`` is entry ``r * steps + i``.
A :class:`RemoteHandle` names the buffer, the row (an int; None = row 0 whatever the call's
row; or a function mapping the call's row to the row to use) and the replica grouping of a
replica-sharded buffer (loaded tensors are all-gathered, stored ones sliced).

The returned graph takes the row as its first input (``batch_serial_loop_index``, int32),
then a seed when ``seed_input`` is given (split once per step), then every input of the graph
that has no load handle (passed through by reference when it was). The loop is a
``popxl.ops.repeat`` of a step graph; with ``io_mode='io'`` the transfers run on the I/O tiles
and with ``'io_overlapped'`` step ``i``'s compute overlaps step ``i+1``'s load and step
``i-1``'s store (the first two loads and the last two stores are outside the loop), as in
popxl-addons.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from profcompare.emulator.popxl_addons import remote as _remote
from profcompare.emulator.popxl_addons._compat import ops, popxl
from profcompare.emulator.popxl_addons._generation import Generational
from profcompare.emulator.popxl_addons.graph import GraphWithNamedArgs
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors

__all__ = ["batch_serialise", "batch_serialise_fwd_and_grad", "batch_serial_buffer", "RemoteHandle"]

_LOG = logging.getLogger(__name__)


@dataclass
class RemoteHandle:
    """A remote buffer, the row to use in it (see the module docstring) and the replica
    grouping it is sharded over (None: not sharded)."""

    buffer: Any
    row_offset: int | Callable[[Any], Any] | None = 0
    shard_group: Any = None


@dataclass
class BatchSerialResult:
    """The transformed graph and, for every stored tensor of the original graph, the handle of
    the buffer its values went to (for a tensor loaded from a buffer: that buffer)."""

    graph: GraphWithNamedArgs
    stored_buffers: dict[Any, RemoteHandle]
    _remap_dict: dict[Any, Any]

    def remap_tensors(self, ts: NamedTensors) -> NamedTensors:
        """Return ``ts`` (tensors of the original graph) as tensors of the transformed graph."""
        return ts.remap(self._remap_dict)


# ----- buffers ------------------------------------------------------------------------------------
def _serial_buffer_30(t: Any, steps: int = 1, rows: int = 1, sharded_threshold: int = 1024,
                      shard_group: Any = None) -> Any:
    shard_over = shard_group.group_size if shard_group else 1
    return _remote._GENERATIONAL["create_remote_buffer"].resolve("3.0")(t, entries=steps * rows, sharded_threshold=sharded_threshold,
                                                       replica_group=shard_group, shard_over=shard_over)


def _serial_buffer_34(t: Any, steps: int = 1, rows: int = 1, shard_group: Any = None) -> Any:
    shard_over = shard_group.group_size if shard_group else 1
    return _remote._GENERATIONAL["create_remote_buffer"].resolve("3.4")(t, entries=steps * rows, replica_group=shard_group,
                                                       shard_over=shard_over)


#: a remote buffer for ``t`` with ``steps * rows`` entries (replica-sharded over ``shard_group``)
batch_serial_buffer = Generational("batch_serial_buffer", {"3.0": _serial_buffer_30, "3.4": _serial_buffer_34}, {
    "3.0": "batch_serial_buffer(t, steps=1, rows=1, sharded_threshold=1024, shard_group=None)",
    "3.4": "batch_serial_buffer(t, steps=1, rows=1, shard_group=None)",
})


def _as_handles(handles: Mapping[Any, Any]) -> dict[Any, Any]:
    """``(buffer, row)`` pairs become RemoteHandles; streams and handles stay."""
    out = {}
    for t, h in handles.items():
        if (not isinstance(h, (popxl.HostToDeviceStream, RemoteHandle)) and isinstance(h, (tuple, list))
                and len(h) >= 2 and isinstance(h[0], popxl.RemoteBuffer) and (h[1] is None or isinstance(h[1], int))):
            h = RemoteHandle(*h)
        out[t] = h
    return out


def _mod(index: Any, n: int) -> Any:
    """``index % n`` (popxl's Tensor.__mod__ is ops.fmod)."""
    return ops.fmod(index, popxl.constant(n, index.dtype))


def _entry(index: Any, handle: RemoteHandle, steps: int, rows: int) -> Any:
    """The buffer entry of loop ``index`` (= row * steps + step) for ``handle``; grows the
    buffer to the entries this layout reaches."""
    row = handle.row_offset
    if row is None:
        entry, needed = _mod(index, steps), steps
    elif callable(row):
        # index / steps is the call's row (integer division of non-negative int32 tensors)
        entry, needed = row(index / popxl.constant(steps, index.dtype)) * steps + _mod(index, steps), steps * rows
    elif row:
        entry, needed = index + row * steps, steps * (row + rows)
    else:
        entry, needed = index, steps * rows
    handle.buffer.entries = max(handle.buffer.entries, needed)
    return entry


# ----- one step -----------------------------------------------------------------------------------
class _Plan:
    """What to load, store and pass through for one graph."""

    def __init__(self, graph: GraphWithNamedArgs, load_handles: dict[Any, Any], store_streams: Mapping[Any, Any],
                 store_buffers: dict[Any, Any], seed_input: Any, steps: int, rows: int) -> None:
        self.graph, self.steps, self.rows, self.seed_input = graph, steps, rows, seed_input
        self.load_handles, self.store_streams, self.store_buffers = load_handles, store_streams, store_buffers
        inputs, outputs = list(graph.graph.inputs), list(graph.graph.outputs)
        self.loaded = [t for t in inputs if t in load_handles]

        def stored(t: Any) -> bool:
            from_buffer = t in load_handles and not isinstance(load_handles[t], popxl.HostToDeviceStream)
            return not from_buffer and (t in store_streams or t in store_buffers)

        self.stored = [t for t in inputs + outputs if stored(t)]
        self.passed = [t for t in inputs if t is not seed_input and t not in load_handles]

    def load(self, index: Any) -> list[Any]:
        """Load every loaded input of step ``index`` (gathered when sharded)."""
        out = []
        with popxl.transforms.merge_exchange(), popxl.in_sequence(False):
            for t in self.loaded:
                h = self.load_handles[t]
                if isinstance(h, popxl.HostToDeviceStream):
                    out.append(ops.host_load(h, t.name))
                elif isinstance(h, RemoteHandle):
                    out.append(ops.remote_load(h.buffer, _entry(index, h, self.steps, self.rows), t.name))
                else:
                    raise TypeError(f"Incompatible handle in `load_handles` for tensor {t} : {h}")
        gathered = []
        for t, value in zip(self.loaded, out):
            h = self.load_handles[t]
            if isinstance(h, RemoteHandle) and h.shard_group is not None and h.shard_group.group_size != 1 \
                    and value.meta_shape:
                value = ops.collectives.replicated_all_gather(value, group=h.shard_group)
            gathered.append(value)
        return gathered

    def slice(self, values: list[Any]) -> list[Any]:
        """Slice the stored values whose buffers are replica-sharded."""
        out = []
        for t, value in zip(self.stored, values):
            h = self.store_buffers.get(t)
            if h is not None and h.shard_group is not None and h.shard_group.group_size != 1:
                value = ops.collectives.replica_sharded_slice(value, group=h.shard_group)
            out.append(value)
        return out

    def store(self, index: Any, values: list[Any]) -> None:
        """Store step ``index``'s values to their streams and buffers."""
        entries = {t: _entry(index, self.store_buffers[t], self.steps, self.rows)
                   for t in self.stored if t in self.store_buffers}
        with popxl.transforms.merge_exchange(), popxl.in_sequence(False):
            for t, value in zip(self.stored, values):
                if t in self.store_streams:
                    ops.host_store(self.store_streams[t], value)
                if t in entries:
                    ops.remote_store(self.store_buffers[t].buffer, entries[t], value)

    def compute(self, loaded: list[Any], passed: list[Any], seed: Any) -> list[Any]:
        """Call the graph; return the values to store."""
        args = {} if self.seed_input is None else {self.seed_input: seed}
        args.update(zip(self.loaded, loaded))
        args.update(zip(self.passed, passed))
        info = self.graph.call_with_info(args=args)
        return [info.graph_to_parent(t) for t in self.stored]

    def result(self, repeat_graph: Any, passed: list[Any]) -> BatchSerialResult:
        remap = dict(zip(self.passed, passed))
        stored_buffers = {}
        for t in self.store_buffers:
            if t in self.graph.graph.inputs or t in self.graph.graph.outputs:
                h = self.load_handles.get(t)
                from_buffer = h is not None and not isinstance(h, popxl.HostToDeviceStream)
                stored_buffers[t] = h if from_buffer else self.store_buffers[t]
        return BatchSerialResult(GraphWithNamedArgs(repeat_graph, self.graph.args.remap(remap)), stored_buffers, remap)


@contextlib.contextmanager
def _no_tiles() -> Iterator[None]:
    yield


def _to_tiles(ts: list[Any]) -> list[Any]:
    return [ops.io_tile_copy(t) for t in ts]


def _loop_inputs(plan: _Plan, use_io_tiles: bool) -> tuple[Any, Any, list[Any]]:
    index = popxl.graph_input((), popxl.int32, "batch_serial_loop_index")
    with popxl.io_tiles() if use_io_tiles else _no_tiles():
        if use_io_tiles:
            index = ops.io_tile_copy(index)
        index = index * plan.steps
    if plan.seed_input is not None:
        seed = popxl.graph_input((2,), popxl.uint32, "batch_serial_random_seed")
    else:
        seed = popxl.constant((0, 0), popxl.uint32, "dummy_random_seed")
    by_ref = plan.graph.graph._by_ref_inputs
    passed = [popxl.graph_input(t.shape, t.dtype, t.name, t in by_ref, t.meta_shape) for t in plan.passed]
    return index, seed, passed


def _repeat_graph_name(graph: GraphWithNamedArgs) -> str:
    from profcompare.emulator.popxl_addons.transforms.recomputation import suffix_graph_name

    return suffix_graph_name(graph.graph.name, "_repeat_graph")


def _serialise_plain(plan: _Plan, use_io_tiles: bool) -> BatchSerialResult:
    ir = plan.graph.graph.ir
    if use_io_tiles and ir._pb_ir.getSessionOptions().numIOTiles < 1:
        raise ValueError("IR must have IO tiles")
    tiles = popxl.io_tiles if use_io_tiles else _no_tiles

    @popxl.in_sequence(True)
    def step(index: Any, seed: Any, passed: list[popxl.TensorByRef]) -> tuple[Any, Any]:
        seed, next_seed = ops.split_random_seed(seed)
        with tiles():
            loaded = plan.load(index)
        if use_io_tiles:
            loaded = _to_tiles(loaded)
        stored = plan.compute(loaded, passed, seed)
        if use_io_tiles:
            stored = _to_tiles(stored)
        with tiles():
            plan.store(index, plan.slice(stored))
            index = index + 1
        return index, next_seed

    repeat_graph = ir.create_empty_graph(_repeat_graph_name(plan.graph))
    with repeat_graph, popxl.in_sequence():
        index, seed, passed = _loop_inputs(plan, use_io_tiles)
        step_graph = ir.create_graph(step, index, seed, passed)
        ops.repeat(step_graph, plan.steps, index, seed, *passed)
    return plan.result(repeat_graph, passed)


def _serialise_overlapped(plan: _Plan) -> BatchSerialResult:
    ir = plan.graph.graph.ir
    if plan.steps < 2:
        raise ValueError("steps must be >=2 if using overlapped IO")
    if ir._pb_ir.getSessionOptions().numIOTiles < 1:
        raise ValueError("IR must have IO tiles")
    n_loaded = len(plan.loaded)

    @popxl.in_sequence()
    def step(index: Any, seed: Any, loaded: list[Any], stored_io: list[Any],
             passed: list[popxl.TensorByRef]) -> tuple[Any, ...]:
        # step i: load i, compute i-1 (loaded before), store i-2 (computed before)
        seed, next_seed = ops.split_random_seed(seed)
        with popxl.io_tiles():
            loaded_next = plan.load(index)
            with popxl.in_sequence(False):
                plan.store(index - 2, stored_io)
        stored = plan.compute(loaded, passed, seed)
        loaded_next = _to_tiles(loaded_next)
        stored_next = _to_tiles(stored)
        with popxl.io_tiles():
            stored_next = plan.slice(stored_next)
            index = index + 1
        return (index, next_seed, *loaded_next, *stored_next)

    repeat_graph = ir.create_empty_graph(_repeat_graph_name(plan.graph))
    with repeat_graph, popxl.in_sequence():
        index, seed, passed = _loop_inputs(plan, use_io_tiles=True)
        with popxl.io_tiles():
            loaded_0 = plan.load(index)
        loaded_0 = _to_tiles(loaded_0)
        with popxl.io_tiles():
            index = index + 1
        seed_0, seed = ops.split_random_seed(seed)
        with popxl.io_tiles():
            loaded_1 = plan.load(index)
        stored_0 = plan.compute(loaded_0, passed, seed_0)
        loaded_1 = _to_tiles(loaded_1)
        stored_0 = _to_tiles(stored_0)
        with popxl.io_tiles():
            stored_0 = plan.slice(stored_0)
            index = index + 1
        if plan.steps > 2:
            step_graph = ir.create_graph(step, index, seed, loaded_1, stored_0, passed)
            index, seed, *carried = ops.repeat(step_graph, plan.steps - 2, index, seed, *loaded_1, *stored_0, *passed)
            loaded_last, stored_prev = carried[:n_loaded], carried[n_loaded:n_loaded + len(stored_0)]
        else:
            loaded_last, stored_prev = loaded_1, stored_0
        with popxl.io_tiles():
            store_index = index - 2
        seed_n, seed = ops.split_random_seed(seed)
        with popxl.io_tiles():
            plan.store(store_index, stored_prev)
        stored_last = _to_tiles(plan.compute(loaded_last, passed, seed_n))
        with popxl.io_tiles():
            stored_last = plan.slice(stored_last)
            plan.store(store_index + 1, stored_last)
    return plan.result(repeat_graph, passed)


def batch_serialise(graph: GraphWithNamedArgs, steps: int, load_handles: Mapping[Any, Any],
                    store_streams: Mapping[Any, Any], store_buffers: Mapping[Any, Any], seed_input: Any = None,
                    rows: int = 1, io_mode: str = "io") -> BatchSerialResult:
    """Return the batch-serialised form of ``graph`` (see the module docstring): ``steps``
    steps, inputs loaded by ``load_handles`` (tensor -> h2d stream, RemoteHandle or
    ``(buffer, row)``), tensors stored by ``store_streams`` / ``store_buffers``, buffers sized for
    ``rows`` rows. ``io_mode``: ``compute``, ``io`` (transfers on the I/O tiles) or
    ``io_overlapped`` (falls back to ``io`` below 2 steps). Raises ValueError for another mode,
    ``rows < 1`` or I/O tiles missing."""
    if rows < 1:
        raise ValueError("rows must be >0")
    loads = _as_handles(load_handles)
    stores = _as_handles(store_buffers)
    if io_mode == "io_overlapped" and steps < 2:
        _LOG.warning("batch_serialisation with io_mode='io_overlapped' requires at least 3 steps. "
                     "Falling back to io_mode='io'.")
        io_mode = "io"
    if io_mode not in ("compute", "io", "io_overlapped"):
        raise ValueError(f"Unknown 'io_mode' {io_mode}. Supported: (compute, io, io_overlapped)")
    plan = _Plan(graph, loads, store_streams, stores, seed_input, steps, rows)
    if io_mode == "io_overlapped":
        return _serialise_overlapped(plan)
    return _serialise_plain(plan, use_io_tiles=io_mode == "io")


def _remap_grad_info(info: Any, forward_graph: Any) -> Any:
    """The GradGraphInfo ``info`` re-expressed against ``forward_graph``, a graph with the
    same inputs and outputs by position (the connection of input/output ``i`` becomes that of
    the new graph's input/output ``i``)."""
    from profcompare.emulator.popxl.transforms.autodiff import ExpectedConnection, GradGraphInfo

    old = info.forward_graph

    def moved(t: Any) -> Any:
        if t in old.inputs:
            return forward_graph.inputs[list(old.inputs).index(t)]
        return forward_graph.outputs[list(old.outputs).index(t)]

    ins = [ExpectedConnection(moved(e.fwd_tensor), e.connection_type) for e in info.expected_inputs]
    outs = [ExpectedConnection(moved(e.fwd_tensor), e.connection_type) for e in info.expected_outputs]
    return GradGraphInfo(info.graph, forward_graph, ins, outs)


def _fwd_and_grad(forward_graph: GraphWithNamedArgs, gradient_graph: GraphWithNamedArgs,
                  named_inputs_for_grad_graph: NamedTensors, steps: int, load_handles: Mapping[Any, Any],
                  store_streams: Mapping[Any, Any], store_buffers: Mapping[Any, Any], seed_input: Any, rows: int,
                  io_mode: str, make_buffer: Callable[..., Any]) -> tuple[BatchSerialResult, BatchSerialResult]:
    from profcompare.emulator.popxl.transforms.autodiff import ExpectedConnectionType

    shard_groups = {t: g for t, g in store_buffers.items() if isinstance(g, popxl.ReplicaGrouping)}
    buffers = {t: b for t, b in store_buffers.items() if not isinstance(b, popxl.ReplicaGrouping)}
    info = gradient_graph.grad_graph_info
    grad_inputs = list(gradient_graph.graph.inputs)
    named_fwd = named_inputs_for_grad_graph.named_tensors
    activations = [(i, e) for i, e in enumerate(info.expected_inputs)
                   if e.connection_type == ExpectedConnectionType.Fwd]
    # every activation the gradient graph needs is stored by the forward loop (or is a named input)
    for _, e in activations:
        t = e.fwd_tensor
        if t in buffers or any(t is v for v in named_fwd.values()):
            continue
        h = load_handles.get(t)
        if h is not None and not isinstance(h, popxl.HostToDeviceStream):
            buffers[t] = h
        else:
            group = shard_groups.get(t)
            buffers[t] = RemoteHandle(make_buffer(t, steps=steps, rows=rows, shard_group=group), 0, group)
    forward = batch_serialise(forward_graph, steps, load_handles, store_streams, buffers, seed_input, rows, io_mode)

    grad_loads: dict[Any, Any] = {}
    named: dict[str, Any] = {}
    for i, e in activations:
        t = e.fwd_tensor
        key = next((k for k, v in named_fwd.items() if v is t), None)
        if key is not None:
            named[key] = grad_inputs[i]
        elif t in forward.stored_buffers:
            grad_loads[grad_inputs[i]] = forward.stored_buffers[t]
        else:
            raise RuntimeError(f"Fwd Connection {t} missing. You need to provide it either in forward_variables or in "
                               "load_handles")
    named.update(gradient_graph.args.named_tensors)
    gradient_graph.args = NamedTensors.from_dict(named)
    for i, e in enumerate(info.expected_inputs):
        if e.connection_type != ExpectedConnectionType.FwdGrad:
            continue
        if grad_inputs[i] not in load_handles:
            raise ValueError(f"FwdGrad input (idx={i} {grad_inputs[i]}) to Gradient graph must have a load_handle "
                             "specified")
        grad_loads[grad_inputs[i]] = load_handles[grad_inputs[i]]
    gradient = batch_serialise(gradient_graph, steps, grad_loads, store_streams, buffers, None, rows, io_mode)
    gradient.graph.grad_graph_info = _remap_grad_info(info, forward_graph.graph)
    return forward, gradient


def _fwd_and_grad_30(forward_graph: GraphWithNamedArgs, gradient_graph: GraphWithNamedArgs,
                     named_inputs_for_grad_graph: NamedTensors, steps: int, load_handles: Mapping[Any, Any],
                     store_streams: Mapping[Any, Any], store_buffers: Mapping[Any, Any], seed_input: Any = None,
                     rows: int = 1, io_mode: str = "io",
                     sharded_threshold: int = 1024) -> tuple[BatchSerialResult, BatchSerialResult]:
    def make_buffer(t: Any, steps: int, rows: int, shard_group: Any) -> Any:
        return _serial_buffer_30(t, steps, rows, sharded_threshold, shard_group)

    return _fwd_and_grad(forward_graph, gradient_graph, named_inputs_for_grad_graph, steps, load_handles,
                         store_streams, store_buffers, seed_input, rows, io_mode, make_buffer)


def _fwd_and_grad_34(forward_graph: GraphWithNamedArgs, gradient_graph: GraphWithNamedArgs,
                     named_inputs_for_grad_graph: NamedTensors, steps: int, load_handles: Mapping[Any, Any],
                     store_streams: Mapping[Any, Any], store_buffers: Mapping[Any, Any], seed_input: Any = None,
                     rows: int = 1, io_mode: str = "io") -> tuple[BatchSerialResult, BatchSerialResult]:
    return _fwd_and_grad(forward_graph, gradient_graph, named_inputs_for_grad_graph, steps, load_handles,
                         store_streams, store_buffers, seed_input, rows, io_mode, _serial_buffer_34)


#: batch-serialise a forward graph and its gradient graph together: the activations the
#: gradient graph needs are stored by the forward loop (in buffers made here, sharded over the
#: ReplicaGrouping given for them in ``store_buffers``) and loaded by the gradient loop; the
#: tensors of ``named_inputs_for_grad_graph`` become named inputs of the gradient graph instead
batch_serialise_fwd_and_grad = Generational(
    "batch_serialise_fwd_and_grad", {"3.0": _fwd_and_grad_30, "3.4": _fwd_and_grad_34}, {
        "3.0": "batch_serialise_fwd_and_grad(forward_graph, gradient_graph, named_inputs_for_grad_graph, steps, "
               "load_handles, store_streams, store_buffers, seed_input=None, rows=1, io_mode='io', "
               "sharded_threshold=1024)",
        "3.4": "batch_serialise_fwd_and_grad(forward_graph, gradient_graph, named_inputs_for_grad_graph, steps, "
               "load_handles, store_streams, store_buffers, seed_input=None, rows=1, io_mode='io')",
    })
