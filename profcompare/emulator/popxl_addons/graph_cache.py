"""GraphCache: reuse a graph built from the same function and equivalent arguments."""

from __future__ import annotations

import inspect
from collections.abc import Hashable
from typing import Any

from profcompare.emulator.popxl_addons._compat import is_tensor_like, popxl

__all__ = ["GraphCache"]


def _arg_key(value: Any) -> Hashable:
    """Tensors and specs key by (shape, dtype, meta_shape); containers element-wise; the rest by value."""
    if is_tensor_like(value):
        return ("tensor", tuple(value.shape), str(value.dtype), tuple(value.meta_shape or ()))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_arg_key(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, _arg_key(v)) for k, v in value.items())))
    try:
        hash(value)
    except TypeError:
        raise TypeError(f"GraphCache: argument {value!r} is neither a tensor nor hashable") from None
    return ("value", type(value).__name__, value)


class GraphCache:
    """Caches graphs by (function, arguments): tensor arguments by (shape, dtype, meta_shape),
    other arguments by value, so keyword arguments such as ``lr`` are part of the key."""

    def __init__(self) -> None:
        self._graphs: dict[Hashable, Any] = {}

    def key(self, fn: Any, *args: Any, **kwargs: Any) -> Hashable:
        """Return the cache key of calling ``fn`` with these arguments."""
        target = fn.build if hasattr(fn, "build") and not inspect.isfunction(fn) else fn
        bound = inspect.signature(target).bind(*args, **kwargs)
        bound.apply_defaults()
        # graphs belong to one Ir, so the current Ir is part of the key
        return (id(popxl.gir()), fn, tuple((name, _arg_key(value)) for name, value in bound.arguments.items()))

    def __len__(self) -> int:
        return len(self._graphs)

    def lookup(self, key: Hashable) -> Any:
        """Return the cached entry for ``key`` or None."""
        return self._graphs.get(key)

    def store(self, key: Hashable, entry: Any) -> None:
        """Remember ``entry`` under ``key``."""
        self._graphs[key] = entry

    def create_graph(self, fn: Any, *args: Any, **kwargs: Any) -> Any:
        """Return ``popxl.gir().create_graph(fn, ...)``, reusing the graph of an earlier call with
        an equal key. (Modules use their own ``create_graph``, which consults the cache.)"""
        from profcompare.emulator.popxl_addons.module import Module

        if isinstance(fn, Module):
            return fn._create_graph_cached(self, *args, **kwargs)
        key = self.key(fn, *args, **kwargs)
        graph = self.lookup(key)
        if graph is None:
            graph = popxl.gir().create_graph(fn, *args, **kwargs)
            self.store(key, graph)
        return graph
