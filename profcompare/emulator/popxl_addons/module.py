"""Module: a layer whose ``build`` creates a popxl graph with named variable inputs.

Assigning a Module attribute (``self.fc1 = Linear(512)``) names the child ``fc1``: its build
runs inside ``popxl.name_scope("fc1")`` and its variables appear as ``fc1.weight``. Calling a
child inside ``build`` inlines its ops into the graph being built; ``self.call_module(child)``
outlines it instead (a graph of its own, called from ours).

popxl-addons 3.4 adds hand-written gradients: a module may implement ``build_grad``, reading
forward tensors saved in ``self.aux[key]`` (they become extra forward outputs and gradient
inputs) and setting ``self.var_grad[name]`` for its variables; ``create_grad_graph`` (or
``GraphWithNamedArgs.autodiff``) builds that gradient graph, and graphs calling such a module
carry the association in ``called_graphs_grad_info`` so autodiff uses it.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from profcompare.emulator.popxl_addons import variable_factory as _vf
from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons._generation import Generational, current
from profcompare.emulator.popxl_addons.graph import GraphWithNamedArgs, normalise_grad_info_map
from profcompare.emulator.popxl_addons.graph_cache import GraphCache
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.variable_factory import NamedVariableFactories, VariableFactory

__all__ = ["Module", "create_grad_graph_info"]

_Base: type = getattr(popxl, "Module", object)

#: modules whose ``build`` / ``build_grad`` is running (innermost last)
_BUILD_CONTEXT: list[Module] = []
_BUILD_GRAD_CONTEXT: list[Module] = []


class _Stacked:
    """``with _Stacked(stack, module):`` pushes ``module`` for the duration."""

    def __init__(self, stack: list[Module], module: Module) -> None:
        self.stack, self.module = stack, module

    def __enter__(self) -> None:
        self.stack.append(self.module)

    def __exit__(self, *exc: Any) -> None:
        self.stack.pop()


def _current(stack: list[Module]) -> Module | None:
    return stack[-1] if stack else None


class _Since34:
    """A Module method new in popxl-addons 3.1..3.4: AttributeError when 3.0 is emulated."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        functools.update_wrapper(self, fn)  # type: ignore[arg-type]

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, cls: type | None = None) -> Any:
        if current() == "3.0":
            raise AttributeError(f"popxl_addons.Module.{self.name} does not exist in popxl-addons 3.0 (it arrived in a "
                                 "later release; select 3.4 with PROFCOMPARE_SIM_ADDONS or --addons)")
        return self.fn if obj is None else self.fn.__get__(obj, cls)


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


class _Aux:
    """Forward tensors (or other values) a module saves in ``build`` for its ``build_grad``.

    Reading an entry is only allowed inside ``build_grad``: a tensor becomes an input of the
    gradient graph (named after the key), remembered so that the forward graph outputs it."""

    def __init__(self) -> None:
        self._dict: OrderedDict[str, Any] = OrderedDict()
        self._grad_to_fwd: OrderedDict[Any, Any] = OrderedDict()  # gradient-graph input -> forward tensor
        self._key_to_tensor: OrderedDict[str, Any] = OrderedDict()

    def __setitem__(self, key: str, value: Any) -> None:
        self._dict[key] = value

    def __getitem__(self, key: str) -> Any:
        module = _current(_BUILD_GRAD_CONTEXT)
        if module is None or module.aux is not self:
            raise Exception("You can only get items within the `build_graph` method which must be called via "
                            "`create_grad_graph` or `autodiff`.")
        value = self._dict[key]
        if not isinstance(value, popxl.Tensor):
            return value
        if key not in self._key_to_tensor:
            graph_input = popxl.graph_input(value.shape, value.dtype, key, False, value.meta_shape)
            self._key_to_tensor[key] = graph_input
            self._grad_to_fwd[graph_input] = value
        return self._key_to_tensor[key]

    def __contains__(self, key: object) -> bool:
        return key in self._dict

    def __repr__(self) -> str:
        return repr(self._dict)

    def copy(self) -> _Aux:
        """Return a shallow copy."""
        new = _Aux()
        new._dict = self._dict.copy()
        new._grad_to_fwd = self._grad_to_fwd.copy()
        new._key_to_tensor = self._key_to_tensor.copy()
        return new


