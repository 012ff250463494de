"""The Ir: owner of graphs, streams, remote buffers and variables (popxl ir.py)."""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable
from typing import Any

from .errors import SimulatorNotImplementedError, not_implemented_message
from .graph import Graph
from .replica_grouping import ReplicaGrouping
from .tensor import Tensor, TensorByRef, TensorSpec, Variable, graph_input, graph_output


class Module:
    """Base class of graph-building modules: calling a module calls its ``build``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.build(*args, **kwargs)

    def build(self, *args: Any, **kwargs: Any) -> Any:
        """Build the module's ops in the current graph; subclasses implement it."""
        raise NotImplementedError(f"{type(self).__name__}.build is not implemented")


class Ir:
    """A popxl intermediate representation: a main graph plus subgraphs."""

    _next_ir_id = 0

    def __init__(self, replication: int | str = 1) -> None:
        self._use_popdist = replication == "popdist"
        if self._use_popdist:
            # as popxl: the replication factor comes from popdist (poprun's launch description;
            # an un-launched process is one instance with one replica)
            from .popdist_env import read_launch

            launch = read_launch()
            if launch.num_instances > 1:
                raise SimulatorNotImplementedError(not_implemented_message(
                    f"popxl.Ir(replication='popdist') over {launch.num_instances} instances "
                    f"(instance {launch.instance_index}; one process simulates one instance)"))
            replication = launch.num_total_replicas
        Ir._next_ir_id += 1
        self._ir_id = Ir._next_ir_id
        self._prepared = False
        self._replication_factor = 1
        self._num_host_transfers = 1
        self._intermediate_counter = 0
        self._subgraph_counter = 0
        # PopART numbers the ops of an Ir from 100 in the order they are created (Ir::opsCounter,
        # willow/include/popart/ir.hpp); popxl-addons' FLOPs breakdown is keyed by these ids.
        self._op_counter = 99
        self._graphs: dict[str, Graph] = {}
        self._h2d_streams: list[Any] = []
        self._d2h_streams: list[Any] = []
        self._remote_buffers: dict[int, Any] = {}
        self._variables: list[Variable] = []
        self._replica_shards: list[Tensor] = []  # on-chip shards of popxl.replica_sharded_variable
        self._has_read_only_memmap = False  # a variable holds a read-only np.memmap: no weights to host
        self._numeric_host_bytes = 0  # host bytes a numeric Session will hold for the variables (host_memory.py)
        self._host_memory_limit: tuple[int | None, str] | None = None  # host_memory.available_bytes(), read once
        self._main = Graph(self, "")
        self._graphs[""] = self._main
        self.replication_factor = replication  # type: ignore[assignment]

    # --- properties ---------------------------------------------------------------------------
    @property
    def main_graph(self) -> Graph:
        """The main graph."""
        return self._main

    @property
    def replication_factor(self) -> int:
        """Global replication factor (set it before building graphs)."""
        return self._replication_factor

    @replication_factor.setter
    def replication_factor(self, value: int) -> None:
        if self._prepared:
            raise RuntimeError("The replication factor cannot change after a Session was created for this Ir")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"replication_factor must be a positive int, got {value!r}")
        self._replication_factor = value

    @property
    def instance_replication_factor(self) -> int:
        """Replicas of this process (the simulator runs one instance, so the global factor)."""
        return self._replication_factor

    @property
    def num_host_transfers(self) -> int:
        """Host loads per stream in one ``Session.run`` (batches per step)."""
        return self._num_host_transfers

    @num_host_transfers.setter
    def num_host_transfers(self, value: int) -> None:
        if self._prepared:
            raise RuntimeError("num_host_transfers cannot change after a Session was created for this Ir")
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"num_host_transfers must be a positive int, got {value!r}")
        self._num_host_transfers = value

    @property
    def num_io_tiles(self) -> int:
        """I/O tiles per IPU (PopART's ``numIOTiles`` session option; 0 = none). Simulator
        convenience; scripts may also set ``ir._pb_ir.getSessionOptions().numIOTiles``."""
        return getattr(self, "_num_io_tiles", 0)

    @num_io_tiles.setter
    def num_io_tiles(self, value: int) -> None:
        if self._prepared:
            raise RuntimeError("num_io_tiles cannot change after a Session was created for this Ir")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"num_io_tiles must be a non-negative int, got {value!r}")
        self._num_io_tiles = value

    @property
    def _session_options(self) -> Any:
        """PopART's session options of this Ir (session_options.SessionOptions), made on first use."""
        found = self.__dict__.get("_session_options_object")
        if found is None:
            from .session_options import SessionOptions
            found = self.__dict__["_session_options_object"] = SessionOptions(self)
        return found

    @property
    def _pb_ir(self) -> Any:
        """The internal Ir: its session options, graphs and pre-alias patterns (ipu_placement.PbIr)."""
        from .ipu_placement import PbIr
        return PbIr(self)

    @property
    def id(self) -> int:
        """A process-unique id of this Ir."""
        return self._ir_id

    @property
    def graphs(self) -> tuple[Graph, ...]:
        """All graphs, main graph first (simulator convenience)."""
        return tuple(self._graphs.values())

    @property
    def remote_buffers(self) -> tuple[Any, ...]:
        """All remote buffers by id (simulator convenience)."""
        return tuple(self._remote_buffers[k] for k in sorted(self._remote_buffers))

    def __hash__(self) -> int:
        return hash(("Ir", self._ir_id))

    def __eq__(self, other: object) -> bool:
        return other is self

    def __repr__(self) -> str:
        return f"Ir[id={self._ir_id}]"

    # --- graphs ---------------------------------------------------------------------------------
    def create_graph(self, fn: Callable[..., Any] | Module, *args: Any, **kwargs: Any) -> Graph:
        """Create a subgraph from ``fn`` (or ``Module.build``) and return it.

        Tensor/TensorSpec arguments become graph inputs in signature order (by reference when
        annotated ``TensorByRef``; meta_shape carried); lists/tuples, ``*args`` and ``**kwargs``
        of tensors become one input each; other arguments are passed through unchanged. Inputs
        created by ``graph_input`` inside the body follow. The returned value(s) become outputs."""
        if isinstance(fn, Module):
            qualname = type(fn).__qualname__
            func: Callable[..., Any] = fn.build
        elif callable(fn) and hasattr(fn, "__qualname__"):
            qualname = fn.__qualname__
            func = fn
        else:
            raise TypeError("Callable `fn` must be either a function or a class that extends popxl.Module")
        signature = inspect.signature(func, follow_wrapped=True)
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ValueError(f"The arguments, `args` and `kwargs`, do not match the signature of the "
                             f"function `fn`: {exc}") from exc
        bound.apply_defaults()
        arguments = bound.arguments
        hints = _type_hints(func)
        graph = self._new_graph(qualname.replace(".<locals>", ""))
        with graph:
            for pname, arg in list(arguments.items()):
                param = signature.parameters[pname]
                hint = hints.get(pname, param.annotation)
                if isinstance(arg, (Tensor, TensorSpec)):
                    arguments[pname] = graph_input(arg.shape, arg.dtype, pname, by_ref=_is_by_ref(hint),
                                                   meta_shape=arg.meta_shape)
                elif isinstance(arg, (tuple, list, dict)):
                    kind = param.kind
                    if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                        by_ref = _is_by_ref(hint)
                    elif isinstance(arg, dict):
                        continue
                    else:
                        by_ref = _is_list_by_ref(hint)
                    items = list(arg.items()) if isinstance(arg, dict) else [
                        (f"{pname}_{i}", a) for i, a in enumerate(arg)]
                    is_t = [isinstance(a, (Tensor, TensorSpec)) for _, a in items]
                    if any(is_t) and not all(is_t):
                        raise TypeError(f"A {type(arg).__name__} argument can't contain a mixture of Tensors "
                                        f"and other types. Arg name: {pname}. Value: {arg}")
                    if items and all(is_t):
                        new = {n: graph_input(a.shape, a.dtype, n, by_ref=by_ref, meta_shape=a.meta_shape)
                               for n, a in items}
                        arguments[pname] = new if isinstance(arg, dict) else (
                            tuple(new.values()) if kind is inspect.Parameter.VAR_POSITIONAL else list(new.values()))
            outputs = fn(*bound.args, **bound.kwargs)
            if outputs is None:
                outputs = []
            elif isinstance(outputs, Tensor):
                outputs = [outputs]
            elif isinstance(outputs, Iterable):
                outputs = list(outputs)
                if not all(isinstance(o, Tensor) for o in outputs):
                    raise ValueError("Output of subgraph must be None, a Tensor or an iterable of Tensors. "
                                     f"Output: {outputs}")
            else:
                raise ValueError("Output of subgraph must be None, a Tensor or an iterable of Tensors. "
                                 f"Output type: {type(outputs)}. Value {outputs}")
            for out in outputs:
                graph_output(out)
        return graph

    def create_empty_graph(self, name: str | None = None) -> Graph:
        """Create and return an empty subgraph."""
        return self._new_graph(name or "graph")

    def _new_graph(self, base: str) -> Graph:
        gid = f"{base}_subgraph({self._subgraph_counter})"
        self._subgraph_counter += 1
        return self._add_graph(gid)

    def _add_graph(self, gid: str) -> Graph:
        if gid in self._graphs:
            raise ValueError(f"Graph id {gid!r} already exists")
        g = Graph(self, gid)
        self._graphs[gid] = g
        return g

    def replica_grouping(self, stride: int = 1, group_size: int | None = None) -> ReplicaGrouping:
        """Return a grouping of this Ir's replicas (default: one group of all replicas)."""
        return ReplicaGrouping(self._replication_factor, stride, group_size)

    def replica_grouping_from_assignments(self, assignment: list[int]) -> ReplicaGrouping:
        """The grouping that puts replica i in group ``assignment[i]`` (constant-stride when the
        assignment has one stride; otherwise a grouping by assignment, see ReplicaGrouping)."""
        return ReplicaGrouping._from_assignment(self._replication_factor, assignment)

    def get_all_h2d_streams(self) -> set[Any]:
        """Host-to-device streams that have a host_load."""
        loaded = {op.attrs["stream"] for g in self._graphs.values() for op in g._ops if op.type == "HostLoad"}
        return {s for s in self._h2d_streams if s in loaded}

    def get_all_d2h_streams(self) -> set[Any]:
        """Device-to-host streams that have a host_store."""
        stored = {op.attrs["stream"] for g in self._graphs.values() for op in g._ops if op.type == "HostStore"}
        return {s for s in self._d2h_streams if s in stored}

    def dot_checkpoint(self, *args: Any, **kwargs: Any) -> None:
        """Outside the simulated subset."""
        raise SimulatorNotImplementedError(not_implemented_message("popxl.Ir.dot_checkpoint"))

    # --- internals ------------------------------------------------------------------------------
    def _intermediate_tensor_id(self, base: str) -> str:
        tid = f"{base}__t{self._intermediate_counter}"
        self._intermediate_counter += 1
        return tid

    def _next_op_id(self) -> str:
        self._op_counter += 1
        return str(self._op_counter)


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(func)
    except (NameError, TypeError, AttributeError, SyntaxError):  # unresolvable annotations: use the raw ones
        return {}


def _is_by_ref(hint: Any) -> bool:
    return hint is TensorByRef or hint == "TensorByRef" or hint == "popxl.TensorByRef"


def _is_list_by_ref(hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (list, tuple):
        return any(_is_by_ref(a) for a in typing.get_args(hint))
    return isinstance(hint, str) and "TensorByRef" in hint and ("List" in hint or "Tuple" in hint)

