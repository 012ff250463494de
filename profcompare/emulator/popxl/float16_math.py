"""float16 arithmetic at float32 speed, bit-identical to numpy's float16 ufuncs and casts.

numpy computes a float16 ``+ - * /`` by converting both operands to float32, operating, and
rounding the float32 result to float16 (nearest, ties to even). Its conversions are exact but
slow on subnormal float16 values (below 2**-14, where an Adam first moment of small gradients
lives): about 70 ns per element, 20 times a float32 multiply. Here the two conversions are
whole-array operations:

* float16 -> float32 is a lookup in a table of all 65,536 float16 values, built by numpy's own
  conversion (identical by construction);
* float32 -> float16 rounds with integer operations on the float32 bits (normal results), or by
  adding 0.5 in float32, whose ulp is the float16 subnormal step 2**-24 (subnormal results);
  NaN inputs are converted by numpy itself, keeping its payload rule.

Rounding a float32 result of two float16 operands once is what numpy does, and it equals the
correctly rounded float16 result (float32 has 24 >= 2 * 11 + 2 significand bits, so the double
rounding of ``+ - * / sqrt`` is innocuous); tests/emulator_popxl/test_float16_math.py checks every
float16 value and random float32 values against numpy, bit for bit.
"""

from __future__ import annotations

import numpy as np

_SIGN = np.uint32(0x8000)
_ABS = np.uint32(0x7FFFFFFF)
#: float32 bit patterns: 2**-14 (the smallest normal float16), 65536 (rounds to inf), inf
_MIN_NORMAL = np.uint32(113 << 23)
_OVERFLOW = np.uint32(143 << 23)
_INF = np.uint32(0x7F800000)
#: subtracting it moves a float32 exponent to the float16 bias (127 - 15 = 112)
_REBIAS = np.uint32(112 << 23)
_ROUND = np.uint32(0x0FFF)
#: 0.5 in float32: its ulp is 2**-24, the float16 subnormal step
_SUBNORMAL_MAGIC = np.float32(0.5)
_SUBNORMAL_MAGIC_BITS = np.uint32(126 << 23)

_TABLE: np.ndarray | None = None


def _table() -> np.ndarray:
    global _TABLE
    if _TABLE is None:
        _TABLE = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    return _TABLE


def to_float32(half: np.ndarray) -> np.ndarray:
    """The float32 array holding exactly the values of float16 array ``half`` (same shape)."""
    return _table()[np.asarray(half, dtype=np.float16).view(np.uint16)]


def to_half(values: np.ndarray) -> np.ndarray:
    """float32 ``values`` rounded to float16 (nearest, ties to even; overflow to inf), exactly as
    ``values.astype(np.float16)``."""
    x = np.asarray(values, dtype=np.float32, order="C")
    bits = x.view(np.uint32)
    sign = (bits >> 16) & _SIGN
    mag = bits & _ABS
    # normal range: drop 13 mantissa bits rounding to nearest even (a carry moves the exponent)
    normal = (mag - _REBIAS + _ROUND + ((mag >> 13) & 1)) >> 13
    normal = np.where(mag >= _OVERFLOW, np.uint32(0x7C00), normal)
    with np.errstate(invalid="ignore"):  # signalling NaNs: replaced below
        subnormal = (np.abs(x) + _SUBNORMAL_MAGIC).view(np.uint32) - _SUBNORMAL_MAGIC_BITS
    out = (np.where(mag < _MIN_NORMAL, subnormal, normal) | sign).astype(np.uint16).view(np.float16)
    nan = mag > _INF
    if nan.any():
        out[nan] = x[nan].astype(np.float16)
    return out


def round_to_half(values: np.ndarray) -> np.ndarray:
    """float32 ``values`` rounded to the nearest float16 value, kept as float32:
    ``values.astype(np.float16).astype(np.float32)``."""
    return to_float32(to_half(values))


def cast(values: np.ndarray, dtype: np.dtype | type) -> np.ndarray:
    """``values.astype(dtype)`` (a new array), through the fast conversions between float16 and
    float32."""
    dtype = np.dtype(dtype)
    if values.dtype == np.float16 and dtype == np.float32:
        return to_float32(values)
    if values.dtype == np.float32 and dtype == np.float16:
        return to_half(values)
    return values.astype(dtype)


__all__ = ["cast", "round_to_half", "to_float32", "to_half"]