class _VarGrads:
    """The gradients of the forward graph's variables, set by ``build_grad``
    (``self.var_grad["w"] = dw``); each must have its variable's shape and meta_shape."""

    def __init__(self, variables: Mapping[str, Any] | None = None) -> None:
        self._dict: OrderedDict[str, Any] = OrderedDict()
        self._vars = variables

    def _check_context(self) -> None:
        module = _current(_BUILD_GRAD_CONTEXT)
        if module is None or module.var_grad is not self or self._vars is None:
            raise Exception("You can only use `var_grad` within the `build_graph` method which must be called via "
                            "`create_grad_graph` or `autodiff`.")

    def __getitem__(self, key: str) -> Any:
        self._check_context()
        return self._dict[key]

    def __setitem__(self, key: str, tensor: Any) -> None:
        self._check_context()
        assert self._vars is not None
        if not isinstance(tensor, popxl.Tensor):
            raise TypeError(f"Not a tensor: {tensor}")
        if key not in self._vars:
            raise KeyError(f"Not a variable: {key}. Possible inputs: {list(self._vars)}")
        var = self._vars[key]
        if var.shape != tensor.shape or tuple(var.meta_shape) != tuple(tensor.meta_shape):
            raise ValueError("Shape or meta-shape of Tensor does not match variable. "
                             f"Tensor shape: {tensor.shape} meta-shape {tensor.meta_shape}. "
                             f"Variable shape {var.shape} meta-shape {var.meta_shape}.")
        self._dict[key] = tensor

    def __contains__(self, key: object) -> bool:
        return key in self._dict

    def __repr__(self) -> str:
        return repr(self._dict)


class _CalledGraphsGradInfoRefs:
    """Forward graph -> GradGraphInfo of the graphs a module calls, plus the maps of its
    submodules (kept by reference: a submodule keeps filling its own map)."""

    def __init__(self, mapping: Mapping[Any, Any] | None = None) -> None:
        self.map: dict[Any, Any] = normalise_grad_info_map(mapping)
        self.submaps: list[_CalledGraphsGradInfoRefs] = []

    def consolidate(self) -> dict[Any, Any]:
        """Return one mapping; entries of this map win over the submaps'."""
        merged: dict[Any, Any] = {}
        for sub in self.submaps:
            merged.update(sub.consolidate())
        merged.update(self.map)
        return merged

    def add(self, fwd_graph: Any, grad_graph: Any) -> None:
        """Associate a forward graph with its gradient graph."""
        self.map.update(normalise_grad_info_map({fwd_graph: grad_graph}))

    def add_submap(self, other: _CalledGraphsGradInfoRefs | Mapping[Any, Any]) -> None:
        """Include another map (by reference when it is a ``_CalledGraphsGradInfoRefs``)."""
        self.submaps.append(other if isinstance(other, _CalledGraphsGradInfoRefs) else
                            _CalledGraphsGradInfoRefs(other))

    def clear(self) -> None:
        """Forget this map and the submaps (recursively)."""
        for sub in self.submaps:
            sub.clear()
        self.map = {}
        self.submaps = []


def _module_init_30(self: Module, cache: bool = False) -> None:
    _module_setup(self, cache, "error")


def _module_init_34(self: Module, cache: bool = False, grad_inlining_error: str = "error") -> None:
    _module_setup(self, cache, grad_inlining_error)
    if cache and self.implements_grad_graph:
        raise ValueError("You cannot use graph caching if you have implemented `build_grad`.")
    if grad_inlining_error not in ("error", "warning", "none"):
        raise ValueError(f"grad_inlining_error should be one of 'error', 'warning', 'none'. Not: {grad_inlining_error}")


def _module_setup(self: Module, cache: Any, grad_inlining_error: str) -> None:
    object.__setattr__(self, "_variable_factories", NamedVariableFactories())
    object.__setattr__(self, "_named_inputs", NamedTensors())
    object.__setattr__(self, "_in_scope", False)
    # as popxl-addons: any true ``cache`` gives the module a cache of its own
    object.__setattr__(self, "_graph_cache", GraphCache() if cache else None)
    object.__setattr__(self, "_args_cache", {})
    object.__setattr__(self, "aux", _Aux())
    object.__setattr__(self, "var_grad", _VarGrads())
    object.__setattr__(self, "grad_inlining_error", grad_inlining_error)
    object.__setattr__(self, "called_graphs_grad_info", _CalledGraphsGradInfoRefs())


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


