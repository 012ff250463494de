"""``popart._internal.ir`` on the simulator: PopART's C++ Ir as tests read it.

Tests of popxl programs count the ops a graph holds by PopART class:
``ops_of_type(graph._pb_graph.getOps(), _ir.op.MatMulOp)``. The simulator keeps its own op
records (:class:`profcompare.emulator.popxl.graph.Op`, typed by PopART's op type names), so it
gives that much: ``Graph._pb_graph`` is a read-only :class:`GraphView` whose ``getOps()``
returns one instance per op of the graph, of the class :mod:`.op` names after the op's
PopART class; :mod:`.patterns` has the pattern levels ``Ir._pb_ir.setPatterns`` takes. Building or rewriting a graph through PopART's Ir (custom ops, IR surgery) is
not simulated: every other name is refused in one line naming it.
"""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl.errors import SimulatorNotImplementedError, module_getattr, not_implemented_message

from . import op, patterns
from .op import Op


class GraphView:
    """``popxl.Graph._pb_graph``: the ops of one graph, read-only."""

    __slots__ = ("_graph",)

    def __init__(self, graph: Any) -> None:
        self._graph = graph

    def getOps(self) -> list[Op]:  # noqa: N802 - PopART's name
        """One :class:`~.op.Op` per op of the graph, in the order they were created (PopART
        lists them by op id, which is that order too)."""
        return [op.wrap(record) for record in self._graph.ops]

    def id(self) -> str:  # noqa: A003 - PopART's name
        """The graph's id (``""`` for the main graph, as popxl's ``Graph.id``)."""
        return str(self._graph.id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GraphView) and other._graph is self._graph

    def __hash__(self) -> int:
        return hash(id(self._graph))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        raise SimulatorNotImplementedError(not_implemented_message(f"popxl.Graph._pb_graph.{name}"))


__getattr__ = module_getattr("popart._internal.ir")

__all__ = ["GraphView", "Op", "op", "patterns"]
