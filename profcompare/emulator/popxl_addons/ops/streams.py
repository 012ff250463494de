"""Host stream helpers (popxl-addons ``host_store`` / ``host_load``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import ops, popxl

__all__ = ["host_store", "host_load"]


def host_store(t: Any) -> Any:
    """Create a d2h stream named ``<t.name>_stream`` with t's shape and dtype, store ``t`` into
    it, and return the stream (the key of the value in ``session.run``'s outputs)."""
    stream = popxl.d2h_stream(tuple(t.shape), t.dtype, name=f"{t.name}_stream")
    ops.host_store(stream, t)
    return stream


def host_load(t_host: Any, dtype: Any = None, name: str | None = None) -> tuple[np.ndarray, Any, Any]:
    """Return (host data, h2d stream, loaded tensor) for host data ``t_host`` (an array, a torch
    tensor, anything array-like), as popxl-addons does: the stream (``<name>_stream``) and the
    loaded tensor have ``dtype``, and the host data is converted to it with ``popxl.utils.to_numpy``
    (so a float32 torch tensor loaded as float16 is handed back as a float16 array). Without
    ``dtype`` the data's own dtype is used (64-bit narrowed to 32 bits, as ``to_numpy`` does)."""
    from profcompare.emulator.popxl.utils import to_numpy

    data = to_numpy(t_host, dtype=dtype)
    dtype = dtype if dtype is not None else popxl.dtype.as_dtype(data.dtype)
    stream = popxl.h2d_stream(tuple(data.shape), dtype, name=None if name is None else f"{name}_stream")
    return data, stream, ops.host_load(stream, name)
