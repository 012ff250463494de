"""Autodiff of GraphWithNamedArgs, with or without gradient accumulation
(reference popxl.md section 2.5)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import partial
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import not_supported, ops, popxl
from profcompare.emulator.popxl_addons._generation import Generational
from profcompare.emulator.popxl_addons.graph import GraphWithNamedArgs, normalise_grad_info_map
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.variable_factory import NamedVariableFactories, add_variable_input

__all__ = ["autodiff", "autodiff_with_accumulation"]


def autodiff(
    graph: GraphWithNamedArgs,
    grads_provided: Iterable[Any] | None = None,
    grads_required: Iterable[Any] | None = None,
    called_graphs_grad_info: Any = None,
) -> GraphWithNamedArgs:
    """Return the gradient graph of ``graph`` (a GraphWithNamedArgs or a popxl Graph) with its
    ``grad_graph_info`` and no named args. ``grads_provided`` defaults to all forward outputs,
    ``grads_required`` to all forward inputs; graphs it calls are differentiated with the
    gradient graphs of ``called_graphs_grad_info`` merged over the graph's own."""
    graph = graph if isinstance(graph, GraphWithNamedArgs) else GraphWithNamedArgs(graph)
    info = popxl.transforms.autodiff(
        graph.graph,
        grads_provided=list(grads_provided) if grads_provided is not None else None,
        grads_required=list(grads_required) if grads_required is not None else None,
        called_graphs_grad_info=_merged_grad_infos(graph, called_graphs_grad_info),
    )
    return GraphWithNamedArgs.from_grad_graph(info)


def _merged_grad_infos(graph: GraphWithNamedArgs, called_graphs_grad_info: Any) -> dict[Any, Any]:
    """The graph's called_graphs_grad_info with the caller's entries winning."""
    return {**normalise_grad_info_map(graph.called_graphs_grad_info),
            **normalise_grad_info_map(called_graphs_grad_info)}


def _sanitise(name: str) -> str:
    return re.sub(r"\W|^(?=\d)", "_", name)


def _with_accumulation_30(
    graph: GraphWithNamedArgs,
    tensors_to_accumulate_grads: Iterable[Any],
    grads_required: Iterable[Any] | None = None,
    called_graphs_grad_info: Any = None,
    replica_groupings: Any = None,
) -> tuple[NamedVariableFactories, GraphWithNamedArgs]:
    return _with_accumulation(graph, tensors_to_accumulate_grads, None, grads_required, called_graphs_grad_info,
                              replica_groupings)


def _with_accumulation_34(
    graph: GraphWithNamedArgs,
    tensors_to_accumulate_grads: Iterable[Any],
    grads_provided: Iterable[Any] | None = None,
    grads_required: Iterable[Any] | None = None,
    called_graphs_grad_info: Any = None,
    replica_groupings: Any = None,
) -> tuple[NamedVariableFactories, GraphWithNamedArgs]:
    return _with_accumulation(graph, tensors_to_accumulate_grads, grads_provided, grads_required,
                              called_graphs_grad_info, replica_groupings)


#: (factories, gradient graph) where the gradient graph accumulates a running mean of the gradient
#: of every tensor in ``tensors_to_accumulate_grads`` (positional order of the emulated generation:
#: 3.4 has ``grads_provided`` third)
autodiff_with_accumulation = Generational(
    "autodiff_with_accumulation", {"3.0": _with_accumulation_30, "3.4": _with_accumulation_34}, {
        "3.0": "autodiff_with_accumulation(graph, tensors_to_accumulate_grads, grads_required=None, "
               "called_graphs_grad_info=None, replica_groupings=None)",
        "3.4": "autodiff_with_accumulation(graph, tensors_to_accumulate_grads, grads_provided=None, "
               "grads_required=None, called_graphs_grad_info=None, replica_groupings=None)",
    })


def _with_accumulation(
    graph: GraphWithNamedArgs,
    tensors_to_accumulate_grads: Iterable[Any],
    grads_provided: Iterable[Any] | None,
    grads_required: Iterable[Any] | None,
    called_graphs_grad_info: Any,
    replica_groupings: Any,
) -> tuple[NamedVariableFactories, GraphWithNamedArgs]:
    """Return (factories, gradient graph) where the gradient graph accumulates a running mean of
    the gradient of every tensor in ``tensors_to_accumulate_grads`` into a by-ref input
    ``accum.<name>`` (``<name>`` = the tensor's named-arg key) and counts calls in the by-ref
    float32 scalar ``mean_accum_counter``; the accumulated gradients are no longer outputs.
    Resetting the counter to 0 restarts the mean (the next call overwrites the accumulators).
    The accumulators' replica groupings come from ``replica_groupings`` (default: all replicas)."""
    groups = replica_groupings.to_dict() if replica_groupings else {}
    to_accumulate = list(tensors_to_accumulate_grads)
    required = list(grads_required or []) + to_accumulate
    grad_graph = autodiff(graph, grads_provided=grads_provided, grads_required=required,
                          called_graphs_grad_info=called_graphs_grad_info)
    info = grad_graph.grad_graph_info
    grad_outputs = list(grad_graph.graph.outputs)
    expected = list(info.outputs)  # forward tensors whose gradients the outputs are, in order
    arg_names = {t: key for key, t in graph.args.to_dict().items()}

    factories: dict[str, Any] = {}
    named_inputs: dict[str, Any] = {}

    def add_input(name: str, data: Any, dtype: Any, replica_grouping: Any = None) -> Any:
        tensor, factory = add_variable_input(name, data, dtype, by_ref=True, replica_grouping=replica_grouping)
        factories[name] = factory
        named_inputs[name] = tensor
        return tensor

    removed: list[int] = []
    with grad_graph.graph, popxl.in_sequence(True):
        counter = add_input("mean_accum_counter", partial(np.zeros, ()), popxl.float32)
        with popxl.in_sequence(False):
            for tensor in to_accumulate:
                index = expected.index(tensor)
                removed.append(index)
                name = "accum." + arg_names.get(tensor, _sanitise(tensor.name))
                accum = add_input(name, partial(np.zeros, tuple(tensor.shape)), tensor.dtype,
                                  groups.get(name[len("accum."):]))
                ops.var_updates.accumulate_mean_(accum, grad_outputs[index], counter)
        ops.var_updates.accumulate_(counter, popxl.constant(1.0, popxl.float32))

    _remove_outputs(grad_graph.graph, removed)
    return (
        NamedVariableFactories.from_dict(factories),
        GraphWithNamedArgs.from_grad_graph(info, NamedTensors.from_dict(named_inputs)),
    )


def _remove_outputs(graph: Any, indices: list[int]) -> None:
    """Remove the graph outputs at ``indices`` (all of them at once, highest index first)."""
    remove = getattr(graph, "remove_output", None)
    for index in sorted(set(indices), reverse=True):
        if remove is not None:
            remove(index)
        elif isinstance(getattr(graph, "_outputs", None), list):
            # popxl has no public way to drop a graph output (popxl-addons reaches into the
            # C++ graph for it); the emulator's Graph keeps its outputs in ``_outputs``
            del graph._outputs[index]
        else:
            raise not_supported(
                "transforms.autodiff_with_accumulation", "the popxl graph cannot remove outputs"
            )
