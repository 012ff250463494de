"""GraphWithNamedArgs (a popxl graph plus the named tensors of its variable inputs) and
BoundGraph (a graph with some inputs bound to parent tensors)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from profcompare.emulator.popxl_addons._compat import ops
from profcompare.emulator.popxl_addons.dot_tree import to_mapping
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors

__all__ = ["BoundGraph", "CalledGraphsGradInfo", "GraphWithNamedArgs"]

#: forward graph -> the GradGraphInfo of its gradient graph (a typing alias, as in popxl-addons)
CalledGraphsGradInfo = Mapping[Any, Any]


class BoundGraph:
    """A popxl graph with graph inputs bound to parent tensors ``{graph input: parent tensor}``."""

    def __init__(self, graph: Any, args: Mapping[Any, Any] | None = None) -> None:
        self.graph = graph
        self.args: dict[Any, Any] = dict(args or {})

    def call(self, *targs: Any, args: Mapping[Any, Any] | None = None) -> tuple[Any, ...]:
        """Call the graph (positional inputs first, then bound and per-call ``args``, the
        per-call ones winning); returns the call's outputs."""
        return tuple(self.call_with_info(*targs, args=args).outputs)

    def call_with_info(self, *targs: Any, args: Mapping[Any, Any] | None = None) -> Any:
        """Like :meth:`call` but returns popxl's CallSiteInfo."""
        return ops.call_with_info(self.graph, *targs, inputs_dict={**self.args, **dict(args or {})})

    def bind(self, args: Mapping[Any, Any]) -> BoundGraph:
        """Return a new BoundGraph with ``args`` merged over the current bindings."""
        return BoundGraph(self.graph, {**self.args, **dict(args)})

    def subgraph_io_map(
        self, *targs: Any, args: Mapping[Any, Any] | None = None, outs: Iterable[Any] = ()
    ) -> dict[Any, Any]:
        """Return ``{graph input: call input}`` and ``{graph output: call output}`` merged."""
        mapping = {**self.args, **dict(args or {})}
        for graph_input, targ in zip(self.graph.inputs, targs):
            mapping[graph_input] = targ
        for graph_output, out in zip(self.graph.outputs, outs):
            mapping[graph_output] = out
        return mapping


def normalise_grad_info_map(mapping: Mapping[Any, Any] | None) -> dict[Any, Any]:
    """Return ``{popxl Graph: GradGraphInfo}`` from a mapping whose keys may be Graphs,
    GraphWithNamedArgs or BoundGraphs and whose values GradGraphInfos or gradient
    GraphWithNamedArgs."""
    out: dict[Any, Any] = {}
    for fwd, grad in (mapping or {}).items():
        fwd = fwd.graph if isinstance(fwd, (GraphWithNamedArgs, BoundGraph)) else fwd
        grad = grad.grad_graph_info if isinstance(grad, GraphWithNamedArgs) else grad
        out[fwd] = grad
    return out


class GraphWithNamedArgs:
    """A popxl graph, the NamedTensors of its named (variable) inputs and, for a gradient
    graph, its GradGraphInfo. A graph made by ``Module.create_graph`` also knows its module
    (``from_module``, for ``build_grad``), the module's aux tensors and the gradient graphs of
    the graphs it calls (``called_graphs_grad_info``)."""

    def __init__(self, graph: Any, args: NamedTensors | None = None, grad_graph_info: Any = None,
                 from_module: Any = None, aux: Any = None,
                 called_graphs_grad_info: Mapping[Any, Any] | None = None) -> None:
        self.graph = graph
        self.args = args if args is not None else NamedTensors()
        self._grad_graph_info = grad_graph_info
        self._from_module = from_module
        if aux is None:
            from profcompare.emulator.popxl_addons.module import _Aux

            aux = _Aux()
        self._aux = aux
        self.called_graphs_grad_info = called_graphs_grad_info if called_graphs_grad_info is not None else {}
        self.autodiff_applied = False

    @classmethod
    def from_grad_graph(cls, grad_graph_info: Any, args: NamedTensors | None = None) -> GraphWithNamedArgs:
        """Return a GraphWithNamedArgs for the gradient graph of ``grad_graph_info``."""
        return cls(grad_graph_info.graph, args, grad_graph_info)

    @property
    def grad_graph_info(self) -> Any:
        """The GradGraphInfo of a gradient graph (AttributeError for other graphs)."""
        if self._grad_graph_info is None:
            raise AttributeError("grad_graph_info: this graph is not a gradient graph (made by autodiff)")
        return self._grad_graph_info

    @grad_graph_info.setter
    def grad_graph_info(self, info: Any) -> None:
        self._grad_graph_info = info

    def bind(self, args: NamedTensors | None = None) -> BoundGraph:
        """Return a BoundGraph whose named inputs are bound to the leaves of ``args`` with the
        same dotted keys."""
        return BoundGraph(self.graph, to_mapping(self.args, args) if args is not None else {})

    def call(self, *targs: Any, args: Mapping[Any, Any] | None = None) -> tuple[Any, ...]:
        """Call the graph with nothing bound; returns the outputs."""
        return self.bind().call(*targs, args=args)

    def call_with_info(self, *targs: Any, args: Mapping[Any, Any] | None = None) -> Any:
        """Call the graph with nothing bound; returns popxl's CallSiteInfo."""
        return self.bind().call_with_info(*targs, args=args)

    def autodiff(self, grads_provided: Iterable[Any] | None = None, grads_required: Iterable[Any] | None = None,
                 called_graphs_grad_info: Mapping[Any, Any] | None = None, method: str = "auto",
                 force: bool = False) -> GraphWithNamedArgs:
        """Return the gradient graph of this graph: by the module's ``build_grad`` when it has
        one (``method`` auto or build_grad), else by autodiff (with ``called_graphs_grad_info``
        merged over this graph's). Raises on a second differentiation unless ``force``."""
        from profcompare.emulator.popxl_addons.transforms.autodiff import autodiff

        if method not in ("auto", "build_grad", "autodiff"):
            raise ValueError(f"`method` should be one of 'auto', 'build_grad' or 'autodiff'. Not: {method}")
        if self.autodiff_applied and not force:
            raise Exception("Autodiff has already been applied to the graph, as autodiff modifies the forward graph "
                            "in-place, applying autodiff multiple times does not give the same effect. Use "
                            "`force=True` if you want to ignore this guardrail.")
        if method in ("auto", "build_grad"):
            if self._from_module is not None and self._from_module.implements_grad_graph:
                grad_graph = self._from_module.create_grad_graph(self, grads_provided, grads_required)
                self.autodiff_applied = True
                return grad_graph
            if method == "build_grad":
                raise Exception("The default implementation of `build_grad` should be overridden and `from_module` "
                                "is specified when this object was initialised.")
        grad_graph = autodiff(self, grads_provided, grads_required, called_graphs_grad_info)
        self.autodiff_applied = True
        return grad_graph

    def copy(self) -> GraphWithNamedArgs:
        """Return a shallow copy (same graph, copied args tree)."""
        return GraphWithNamedArgs(self.graph, self.args.copy(), self._grad_graph_info)

    def print_schedule(self) -> str:
        """Return a readable listing of the graph: its name, its inputs (named args by key) with
        shapes and dtypes, its outputs, and one line per op in schedule order."""
        from profcompare.emulator.popxl_addons._schedule import format_schedule

        return format_schedule(self.graph, self.args)
