"""Helpers shared by the op builders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import dtypes
from ..context import gcg
from ..graph import Op, add_op, check_in_graph
from ..tensor import Tensor, constant


def out(name: str, shape: Sequence[int], dt: dtypes.dtype, meta: Sequence[int] = ()) -> tuple[Any, ...]:
    """One output spec for :func:`add_op`."""
    return (name, tuple(int(s) for s in shape), dt, tuple(meta))


def broadcast_shape(op_name: str, a: Tensor, b: Tensor) -> tuple[int, ...]:
    """NumPy broadcast shape of two tensors, ValueError naming the op otherwise."""
    try:
        return tuple(np.broadcast_shapes(a.shape, b.shape))
    except ValueError:
        raise ValueError(f"{op_name}: shapes {a.shape} ({a.id}) and {b.shape} ({b.id}) do not broadcast") from None


def same_dtype(op_name: str, *ts: Tensor) -> dtypes.dtype:
    """The common dtype of ``ts``; TypeError if they differ."""
    dt = ts[0].dtype
    for t in ts[1:]:
        if t.dtype != dt:
            raise TypeError(f"{op_name}: inputs must have the same dtype, got "
                            + ", ".join(f"{x.id}: {x.dtype}" for x in ts))
    return dt


def factor(value: Any, dt: dtypes.dtype, api: str) -> tuple[float | None, Tensor | None]:
    """Split a float-or-scalar-tensor argument into (float, None) or (None, tensor)."""
    if isinstance(value, Tensor):
        check_in_graph(gcg(), **{api: value})
        if value.nelms != 1:
            raise ValueError(f"{api} must be a scalar tensor, got shape {value.shape}")
        return None, value
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return float(value), None
    raise TypeError(f"{api} must be a float or a scalar Tensor, got {type(value).__name__}: {value!r}")


def ensure_tensor(value: Any, dt: dtypes.dtype, name: str | None = None) -> Tensor:
    """``value`` if it is a Tensor, else a constant of dtype ``dt``."""
    if isinstance(value, Tensor):
        return value
    return constant(value, dt, name)


def single(op: Op) -> Tensor:
    """The only output of ``op``."""
    return op.outputs[0]


__all__ = ["add_op", "broadcast_shape", "ensure_tensor", "factor", "gcg", "out", "same_dtype", "single"]
