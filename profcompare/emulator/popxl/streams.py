"""Host <-> device streams (popxl streams.py); always created in the main graph."""

from __future__ import annotations

from collections.abc import Iterable

from . import dtypes
from .context import gcg
from .tensor import Tensor, TensorSpec


class _Stream:
    __slots__ = ("_tensor",)

    def __init__(self, tensor: Tensor) -> None:
        self._tensor = tensor

    @property
    def dtype(self) -> dtypes.dtype:
        """Element dtype."""
        return self._tensor.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """Per-replica, per-transfer shape."""
        return self._tensor.shape

    @property
    def spec(self) -> TensorSpec:
        """``TensorSpec(shape, dtype)``."""
        return TensorSpec(self.shape, self.dtype)

    @property
    def tensor_id(self) -> str:
        """The stream's tensor id in the main graph (its name)."""
        return self._tensor.id

    @property
    def name(self) -> str:
        """Same as ``tensor_id`` (simulator convenience)."""
        return self._tensor.id

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._tensor))

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other._tensor == self._tensor  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.tensor_id!r}, shape={self.shape}, dtype={self.dtype})"

    __str__ = __repr__


class HostToDeviceStream(_Stream):
    """A stream the host writes and ``ops.host_load`` reads."""

    __slots__ = ()


class DeviceToHostStream(_Stream):
    """A stream ``ops.host_store`` writes and the host reads."""

    __slots__ = ()


def _stream_tensor(shape: Iterable[int], dtype: dtypes.dtype, name: str) -> Tensor:
    if not isinstance(dtype, dtypes.dtype):
        raise TypeError(f"stream dtype must be a popxl dtype, got {dtype!r}")
    mg = gcg().ir.main_graph
    return Tensor._create(mg, mg._create_tensor_id(name), tuple(shape), dtype)


def h2d_stream(shape: Iterable[int], dtype: dtypes.dtype, name: str | None = None) -> HostToDeviceStream:
    """Create a host-to-device stream in the main graph (whatever graph is current)."""
    s = HostToDeviceStream(_stream_tensor(shape, dtype, name or "h2d_stream"))
    s._tensor.graph.ir._h2d_streams.append(s)
    return s


def d2h_stream(shape: Iterable[int], dtype: dtypes.dtype, name: str | None = None) -> DeviceToHostStream:
    """Create a device-to-host stream in the main graph (whatever graph is current)."""
    s = DeviceToHostStream(_stream_tensor(shape, dtype, name or "d2h_stream"))
    s._tensor.graph.ir._d2h_streams.append(s)
    return s
