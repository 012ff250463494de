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

from . import float16_torch

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
#: _ROUND - _REBIAS in wrapping uint32 arithmetic (added to the magnitude in one pass)
_ROUND_REBIASED = np.uint32((int(_ROUND) - int(_REBIAS)) % 2**32)

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
    ``values.astype(np.float16)``.

    The passes run in place on one uint32 array (each temporary array of a 1.6-million-element
    weight is a 6 MB write), and the subnormal results are computed for the values that have one:
    the whole array when they are many, only those values (gathered) when they are few.
    """
    x = np.asarray(values, dtype=np.float32, order="C")
    if x.ndim == 0:  # the in-place passes need arrays; a 0-d input gives a float16 scalar, as before
        return to_half(x.reshape(1))[0]
    bits = x.view(np.uint32)
    mag = bits & _ABS
    # normal range: drop 13 mantissa bits rounding to nearest even (a carry moves the exponent);
    # (mag - _REBIAS + _ROUND + lsb) >> 13 in wrapping uint32 arithmetic
    out = mag >> 13
    out &= 1
    out += mag
    out += _ROUND_REBIASED
    out >>= 13
    out[mag >= _OVERFLOW] = 0x7C00
    tiny = mag < _MIN_NORMAL
    count = int(np.count_nonzero(tiny))
    if count:
        with np.errstate(invalid="ignore"):  # signalling NaNs: replaced below
            if 4 * count > tiny.size:
                sub = np.abs(x)
                sub += _SUBNORMAL_MAGIC
                sub_bits = sub.view(np.uint32)
                sub_bits -= _SUBNORMAL_MAGIC_BITS
                np.copyto(out, sub_bits, where=tiny)
            else:
                sub = np.abs(x[tiny])
                sub += _SUBNORMAL_MAGIC
                out[tiny] = sub.view(np.uint32) - _SUBNORMAL_MAGIC_BITS
    sign = bits >> 16
    sign &= _SIGN
    out |= sign
    result = out.astype(np.uint16).view(np.float16)
    nan = mag > _INF
    if nan.any():
        result[nan] = x[nan].astype(np.float16)
    return result


#: adding this to a float32 exponent field gives the exponent 13 binades up (see round_to_half)
_THIRTEEN_BINADES = np.uint32(13 << 23)
_EXPONENT = np.uint32(0x7F800000)
_SIGN32 = np.uint32(0x80000000)
#: 65536.0: a magnitude rounded to float16 precision at or above it is no float16 (inf)
_HALF_OVERFLOW = np.uint32(143 << 23)
#: the largest float32 magnitude that rounds to a finite float16 is below 65520.0 (this)
_ROUNDS_TO_INF = 0x477FF000


def round_to_half(values: np.ndarray) -> np.ndarray:
    """float32 ``values`` rounded to the nearest float16 value, kept as float32:
    ``values.astype(np.float16).astype(np.float32)``, bit for bit.

    Without the float16 round trip, and without a branch per element: for a magnitude in the
    binade [2**e, 2**(e+1)) (e at least -14, the smallest normal float16 exponent, so that
    subnormals share the binade of 2**-14) adding C = 2**(e+13) in float32 rounds it to a
    multiple of 2**(e-10) -- the float16 step there -- to nearest, ties to even (C is an even
    multiple of that step, so the sum's last bit is the float16 mantissa's), and subtracting C
    is exact. Magnitudes rounded to 65536 or more become inf; NaNs go through numpy, keeping its
    payload rule; the sign is put back last (-0.0 stays -0.0).
    """
    x = np.asarray(values, dtype=np.float32, order="C")
    if x.ndim == 0:
        return round_to_half(x.reshape(1))[0]
    bits = x.view(np.uint32)
    mag = bits & _ABS
    big = np.maximum(mag, _MIN_NORMAL)
    big &= _EXPONENT
    big += _THIRTEEN_BINADES
    shift = big.view(np.float32)
    top = int(mag.max()) if mag.size else 0
    if top > _INF:
        with np.errstate(invalid="ignore"):  # signalling NaNs: replaced below
            out = mag.view(np.float32) + shift
            out -= shift
    else:
        out = mag.view(np.float32) + shift
        out -= shift
    out_bits = out.view(np.uint32)
    if top >= _ROUNDS_TO_INF:  # something rounds to 65536 or more, or is inf or NaN
        out_bits[out_bits >= _HALF_OVERFLOW] = _INF
    out_bits |= bits & _SIGN32
    if top > _INF:
        nan = mag > _INF
        with np.errstate(invalid="ignore"):
            out[nan] = x[nan].astype(np.float16).astype(np.float32)
    return out


def softmax_half(x: np.ndarray, axis: int) -> np.ndarray:
    """The softmax of float16 ``x`` along ``axis`` as numpy's float16 operations compute it,
    bit for bit: ``e = x - x.max(axis, keepdims=True); np.exp(e, out=e); e /= e.sum(axis,
    keepdims=True)``, each step rounded to float16.

    numpy converts every float16 element to float32 and back once per operation (about 8 ns an
    element each time); here ``x`` is converted once and the steps run in float32, rounding to
    float16 where numpy's result is float16: the maximum is exact in float32 (it picks one of the
    values); ``x - max`` and ``e / sum`` are one float32 operation rounded once, as numpy's
    float16 ``-`` and ``/`` compute them; the exponential is numpy's float16 ``exp`` itself; the
    sum along the last, contiguous axis is numpy's pairwise float32 summation in both, which
    numpy's float16 sum rounds once. Any other case (another axis, a NaN maximum, whose payload
    depends on which NaN numpy's reduction meets first) is computed as numpy's operations."""
    last = axis in (-1, x.ndim - 1)
    if x.dtype != np.float16 or not last or not x.flags.c_contiguous or x.size == 0:
        return _softmax_reference(x, axis)
    xf = float16_torch.astype(x, np.float32)  # the casts: numpy's bits, by torch when it can
    top = xf.max(axis=axis, keepdims=True)
    if np.isnan(top).any():
        return _softmax_reference(x, axis)
    xf -= top
    e = float16_torch.astype(xf, np.float16)
    np.exp(e, out=e)
    ef = xf  # reused: each large array is a fresh mapping of pages the kernel zeroes
    float16_torch.copyto(ef, e)
    total = ef.sum(axis=axis, keepdims=True).astype(np.float16).astype(np.float32)
    ef /= total
    return float16_torch.astype(ef, np.float16)


def _softmax_reference(x: np.ndarray, axis: int) -> np.ndarray:
    """The softmax as numpy's operations in ``x``'s own type (:func:`softmax_half`'s definition)."""
    e = x - x.max(axis=axis, keepdims=True)
    np.exp(e, out=e)
    e /= e.sum(axis=axis, keepdims=True)
    return e


def cast(values: np.ndarray, dtype: np.dtype | type) -> np.ndarray:
    """``values.astype(dtype)`` (a new array), through the fast conversions between float16 and
    float32."""
    dtype = np.dtype(dtype)
    if values.dtype == np.float16 and dtype == np.float32:
        return to_float32(values)
    if values.dtype == np.float32 and dtype == np.float16:
        return to_half(values)
    return values.astype(dtype)


__all__ = ["cast", "round_to_half", "softmax_half", "to_float32", "to_half"]
