"""Variable factories: host data generators that create graph inputs and the variables
that feed them (popxl-addons Gen A semantics, reference popxl.md section 2.2).

In 3.4, ``init``/``init_remote``/``create_tensor``/``create_remote_tensor`` take ``memmap_dir``:
each variable's host data is then an ``np.memmap`` of ``<memmap_dir>/<name>.npy`` (raw data, no
``.npy`` header, as in popxl-addons), created and filled from the factory when the file does not
exist, reused as it is (``r+``, or ``r`` with ``read_only_if_exists``) when it does. 3.0 has no
``memmap_dir``: passing it is the TypeError of that release's signature.

In compile-only execution (``PROFCOMPARE_SIM_EXECUTION=compile-only``, read when the factory is
created) a factory keeps only the shape and dtype of its values: its init function is never
called when they can be read from the call (``init_spec.py``; otherwise it is called once, as
popxl-addons' own test call, and the value dropped), and every value it hands out -- ``init``,
``init_remote`` (``empty`` or not), one per replica group -- is a zero placeholder holding no
memory. ``memmap_dir`` creates and reads no file then.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from profcompare.backend import execution_mode
from profcompare.emulator.popxl_addons._compat import as_popxl_dtype, ops, popxl
from profcompare.emulator.popxl_addons._generation import Generational, OnlyIn
from profcompare.emulator.popxl_addons.dot_tree import DotTree
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors

if TYPE_CHECKING:
    from profcompare.emulator.popxl_addons.remote import NamedRemoteBuffers

DataIter = Callable[[], Any] | Iterable[Any]

_LOG = logging.getLogger(__name__)

__all__ = [
    "VariableFactory",
    "NamedVariableFactories",
    "add_variable_input",
    "add_replica_sharded_variable_input",
]


class _Peekable:
    """An iterator with one-item lookahead (``peek`` draws the next item and keeps it)."""

    _EMPTY = object()

    def __init__(self, iterator: Iterator[Any]) -> None:
        self._iterator = iterator
        self._head: Any = self._EMPTY

    def peek(self) -> Any:
        if self._head is self._EMPTY:
            self._head = next(self._iterator)
        return self._head

    def __next__(self) -> Any:
        if self._head is not self._EMPTY:
            head, self._head = self._head, self._EMPTY
            return head
        return next(self._iterator)

    def __iter__(self) -> _Peekable:
        return self


def _repeat_calls(fn: Callable[[], Any]) -> Iterator[Any]:
    while True:
        yield fn()


def _replication_factor() -> int:
    ir = popxl.gir()
    return int(getattr(ir, "instance_replication_factor", ir.replication_factor))


def _init_common(self: VariableFactory, data_iter: DataIter, dtype: Any, name: str | None, by_ref: bool) -> None:
    self.name = name
    self.by_ref = by_ref
    self.meta_shape = None
    self.spec_only = execution_mode.is_compile_only()
    if self.spec_only:
        _init_spec_only(self, data_iter, dtype)
        return
    if callable(data_iter):
        try:
            data_iter()
        except Exception as exc:  # noqa: BLE001 - re-raised with context, as popxl-addons does
            raise ValueError("Passed callable via `data_iter` throws error.") from exc
        iterator: Iterator[Any] = _repeat_calls(data_iter)
    elif isinstance(data_iter, Iterable):
        iterator = iter(data_iter)
    else:
        raise ValueError("`data_iter` must be an iterable or callable.")
    self.data_iter = _Peekable(iterator)
    first = np.asarray(self.data_iter.peek())
    self.dtype = as_popxl_dtype(dtype) if dtype is not None else as_popxl_dtype(first.dtype)
    self.shape = tuple(first.shape)


def _init_spec_only(self: VariableFactory, data_iter: DataIter, dtype: Any) -> None:
    """Compile-only: shape and dtype, from the call when it says them, else from one value
    (which is then dropped); nothing is kept to draw from."""
    from profcompare.emulator.popxl_addons.init_spec import spec_without_calling

    spec = spec_without_calling(data_iter, dtype) if callable(data_iter) else None
    if spec is None:
        if callable(data_iter):
            try:
                first = np.asarray(data_iter())
            except Exception as exc:  # noqa: BLE001 - as the numeric path's test call
                raise ValueError("Passed callable via `data_iter` throws error.") from exc
        elif isinstance(data_iter, Iterable):
            first = np.asarray(next(iter(data_iter)))
        else:
            raise ValueError("`data_iter` must be an iterable or callable.")
        spec = (tuple(first.shape), dtype if dtype is not None else first.dtype)
        del first
    self.data_iter = _Peekable(iter(()))
    self.shape = spec[0]
    self.dtype = as_popxl_dtype(spec[1])


def _factory_init_30(self: VariableFactory, data_iter: DataIter, dtype: Any = None, name: str | None = None,
                     by_ref: bool = False, replica_sharded: bool = False, replica_grouping: Any = None) -> None:
    _init_common(self, data_iter, dtype, name, by_ref)
    self.replica_sharded = replica_sharded
    self.replica_grouping = replica_grouping
    if replica_sharded:
        group = replica_grouping or popxl.gcg().ir.replica_grouping()
        shard_size = _replication_factor() // group.num_groups
        self.meta_shape = self.shape
        self.shape = (int(np.prod(self.meta_shape, dtype=np.int64)) // shard_size,)


def _factory_init_34(self: VariableFactory, data_iter: DataIter, dtype: Any = None, name: str | None = None,
                     by_ref: bool = False, replica_grouping: Any = None, shard_over: int = 1) -> None:
    _init_common(self, data_iter, dtype, name, by_ref)
    self.replica_sharded = shard_over > 1
    self.replica_grouping = replica_grouping or popxl.gcg().ir.replica_grouping()
    if self.replica_sharded:
        if shard_over > self.replica_grouping.group_size:
            raise AssertionError(f"shard_over {shard_over} exceeds the replica group size "
                                 f"{self.replica_grouping.group_size}")  # popxl-addons asserts this
        self.meta_shape = self.shape
        self.shape = (int(np.prod(self.meta_shape, dtype=np.int64)) // shard_over,)


def _create_tensor_30(self: VariableFactory, name: str | None = None, empty: bool = False) -> Any:
    return self._create_tensor(name, empty)


def _create_tensor_34(self: VariableFactory, name: str | None = None, empty: bool = False,
                      memmap_dir: str | None = None, read_only_if_exists: bool = False) -> Any:
    return self._create_tensor(name, empty, memmap_dir, read_only_if_exists)


def _create_remote_tensor_30(self: VariableFactory, buffer: Any, entry: int, name: str | None = None,
                             empty: bool = False) -> Any:
    return self._create_remote_tensor(buffer, entry, name, empty)


def _create_remote_tensor_34(self: VariableFactory, buffer: Any, entry: int, name: str | None = None,
                             empty: bool = False, memmap_dir: str | None = None,
                             read_only_if_exists: bool = False) -> Any:
    return self._create_remote_tensor(buffer, entry, name, empty, memmap_dir, read_only_if_exists)


def _next_memmap(self: VariableFactory, memmap_dir: str, name: str, empty: bool = False,
                 read_only_if_exists: bool = False) -> np.memmap:
    """Return the np.memmap of ``<memmap_dir>/<name>.npy`` holding this factory's host value
    (full shape, with a leading num_groups dimension for more than one replica group):
    created (``w+``) and filled with the next value (left uninitialised with ``empty``) when the
    file does not exist; otherwise opened ``r+`` (``r`` with ``read_only_if_exists``) without
    drawing a value. The directory is created when missing."""
    # popxl-addons creates the file on instance 0 only and waits for it on the others; the
    # simulator runs a single instance (popxl.Ir refuses more), which is instance 0
    os.makedirs(memmap_dir, exist_ok=True)
    path = os.path.join(memmap_dir, name + ".npy")
    shape = tuple(self.meta_shape or self.shape)
    groups = self.replica_grouping.num_groups if self.replica_grouping is not None else 1
    if groups != 1:
        shape = (groups, *shape)
    if not os.path.exists(path):
        _LOG.debug("Creating new memmapped variable file (w+): %s", path)
        data = np.memmap(path, dtype=self.dtype.as_numpy(), shape=shape, mode="w+")
        if not empty:
            np.copyto(data, self.next_data(empty))
        return data
    mode = "r" if read_only_if_exists else "r+"
    _LOG.debug("Using existing memmapped variable file (%s): %s", mode, path)
    return np.memmap(path, dtype=self.dtype.as_numpy(), shape=shape, mode=mode)


class VariableFactory:
    """Generates host data for one variable and creates its graph input or variables
    (popxl-addons ``VariableFactory``; the constructor's parameters are those of the emulated
    generation: 3.0 ``replica_sharded``, 3.4 ``shard_over``).

    ``data_iter`` is a callable (called once as a test, the result discarded, then called for
    every value) or an iterable. One value is drawn at construction (peek) and is what the
    first ``create_*`` call uses, so a callable drawing random numbers draws twice at build time.
    A replica-sharded factory generates full host data; its graph input is the shard
    ``(nelms // shard count,)`` with ``meta_shape`` = the full shape.
    """

    data_iter: _Peekable
    name: str | None
    by_ref: bool
    dtype: Any
    shape: tuple[int, ...]
    meta_shape: tuple[int, ...] | None
    replica_sharded: bool
    replica_grouping: Any
    #: compile-only: the factory knows shape and dtype only (see the module docstring)
    spec_only: bool

    __init__ = Generational("__init__", {"3.0": _factory_init_30, "3.4": _factory_init_34}, {
        "3.0": "VariableFactory(data_iter, dtype=None, name=None, by_ref=False, replica_sharded=False, "
               "replica_grouping=None); shard_over arrived in sdk-release-3.1",
        "3.4": "VariableFactory(data_iter, dtype=None, name=None, by_ref=False, replica_grouping=None, "
               "shard_over=1): replica_sharded=True became shard_over > 1",
    })

    @property
    def nelms(self) -> int:
        """Number of elements of the full (host) tensor."""
        return int(np.prod(self.meta_shape or self.shape, dtype=np.int64))

    def create_input(self, prefix: str | None = None) -> Any:
        """Return a graph input of the current graph with this factory's (shard) shape, dtype,
        name, by_ref flag and meta_shape."""
        name = self.name if prefix is None else f"{prefix}.{self.name}"
        return popxl.graph_input(
            self.shape, self.dtype, name, by_ref=self.by_ref, meta_shape=self.meta_shape or None
        )

    def next_data(self, empty: bool = False) -> np.ndarray:
        """Return the next host value (the peeked one first; with ``empty``, an uninitialised
        array of the full shape instead, without drawing), with a leading num_groups dimension
        when the replica grouping has more than one group."""
        groups = self.replica_grouping.num_groups if self.replica_grouping is not None else 1
        if self.spec_only:  # zeros of the full shape holding no memory, never drawn
            full = ((groups,) if groups > 1 else ()) + tuple(self.meta_shape or self.shape)
            return np.broadcast_to(np.zeros((), self.dtype.as_numpy()), full)

        def one() -> np.ndarray:
            if empty:
                return np.empty(self.meta_shape or self.shape, self.dtype.as_numpy())
            return np.asarray(next(self.data_iter))

        if groups == 1:
            return one()
        return np.concatenate([one()[np.newaxis, ...] for _ in range(groups)])

    create_tensor = Generational("create_tensor", {"3.0": _create_tensor_30, "3.4": _create_tensor_34}, {
        "3.0": "create_tensor(name=None, empty=False)",
        "3.4": "create_tensor(name=None, empty=False, memmap_dir=None, read_only_if_exists=False)",
    })

    create_remote_tensor = Generational(
        "create_remote_tensor", {"3.0": _create_remote_tensor_30, "3.4": _create_remote_tensor_34}, {
            "3.0": "create_remote_tensor(buffer, entry, name=None, empty=False)",
            "3.4": "create_remote_tensor(buffer, entry, name=None, empty=False, memmap_dir=None, "
                   "read_only_if_exists=False)",
        })

    #: 3.4 only: the np.memmap a ``memmap_dir`` variable of this factory is created from
    next_memmap = OnlyIn("3.4", _next_memmap)

    def _next_host_value(self, name: str, empty: bool, memmap_dir: str | None, read_only_if_exists: bool) -> Any:
        """The next host value, or with a (non-empty) ``memmap_dir`` the memmap of ``name``
        (compile-only: a placeholder, no file)."""
        if memmap_dir and not self.spec_only:
            return _next_memmap(self, memmap_dir, name, empty, read_only_if_exists)
        return self.next_data(empty)

    def _create_tensor(self, name: str | None, empty: bool, memmap_dir: str | None = None,
                       read_only_if_exists: bool = False) -> Any:
        """A new main-graph variable holding the next host value (or its memmap, see
        ``next_memmap``), in its FULL shape even for a replica-sharded factory (popxl-addons has
        no on-chip sharded variable: hold on-chip shards with ``popxl.replica_sharded_variable``
        instead)."""
        name = name or self.name
        data = self._next_host_value(name, empty, memmap_dir, read_only_if_exists)  # type: ignore[arg-type]
        return popxl.variable(data, self.dtype, name, replica_grouping=self.replica_grouping)

    def _create_remote_tensor(self, buffer: Any, entry: int, name: str | None = None, empty: bool = False,
                              memmap_dir: str | None = None, read_only_if_exists: bool = False) -> Any:
        """Return a remote variable at ``entry`` of ``buffer`` holding the next (full) host value
        (or its memmap): replica-sharded when the buffer has a meta_shape, plain otherwise."""
        name = name or self.name
        data = self._next_host_value(name, empty, memmap_dir, read_only_if_exists)  # type: ignore[arg-type]
        if buffer.meta_shape:
            return popxl.remote_replica_sharded_variable(data, buffer, entry, self.dtype, name,
                                                         replica_grouping=self.replica_grouping)
        return popxl.remote_variable(data, buffer, entry, self.dtype, name, replica_grouping=self.replica_grouping)


def _init_30(self: NamedVariableFactories, prefix: str | None = None) -> NamedTensors:
    return self._init(prefix, False)


def _init_34(self: NamedVariableFactories, prefix: str | None = None, empty: bool = False,
             memmap_dir: str | None = None, read_only_if_exists: bool = False) -> NamedTensors:
    return self._init(prefix, empty, memmap_dir, read_only_if_exists)


def _init_remote_30(self: NamedVariableFactories, buffers: NamedRemoteBuffers, entry: int = 0,
                    prefix: str | None = None, empty: bool = False) -> NamedTensors:
    return self._init_remote(buffers, entry, prefix, empty)


def _init_remote_34(self: NamedVariableFactories, buffers: NamedRemoteBuffers, entry: int = 0,
                    prefix: str | None = None, empty: bool = False, memmap_dir: str | None = None,
                    read_only_if_exists: bool = False) -> NamedTensors:
    return self._init_remote(buffers, entry, prefix, empty, memmap_dir, read_only_if_exists)


class NamedVariableFactories(DotTree[VariableFactory]):
    """A DotTree of VariableFactories (keys like ``fc1.weight``)."""

    init = Generational("init", {"3.0": _init_30, "3.4": _init_34}, {
        "3.0": "init(prefix=None)",
        "3.4": "init(prefix=None, empty=False, memmap_dir=None, read_only_if_exists=False)",
    })
    init_remote = Generational("init_remote", {"3.0": _init_remote_30, "3.4": _init_remote_34}, {
        "3.0": "init_remote(buffers, entry=0, prefix=None, empty=False)",
        "3.4": "init_remote(buffers, entry=0, prefix=None, empty=False, memmap_dir=None, read_only_if_exists=False)",
    })

    def _init(self, prefix: str | None, empty: bool, memmap_dir: str | None = None,
              read_only_if_exists: bool = False) -> NamedTensors:
        """New main-graph variables, one per factory, created in sorted-key order and named by
        the dotted key (``prefix.`` prepended when given); full-shape even for sharded factories.
        With ``memmap_dir`` each one's host data is the memmap ``<memmap_dir>/<name>.npy``."""
        created = {}
        for key, factory in sorted(self.to_dict().items()):
            created[key] = factory._create_tensor(f"{prefix}.{key}" if prefix else key, empty, memmap_dir,
                                                  read_only_if_exists)
        return NamedTensors.from_dict(created)

    def _init_remote(self, buffers: NamedRemoteBuffers, entry: int, prefix: str | None, empty: bool,
                     memmap_dir: str | None = None, read_only_if_exists: bool = False) -> NamedTensors:
        """Remote variables, one per factory (sorted-key order), each at ``entry`` of the buffer
        with the same key in ``buffers`` (memmap-backed with ``memmap_dir``, as ``_init``)."""
        by_key = buffers.to_dict()
        created = {}
        for key, factory in sorted(self.to_dict().items()):
            if key not in by_key:
                raise KeyError(key)  # popxl-addons indexes the buffers by the factory's name
            created[key] = factory._create_remote_tensor(by_key[key], entry, f"{prefix}.{key}" if prefix else key,
                                                         empty, memmap_dir, read_only_if_exists)
        return NamedTensors.from_dict(created)

    @property
    def replica_groupings(self) -> Any:
        """A NamedReplicaGrouping with every factory's replica grouping under its key."""
        from profcompare.emulator.popxl_addons.named_replica_grouping import NamedReplicaGrouping

        return NamedReplicaGrouping.from_dict({key: f.replica_grouping for key, f in self.to_dict().items()})

    def init_zero(self) -> NamedTensors:
        """Return zero tensors (``ops.init``) in the current graph, one per factory (insertion order)."""
        return NamedTensors.from_dict(
            {key: ops.init(f.shape, f.dtype, key, "zero") for key, f in self.to_dict().items()}
        )

    def init_undef(self) -> NamedTensors:
        """Return uninitialised tensors (``ops.init``) in the current graph, one per factory."""
        return NamedTensors.from_dict(
            {key: ops.init(f.shape, f.dtype, key, "undef") for key, f in self.to_dict().items()}
        )


def add_variable_input(
    name: str, data_iter: DataIter, dtype: Any = None, by_ref: bool = False, replica_grouping: Any = None
) -> tuple[Any, VariableFactory]:
    """Return (graph input, factory) for a new variable input of the current graph."""
    factory = VariableFactory(data_iter, dtype, name, by_ref, replica_grouping=replica_grouping)
    return factory.create_input(), factory


def _add_sharded_30(name: str, data_iter: DataIter, dtype: Any = None, by_ref: bool = False,
                    replica_grouping: Any = None) -> tuple[Any, VariableFactory]:
    factory = VariableFactory(data_iter, dtype, name, by_ref, True, replica_grouping=replica_grouping)
    return factory.create_input(), factory


def _add_sharded_34(name: str, data_iter: DataIter, dtype: Any = None, by_ref: bool = False,
                    replica_grouping: Any = None, shard_over: int | None = None) -> tuple[Any, VariableFactory]:
    group = replica_grouping or popxl.gcg().ir.replica_grouping()
    factory = VariableFactory(data_iter, dtype, name, by_ref, replica_grouping, shard_over or group.group_size)
    return factory.create_input(), factory


#: (shard graph input, factory) for a replica-sharded variable input of the current graph; the
#: factory generates full host data (3.4 adds ``shard_over``, default: the group size)
add_replica_sharded_variable_input = Generational(
    "add_replica_sharded_variable_input", {"3.0": _add_sharded_30, "3.4": _add_sharded_34}, {
        "3.0": "add_replica_sharded_variable_input(name, data_iter, dtype=None, by_ref=False, replica_grouping=None); "
               "shard_over arrived in sdk-release-3.1",
        "3.4": "add_replica_sharded_variable_input(name, data_iter, dtype=None, by_ref=False, replica_grouping=None, "
               "shard_over=None)",
    })
