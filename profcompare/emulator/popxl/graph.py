"""Graphs and ops (popxl graph.py plus the op records the simulator keeps).

An :class:`Op` is a plain record: type (popxl/PopART op type name), input and output tensors,
tensors modified in place, attributes. The numeric kernels live in ``execution.py``; the
lowering in ``profcompare.emulator.lowering`` reads the same records.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .context import get_current_context
from .dtypes import dtype as _dtype
from .tensor import Constant, Tensor, Variable

if TYPE_CHECKING:
    from .ir import Ir


class Op:
    """One op of a graph (created by the functions in ``popxl.ops``)."""

    __slots__ = ("attrs", "graph", "id", "inputs", "modified", "name", "outputs", "type")

    def __init__(self, op_id: str, op_type: str, name: str, graph: Graph, inputs: list[Tensor],
                 outputs: list[Tensor], modified: list[Tensor], attrs: dict[str, Any]) -> None:
        self.id = op_id
        self.type = op_type
        self.name = name
        self.graph = graph
        self.inputs = inputs
        self.outputs = outputs
        self.modified = modified
        self.attrs = attrs

    def __repr__(self) -> str:
        ins = ", ".join(t.id for t in self.inputs)
        outs = ", ".join(t.id for t in self.outputs)
        return f"Op[{self.type}.{self.id} ({ins}) -> ({outs})]"


class Graph:
    """A popxl graph: the main graph or a subgraph created by ``Ir.create_graph``."""

    def __init__(self, ir: Ir, graph_id: str) -> None:
        self._ir = ir
        self._id = graph_id
        self._scope_prefix = f"{graph_id}/" if graph_id else ""
        self._tensors: dict[str, Tensor] = {}
        self._ops: list[Op] = []
        self._inputs: list[Tensor] = []
        self._outputs: list[Tensor] = []
        self._by_ref_inputs: dict[Tensor, None] = {}  # ordered set
        self._topo_constraints: list[tuple[str, str]] = []
        self._grad_graph_info: Any = None  # set on graphs created by transforms.autodiff

    # --- public API ---------------------------------------------------------------------------
    @property
    def name(self) -> str:
        """The graph name (its scope); ``""`` for the main graph."""
        return self._id

    @property
    def id(self) -> str:
        """The graph id (same as the name in popxl)."""
        return self._id

    @property
    def _pb_graph(self) -> Any:
        """PopART's C++ graph as popxl programs and their tests use it: a handle naming this graph
        (pb_handles.py) that a C++ custom op's ``createOpInGraph`` receives, with ``getOps()`` (each
        op as its PopART class, ``popart._internal.ir.op``) and ``id()``; every other member is
        refused in one line naming it."""
        from .pb_handles import PbGraph
        return PbGraph(self)

    _pb_graph.fget.__simulator_note__ = (  # type: ignore[attr-defined]
        "getOps() and id() (each op as its PopART class) and passing it to a C++ custom op's createOpInGraph; "
        "building or rewriting the graph is refused")

    @property
    def ir(self) -> Ir:
        """The owning Ir."""
        return self._ir

    @property
    def main_graph(self) -> Graph:
        """The Ir's main graph."""
        return self._ir.main_graph

    @property
    def inputs(self) -> tuple[Tensor, ...]:
        """Graph inputs in order."""
        return tuple(self._inputs)

    @property
    def inputs_by_name(self) -> dict[str, Tensor]:
        """Graph inputs keyed by tensor name."""
        return {t.name: t for t in self._inputs}

    @property
    def outputs(self) -> tuple[Tensor, ...]:
        """Graph outputs in order."""
        return tuple(self._outputs)

    @property
    def tensors(self) -> tuple[Tensor, ...]:
        """Every tensor of the graph, in creation order."""
        return tuple(self._tensors.values())

    @property
    def variables(self) -> tuple[Variable, ...]:
        """The variables of the graph."""
        return tuple(t for t in self._tensors.values() if isinstance(t, Variable))

    @property
    def constants(self) -> tuple[Constant, ...]:
        """The constants of the graph."""
        return tuple(t for t in self._tensors.values() if isinstance(t, Constant))

    @property
    def called_graphs(self) -> tuple[Graph, ...]:
        """Graphs called by ops of this graph (each once, in first-call order)."""
        seen: dict[Graph, None] = {}
        for op in self._ops:
            if op.type == "Call":
                seen[op.attrs["called_graph"]] = None
        return tuple(seen)

    @property
    def ops(self) -> tuple[Op, ...]:
        """The ops of the graph in schedule (creation) order (simulator convenience)."""
        return tuple(self._ops)

    def get_tensor(self, tensor_id: str) -> Tensor:
        """Return the tensor with this id (KeyError if absent)."""
        try:
            return self._tensors[tensor_id]
        except KeyError:
            raise KeyError(f"There is no tensor {tensor_id!r} in graph {self._id!r}") from None

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, Tensor):
            raise TypeError(f"Graph membership needs a Tensor, got {type(value).__name__}")
        return value._graph is self

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Graph) and other._id == self._id and other._ir is self._ir

    def __hash__(self) -> int:
        return hash((self._id, id(self._ir)))

    def __repr__(self) -> str:
        return f"Graph[id={self._id!r}]"

    def __enter__(self) -> Graph:
        get_current_context().graphs.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        get_current_context().graphs.pop()

    def register_op_created_hook(self, fn: Any) -> int:
        """Call ``fn(op)`` for every op created in this graph from now on; returns a handle for
        :meth:`remove_op_created_hook`. (The simulator passes its own ``Op`` records.)"""
        def hook(op: Op) -> None:
            if op.graph is self:
                fn(op)
        ctx = get_current_context()
        ctx.op_hooks.append(hook)
        handle = id(hook)
        self._op_hooks = {**getattr(self, "_op_hooks", {}), handle: hook}
        return handle

    def remove_op_created_hook(self, handle: int) -> None:
        """Stop the hook registered under ``handle``."""
        hook = getattr(self, "_op_hooks", {}).pop(handle, None)
        if hook is not None and hook in get_current_context().op_hooks:
            get_current_context().op_hooks.remove(hook)

    # --- internals ----------------------------------------------------------------------------
    def _create_tensor_id(self, name: str | None = None) -> str:
        name = name if name else "t"
        scopes = get_current_context().name_scopes
        if scopes:
            name = "/".join((*scopes, name))
        tid = self._scope_prefix + name
        if tid in self._tensors:
            tid = self._ir._intermediate_tensor_id(tid)
        return tid


