"""popxl-addons 3.4's float format table (``popxl_addons.ops.fp8_utils``; not in 3.0): each format
as an ``FpDef`` with popxl's five fields plus its largest finite value and its lowest and highest
binary exponents (float8 ones counting denormals), which the fp8 scale ops read."""

from __future__ import annotations

from typing import NamedTuple

from profcompare.emulator.popxl_addons.ops._generation_gate import require_34

require_34("popxl_addons.ops.fp8_utils")

__all__ = ["FpDef", "float8_143_def", "float8_152_def", "ieee_fp16_denorms", "ieee_fp32_no_denorms"]


class FpDef(NamedTuple):
    """A floating-point format (a named tuple, as in popxl-addons)."""

    num_exp_bits: int
    num_mantissa_bits: int
    fix_exponent_bias: int
    include_denorm: bool
    has_nans: bool
    max_value: float
    max_exp: int
    min_exp: int


ieee_fp32_no_denorms = FpDef(8, 23, 127, False, True, 3.4028235e38, 127, -126)
ieee_fp16_denorms = FpDef(5, 10, 15, True, True, 65504, 15, -14)
float8_152_def = FpDef(5, 2, 16, True, False, 57344, 15, -17)
float8_143_def = FpDef(4, 3, 8, True, False, 240, 7, -10)
