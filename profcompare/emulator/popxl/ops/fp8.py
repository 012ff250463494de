"""popxl's float8 ops: casts with a power-of-two scale, and the scaled float8 matmul, convolution
and transposed convolution.

Float8 tensors hold bit patterns (see :mod:`..fp8_utils` for the formats and rounding). The
scale is a scalar int32 tensor read at run time; its value must lie in [-32, 32). The scaled
convolutions take their shape rules, attributes and FLOPs from the float ones
(:func:`.nn.conv_geometry`, :func:`.nn.conv_transpose_geometry`) with half partials, as popxl
sets; their operands may mix the two float8 formats; they have no gradient (PopART refuses a
scaled convolution in a backward pass).
"""

from __future__ import annotations

from collections.abc import Sequence


from .. import dtypes
from ..graph import add_op
from ..tensor import Tensor
from ._util import out, single
from .core import matmul_shape
from .nn import PadType, conv_geometry, conv_transpose_geometry

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
    shape, k = matmul_shape("matmul_pow2scaled", lhs, rhs)
    attrs = {"available_memory_proportion": available_memory_proportion, "partials_type": dtypes.float16,
             "output_type": dtypes.float16, "k": k}
    return single(add_op("MatMulPow2Scaled", "matmul_pow2scaled", [lhs, rhs, log2_scale],
                         [out("matmul_pow2scaled_out", shape, dtypes.float16)], attrs))


def _check_scaled_conv_operands(t: Tensor, weight: Tensor, log2_scale: Tensor) -> None:
    # popxl's order: operand dtypes, then the scale's rank, then its dtype
    if t.dtype not in FLOAT8 or weight.dtype not in FLOAT8:
        raise TypeError("Scaled conv operands must be of dtype popxl.float8_143 or popxl.float8_152")
    if log2_scale.rank > 0:
        raise ValueError("Log2 scale argument must be a scalar tensor")
    if log2_scale.dtype != dtypes.int32:
        raise TypeError("Log2 scale tensor must be of type popxl.int32")


def conv_pow2scaled(t: Tensor, weight: Tensor, log2_scale: Tensor, stride: Sequence[int] | None = (1, 1),
                    padding: Sequence[int] | None = (0, 0, 0, 0), dilation: Sequence[int] | None = (1, 1),
                    groups: int | None = 1, pad_type: PadType | None = "not_set",
                    available_memory_proportions: list[float] | None = None,
                    enable_conv_dithering: list[int] | None = None) -> Tensor:
    """``conv(t, weight) * 2**log2_scale`` of float8 ``t`` (N, C, *spatial) and ``weight``
    (M, C / groups, *kernel); returns (N, M, *out_spatial) in float16 (half partials)."""
    _check_scaled_conv_operands(t, weight, log2_scale)
    shape, attrs = conv_geometry("popxl.ops.conv_pow2scaled", t, weight, stride, padding, dilation, groups,
                                 pad_type, available_memory_proportions, ["half"], enable_conv_dithering)
    return single(add_op("ConvPow2Scaled", "conv_pow2scaled", [t, weight, log2_scale],
                         [out("conv_out", shape, dtypes.float16)], attrs))


def conv_transpose_pow2scaled(t: Tensor, weight: Tensor, log2_scale: Tensor, stride: Sequence[int] | None = (1, 1),
                              padding: Sequence[int] | None = (0, 0, 0, 0), dilation: Sequence[int] | None = (1, 1),
                              groups: int | None = 1, pad_type: PadType | None = "not_set",
                              output_padding: Sequence[int] | None = (), output_shape: Sequence[int] | None = (),
                              available_memory_proportions: list[float] | None = None,
                              enable_conv_dithering: list[int] | None = None) -> Tensor:
    """``conv_transpose(t, weight) * 2**log2_scale`` of float8 ``t`` (N, C, *spatial) and ``weight``
    (C, M / groups, *kernel); returns (N, M, *out) in float16 (half partials)."""
    _check_scaled_conv_operands(t, weight, log2_scale)
    shape, attrs = conv_transpose_geometry("popxl.ops.conv_transpose_pow2scaled", t, weight, stride, padding,
                                           dilation, groups, pad_type, output_padding, output_shape,
                                           available_memory_proportions, ["half"], enable_conv_dithering)
    return single(add_op("ConvTransposePow2Scaled", "conv_transpose_pow2scaled", [t, weight, log2_scale],
                         [out("convtranspose_out", shape, dtypes.float16)], attrs))


__all__ = ["conv_pow2scaled", "conv_transpose_pow2scaled", "matmul_pow2scaled", "pow2scale_cast_from_fp8",
           "pow2scale_cast_to_fp8"]
