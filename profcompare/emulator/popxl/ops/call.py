"""Calling subgraphs: ``call``, ``call_with_info`` and ``CallSiteInfo`` (popxl ops/call.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import SimulatorNotImplementedError, not_implemented_message
from ..graph import Graph, Op, add_op
from ..tensor import Tensor
from ._util import gcg


class CallSiteInfo:
    """What a call site connects: parent tensors <-> called-graph inputs/outputs."""

    def __init__(self, op: Op) -> None:
        if op.type != "Call":
            raise TypeError(f"CallSiteInfo needs a Call op, got {op.type}")
        self._op = op

    @property
    def called_graph(self) -> Graph:
        """The graph this site calls."""
        return self._op.attrs["called_graph"]

    @property
    def op(self) -> Op:
        """The Call op (simulator convenience)."""
        return self._op

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """Parent tensors passed in, in called-graph input order."""
        return tuple(self._op.inputs)

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        """Parent tensors receiving the called graph's outputs, in order."""
        return tuple(self._op.outputs)

    def parent_input(self, idx: int) -> Tensor:
        """Parent tensor connected to called-graph input ``idx``."""
        return self._op.inputs[idx]

    def parent_output(self, idx: int) -> Tensor:
        """Parent tensor receiving called-graph output ``idx``."""
        return self._op.outputs[idx]

    def graph_to_parent_input_index(self, idx: int) -> int:
        """Op input index of graph input ``idx`` (the same index here)."""
        return idx

    def parent_to_graph_input_index(self, idx: int) -> int:
        """Graph input index of op input ``idx`` (the same index here)."""
        return idx

    def graph_to_parent_output_index(self, idx: int) -> int:
        """Op output index of graph output ``idx`` (the same index here)."""
        return idx

    def parent_to_graph_output_index(self, idx: int) -> int:
        """Graph output index of op output ``idx`` (the same index here)."""
        return idx

    def graph_to_parent(self, graph_tensor: Tensor) -> Tensor:
        """The parent tensor connected to a called-graph input or output.

        Raises ValueError when ``graph_tensor`` is neither an input nor an output seen by this
        call site (e.g. an output added to the graph after the call was created)."""
        g = self.called_graph
        n_in = len(self._op.inputs)
        for i, t in enumerate(g._inputs[:n_in]):
            if t == graph_tensor:
                return self._op.inputs[i]
        n_out = len(self._op.outputs)
        for i, t in enumerate(g._outputs[:n_out]):
            if t == graph_tensor:
                return self._op.outputs[i]
        hint = ""
        if graph_tensor in g._outputs:
            hint = " It became an output of the graph (popxl.graph_output) after this call site was created."
        raise ValueError(f"Tensor {graph_tensor.id} is not an input or output of the call site of "
                         f"graph {g.name!r}.{hint}")

    def parent_to_graph(self, parent_tensor: Tensor) -> Tensor:
        """The called-graph input a parent tensor is connected to (first match)."""
        for i, t in enumerate(self._op.inputs):
            if t == parent_tensor:
                return self.called_graph._inputs[i]
        raise ValueError(f"Tensor {parent_tensor.id} is not an input of the call site of "
                         f"graph {self.called_graph.name!r}")

    def set_parent_input_modified(self, parent_tensor: Tensor, infer_modified_regions: bool = False) -> None:
        """Mark a parent input as modified by the call (as by-ref inputs are): an in-place
        change the called graph makes to the matching graph input then reaches ``parent_tensor``.
        """
        if not isinstance(parent_tensor, Tensor) or parent_tensor not in self._op.inputs:
            raise ValueError(f"{getattr(parent_tensor, 'id', parent_tensor)} is not an input of this call site")
        if parent_tensor not in self._op.modified:
            self._op.modified.append(parent_tensor)

    def __repr__(self) -> str:
        return f"CallSiteInfo(graph={self.called_graph.name!r}, op={self._op.id})"


def _flatten(inputs: Iterable[Any]) -> list[Any]:
    flat: list[Any] = []
    for x in inputs:
        if isinstance(x, (list, tuple)):
            flat.extend(x)
        else:
            flat.append(x)
    return flat


