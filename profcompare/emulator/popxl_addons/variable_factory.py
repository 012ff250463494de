"""Variable factories: host data generators that create graph inputs and the variables
that feed them (popxl-addons Gen A semantics, reference popxl.md section 2.2)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import as_popxl_dtype, not_supported, ops, popxl
from profcompare.emulator.popxl_addons._generation import Generational
from profcompare.emulator.popxl_addons.dot_tree import DotTree
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors

if TYPE_CHECKING:
    from profcompare.emulator.popxl_addons.remote import NamedRemoteBuffers

DataIter = Callable[[], Any] | Iterable[Any]

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


def _init_common(self: VariableFactory, data_iter: DataIter, dtype: Any, name: str | None, by_ref: bool) -> np.ndarray:
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
    self.name = name
    self.by_ref = by_ref
    first = np.asarray(self.data_iter.peek())
    self.dtype = as_popxl_dtype(dtype) if dtype is not None else as_popxl_dtype(first.dtype)
    self.shape = tuple(first.shape)
    self.meta_shape = None
    return first


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
    if memmap_dir is not None:
        raise not_supported("VariableFactory.create_tensor(memmap_dir=...)")
    return self._create_tensor(name, empty)


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

    def _create_tensor(self, name: str | None, empty: bool) -> Any:
        """A new main-graph variable holding the next host value, in its FULL shape even for a
        replica-sharded factory (popxl-addons has no on-chip sharded variable: hold on-chip
        shards with ``popxl.replica_sharded_variable`` instead)."""
        return popxl.variable(self.next_data(empty), self.dtype, name or self.name,
                              replica_grouping=self.replica_grouping)

    def create_remote_tensor(self, buffer: Any, entry: int = 0, name: str | None = None, empty: bool = False) -> Any:
        """Return a remote variable at ``entry`` of ``buffer`` holding the next (full) host value:
        replica-sharded when the buffer has a meta_shape, plain otherwise."""
        name = name or self.name
        data = self.next_data(empty)
        if buffer.meta_shape:
            return popxl.remote_replica_sharded_variable(data, buffer, entry, self.dtype, name,
                                                         replica_grouping=self.replica_grouping)
        return popxl.remote_variable(data, buffer, entry, self.dtype, name, replica_grouping=self.replica_grouping)


def _init_30(self: NamedVariableFactories, prefix: str | None = None) -> NamedTensors:
    return self._init(prefix, False)


def _init_34(self: NamedVariableFactories, prefix: str | None = None, empty: bool = False,
             memmap_dir: str | None = None, read_only_if_exists: bool = False) -> NamedTensors:
    if memmap_dir is not None:
        raise not_supported("NamedVariableFactories.init(memmap_dir=...)")
    return self._init(prefix, empty)


def _init_remote_30(self: NamedVariableFactories, buffers: NamedRemoteBuffers, entry: int = 0,
                    prefix: str | None = None, empty: bool = False) -> NamedTensors:
    return self._init_remote(buffers, entry, prefix, empty)


def _init_remote_34(self: NamedVariableFactories, buffers: NamedRemoteBuffers, entry: int = 0,
                    prefix: str | None = None, empty: bool = False, memmap_dir: str | None = None,
                    read_only_if_exists: bool = False) -> NamedTensors:
    if memmap_dir is not None:
        raise not_supported("NamedVariableFactories.init_remote(memmap_dir=...)")
    return self._init_remote(buffers, entry, prefix, empty)


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

    def _init(self, prefix: str | None, empty: bool) -> NamedTensors:
        """New main-graph variables, one per factory, created in sorted-key order and named by
        the dotted key (``prefix.`` prepended when given); full-shape even for sharded factories."""
        created = {}
        for key, factory in sorted(self.to_dict().items()):
            created[key] = factory._create_tensor(f"{prefix}.{key}" if prefix else key, empty)
        return NamedTensors.from_dict(created)

    def _init_remote(self, buffers: NamedRemoteBuffers, entry: int, prefix: str | None, empty: bool) -> NamedTensors:
        """Remote variables, one per factory (sorted-key order), each at ``entry`` of the buffer
        with the same key in ``buffers``."""
        by_key = buffers.to_dict()
        created = {}
        for key, factory in sorted(self.to_dict().items()):
            if key not in by_key:
                raise KeyError(key)  # popxl-addons indexes the buffers by the factory's name
            created[key] = factory.create_remote_tensor(by_key[key], entry, f"{prefix}.{key}" if prefix else key,
                                                        empty)
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
