"""Remote buffers in Streaming Memory (popxl remote_buffer.py) and ``replica_sharded_buffer``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from . import dtypes
from .context import gcg
from .errors import SimulatorNotImplementedError, not_implemented_message

if TYPE_CHECKING:
    from .ir import Ir
    from .replica_grouping import ReplicaGrouping
    from .tensor import Tensor, Variable


class RemoteBuffer:
    """``entries`` slots of ``tensor_shape``/``tensor_dtype``, per replica."""

    def __init__(self, ir: Ir, buffer_id: int, tensor_shape: tuple[int, ...], tensor_dtype: dtypes.dtype,
                 entries: int) -> None:
        self._ir = ir
        self._id = buffer_id
        self._shape = tensor_shape
        self._dtype = tensor_dtype
        self._entries = 0
        self.entries = entries
        self._meta_shape: tuple[int, ...] = ()
        self._variables: list[Variable] = []

    @property
    def remote_buffer_id(self) -> int:
        """The buffer id (1, 2, ... in creation order)."""
        return self._id

    @property
    def tensor_shape(self) -> tuple[int, ...]:
        """Shape of one entry (the shard shape for a sharded buffer)."""
        return self._shape

    @property
    def tensor_dtype(self) -> dtypes.dtype:
        """Dtype of the entries."""
        return self._dtype

    @property
    def entries(self) -> int:
        """Number of entries."""
        return self._entries

    @entries.setter
    def entries(self, value: int) -> None:
        if self._ir._prepared:
            raise RuntimeError("RemoteBuffer.entries cannot change after a Session was created for the Ir")
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"RemoteBuffer entries must be a positive int, got {value!r}")
        self._entries = int(value)

    @property
    def meta_shape(self) -> tuple[int, ...]:
        """Full (unsharded) shape for a replica-sharded buffer, else ``()``."""
        return self._meta_shape

    @meta_shape.setter
    def meta_shape(self, shape: Iterable[int]) -> None:
        self._meta_shape = tuple(int(s) for s in shape) if shape else ()

    def validate_tensor_matches_buffer(self, t: Tensor, num_shards: int = 1) -> None:
        """Raise ValueError unless ``t``'s shape and dtype match one entry."""
        if tuple(t.shape) != self._shape or t.dtype != self._dtype:
            raise ValueError(
                f"Tensor {t.id} of shape {t.shape} and dtype {t.dtype} does not match "
                f"RemoteBuffer[id={self._id}] tensor shape {self._shape} and dtype {self._dtype}")

    def __hash__(self) -> int:
        return hash((self._id, id(self._ir)))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RemoteBuffer) and other._id == self._id and other._ir is self._ir

    def __repr__(self) -> str:
        return (f"RemoteBuffer(remote_buffer_id={self._id}, tensor_shape={self._shape}, "
                f"tensor_dtype={self._dtype}, entries={self._entries}, meta_shape={self._meta_shape})")


def remote_buffer(tensor_shape: Iterable[int], tensor_dtype: dtypes.dtype, entries: int = 1) -> RemoteBuffer:
    """Create a remote buffer in the current Ir; ids start at 1 (max existing id + 1)."""
    ir = gcg().ir
    if not isinstance(tensor_dtype, dtypes.dtype):
        raise TypeError(f"tensor_dtype must be a popxl dtype, got {tensor_dtype!r}")
    buf_id = max(ir._remote_buffers, default=0) + 1
    buf = RemoteBuffer(ir, buf_id, tuple(int(s) for s in tensor_shape), tensor_dtype, entries)
    ir._remote_buffers[buf_id] = buf
    return buf


def replica_sharded_buffer(shape: Iterable[int], dtype: dtypes.dtype,
                           replica_grouping: ReplicaGrouping | None = None,
                           shard_over: int | None = None, entries: int = 1) -> RemoteBuffer:
    """Create a buffer holding shards of a tensor of ``shape``: tensor_shape ``(ceil(n/shard_over),)``,
    meta_shape ``shape``."""
    ir = gcg().ir
    rg = (replica_grouping if replica_grouping is not None else ir.replica_grouping()).const_rg
    shard_over = rg.group_size if shard_over is None else int(shard_over)
    if shard_over > rg.group_size or rg.group_size % shard_over:
        raise ValueError(f"shard_over ({shard_over}) must be <= the group size ({rg.group_size}) and divide it")
    if shard_over != rg.group_size:
        raise SimulatorNotImplementedError(not_implemented_message(
            "popxl.replica_sharded_buffer with shard_over smaller than the replica group"))
    shape = tuple(int(s) for s in shape)
    if rg.num_groups > 1:
        shape = shape[1:]
    nelms = int(np.prod(shape, dtype=np.int64)) if shape else 1
    buf = remote_buffer((-(-nelms // shard_over),), dtype, entries)
    buf.meta_shape = shape
    return buf

