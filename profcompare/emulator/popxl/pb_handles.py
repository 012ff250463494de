"""The few PopART C++ objects a C++ custom op's Python wrapper handles (popxl's pattern for ops of
one's own, as in popxl's user guide "custom operations" and Graphcore's applications)::

    settings = ctx._get_op_settings("MyOp")
    op = my_binding.MyOp.createOpInGraph(g._pb_graph, {0: x.id}, {0: g._create_tensor_id("y")},
                                         attr, settings)
    ctx._op_created(op)
    y = popxl.Tensor._from_pb_tensor(op.outTensor(0))

The simulator has no PopART: ``g._pb_graph`` is a :class:`PbGraph` handle naming its popxl
graph, ``_get_op_settings`` an :class:`OpSettings` (the op's name with the name scopes, as
popxl's), a custom op's ``createOpInGraph`` (emulator/cpp_custom_ops) returns a :class:`PbOp`
whose ``outTensor(i)`` is a :class:`PbTensor`. As in popxl, creating the op does not record it
with the context: ``ctx._op_created(op)`` does (op-created hooks, ``in_sequence``, placement).
Every other member of these handles is refused by name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import SimulatorNotImplementedError, not_implemented_message

if TYPE_CHECKING:
    from .dtypes import dtype
    from .graph import Graph, Op
    from .tensor import Tensor


class _Refusing:
    """Refuses every public member it does not define, naming it under ``_api``."""

    _api = ""

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):
            raise AttributeError(name)
        raise SimulatorNotImplementedError(not_implemented_message(f"{self._api}.{name}"))


class PbGraph(_Refusing):
    """``graph._pb_graph``: PopART's C++ graph, reduced to being passed to a custom op and to its
    ops (``getOps``, as tests read them)."""

    _api = "popxl.Graph._pb_graph"

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def getOps(self) -> list[Any]:  # noqa: N802 - PopART's name
        """One op per op of the graph, each as its PopART class (``popart._internal.ir.op``), in the
        order they were created."""
        from profcompare.emulator.popart._internal.ir import op

        return [op.wrap(record) for record in self.graph.ops]

    def id(self) -> str:  # noqa: A003 - PopART's name
        """The graph's id (``""`` for the main graph, as popxl's ``Graph.id``)."""
        return str(self.graph.id)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PbGraph) and other.graph is self.graph

    def __hash__(self) -> int:
        return id(self.graph)


@dataclass(frozen=True)
class OpSettings:
    """``ctx._get_op_settings(name)``: the graph and the op's name (name scopes joined by ``/``)."""

    graph: Graph
    name: str


class PbTensor(_Refusing):
    """An output of a :class:`PbOp` (``op.outTensor(i)``)."""

    _api = "popart.Tensor"

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor

    @property
    def id(self) -> str:
        """The tensor id."""
        return self.tensor.id


class PbOp(_Refusing):
    """A custom op created by its ``createOpInGraph`` and not yet recorded (``ctx._op_created``)."""

    _api = "popart.Op"

    def __init__(self, op: Op) -> None:
        self.op = op

    def outTensor(self, index: int) -> PbTensor:  # noqa: N802 - PopART's name
        """The op's output ``index``."""
        return PbTensor(self.op.outputs[index])


def create_connected_op(pb_graph: PbGraph, op_type: str, settings: OpSettings, inputs: Mapping[int, str],
                        outputs: Mapping[int, tuple[str, Sequence[int], dtype, Sequence[int]]],
                        attrs: dict[str, Any]) -> PbOp:
    """PopART's ``Graph::createConnectedOp``: an op of ``op_type`` named by ``settings`` in
    ``pb_graph``'s graph, its inputs the tensors of those ids (indices from 0, none missing), its
    outputs new tensors of exactly the ids given (``graph._create_tensor_id`` made them unique).
    Not recorded with the context until ``ctx._op_created``."""
    from .graph import Op
    from .tensor import Tensor

    if not isinstance(pb_graph, PbGraph):
        raise TypeError(f"createOpInGraph: expected a graph's _pb_graph, got {type(pb_graph).__name__}")
    g = pb_graph.graph
    for name, indices in (("inputs", inputs), ("outputs", outputs)):
        if sorted(indices) != list(range(len(indices))):
            raise ValueError(f"createOpInGraph: {name} must be indexed 0..{len(indices) - 1}, got {sorted(indices)}")
    missing = [tid for tid in inputs.values() if tid not in g._tensors]
    if missing:
        raise ValueError(f"createOpInGraph: no tensor {missing[0]!r} in graph {g.name!r}")
    taken = [tid for tid, *_ in outputs.values() if tid in g._tensors]
    if taken:
        raise ValueError(f"createOpInGraph: tensor id {taken[0]!r} already exists in graph {g.name!r}")
    op = Op(g._ir._next_op_id(), op_type, settings.name, g, [g._tensors[inputs[i]] for i in range(len(inputs))],
            [], [], attrs)
    for i in range(len(outputs)):
        tid, shape, dt, meta = outputs[i]
        t = Tensor._create(g, tid, shape, dt, meta)
        t._producer = op
        op.outputs.append(t)
    g._ops.append(op)
    return PbOp(op)
