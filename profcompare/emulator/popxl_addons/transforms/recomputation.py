"""Recomputation (``popxl_addons.transforms.recompute_graph``): a gradient graph that
recomputes the forward activations it needs instead of receiving them.

The new graph ``<grad graph>_recomp`` takes the gradient inputs of the original, the forward
inputs the original expects, and then every other forward input (sorted by name); it calls
the forward graph on them, then calls the original gradient graph with the recomputed
activations. Inputs of the gradient graph that are not in its GradGraphInfo (accumulators,
say) are passed through, by reference when they were. Its GradGraphInfo lists only forward
inputs (Fwd) and output gradients (FwdGrad), so a caller connects it to a forward call site
exactly as the original.
"""

from __future__ import annotations

import re
from typing import Any

from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons.graph import BoundGraph, GraphWithNamedArgs

__all__ = ["add_recompute_inputs", "recompute_graph", "suffix_graph_name"]


def suffix_graph_name(name: str, suffix: str) -> str:
    """Return ``name`` without popxl's ``_subgraph(N)`` ids, plus ``_<suffix>``."""
    return re.sub(r"_subgraph\(\d+\)", "", name) + "_" + suffix


def _autodiff_types() -> tuple[Any, Any]:
    from profcompare.emulator.popxl.transforms.autodiff import ExpectedConnection, ExpectedConnectionType

    return ExpectedConnection, ExpectedConnectionType


def add_recompute_inputs(grad_info: Any) -> tuple[dict[Any, Any], dict[Any, Any], list[Any]]:
    """Add to the current graph the inputs a recomputing gradient graph needs; return
    ``(forward input -> new input, gradient input -> new input, expected connections)`` with
    the connections in the order of the new inputs."""
    connection, kinds = _autodiff_types()
    fwd_inputs = list(grad_info.forward_graph.inputs)
    grad_inputs = list(grad_info.graph.inputs)
    fwd_map: dict[Any, Any] = {}
    grad_map: dict[Any, Any] = {}
    expected: list[Any] = []

    def new_input(t: Any) -> Any:
        return popxl.graph_input(t.shape, t.dtype, t.name, meta_shape=t.meta_shape)

    for index, ec in enumerate(grad_info.expected_inputs):
        if ec.connection_type == kinds.FwdGrad:
            grad_map[grad_inputs[index]] = new_input(grad_inputs[index])
            expected.append(ec)
        elif ec.fwd_tensor in fwd_inputs:
            fwd_map[ec.fwd_tensor] = new_input(ec.fwd_tensor)
            expected.append(ec)
    for t in sorted((t for t in fwd_inputs if t not in fwd_map), key=lambda t: t.name):
        fwd_map[t] = new_input(t)
        expected.append(connection(t, kinds.Fwd))
    return fwd_map, grad_map, expected


def recompute_graph(grad_graph: GraphWithNamedArgs) -> GraphWithNamedArgs:
    """Return a gradient graph equivalent to ``grad_graph`` (made by autodiff) that recomputes
    the forward activations from the forward inputs; its named args are those of
    ``grad_graph`` moved to the new graph's inputs."""
    from profcompare.emulator.popxl.transforms.autodiff import GradGraphInfo

    info = grad_graph.grad_graph_info
    graph = grad_graph.graph
    r_graph = graph.ir.create_empty_graph(suffix_graph_name(graph.name, "recomp"))
    with r_graph:
        fwd_map, grad_map, expected = add_recompute_inputs(info)
        fwd_call = BoundGraph(info.forward_graph, fwd_map).call_with_info()
        grad_map.update(info.inputs_dict(fwd_call))
        by_ref = getattr(graph, "_by_ref_inputs", {})
        for t in sorted((t for t in graph.inputs if t not in grad_map), key=lambda t: t.name):
            grad_map[t] = popxl.graph_input(t.shape, t.dtype, t.name, by_ref=t in by_ref, meta_shape=t.meta_shape)
        grad_call = BoundGraph(graph, grad_map).call_with_info()
        for out in grad_call.outputs:
            popxl.graph_output(out)
    r_info = GradGraphInfo(r_graph, info.forward_graph, expected, list(info.expected_outputs))
    r_graph._grad_graph_info = r_info
    return GraphWithNamedArgs(r_graph, grad_graph.args.remap(grad_map), r_info)
