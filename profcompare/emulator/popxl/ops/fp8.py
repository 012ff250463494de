"""popxl's float8 ops: casts with a power-of-two scale and the scaled float8 matmul.

Float8 tensors hold bit patterns (see :mod:`..fp8_utils` for the formats and rounding). The
scale is a scalar int32 tensor read at run time; its value must lie in [-32, 32).
"""

from __future__ import annotations

import numpy as np

from .. import dtypes
from ..graph import add_op
from ..tensor import Tensor
from ._util import out, single

FLOAT8 = (dtypes.float8_143, dtypes.float8_152)


def _check_log2_scale(log2_scale: Tensor) -> None:
    if not isinstance(log2_scale, Tensor):
        raise TypeError(f"log2_scale must be a popxl Tensor, got {type(log2_scale).__name__}")
    if log2_scale.rank > 0:
        raise ValueError("Log2 scale argument must be a scalar tensor")
    if log2_scale.dtype != dtypes.int32:
        raise TypeError("Log2 scale tensor must be of type popxl.int32")


def pow2scale_cast_to_fp8(t: Tensor, log2_scale: Tensor, data_type: dtypes.dtype) -> Tensor:
    """``cast(t * 2**log2_scale, data_type)`` for a float8 ``data_type``; same shape."""
    if data_type not in FLOAT8:
        raise TypeError(f"Data type {data_type} not supported for pow2scale_cast_to_fp8")
    _check_log2_scale(log2_scale)
    return single(add_op("Pow2ScaleThenCast", "pow2scale_cast_to_fp8", [t, log2_scale],
                         [out(f"{t.name}_{data_type.name}", t.shape, data_type)], {"dtype": data_type}))


def pow2scale_cast_from_fp8(t: Tensor, log2_scale: Tensor, data_type: dtypes.dtype) -> Tensor:
    """``cast(t, data_type) * 2**log2_scale`` from float8 to float16 or float32; same shape."""
    if data_type not in (dtypes.float16, dtypes.float32):
        raise TypeError(f"Data type {data_type} not supported for pow2scale_cast_from_fp8")
    _check_log2_scale(log2_scale)
    return single(add_op("CastThenPow2Scale", "pow2scale_cast_from_fp8", [t, log2_scale],
                         [out(f"{t.name}_{data_type.name}", t.shape, data_type)], {"dtype": data_type}))


def _matmul_shape(lhs: Tensor, rhs: Tensor) -> tuple[tuple[int, ...], int]:
    if lhs.rank == 0 or rhs.rank == 0:
        raise ValueError("matmul_pow2scaled: scalar operands are not allowed")
    a = (1,) + lhs.shape if lhs.rank == 1 else lhs.shape
    b = rhs.shape + (1,) if rhs.rank == 1 else rhs.shape
    if a[-1] != b[-2]:
        raise ValueError(f"matmul_pow2scaled: inner dimensions differ: {lhs.id} {lhs.shape} @ {rhs.id} {rhs.shape}")
    try:
        batch = tuple(int(d) for d in np.broadcast_shapes(a[:-2], b[:-2]))
    except ValueError:
        raise ValueError(f"matmul_pow2scaled: batch dimensions of {lhs.shape} and {rhs.shape} "
                         "do not broadcast") from None
    shape = batch + (a[-2], b[-1])
    if lhs.rank == 1:
        shape = shape[:-2] + shape[-1:]
    if rhs.rank == 1:
        shape = shape[:-1]
    return shape, a[-1]


def matmul_pow2scaled(lhs: Tensor, rhs: Tensor, log2_scale: Tensor,
                      available_memory_proportion: float | None = None) -> Tensor:
    """``matmul(lhs, rhs) * 2**log2_scale`` of float8 operands (NumPy matmul shapes); float16
    output, as popxl (float16 partials)."""
    if lhs.dtype not in FLOAT8 or rhs.dtype not in FLOAT8:
        raise TypeError("Scaled matmul operands must be of dtype popxl.float8_143 or popxl.float8_152")
    if log2_scale.rank > 0:
        raise ValueError("Log2 scale argument must be a scalar tensor")
    if log2_scale.dtype != dtypes.int32:
        raise TypeError("Log2 scale tensor must be of type popxl.int32")
    shape, k = _matmul_shape(lhs, rhs)
    attrs = {"available_memory_proportion": available_memory_proportion, "partials_type": dtypes.float16,
             "output_type": dtypes.float16, "k": k}
    return single(add_op("MatMulPow2Scaled", "matmul_pow2scaled", [lhs, rhs, log2_scale],
                         [out("matmul_pow2scaled_out", shape, dtypes.float16)], attrs))


__all__ = ["matmul_pow2scaled", "pow2scale_cast_from_fp8", "pow2scale_cast_to_fp8"]