def connect_inputs(graph: Graph, parent: Graph, inputs: Iterable[Any], inputs_dict: Mapping[Tensor, Any] | None,
                   check_inputs: bool, api: str, label: str) -> list[Tensor]:
    """Parent tensors for every input of ``graph``, in graph-input order: positional ``inputs``
    fill inputs 0..n-1, ``inputs_dict`` maps graph inputs to parent tensors, non-tensor values
    become constants of the input's dtype. Missing inputs, an input given twice, tensors of the
    wrong graph or a TensorInfo that differs from the input's raise ValueError (``label`` starts
    that message: "CallOp" for ``call``)."""
    if not isinstance(graph, Graph):
        raise TypeError(f"{api} needs a popxl Graph, got {type(graph).__name__}")
    if graph is parent:
        raise ValueError(f"Graph {graph.name!r} cannot call itself")
    if graph is graph.ir.main_graph:
        raise ValueError("The main graph cannot be called")
    flat = _flatten(inputs)
    g_inputs = graph._inputs
    if len(flat) > len(g_inputs):
        raise ValueError(f"Too many inputs have been provided to the called graph {graph.name!r}: "
                         f"{len(flat)} > {len(g_inputs)}")
    connected: dict[int, Tensor] = {}
    for i, value in enumerate(flat):
        connected[i] = _parent_tensor(parent, g_inputs[i], value, f"position {i}")
    for g_t, value in dict(inputs_dict or {}).items():
        if not isinstance(g_t, Tensor) or g_t._graph is not graph or g_t not in g_inputs:
            raise ValueError(f'The graph input tensor "{g_t}" is not an input of the called graph ({graph.name!r}).')
        idx = g_inputs.index(g_t)
        if idx in connected:
            raise ValueError(f"Graph input tensor is specified twice for the called graph, in `inputs_dict` "
                             f"and positionally in `inputs`: {g_t}")
        connected[idx] = _parent_tensor(parent, g_t, value, repr(g_t.id))
    if len(connected) < len(g_inputs):
        if check_inputs:
            missing = [f"{i}: {t.id}" for i, t in enumerate(g_inputs) if i not in connected]
            raise ValueError(f"Not enough inputs have been provided for the called graph ({graph.name!r}). "
                             f"Missing inputs: {', '.join(missing)}")
        raise SimulatorNotImplementedError(not_implemented_message(f"{api} with unconnected graph inputs"))
    for i, pt in connected.items():
        gt = g_inputs[i]
        if pt.shape != gt.shape or pt.dtype != gt.dtype or tuple(pt.meta_shape) != tuple(gt.meta_shape):
            raise ValueError(f"{label} input (@{i}) does not match callee input tensor (@{i}) of graph "
                             f"{graph.name!r}: {pt.id} -> {gt.id}: {info_text(pt)} vs {info_text(gt)}")
    return [connected[i] for i in range(len(g_inputs))]


def call(graph: Graph, *inputs: Any, inputs_dict: Mapping[Tensor, Any] | None = None,
         check_inputs: bool = True) -> tuple[Tensor, ...]:
    """Call ``graph``; return the parent tensors of its outputs."""
    return call_with_info(graph, *inputs, inputs_dict=inputs_dict, check_inputs=check_inputs).outputs


def call_with_info(graph: Graph, *inputs: Any, inputs_dict: Mapping[Tensor, Any] | None = None,
                   check_inputs: bool = True) -> CallSiteInfo:
    """Call ``graph`` and return its :class:`CallSiteInfo`.

    Positional inputs fill graph inputs 0..n-1; ``inputs_dict`` maps graph inputs to parent
    tensors. Non-tensor values become constants of the graph input's dtype. Missing inputs, an
    input given twice, or tensors of the wrong graph raise ValueError."""
    if not isinstance(graph, Graph):
        raise TypeError(f"call needs a popxl Graph, got {type(graph).__name__}")
    parent = gcg()
    # popart's CallOp::setup compares the whole TensorInfo: dtype, shape and meta_shape
    # (a full tensor bound to a replica-sharded input is refused even when shapes agree)
    ordered = connect_inputs(graph, parent, inputs, inputs_dict, check_inputs, "popxl.ops.call", "CallOp")
    g_inputs = graph._inputs
    modified = [ordered[i] for i, t in enumerate(g_inputs) if t in graph._by_ref_inputs]
    prefix = graph._scope_prefix
    outs = [(t.id.removeprefix(prefix), t.shape, t.dtype, t.meta_shape)
            for t in graph._outputs]
    op = add_op("Call", f"{parent.name}--call--{graph.name}", ordered, outs,
                {"called_graph": graph}, modified=modified)
    return CallSiteInfo(op)


def info_text(t: Tensor) -> str:
    meta = f" meta_shape {tuple(t.meta_shape)}" if t.meta_shape else ""
    return f"{t.dtype.name} {tuple(t.shape)}{meta}"


def _parent_tensor(parent: Graph, graph_input: Tensor, value: Any, where: str) -> Tensor:
    if isinstance(value, Tensor):
        if value._graph is not parent:
            raise ValueError(f'Parent input tensor "{value}" is not in parent graph "{parent.name}".')
        return value
    try:
        return graph_input._ensure_tensor(value)
    except (ValueError, TypeError) as exc:
        raise TypeError(f"Input at {where} could not be coerced into a tensor for the called graph: "
                        f"Type {type(value)}. Value: {value}") from exc
