"""Variable factories: host data generators that create graph inputs and the variables
that feed them (popxl-addons Gen A semantics, reference popxl.md section 2.2)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import as_popxl_dtype, not_supported, ops, popxl
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


class VariableFactory:
    """Generates host data for one variable and creates its graph input or variables.

    ``data_iter`` is a callable (called once as a test, the result discarded, then called for
    every value) or an iterable. One value is drawn at construction (peek) and is what the
    first ``create_*`` call uses, so a callable drawing random numbers draws twice at build time.
    A replica-sharded factory generates full host data; its graph input is the shard
    ``(nelms // replicas,)`` with ``meta_shape`` = the full shape.
    """

    def __init__(
        self,
        data_iter: DataIter,
        dtype: Any = None,
        name: str | None = None,
        by_ref: bool = False,
        replica_sharded: bool = False,
        replica_grouping: Any = None,
    ) -> None:
        if replica_grouping is not None:
            raise not_supported("VariableFactory(replica_grouping=...)", "only the default grouping of all replicas")
        if callable(data_iter):
            try:
                data_iter()
            except Exception as exc:  # noqa: BLE001 - re-raised with context, as popxl-addons does
                raise ValueError("the callable passed as data_iter raised an error") from exc
            iterator: Iterator[Any] = _repeat_calls(data_iter)
        elif isinstance(data_iter, Iterable):
            iterator = iter(data_iter)
        else:
            raise ValueError("data_iter must be a callable or an iterable of host arrays")
        self.data_iter = _Peekable(iterator)
        self.name = name
        self.by_ref = by_ref
        self.replica_sharded = replica_sharded
        self.replica_grouping = None
        first = np.asarray(self.data_iter.peek())
        self.dtype = as_popxl_dtype(dtype) if dtype is not None else as_popxl_dtype(first.dtype)
        self.shape: tuple[int, ...] = tuple(first.shape)
        self.meta_shape: tuple[int, ...] | None = None
        if replica_sharded:
            self.meta_shape = self.shape
            shard_size = _replication_factor()
            self.shape = (int(np.prod(self.meta_shape, dtype=np.int64)) // shard_size,)

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

    def next_data(self) -> np.ndarray:
        """Return the next host value (the peeked one first)."""
        return np.asarray(next(self.data_iter))

    def create_tensor(self, name: str | None = None) -> Any:
        """Return a new main-graph variable holding the next host value.

        For a replica-sharded factory the variable is on chip with the shard shape: each replica
        holds its own slice of the full data (flattened, zero-padded, split in replica order).
        The popxl-addons this follows has no on-chip form of a sharded factory; this is the
        emulator's (documented) extension used by the ``onchip-sharded`` workload.
        """
        name = name or self.name
        data = self.next_data()
        if not self.replica_sharded:
            return popxl.variable(data, self.dtype, name)
        return _on_chip_sharded_variable(data, self.dtype, name, self.shape)

    def create_remote_tensor(self, buffer: Any, entry: int = 0, name: str | None = None) -> Any:
        """Return a remote variable at ``entry`` of ``buffer`` holding the next (full) host value:
        replica-sharded when the buffer has a meta_shape, plain otherwise."""
        name = name or self.name
        data = self.next_data()
        if buffer.meta_shape:
            return popxl.remote_replica_sharded_variable(data, buffer, entry, self.dtype, name)
        return popxl.remote_variable(data, buffer, entry, self.dtype, name)


def _on_chip_sharded_variable(data: np.ndarray, dtype: Any, name: str | None, shard_shape: tuple[int, ...]) -> Any:
    replicas = _replication_factor()
    flat = np.asarray(data).reshape(-1)
    shard = shard_shape[0]
    padded = np.zeros(shard * replicas, dtype=flat.dtype)
    padded[: min(flat.size, padded.size)] = flat[: padded.size]
    shards = padded.reshape(replicas, shard)
    if replicas == 1 or bool(np.all(shards == shards[0])):
        # identical on every replica (zero-initialised optimizer state is the common case)
        return popxl.variable(shards[0], dtype, name)
    grouping_fn = getattr(popxl.gir(), "replica_grouping", None)
    if grouping_fn is None:
        raise not_supported(
            "VariableFactory.create_tensor for a replica-sharded factory with per-replica data",
            "needs popxl variables with replica_grouping(group_size=1)",
        )
    return popxl.variable(shards, dtype, name, replica_grouping=grouping_fn(group_size=1))


class NamedVariableFactories(DotTree[VariableFactory]):
    """A DotTree of VariableFactories (keys like ``fc1.weight``)."""

    def init(self, prefix: str | None = None) -> NamedTensors:
        """Return new main-graph variables, one per factory, created in sorted-key order and named
        by the dotted key (``prefix.`` prepended when given)."""
        created = {}
        for key, factory in sorted(self.to_dict().items()):
            created[key] = factory.create_tensor(f"{prefix}.{key}" if prefix else key)
        return NamedTensors.from_dict(created)

    def init_remote(self, buffers: NamedRemoteBuffers, entry: int = 0, prefix: str | None = None) -> NamedTensors:
        """Return remote variables, one per factory (sorted-key order), each at ``entry`` of the
        buffer with the same key in ``buffers``."""
        by_key = buffers.to_dict()
        created = {}
        for key, factory in sorted(self.to_dict().items()):
            if key not in by_key:
                raise KeyError(f"init_remote: no remote buffer for {key!r}; buffers: {sorted(by_key)}")
            created[key] = factory.create_remote_tensor(by_key[key], entry, f"{prefix}.{key}" if prefix else key)
        return NamedTensors.from_dict(created)

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
    factory = VariableFactory(data_iter, dtype, name, by_ref, False, replica_grouping)
    return factory.create_input(), factory


def add_replica_sharded_variable_input(
    name: str, data_iter: DataIter, dtype: Any = None, by_ref: bool = False, replica_grouping: Any = None
) -> tuple[Any, VariableFactory]:
    """Return (shard graph input, factory) for a replica-sharded variable input of the current
    graph; the factory generates full host data."""
    factory = VariableFactory(data_iter, dtype, name, by_ref, True, replica_grouping)
    return factory.create_input(), factory