def _add_variable_inputs_30(self: Module, name: str | int, variable_f: NamedVariableFactories) -> NamedTensors:
    return self._add_variable_inputs(name, variable_f, False)


def _add_variable_inputs_34(self: Module, name: str | int, variable_f: NamedVariableFactories,
                            overwrite: bool = False) -> NamedTensors:
    return self._add_variable_inputs(name, variable_f, overwrite)


def _duplicates(items: list[Any]) -> list[Any]:
    seen: list[Any] = []
    dups: list[Any] = []
    for item in items:
        if any(item is s for s in seen):
            dups.append(item)
        else:
            seen.append(item)
    return dups


class Module(_Base):  # type: ignore[misc, valid-type]
    """Base class of layers built into popxl graphs."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        build = cls.__dict__.get("build")
        if build is not None and callable(build) and not getattr(build, "_profcompare_scoped", False):
            cls.build = _scoped_build(build)  # type: ignore[method-assign]

    __init__ = Generational("__init__", {"3.0": _module_init_30, "3.4": _module_init_34}, {
        "3.0": "Module(cache=False); grad_inlining_error arrived in sdk-release-3.1",
        "3.4": "Module(cache=False, grad_inlining_error='error')",
    })

    def __getattr__(self, name: str) -> Any:
        # a subclass that does not call Module.__init__ (allowed by popxl-addons when it is only
        # used with a GraphCache) gets its state on first use
        if name in ("_variable_factories", "_named_inputs", "_graph_cache", "_args_cache", "aux", "var_grad",
                    "grad_inlining_error", "called_graphs_grad_info", "_in_scope") and "_args_cache" not in self.__dict__:
            _module_setup(self, False, "error")
            return object.__getattribute__(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, Module):
            value.set_name_scope(name)
            # graft the child's trees: its inputs appear under ``name.`` in ours
            self._variable_factories.insert(name, value._variable_factories)
            self._named_inputs.insert(name, value._named_inputs)
            self.called_graphs_grad_info.add_submap(value.called_graphs_grad_info)
        object.__setattr__(self, name, value)

    def set_name_scope(self, name: str) -> None:
        """Build this module's ops inside ``popxl.name_scope(name)``."""
        object.__setattr__(self, "_name_scope", name)

    def build(self, *args: Any, **kwargs: Any) -> Any:
        """Build the module's ops into the current graph; subclasses implement it."""
        raise NotImplementedError(f"{type(self).__name__}.build is not implemented")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if current() != "3.0" and self.implements_grad_graph and _current(_BUILD_CONTEXT) is not self:
            msg = ("You are calling this module directly but `build_grad` has been implemented. If you call this "
                   "module directly `build_grad` will not be called when using autodiff. You need to create a graph "
                   "of this module first and call that graph e.g. use `self.call_module`. To disable this "
                   "guardrail set `grad_inlining_error` to `none`")
            if self.grad_inlining_error == "error":
                raise Exception(msg)
            if self.grad_inlining_error == "warning":
                warnings.warn(msg, stacklevel=2)
        return self.build(*args, **kwargs)

    # ----- hand-written gradients (3.4) -----
    def build_grad(self, *args: Any, **kwargs: Any) -> Any:
        """Build the gradient graph: inputs are the gradients of the forward outputs (in order),
        outputs the gradients of the non-variable forward inputs; variables' gradients go into
        ``self.var_grad``. Subclasses implement it."""
        raise NotImplementedError("Your popxl.Module must implement the `build_grad` method to create a gradient graph.")

    @property
    def implements_grad_graph(self) -> bool:
        """Whether the module's class overrides ``build_grad``."""
        return getattr(type(self), "build_grad", None) is not Module.build_grad

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
    add_variable_inputs = Generational("add_variable_inputs", {"3.0": _add_variable_inputs_30,
                                                               "3.4": _add_variable_inputs_34}, {
        "3.0": "add_variable_inputs(name, variable_f)",
        "3.4": "add_variable_inputs(name, variable_f, overwrite=False)",
    })

    def add_variable_factory(self, variable_f: VariableFactory, name: str | None = None) -> Any:
        """Return a graph input made by ``variable_f``, recorded under ``name`` (default: the
        factory's name)."""
        tensor = variable_f.create_input()
        self._record(name or variable_f.name, tensor, variable_f)
        return tensor

    def _add_variable_inputs(self, name: str | int, variable_f: NamedVariableFactories,
                             overwrite: bool) -> NamedTensors:
        """Return graph inputs for every factory of ``variable_f``, recorded under ``name.``."""
        if isinstance(name, int):
            if name < 0:
                raise ValueError(f"Name of int type must be positive. Value: {name}")
            name = str(name)
        tensors = NamedTensors.from_dict({key: f.create_input() for key, f in variable_f.to_dict().items()})
        self._variable_factories.insert(name, variable_f.copy(), overwrite=overwrite)
        self._named_inputs.insert(name, tensors, overwrite=overwrite)
        return tensors

    def _record(self, name: str, tensor: Any, factory: VariableFactory, overwrite: bool = False) -> None:
        self._variable_factories.insert(name, factory, overwrite)
        self._named_inputs.insert(name, tensor, overwrite)

    # ----- module lists -----
    @classmethod
    def from_list(cls, sub_modules: list[Module]) -> Module:
        """Return a module whose children are ``sub_modules``, named ``0``, ``1``, ...; iterating
        it yields them."""
        self = cls()
        for i, module in enumerate(sub_modules):
            setattr(self, str(i), module)
        object.__setattr__(self, "_sub_modules", list(sub_modules))
        return self

    @classmethod
    def from_variable_factories(cls, inputs: list[VariableFactory]) -> Module:
        """Return a module whose build has one variable input per factory, named ``0``, ``1``, ..."""
        self = cls()
        for i, variable_f in enumerate(inputs):
            object.__setattr__(self, str(i), self.add_variable_factory(variable_f, name=str(i)))
        return self

    def get(self, key: str | int) -> Any:
        """Return the attribute ``key`` (an int is turned into a string)."""
        return getattr(self, str(key) if isinstance(key, int) else key)

    def __getitem__(self, item: str | int) -> Any:
        return self.get(item)

    def __iter__(self) -> Iterator[Module]:
        sub_modules = self.__dict__.get("_sub_modules")
        if sub_modules is None:
            raise AttributeError("Iterating over `popxl_addons.Module` not created using "
                                 "`popxl_addons.Module.from_list` is not supported.")
        return iter(sub_modules)

    # ----- graphs -----
    def create_graph(self, *args: Any, **kwargs: Any) -> tuple[NamedVariableFactories, GraphWithNamedArgs]:
        """Build a graph from ``build`` (tensor/spec arguments become graph inputs; other
        arguments are passed through); returns (variable factories, GraphWithNamedArgs).
        With a cache, an equal call (same tensor specs, equal other values) reuses the graph."""
        if self._graph_cache is not None:
            graph = self._graph_cache.create_graph(self, *args, **kwargs)
            if graph not in self._args_cache:
                self._args_cache[graph] = (self._variable_factories.copy(), self._named_inputs.copy())
            factories, named_inputs = self._args_cache[graph]
        else:
            object.__setattr__(self, "aux", _Aux())
            try:
                with _Stacked(_BUILD_CONTEXT, self):
                    graph = popxl.gir().create_graph(self, *args, **kwargs)
            except BaseException:
                self._reset()
                raise
            if self.implements_grad_graph:
                graph._no_recursive_autodiff = True  # as popart's setCanBeRecursivelyAutodiffed(False)
            factories, named_inputs = self._variable_factories, self._named_inputs
        graph_wna = GraphWithNamedArgs(graph, named_inputs.copy(), from_module=self, aux=self.aux.copy(),
                                       called_graphs_grad_info=self.called_graphs_grad_info.consolidate())
        factories = factories.copy()
        self._reset()
        return factories, graph_wna

    def _reset(self) -> None:
        """Forget the inputs, aux tensors and called graphs of the last build (children stay
        grafted; their trees are emptied too)."""
        self._variable_factories._clear()
        self._named_inputs._clear()
        self.called_graphs_grad_info.clear()
        object.__setattr__(self, "aux", _Aux())
        object.__setattr__(self, "var_grad", _VarGrads())

    @_Since34
    def create_grad_graph(self, fwd_graph: GraphWithNamedArgs, grads_provided: Iterable[Any] | None = None,
                          grads_required: Iterable[Any] | None = None) -> GraphWithNamedArgs:
        """Return the gradient graph built by ``build_grad`` for ``fwd_graph`` (a graph this
        module created), with its GradGraphInfo. The forward graph gains one output per aux
        tensor ``build_grad`` read; so call it before calling the forward graph.

        Gradient inputs: the gradients of ``grads_provided`` (default: all forward outputs),
        then the aux tensors read. Gradient outputs: what ``build_grad`` returns (the
        non-variable tensors of ``grads_required``, default all forward inputs, in order), then
        ``var_grad`` of the required variables. Raises when ``build_grad`` is missing, has other
        than positional parameters, or its outputs or ``var_grad`` do not match."""
        if not self.implements_grad_graph:
            raise Exception("The default implementation of `build_grad` needs to be overridden to use "
                            "`create_grad_graph`.")
        for pname, param in inspect.signature(self.build_grad, follow_wrapped=True).parameters.items():
            if param.kind not in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
                raise TypeError("The `build_grad` method signature must only have a fixed number of positional "
                                f"parameters as inputs. Not a positional parameter: {pname}")
        fwd = fwd_graph.graph
        provided = _checked(grads_provided, fwd.outputs, "grads_provided", "output")
        required = _checked(grads_required, fwd.inputs, "grads_required", "input")
        name_to_variable = fwd_graph.args.to_dict()
        variable_to_name = {id(t): name for name, t in name_to_variable.items()}
        required_vars = OrderedDict((variable_to_name[id(t)], t) for t in required if id(t) in variable_to_name)
        required_other = [t for t in required if id(t) not in variable_to_name]

        ir = popxl.gir()
        object.__setattr__(self, "var_grad", _VarGrads(name_to_variable))
        object.__setattr__(self, "aux", fwd_graph._aux.copy())
        try:
            with _Stacked(_BUILD_GRAD_CONTEXT, self):
                grad_graph = ir.create_graph(self.build_grad, *provided)
            missing = set(required_vars) - set(self.var_grad._dict)
            if missing:
                raise Exception("Not all variable gradients have been specified in self.var_grad. If you dont want to "
                                "output all gradients specify `grads_required` when calling autodiff. Variables "
                                f"missing gradients: {missing}")
            n_out = len(grad_graph.outputs)
            if n_out > len(required_other):
                raise Exception(f"Too many outputs in the grad graph. `grads_required` has {len(required_other)} "
                                "non-variable outputs. If you dont want to output all gradients specify "
                                "`grads_required` when calling autodiff.")
            if n_out < len(required_other):
                raise Exception("Not all forward graph inputs have been specified as outputs in the grad graph. If you "
                                "dont want to output all gradients specify `grads_required` when calling autodiff. "
                                f"Missing: {[t.name for t in required_other[n_out:]]}")
            for i, (out, t) in enumerate(zip(grad_graph.outputs, required_other)):
                if out.shape != t.shape or tuple(out.meta_shape) != tuple(t.meta_shape):
                    raise ValueError(f"Shape or meta-shape of output Tensor at position {i} does not match the "
                                     f"`grad_required` at position {i}. Output Tensor shape: {out.shape} meta-shape "
                                     f"{out.meta_shape}. Grad required shape {t.shape} meta-shape {t.meta_shape}.")
            with grad_graph:
                for name in required_vars:
                    popxl.graph_output(self.var_grad._dict[name])
            aux = self.aux
            with fwd:
                for value in aux._dict.values():
                    if isinstance(value, popxl.Tensor):
                        popxl.graph_output(value)
                        _stitch(fwd, value)
            grad_inputs = OrderedDict(zip(grad_graph.inputs, provided))
            grad_inputs.update(aux._grad_to_fwd)
            grad_outputs = OrderedDict(zip(grad_graph.outputs, [*required_other, *required_vars.values()]))
            info = create_grad_graph_info(ir, fwd, grad_graph, grad_inputs, grad_outputs,
                                          set(aux._grad_to_fwd.values()))
        finally:
            self._reset()
        return GraphWithNamedArgs.from_grad_graph(info)

    @_Since34
    def call_module(self, module: Module, name: str | None = None, autodiff: str = "auto",
                    grads_provided: Callable[[GraphWithNamedArgs], Iterable[Any]] | None = None,
                    grads_required: Callable[[GraphWithNamedArgs], Iterable[Any]] | None = None) -> _CallModule:
        """Return a callable that outlines ``module``: calling it with build arguments creates
        the module's graph, adds its variables to this module under ``name`` (default: the
        module's class name), differentiates it when ``autodiff`` asks (``auto``: when it
        implements ``build_grad``; ``build_grad`` / ``autodiff``: always, that way; ``none``:
        never), records the gradient graph for this module's autodiff and calls the graph,
        returning the outputs as a tuple."""
        return _CallModule(self, module, name, autodiff, grads_provided, grads_required)


