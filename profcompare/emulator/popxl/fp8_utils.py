"""popxl.fp8_utils on the simulator: host conversion to and from popxl's float8 formats.

numpy has no float8, so popxl (and this emulator) stores float8 data as one byte per element
in the structured dtypes ``np_dtype_float8_143`` / ``np_dtype_float8_152`` (a single field of
``u1`` holding the bit pattern). The formats, as popxl 3.4 defines them:

========== ===== ========== ============== ============== ===========================
format     sign  exponent   mantissa bits  exponent bias  largest finite / smallest >0
========== ===== ========== ============== ============== ===========================
float8_143 1     4 bits     3              8              240 / 2**-10
float8_152 1     5 bits     2              16             57344 / 2**-17
========== ===== ========== ============== ============== ===========================

Every exponent code encodes numbers (code 0: subnormals); there is no infinity and a single
zero; the pattern ``0x80`` (negative zero) is NaN.

``cast(x * 2**log2_scale)`` rounds the exactly scaled value to the nearest float8 value, ties
to even. NaN and infinite inputs become NaN; a finite value beyond the largest one saturates
to it (sign kept), or becomes NaN with ``nan_on_overflow``; values rounding to zero give
``0x00`` whatever their sign. Two corners whose result popxl does not pin down are refused
with :class:`~profcompare.emulator.popxl.errors.SimulatorNotImplementedError` rather than
guessed: with ``nan_on_overflow``, a value strictly between the largest float8 value and the
rounding midpoint above it (NaN if the overflow test comes before rounding, the largest value
if after), and float16 data whose scaled value leaves float16's range (the scaling might
happen in float16). Decoding to float16 refuses results float16 cannot hold exactly.

The MSE scale search ``host_fp8_mse_scale`` (popxl's Python search) and its helpers live in
:mod:`.fp8_scale_search`; ``host_fp8_mse_scale_pb`` is refused: it calls Poplar's
``calculateMetadataForConversion``, whose search is not published, so its answer cannot be
reproduced.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import dtypes
from .errors import SimulatorNotImplementedError, module_getattr, not_implemented_message
from .fp8_scale_search import (
    CandidateConfig,
    FpDef,
    calculate_candidate_metric,
    calculate_metric_mse,
    find_exponential_range,
    float8_143_def,
    float8_152_def,
    host_fp8_mse_scale,
    ieee_fp16_denorms,
    ieee_fp32_no_denorms,
    log_histogram,
    max_scaling_bias,
    min_scaling_bias,
)

np_dtype_float8_143 = dtypes.np_dtype_float8_143
np_dtype_float8_152 = dtypes.np_dtype_float8_152

#: the bit pattern of NaN in both formats
NAN_BITS = 0x80
_FLOAT16_MAX = float(np.finfo(np.float16).max)


@dataclass(frozen=True)
class Float8Format:
    """Bit layout of a float8 format."""

    exponent_bits: int
    mantissa_bits: int
    exponent_bias: int

    @property
    def min_exponent(self) -> int:
        """Exponent of the smallest normal number."""
        return 1 - self.exponent_bias

    @property
    def max_exponent(self) -> int:
        """Exponent of the largest numbers (every exponent code holds numbers)."""
        return (1 << self.exponent_bits) - 1 - self.exponent_bias

    @property
    def max_value(self) -> float:
        """Largest finite value."""
        return (2.0 - 2.0 ** -self.mantissa_bits) * 2.0 ** self.max_exponent

    @property
    def overflow_midpoint(self) -> float:
        """Halfway between the largest value and the next power of two: rounds up (to even)."""
        return 2.0 ** (self.max_exponent + 1) - 2.0 ** (self.max_exponent - self.mantissa_bits - 1)


FORMATS: dict[str, Float8Format] = {"float8_143": Float8Format(4, 3, 8), "float8_152": Float8Format(5, 2, 16)}


def float8_format(dt: dtypes.dtype) -> Float8Format:
    """The layout of popxl float8 dtype ``dt``; RuntimeError for other dtypes."""
    if dt not in (dtypes.float8_143, dtypes.float8_152):
        raise RuntimeError(f"dtype {dt} not currently supported.")
    return FORMATS[dt.name]


def _check_scale(log2_scale: Any) -> int:
    scale = int(log2_scale)
    if not -32 <= scale < 32:
        raise ValueError(f"log2_scale must be in [-32, 32), got {scale}")
    return scale


def encode(values: np.ndarray, fmt: Float8Format, log2_scale: int, nan_on_overflow: bool, api: str) -> np.ndarray:
    """Return uint8 float8 bit patterns of ``values * 2**log2_scale`` (rules in the module doc)."""
    scaled = np.asarray(values, np.float64) * 2.0 ** log2_scale  # a power of two: exact
    finite = np.isfinite(scaled)
    magnitude = np.where(finite, np.abs(scaled), 0.0)
    if np.asarray(values).dtype == np.float16 and not nan_on_overflow and np.any(magnitude > _FLOAT16_MAX):
        raise SimulatorNotImplementedError(not_implemented_message(
            f"{api} of float16 data scaled beyond float16's range (2**log2_scale = 2**{log2_scale})"))
    if nan_on_overflow and np.any((magnitude > fmt.max_value) & (magnitude < fmt.overflow_midpoint)):
        raise SimulatorNotImplementedError(not_implemented_message(
            f"{api}(nan_on_overflow=True) of values between {fmt.max_value:g} and {fmt.overflow_midpoint:g}"))
    _, exp2 = np.frexp(magnitude)  # magnitude = f * 2**exp2, f in [0.5, 1)
    exponent = np.maximum(exp2 - 1, fmt.min_exponent)
    quantum = np.ldexp(1.0, exponent - fmt.mantissa_bits)
    rounded = np.rint(magnitude / quantum) * quantum  # rint: ties to even
    overflow = rounded > fmt.max_value
    rounded = np.where(overflow, fmt.max_value, rounded)
    _, exp2 = np.frexp(rounded)
    normal = rounded >= 2.0 ** fmt.min_exponent
    exponent = np.where(normal, exp2 - 1, fmt.min_exponent)
    code = np.where(normal, exponent + fmt.exponent_bias, 0)
    significand = np.ldexp(rounded, fmt.mantissa_bits - exponent).astype(np.int64)
    mantissa = significand - np.where(normal, 1 << fmt.mantissa_bits, 0)
    bits = (code << fmt.mantissa_bits) | mantissa
    bits = np.where((scaled < 0) & (rounded > 0), bits | 0x80, bits)
    nan = ~finite | (overflow & nan_on_overflow)
    return np.where(nan, NAN_BITS, bits).astype(np.uint8)


def decode(bits: np.ndarray, fmt: Float8Format, log2_scale: int) -> np.ndarray:
    """Return float64 values ``float8(bits) * 2**log2_scale`` (0x80 is NaN)."""
    b = np.asarray(bits, np.uint8).astype(np.int64)
    code = (b >> fmt.mantissa_bits) & ((1 << fmt.exponent_bits) - 1)
    mantissa = b & ((1 << fmt.mantissa_bits) - 1)
    normal = code > 0
    significand = np.where(normal, mantissa + (1 << fmt.mantissa_bits), mantissa)
    exponent = np.where(normal, code - fmt.exponent_bias, fmt.min_exponent) - fmt.mantissa_bits + log2_scale
    value = np.ldexp(significand.astype(np.float64), exponent)
    value = np.where(b & 0x80, -value, value)
    return np.where(b == NAN_BITS, np.nan, value)


def to_target(values: np.ndarray, target: np.dtype, api: str) -> np.ndarray:
    """``values`` (float64) as ``target``; refuses float16 results that would need rounding."""
    out = values.astype(target)
    if target == np.float16:
        finite = np.isfinite(values)
        if np.any(finite & (out.astype(np.float64) != values)):
            raise SimulatorNotImplementedError(not_implemented_message(
                f"{api} to float16 of values float16 cannot hold exactly"))
    return out


def _as_array(src: Any) -> np.ndarray:
    if hasattr(src, "detach") and hasattr(src, "numpy"):  # a torch tensor, as popxl accepts
        src = src.detach().numpy()
    return np.asarray(src, order="C")


def host_pow2scale_cast_to_fp8(src: Any, dtype: dtypes.dtype | None = None, log2_scale: int = 0,
                               nan_on_overflow: bool = True) -> np.ndarray:
    """Return ``cast(src * 2**log2_scale, dtype)`` as an array of structured dtype
    ``np_dtype_float8_143`` / ``np_dtype_float8_152`` (bit patterns), shaped like ``src``.

    ``src`` must be float16, float32 or float64; ``dtype`` popxl.float8_143 or float8_152."""
    arr = _as_array(src)
    fmt = float8_format(dtype)  # type: ignore[arg-type]
    if arr.dtype not in (np.float16, np.float32, np.float64):
        raise RuntimeError(f"src.dtype {arr.dtype} not currently supported.")
    bits = encode(arr, fmt, _check_scale(log2_scale), bool(nan_on_overflow), "popxl.fp8_utils.host_pow2scale_cast_to_fp8")
    return bits.reshape(arr.shape).view(dtype.as_numpy())  # type: ignore[union-attr]


def host_pow2scale_cast_from_fp8(src: np.ndarray, dtype: dtypes.dtype | None = None, log2_scale: int = 0) -> np.ndarray:
    """Return ``cast(src, dtype) * 2**log2_scale`` for float8 data ``src`` (structured float8
    dtype) as float16, float32 or float64; 0x80 becomes NaN."""
    if src.dtype == np_dtype_float8_143:
        fmt = FORMATS["float8_143"]
    elif src.dtype == np_dtype_float8_152:
        fmt = FORMATS["float8_152"]
    else:
        raise RuntimeError(f"src.dtype {src.dtype} not currently supported.")
    if dtype not in (dtypes.float16, dtypes.float32, dtypes.float64):
        raise RuntimeError(f"dtype {dtype} not currently supported.")
    values = decode(src.view(np.uint8), fmt, _check_scale(log2_scale))
    return to_target(values, dtype.as_numpy(), "popxl.fp8_utils.host_pow2scale_cast_from_fp8")  # type: ignore[union-attr]


def host_fp8_mse_scale_pb(src: Any, dtype: dtypes.dtype | None = None) -> int:
    """Refused: popxl answers with Poplar's ``calculateMetadataForConversion``, whose search is not
    published (``host_fp8_mse_scale`` is popxl's Python search and is simulated)."""
    raise SimulatorNotImplementedError(not_implemented_message(
        "popxl.fp8_utils.host_fp8_mse_scale_pb (Poplar's unpublished scale search; "
        "popxl.fp8_utils.host_fp8_mse_scale is simulated)"))


__all__ = ["CandidateConfig", "FpDef", "calculate_candidate_metric", "calculate_metric_mse", "find_exponential_range",
           "float8_143_def", "float8_152_def", "host_fp8_mse_scale", "host_fp8_mse_scale_pb",
           "host_pow2scale_cast_from_fp8", "host_pow2scale_cast_to_fp8", "ieee_fp16_denorms", "ieee_fp32_no_denorms",
           "log_histogram", "max_scaling_bias", "min_scaling_bias", "np_dtype_float8_143", "np_dtype_float8_152"]

__getattr__ = module_getattr("popxl.fp8_utils")
