"""Host streams and remote buffers: host_load/host_store, remote_load(_)/remote_store."""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..remote_buffer import RemoteBuffer
from ..streams import DeviceToHostStream, HostToDeviceStream
from ..tensor import Tensor, constant
from ._util import add_op, gcg, out, single
from .core import init


def host_load(h2d_stream: HostToDeviceStream, name: str | None = None) -> Tensor:
    """Load the next transfer of ``h2d_stream``; output id ``<name>_hostload``."""
    if not isinstance(h2d_stream, HostToDeviceStream):
        raise TypeError(f"host_load needs a HostToDeviceStream, got {type(h2d_stream).__name__}")
    g = gcg()
    if h2d_stream._tensor.graph.ir is not g.ir:
        raise ValueError(f"stream {h2d_stream.tensor_id!r} belongs to another Ir")
    if name is None:
        name = h2d_stream.tensor_id
    init_t = init(h2d_stream.shape, h2d_stream.dtype, name + "_init", "undef")
    return single(add_op("HostLoad", "host_load", [init_t],
                         [out(name + "_hostload", h2d_stream.shape, h2d_stream.dtype)],
                         {"stream": h2d_stream}))


def host_store(d2h_stream: DeviceToHostStream, t: Tensor) -> None:
    """Store ``t`` into the next transfer slot of ``d2h_stream`` (shape and dtype must match)."""
    if not isinstance(d2h_stream, DeviceToHostStream):
        raise TypeError(f"host_store needs a DeviceToHostStream, got {type(d2h_stream).__name__}")
    if t.dtype != d2h_stream.dtype:
        raise ValueError(f"host_store: tensor {t.id} has dtype {t.dtype} but stream {d2h_stream.tensor_id!r} "
                         f"has dtype {d2h_stream.dtype}")
    if t.shape != d2h_stream.shape:
        raise ValueError(f"host_store: tensor {t.id} has shape {t.shape} but stream {d2h_stream.tensor_id!r} "
                         f"has shape {d2h_stream.shape}")
    add_op("HostStore", "host_store", [t], [], {"stream": d2h_stream})


def _offset(offset: int | Tensor) -> Tensor:
    if isinstance(offset, Tensor):
        if offset.nelms != 1 or not offset.dtype.is_int:
            raise ValueError(f"remote buffer offset must be an integer scalar tensor, got {offset}")
        return offset
    if not isinstance(offset, (int, np.integer)) or offset < 0:
        raise ValueError(f"remote buffer offset must be a non-negative int or a Tensor, got {offset!r}")
    return constant(int(offset), dtypes.uint32, name="offset")


def remote_load(remote_buffer: RemoteBuffer, offset: int | Tensor, name: str | None = None) -> Tensor:
    """Load entry ``offset`` of the buffer: shape buffer.tensor_shape, meta_shape buffer.meta_shape."""
    off = _offset(offset)
    if name is None:
        name = f"id_{remote_buffer.remote_buffer_id}_offset_{off.name}"
    init_t = init(remote_buffer.tensor_shape, remote_buffer.tensor_dtype, name + "_remote_load", "undef",
                  meta_shape=remote_buffer.meta_shape)
    return single(add_op("RemoteLoad", "remote_load", [init_t, off],
                         [out(name + "_remote_loaded", remote_buffer.tensor_shape, remote_buffer.tensor_dtype,
                              remote_buffer.meta_shape)],
                         {"remote_buffer": remote_buffer}))


def remote_load_(remote_buffer: RemoteBuffer, offset: int | Tensor, t: Tensor) -> Tensor:
    """Load entry ``offset`` into ``t`` in place; returns t's alias."""
    off = _offset(offset)
    remote_buffer.validate_tensor_matches_buffer(t)
    return single(add_op("RemoteLoadInplace", "remote_load_inplace", [t, off],
                         [out("remote_load_inplace_out", t.shape, t.dtype, t.meta_shape)],
                         {"remote_buffer": remote_buffer}, modified=[t]))


def remote_store(remote_buffer: RemoteBuffer, offset: int | Tensor, t: Tensor) -> None:
    """Store ``t`` at entry ``offset`` (no data dependency with loads: order with in_sequence)."""
    off = _offset(offset)
    remote_buffer.validate_tensor_matches_buffer(t)
    add_op("RemoteStore", "remote_store", [t, off], [], {"remote_buffer": remote_buffer})