def _checked(tensors: Iterable[Any] | None, allowed: Iterable[Any], what: str, kind: str) -> list[Any]:
    allowed = list(allowed)
    if tensors is None:
        return allowed
    tensors = list(tensors)
    for t in tensors:
        if not isinstance(t, popxl.Tensor) or not any(t is a for a in allowed):
            raise ValueError(f"A Tensor specified in `{what}` is not a {kind} of `fwd_graph` or not a Tensor: {t}")
    dups = _duplicates(tensors)
    if dups:
        raise ValueError(f"A Tensor has been specified more than once in `{what}`. Duplicates: {dups}")
    return tensors


def _stitch(graph: Any, output: Any) -> None:
    """Give existing call sites of ``graph`` an output for its new output ``output`` (popxl's
    autodiff does the same for the activations it adds)."""
    from profcompare.emulator.popxl.transforms.autodiff import _stitch_call_sites

    _stitch_call_sites(graph, output)


def create_grad_graph_info(ir: Any, fwd_graph: Any, grad_graph: Any, grad_input_to_fwd_output: Mapping[Any, Any],
                           grad_output_to_fwd_input: Mapping[Any, Any], fwd_tensors: set[Any]) -> Any:
    """Return the GradGraphInfo of ``grad_graph``: one expected input per entry of
    ``grad_input_to_fwd_output`` (Fwd for tensors in ``fwd_tensors``, else FwdGrad of the
    forward output), one FwdGrad expected output per entry of ``grad_output_to_fwd_input``."""
    from profcompare.emulator.popxl.transforms.autodiff import (
        ExpectedConnection,
        ExpectedConnectionType,
        GradGraphInfo,
    )

    expected_in = [ExpectedConnection(t, ExpectedConnectionType.Fwd if t in fwd_tensors
                                      else ExpectedConnectionType.FwdGrad)
                   for t in grad_input_to_fwd_output.values()]
    expected_out = [ExpectedConnection(t, ExpectedConnectionType.FwdGrad) for t in grad_output_to_fwd_input.values()]
    info = GradGraphInfo(grad_graph, fwd_graph, expected_in, expected_out)
    grad_graph._grad_graph_info = info
    return info