def check_in_graph(graph: Graph, **tensors: Any) -> None:
    """Raise TypeError/ValueError unless every keyword value is a Tensor of ``graph``."""
    for name, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"The input `{name}` is not a Tensor. Type: {type(t)}. Value: {t}.")
        if t._graph is not graph:
            raise ValueError(f"The input tensor `{name}` ({t.id}) is not in the current Graph "
                             f"{graph.name!r}.")


def add_op(op_type: str, name: str, inputs: Sequence[Tensor],
           outputs: Iterable[tuple[str, Sequence[int], _dtype, Sequence[int]]],
           attrs: dict[str, Any] | None = None, modified: Sequence[Tensor] = ()) -> Op:
    """Create an op in the current graph and return it.

    ``outputs`` gives (name, shape, dtype, meta_shape) per output; ids are made unique the way
    popxl does. Inputs must belong to the current graph."""
    ctx = get_current_context()
    g = ctx.graph
    for i, t in enumerate(inputs):
        check_in_graph(g, **{f"{op_type} input {i}": t})
    op_name = "/".join((*ctx.name_scopes, name)) if ctx.name_scopes else name
    op = Op(g._ir._next_op_id(), op_type, op_name, g, list(inputs), [], list(modified), attrs or {})
    for out_name, shape, dt, meta in outputs:
        t = Tensor._create(g, g._create_tensor_id(out_name), shape, dt, meta)
        t._producer = op
        op.outputs.append(t)
    g._ops.append(op)
    ctx.op_created(g, op)
    return op
