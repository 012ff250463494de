"""popxl-addons 3.4 ``ops.fp8_amax_scale``: a float8 scale from the absolute maximum of a tensor,
built from popxl ops as popxl-addons builds it:
``clip(int32(floor(log2(max_value / max(|src|)))), -31, 31)`` with ``max_value`` 240
(float8_143) or 57344 (float8_152), computed in ``src``'s dtype. popxl-addons 3.0 has no such op.
"""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons._compat import ops, popxl

#: the largest finite value of each float8 format (popxl-addons' ``FpDef.max_value``)
FLOAT8_MAX_VALUE = {"float8_143": 240, "float8_152": 57344}


def fp8_amax_scale(src: popxl.Tensor, dtype: Any = popxl.float8_143) -> popxl.Tensor:
    """Return an int32 scalar: the log2 scale that brings ``max(|src|)`` just under ``dtype``'s
    largest value (see the module docstring). ``src`` must be float16 or float32 (RuntimeError),
    ``dtype`` popxl.float8_143 or float8_152 (ValueError; popxl-addons fails on an unbound name)."""
    if src.dtype not in (popxl.float32, popxl.float16):
        raise RuntimeError(f"dtype {src.dtype} not currently supported.")
    if dtype not in (popxl.float8_143, popxl.float8_152):
        raise ValueError(f"fp8_amax_scale: dtype must be popxl.float8_143 or popxl.float8_152, got {dtype}")
    amax = ops.max(ops.abs(src))
    log2_max = ops.log2(FLOAT8_MAX_VALUE[dtype.name] / amax)
    log2_max = ops.cast(ops.floor(log2_max), popxl.int32)
    # popxl-addons clips with ops.clip, which PopART applies to int32 too; the simulator's ops.clip
    # takes float tensors only, so the same clamp is built from where and maximum
    low = popxl.constant(-31, popxl.int32)
    high = popxl.constant(31, popxl.int32)
    return ops.maximum(ops.where(ops.greater(log2_max, high), high, log2_max), low)


__all__ = ["fp8_amax_scale"]