class _CallModule:
    """The callable returned by :meth:`Module.call_module`."""

    def __init__(self, caller: Module, callee: Module, name: str | None, autodiff: str,
                 grads_provided: Callable[[GraphWithNamedArgs], Iterable[Any]] | None,
                 grads_required: Callable[[GraphWithNamedArgs], Iterable[Any]] | None) -> None:
        if autodiff not in ("auto", "build_grad", "autodiff", "none"):
            raise ValueError(f"`autodiff` should be one of 'auto', 'build_grad', 'autodiff' or 'none'. Not: {autodiff}")
        self.caller = caller
        self.callee = callee
        self.name = name or type(callee).__name__
        self.autodiff = autodiff
        self.grads_provided = grads_provided
        self.grads_required = grads_required

    def __call__(self, *args: Any, **kwargs: Any) -> tuple[Any, ...]:
        factories, graph = self.callee.create_graph(*args, **kwargs)
        graph_vars = self.caller.add_variable_inputs(self.name, factories)
        self.caller.called_graphs_grad_info.add_submap(graph.called_graphs_grad_info)
        n_outputs = len(graph.graph.outputs)
        provided = self.grads_provided(graph) if self.grads_provided else None
        required = self.grads_required(graph) if self.grads_required else None
        if not (self.autodiff == "none" or (self.autodiff == "auto" and not self.callee.implements_grad_graph)):
            # before the call: differentiating may add forward outputs
            grad_graph = graph.autodiff(method=self.autodiff, grads_provided=provided, grads_required=required)
            self.caller.called_graphs_grad_info.add(graph, grad_graph)
        outputs = graph.bind(graph_vars).call(*args, **kwargs)[:n_outputs]
        self.var_factories = factories
        self.graph = graph
        self.n_outputs_pre_autodiff = n_outputs
        return outputs
