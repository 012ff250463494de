"""GraphCache: reuse a graph built from the same function and compatible arguments.

The key is a hash, as in popxl-addons: of the function (a Module by its ``__hash__``, so two
modules hashing alike share graphs), the current IPU and I/O-tile context, and every bound
argument (tensors and specs by shape, dtype and meta_shape; graphs by identity; containers
element-wise; other values by ``hash``). Graphs are cached per Ir.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable
from functools import wraps
from typing import Any

from profcompare.emulator.popxl_addons._compat import is_tensor_like, ops, popxl
from profcompare.emulator.popxl_addons.graph import BoundGraph, GraphWithNamedArgs

__all__ = ["GraphCache", "argument_hash", "bound_arguments", "function", "get_function_hash", "tensor_hash"]


def bound_arguments(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Return ``{parameter: value}`` for calling ``fn`` (its ``__call__`` for callable objects,
    ``self`` included for methods) with these arguments, defaults filled in."""
    call = fn.__call__ if not inspect.isfunction(fn) and hasattr(fn, "__call__") else fn  # noqa: B004
    if inspect.ismethod(call):
        args = (call.__self__, *args)
        call = call.__func__
    bound = inspect.signature(call).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def tensor_hash(t: Any) -> int:
    """Return the hash of a tensor's (shape, dtype, meta_shape)."""
    return hash((tuple(t.shape), t.dtype, tuple(t.meta_shape or ())))


def argument_hash(arg: Any) -> int:
    """Return the hash of one argument: tensors and specs by :func:`tensor_hash`, BoundGraphs
    by graph and bound arguments, GraphWithNamedArgs by graph, tuples, lists and dicts
    element-wise, anything else by ``hash``."""
    if is_tensor_like(arg):
        return tensor_hash(arg)
    if isinstance(arg, BoundGraph):
        return hash((arg.graph, argument_hash(arg.args)))
    if isinstance(arg, GraphWithNamedArgs):
        return hash(arg.graph)
    if isinstance(arg, (tuple, list, dict)):
        items = arg.items() if isinstance(arg, dict) else enumerate(arg)
        return hash(tuple((key, argument_hash(value)) for key, value in items))
    return hash(arg)


def get_function_hash(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """Return the cache key of building a graph from ``fn`` with these arguments in the current
    IPU / I/O-tile context."""
    ctx = popxl.context.get_current_context()
    parts = [fn, ctx.ipu_id, ctx.io_tile_set]
    parts += [argument_hash(value) for value in bound_arguments(fn, *args, **kwargs).values()]
    return hash(tuple(parts))


class GraphCache:
    """Caches popxl graphs per Ir by :func:`get_function_hash`: replace
    ``ir.create_graph(fn, ...)`` by ``cache.create_graph(fn, ...)``."""

    def __init__(self) -> None:
        self._cache: weakref.WeakKeyDictionary[Any, dict[int, Any]] = weakref.WeakKeyDictionary()

    def __len__(self) -> int:
        return sum(len(graphs) for graphs in self._cache.values())

    def create_graph(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Return ``popxl.gcg().ir.create_graph(fn, ...)``, or the graph of an earlier call with
        the same key in the same Ir."""
        ir = popxl.gcg().ir
        graphs = self._cache.setdefault(ir, {})
        key = get_function_hash(fn, *args, **kwargs)
        if key not in graphs:
            graphs[key] = ir.create_graph(fn, *args, **kwargs)
        return graphs[key]


def function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate ``fn`` so that calling it builds (once per compatible arguments, through a
    GraphCache) a graph of it and calls that graph, returning the call's outputs."""
    cache = GraphCache()

    @wraps(fn)
    def outlined(*args: Any, **kwargs: Any) -> Any:
        graph = cache.create_graph(fn, *args, **kwargs)
        return ops.call(graph, *args, **kwargs)

    return outlined
