"""Module: a layer whose ``build`` creates a popxl graph with named variable inputs.

Assigning a Module attribute (``self.fc1 = Linear(512)``) names the child ``fc1``: its build
runs inside ``popxl.name_scope("fc1")`` and its variables appear as ``fc1.weight``. Calling a
child inside ``build`` inlines its ops into the graph being built.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from profcompare.emulator.popxl_addons import variable_factory as _vf
from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons.graph import GraphWithNamedArgs
from profcompare.emulator.popxl_addons.graph_cache import GraphCache
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.variable_factory import NamedVariableFactories

__all__ = ["Module"]

_Base: type = getattr(popxl, "Module", object)


def _scoped_build(build: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``build`` so that it runs inside the module's name scope (once, however deep the
    ``super().build`` chain)."""

    @functools.wraps(build)
    def wrapper(self: Module, *args: Any, **kwargs: Any) -> Any:
        scope = self.__dict__.get("_name_scope")
        if not scope or self.__dict__.get("_in_scope"):
            return build(self, *args, **kwargs)
        object.__setattr__(self, "_in_scope", True)
        try:
            with popxl.name_scope(scope):
                return build(self, *args, **kwargs)
        finally:
            object.__setattr__(self, "_in_scope", False)

    wrapper._profcompare_scoped = True  # type: ignore[attr-defined]
    return wrapper


class Module(_Base):  # type: ignore[misc, valid-type]
    """Base class of layers built into popxl graphs (popxl-addons Gen A ``Module``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is not None and not getattr(build, "_profcompare_scoped", False):
            cls.build = _scoped_build(build)  # type: ignore[method-assign]

    def __init__(self, cache: bool | GraphCache | None = False) -> None:
        object.__setattr__(self, "_variable_factories", NamedVariableFactories())
        object.__setattr__(self, "_named_inputs", NamedTensors())
        object.__setattr__(self, "_name_scope", None)
        object.__setattr__(self, "_in_scope", False)
        if isinstance(cache, GraphCache):
            graph_cache: GraphCache | None = cache
        else:
            graph_cache = GraphCache() if cache else None
        object.__setattr__(self, "_cache", graph_cache)

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Module):
            object.__setattr__(value, "_name_scope", name)
            # graft the child's trees: its inputs appear under ``name.`` in ours
            self._variable_factories.insert(name, value._variable_factories, overwrite=True)
            self._named_inputs.insert(name, value._named_inputs, overwrite=True)
        object.__setattr__(self, name, value)

    def build(self, *args: Any, **kwargs: Any) -> Any:
        """Build the module's ops into the current graph; subclasses implement it."""
        raise NotImplementedError(f"{type(self).__name__}.build is not implemented")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.build(*args, **kwargs)

    # ----- variable inputs -----
    def add_variable_input(
        self, name: str, data_iter: _vf.DataIter, dtype: Any = None, by_ref: bool = False, replica_grouping: Any = None
    ) -> Any:
        """Return a new graph input of the graph being built, recorded (with its factory) under
        ``name`` so that it becomes a named arg ``<scope>.name``."""
        tensor, factory = _vf.add_variable_input(name, data_iter, dtype, by_ref, replica_grouping)
        self._record(name, tensor, factory)
        return tensor

    def add_replica_sharded_variable_input(
        self, name: str, data_iter: _vf.DataIter, dtype: Any = None, by_ref: bool = False, replica_grouping: Any = None
    ) -> Any:
        """Like :meth:`add_variable_input` for a replica-sharded variable: the graph input is the
        shard ``(nelms // replicas,)`` with ``meta_shape`` = the full shape; the factory makes full data."""
        tensor, factory = _vf.add_replica_sharded_variable_input(name, data_iter, dtype, by_ref, replica_grouping)
        self._record(name, tensor, factory)
        return tensor

    def add_variable_inputs(self, name: str, factories: NamedVariableFactories) -> NamedTensors:
        """Return graph inputs for every factory of ``factories``, recorded under ``name.``."""
        tensors = {}
        for key, factory in factories.to_dict().items():
            tensor = factory.create_input(prefix=name)
            self._record(f"{name}.{key}", tensor, factory)
            tensors[key] = tensor
        return NamedTensors.from_dict(tensors)

    def _record(self, name: str, tensor: Any, factory: _vf.VariableFactory) -> None:
        self._variable_factories.insert(name, factory)
        self._named_inputs.insert(name, tensor)

    # ----- graphs -----
    def create_graph(self, *args: Any, **kwargs: Any) -> tuple[NamedVariableFactories, GraphWithNamedArgs]:
        """Build a graph from ``build`` (tensor/spec arguments become graph inputs; other
        arguments are passed through); returns (variable factories, GraphWithNamedArgs).
        With a cache, an equal call (same tensor specs, equal other values) reuses the graph."""
        if self._cache is not None:
            return self._create_graph_cached(self._cache, *args, **kwargs)
        return self._create_graph(*args, **kwargs)

    def _create_graph(self, *args: Any, **kwargs: Any) -> tuple[NamedVariableFactories, GraphWithNamedArgs]:
        self._reset()
        try:
            graph = popxl.gir().create_graph(self, *args, **kwargs)
            factories = self._variable_factories.copy()
            named_inputs = self._named_inputs.copy()
        finally:
            self._reset()
        return factories, GraphWithNamedArgs(graph, named_inputs)

    def _create_graph_cached(
        self, cache: GraphCache, *args: Any, **kwargs: Any
    ) -> tuple[NamedVariableFactories, GraphWithNamedArgs]:
        key = cache.key(self, *args, **kwargs)
        hit = cache.lookup(key)
        if hit is None:
            hit = self._create_graph(*args, **kwargs)
            cache.store(key, hit)
        factories, graph = hit
        return factories.copy(), graph.copy()

    def _reset(self) -> None:
        """Forget the inputs of the last build (children stay grafted)."""
        self._variable_factories._clear_leaves()
        self._named_inputs._clear_leaves()
