"""The building context: current graph, name scopes, ``in_sequence`` ordering (popxl context.py).

Ops execute in creation order in the simulator, which satisfies every data dependency and every
``in_sequence`` constraint. The constraints are still recorded on the graph
(``Graph._topo_constraints``, pairs of op ids) so that ordering is inspectable and lowered.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .graph import Graph, Op
    from .ir import Ir


class _SeqFrame:
    """One ``in_sequence`` block: its mode and, per graph, the ops a new op must follow."""

    __slots__ = ("block_ops", "mode", "prev")

    def __init__(self, mode: bool | str) -> None:
        self.mode = mode
        self.prev: dict[int, list[str]] = {}  # graph key -> op ids the next op comes after
        self.block_ops: dict[int, list[str]] = {}  # ops created in a False block, per graph


class Context:
    """Global building state (one per process, like popxl's)."""

    def __init__(self) -> None:
        self.graphs: list[Graph] = []
        self.name_scopes: list[str] = []
        self.seq: list[_SeqFrame] = []
        self.merge_exchange: list[int] = []
        self._merge_counter = 0
        self.ipu_id = 0  # popxl.ipu(n): virtual graph of new ops (popxl starts on IPU 0)
        self.io_tile_set = False  # popxl.io_tiles(): new ops run on the I/O tiles
        self.op_hooks: list[Any] = []  # callables(op) run for every new op (pipelining stages)

    @property
    def graph(self) -> Graph:
        """The current graph; RuntimeError outside any graph context."""
        if not self.graphs:
            raise RuntimeError(
                "Trying to access a graph, but no graph has been selected. Hint - try performing "
                "the operations in a context manager (e.g. `with ir.main_graph:`) or inside of a "
                "function that's called by `popxl.Ir().create_graph()`")
        return self.graphs[-1]

    def op_created(self, graph: Graph, op: Op) -> None:
        """Record ``in_sequence`` constraints and merge-exchange membership for a new op."""
        if self.merge_exchange:
            op.attrs["merge_exchange"] = self.merge_exchange[-1]
        # placement is recorded only off the defaults, so single-IPU programs lower as before
        if self.ipu_id:
            op.attrs["ipu"] = self.ipu_id
        if self.io_tile_set:
            op.attrs["tile_set"] = "io"
        for hook in list(self.op_hooks):
            hook(op)
        if not self.seq:
            return
        key = id(graph)
        frame = self.seq[-1]
        if frame.mode == "pass":
            return
        if frame.mode is True:
            for before in frame.prev.get(key, ()):
                graph._topo_constraints.append((before, op.id))
            frame.prev[key] = [op.id]
            return
        # mode False: unordered among themselves, but after what preceded the block
        outer = self._enclosing_true()
        if outer is not None:
            for before in outer.prev.get(key, ()):
                graph._topo_constraints.append((before, op.id))
        frame.block_ops.setdefault(key, []).append(op.id)

    def _get_op_settings(self, name: str) -> Any:
        """popxl's op settings for a new op named ``name`` in the current graph (the name scopes
        joined by ``/``, as popxl's): what a C++ custom op's ``createOpInGraph`` takes."""
        from .pb_handles import OpSettings
        return OpSettings(self.graph, "/".join((*self.name_scopes, name)))

    def _op_created(self, op: Any) -> None:
        """Record a custom op made by its ``createOpInGraph`` (a pb_handles.PbOp) as popxl does
        every op it creates: :meth:`op_created`."""
        from .pb_handles import PbOp
        if not isinstance(op, PbOp):
            raise TypeError(f"_op_created: expected an op made by createOpInGraph, got {type(op).__name__}")
        self.op_created(op.op.graph, op.op)

    def _enclosing_true(self) -> _SeqFrame | None:
        for frame in reversed(self.seq[:-1]):
            if frame.mode is True:
                return frame
            if frame.mode == "pass":
                return None
        return None

    def pop_seq(self) -> None:
        """Close the innermost ``in_sequence`` block; a False block acts as one unit."""
        frame = self.seq.pop()
        if frame.mode is False:
            outer = None
            for f in reversed(self.seq):
                if f.mode is True:
                    outer = f
                    break
                if f.mode == "pass":
                    break
            if outer is not None:
                for key, ops in frame.block_ops.items():
                    if ops:
                        outer.prev[key] = list(ops)


_CONTEXT = Context()


def op_debug_context(name: str | Callable[..., Any]) -> Any:
    """popxl's decorator giving the ops a function creates a debug context (``@op_debug_context``
    or ``@op_debug_context("name")``). Debug contexts carry debug information only, not the ops'
    names, so the simulator calls the function unchanged."""
    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return func(*args, **kwargs)
        return wrapper
    return decorate(name) if callable(name) else decorate


def get_current_context() -> Context:
    """Return the process-wide building context."""
    return _CONTEXT


def gcg() -> Graph:
    """Return the current graph (popxl ``get_current_graph``)."""
    return _CONTEXT.graph


def gmg() -> Graph:
    """Return the main graph of the current Ir (popxl ``get_main_graph``)."""
    return _CONTEXT.graph.ir.main_graph


def gir() -> Ir:
    """Return the Ir of the current graph (popxl ``get_ir``)."""
    return _CONTEXT.graph.ir


get_current_graph = gcg
get_main_graph = gmg
get_ir = gir


@contextlib.contextmanager
def in_sequence(mode: bool | Literal["pass"] = True) -> Iterator[None]:
    """Order ops created inside the block: True = creation order, False = unordered (one unit
    inside an enclosing True block), 'pass' = no constraints. Also usable as a decorator."""
    if mode is None or not (mode is True or mode is False or mode == "pass"):
        raise TypeError(f"in_sequence mode must be True, False or 'pass', got {mode!r}")
    _CONTEXT.seq.append(_SeqFrame(mode))
    try:
        yield
    finally:
        _CONTEXT.pop_seq()


@contextlib.contextmanager
def name_scope(name: str) -> Iterator[None]:
    """Prefix the names of tensors created inside the block with ``name/``."""
    _CONTEXT.name_scopes.append(str(name))
    try:
        yield
    finally:
        _CONTEXT.name_scopes.pop()


@contextlib.contextmanager
def ipu(ipu: int) -> Iterator[int]:
    """Place the ops created inside on IPU ``ipu`` of the replica (a virtual graph id)."""
    if isinstance(ipu, bool) or not isinstance(ipu, int) or ipu < 0:
        raise ValueError(f"popxl.ipu needs a non-negative int IPU index, got {ipu!r}")
    prev = _CONTEXT.ipu_id
    _CONTEXT.ipu_id = ipu
    try:
        yield ipu
    finally:
        _CONTEXT.ipu_id = prev


@contextlib.contextmanager
def io_tiles() -> Iterator[None]:
    """Run the ops created inside on the I/O tiles of their IPU (``Ir.num_io_tiles`` of them)."""
    prev = _CONTEXT.io_tile_set
    _CONTEXT.io_tile_set = True
    try:
        yield
    finally:
        _CONTEXT.io_tile_set = prev


@contextlib.contextmanager
def merge_exchange() -> Iterator[None]:
    """Mark host/remote transfers created inside the block as one merged exchange.

    Numerically a no-op; the ops get ``attrs["merge_exchange"] = <group id>``."""
    _CONTEXT._merge_counter += 1
    _CONTEXT.merge_exchange.append(_CONTEXT._merge_counter)
    try:
        yield
    finally:
        _CONTEXT.merge_exchange.pop()
