"""Routing a parent-graph tensor into a subgraph (``popxl_addons.route_tensor``).

``route_tensor_into_graph(t, graph)`` makes ``t`` (a tensor of a graph that calls ``graph``,
directly or through other graphs, with ``ops.call`` or ``ops.repeat``) usable in ``graph``:
along every call path it adds one input to each called graph and connects ``t`` (or its
already-routed copy) at every call site, reusing an input when the call site already passes
the tensor. With ``modified=True`` the inputs are by reference, so in-place updates in the
subgraph reach ``t``.

The emulator's popxl keeps ops as plain records (``Graph._ops``, ``Op.inputs``); as the real
popxl-addons edits PopART's call ops, this module edits those records.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from profcompare.emulator.popxl_addons._compat import not_supported, popxl

__all__ = ["route_tensor_into_graph", "is_subgraph"]

#: op types that call one graph, with their inputs in the called graph's input order
_CALLING = ("Call", "Loop")


def _called(graph: Any) -> Iterator[tuple[Any, Any]]:
    """(op, called graph) for every op of ``graph`` that calls a graph."""
    for op in graph._ops:
        called = op.attrs.get("called_graph")
        if called is not None:
            yield op, called


def is_subgraph(parent: Any, subgraph: Any) -> bool:
    """Whether ``subgraph`` is ``parent`` or is called from it (directly or not)."""
    pending, seen = [parent], set()
    while pending:
        g = pending.pop()
        if g is subgraph:
            return True
        if id(g) in seen:
            continue
        seen.add(id(g))
        pending.extend(called for _, called in _called(g))
    return False


def _paths(start: Any, target: Any) -> list[list[Any]]:
    """Every call path (list of graphs, ``start`` first, ``target`` last)."""
    found: list[list[Any]] = []
    pending = [[start]]
    while pending:
        path = pending.pop()
        if path[-1] is target:
            found.append(path)
            continue
        for _, called in _called(path[-1]):
            if all(called is not g for g in path):
                pending.append(path + [called])
    return found


def _connect(op: Any, called: Any, parent_t: Any, routed: dict[int, Any], modified: bool) -> None:
    """Connect ``parent_t`` at call site ``op``, giving ``called`` an input for it (or reusing
    the input already routed, or the one the call site already feeds with ``parent_t``)."""
    if op.type not in _CALLING:
        raise not_supported("route_tensor_into_graph", f"routing through a {op.type} op")
    inner = routed.get(id(called))
    if inner is None:
        position = next((i for i, t in enumerate(op.inputs) if t is parent_t), None)
        if position is not None:
            inner = called._inputs[position]
        else:
            with called:
                inner = popxl.graph_input(parent_t.shape, parent_t.dtype, parent_t.name, by_ref=modified,
                                          meta_shape=tuple(parent_t.meta_shape) or None)
        routed[id(called)] = inner
    index = list(called._inputs).index(inner)
    if index == len(op.inputs):
        op.inputs.append(parent_t)
    elif index > len(op.inputs) or op.inputs[index] is not parent_t:
        raise ValueError(f"route_tensor_into_graph: call site {op.name} does not feed input {index} of "
                         f"{called.name} with {parent_t.id}")
    if modified:
        called._by_ref_inputs[inner] = None
        if all(parent_t is not m for m in op.modified):
            op.modified.append(parent_t)


def route_tensor_into_graph(tensor: Any, graph: Any = None, modified: bool = False) -> Any:
    """Return ``tensor`` as a tensor of ``graph`` (default: the current graph), routed in from
    the graph that owns it through every call path (see the module docstring). Raises
    ValueError when ``graph`` is not called from the tensor's graph."""
    graph = graph if graph is not None else popxl.gcg()
    if tensor in graph:
        return tensor
    home = tensor.graph
    if not is_subgraph(home, graph):
        raise ValueError(f"{tensor} is not in the graph {graph.name}. Additionally, the tensor is not in a known "
                         "parent graph so cannot be moved into the graph.")
    if not isinstance(modified, bool):
        raise not_supported("route_tensor_into_graph", "modified regions (only True or False)")
    routed: dict[int, Any] = {id(home): tensor}
    for path in _paths(home, graph):
        for caller, called in zip(path, path[1:]):
            parent_t = routed[id(caller)]
            for op, target in _called(caller):
                if target is called:
                    _connect(op, called, parent_t, routed, modified)
    return routed[id(graph)]
