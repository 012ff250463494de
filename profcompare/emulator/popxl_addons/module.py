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
from profcompare.emulator.popxl_addons._generation import Generational
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


def _module_init_30(self: Module, cache: bool = False) -> None:
    _module_setup(self, cache)


def _module_init_34(self: Module, cache: bool = False, grad_inlining_error: str = "error") -> None:
    if grad_inlining_error not in ("error", "warning", "none"):
        raise ValueError(f"grad_inlining_error should be one of 'error', 'warning', 'none'. Not: {grad_inlining_error}")
    _module_setup(self, cache)
    object.__setattr__(self, "grad_inlining_error", grad_inlining_error)


def _module_setup(self: Module, cache: Any) -> None:
    object.__setattr__(self, "_variable_factories", NamedVariableFactories())
    object.__setattr__(self, "_named_inputs", NamedTensors())
    object.__setattr__(self, "_name_scope", None)
    object.__setattr__(self, "_in_scope", False)
    # as popxl-addons: any true ``cache`` gives the module a cache of its own
    object.__setattr__(self, "_cache", GraphCache() if cache else None)


def _add_variable_input_30(self: Module, name: str, data_iter: _vf.DataIter, dtype: Any = None, by_ref: bool = False,
                           replica_grouping: Any = None) -> Any:
    tensor, factory = _vf.add_variable_input(name, data_iter, dtype, by_ref, replica_grouping)
    self._record(name, tensor, factory)
    return tensor


def _add_variable_input_34(self: Module, name: str, data_iter: _vf.DataIter, dtype: Any = None, by_ref: bool = False,
                           replica_grouping: Any = None, overwrite: bool = False) -> Any:
    tensor, factory = _vf.add_variable_input(name, data_iter, dtype, by_ref, replica_grouping)
    self._record(name, tensor, factory, overwrite)
    return tensor


def _add_sharded_30(self: Module, name: str, data_iter: _vf.DataIter, dtype: Any = None, by_ref: bool = False,
                    replica_grouping: Any = None) -> Any:
    tensor, factory = _vf.add_replica_sharded_variable_input.resolve("3.0")(name, data_iter, dtype, by_ref,
                                                                           replica_grouping)
    self._record(name, tensor, factory)
    return tensor


def _add_sharded_34(self: Module, name: str, data_iter: _vf.DataIter, dtype: Any = None, by_ref: bool = False,
                    replica_grouping: Any = None, shard_over: int | None = None) -> Any:
    tensor, factory = _vf.add_replica_sharded_variable_input.resolve("3.4")(name, data_iter, dtype, by_ref,
                                                                           replica_grouping, shard_over)
    self._record(name, tensor, factory)
    return tensor


class Module(_Base):  # type: ignore[misc, valid-type]
    """Base class of layers built into popxl graphs (popxl-addons Gen A ``Module``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is not None and not getattr(build, "_profcompare_scoped", False):
            cls.build = _scoped_build(build)  # type: ignore[method-assign]

    __init__ = Generational("__init__", {"3.0": _module_init_30, "3.4": _module_init_34}, {
        "3.0": "Module(cache=False); grad_inlining_error arrived in sdk-release-3.1",
        "3.4": "Module(cache=False, grad_inlining_error='error')",
    })

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
    add_variable_input = Generational("add_variable_input", {"3.0": _add_variable_input_30,
                                                             "3.4": _add_variable_input_34}, {
        "3.0": "add_variable_input(name, data_iter, dtype=None, by_ref=False, replica_grouping=None)",
        "3.4": "add_variable_input(name, data_iter, dtype=None, by_ref=False, replica_grouping=None, overwrite=False)",
    })
    add_replica_sharded_variable_input = Generational(
        "add_replica_sharded_variable_input", {"3.0": _add_sharded_30, "3.4": _add_sharded_34}, {
            "3.0": "add_replica_sharded_variable_input(name, data_iter, dtype=None, by_ref=False, "
                   "replica_grouping=None); shard_over arrived in sdk-release-3.1",
            "3.4": "add_replica_sharded_variable_input(name, data_iter, dtype=None, by_ref=False, "
                   "replica_grouping=None, shard_over=None)",
        })

    def add_variable_inputs(self, name: str, factories: NamedVariableFactories) -> NamedTensors:
        """Return graph inputs for every factory of ``factories``, recorded under ``name.``."""
        tensors = {}
        for key, factory in factories.to_dict().items():
            tensor = factory.create_input(prefix=name)
            self._record(f"{name}.{key}", tensor, factory)
            tensors[key] = tensor
        return NamedTensors.from_dict(tensors)

    def _record(self, name: str, tensor: Any, factory: _vf.VariableFactory, overwrite: bool = False) -> None:
        self._variable_factories.insert(name, factory, overwrite)
        self._named_inputs.insert(name, tensor, overwrite)

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
