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
    """Return (host data, h2d stream, loaded tensor) for host array ``t_host``."""
    data = np.asarray(t_host)
    dtype = dtype if dtype is not None else popxl.dtype.as_dtype(data.dtype)
    stream = popxl.h2d_stream(tuple(data.shape), dtype, name=name)
    return data, stream, ops.host_load(stream, name)
