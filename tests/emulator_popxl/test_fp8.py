"""float8: host conversions (popxl.fp8_utils), float8 variables, and the float8 device ops
(pow2scale_cast_to_fp8 / pow2scale_cast_from_fp8 / matmul_pow2scaled) against numpy references."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl.errors import SimulatorNotImplementedError
from profcompare.emulator.popxl.fp8_utils import host_pow2scale_cast_from_fp8, host_pow2scale_cast_to_fp8

# (exponent bits, mantissa bits, bias) per format
LAYOUT = {"float8_143": (4, 3, 8), "float8_152": (5, 2, 16)}


def reference_value(bits: int, name: str) -> float:
    """The value of one float8 bit pattern, written out from the format definition."""
    e_bits, m_bits, bias = LAYOUT[name]
    if bits == 0x80:
        return float("nan")
    sign = -1.0 if bits & 0x80 else 1.0
    code = (bits >> m_bits) & ((1 << e_bits) - 1)
    mantissa = bits & ((1 << m_bits) - 1)
    if code == 0:
        return sign * mantissa / 2 ** m_bits * 2.0 ** (1 - bias)
    return sign * (1 + mantissa / 2 ** m_bits) * 2.0 ** (code - bias)


@pytest.mark.parametrize("dt", [popxl.float8_143, popxl.float8_152])
def test_every_bit_pattern_decodes_and_round_trips(dt: popxl.dtype) -> None:
    bits = np.arange(256, dtype=np.uint8).view(dt.as_numpy())
    got = host_pow2scale_cast_from_fp8(bits, popxl.float64)
    want = np.array([reference_value(b, dt.name) for b in range(256)])
    np.testing.assert_array_equal(got, want)  # NaN at 0x80 only
    back = host_pow2scale_cast_to_fp8(want, dt, 0, False).view(np.uint8)
    expected = np.arange(256)
    expected[0x80] = 0x80  # NaN stays NaN
    np.testing.assert_array_equal(back, expected)


def test_known_patterns_and_scale() -> None:
    cast = host_pow2scale_cast_to_fp8
    assert cast(np.array([0.75], np.float32), popxl.float8_143).view(np.uint8)[0] == 0b0_0111_100
    assert cast(np.array([0.75], np.float16), popxl.float8_143, 1).view(np.uint8)[0] == 0b0_1000_100  # 1.5
    assert cast(np.array([0.25], np.float64), popxl.float8_152, -3).view(np.uint8)[0] == 0b0_01011_00
    assert cast(np.array([-2.0], np.float32), popxl.float8_152).view(np.uint8)[0] == 0b1_10001_00
    out = cast(np.array([[1.0, 2.0]], np.float32), popxl.float8_143)
    assert out.dtype == popxl.dtypes.np_dtype_float8_143 and out.shape == (1, 2)


def test_rounding_is_to_nearest_even() -> None:
    # float8_143 around 1: spacing 1/8. 1 + 1/16 is a tie -> 1 (even); 1 + 3/16 -> 1.25 (even)
    x = np.array([1 + 1 / 16, 1 + 3 / 16, 1 + 1 / 16 + 1e-6, 2.0 ** -11, 3 * 2.0 ** -11], np.float64)
    got = host_pow2scale_cast_from_fp8(host_pow2scale_cast_to_fp8(x, popxl.float8_143, 0, False), popxl.float64)
    np.testing.assert_array_equal(got, [1.0, 1.25, 1.125, 0.0, 2 * 2.0 ** -10])


def test_overflow_saturates_or_gives_nan_and_specials() -> None:
    x = np.array([1000.0, -1000.0, np.inf, np.nan, -1e-9], np.float32)
    sat = host_pow2scale_cast_to_fp8(x, popxl.float8_143, 0, False).view(np.uint8)
    np.testing.assert_array_equal(sat, [0x7F, 0xFF, 0x80, 0x80, 0x00])
    nan = host_pow2scale_cast_to_fp8(x, popxl.float8_143, 0, True).view(np.uint8)
    np.testing.assert_array_equal(nan, [0x80, 0x80, 0x80, 0x80, 0x00])
    big = host_pow2scale_cast_to_fp8(np.array([70000.0], np.float32), popxl.float8_152, 0, False)
    assert big.view(np.uint8)[0] == 0x7F  # 57344


def test_undetermined_corners_are_refused() -> None:
    # between 240 and the rounding midpoint 248: popxl does not say whether NaN or 240
    with pytest.raises(SimulatorNotImplementedError, match="host_pow2scale_cast_to_fp8"):
        host_pow2scale_cast_to_fp8(np.array([244.0], np.float32), popxl.float8_143, 0, True)
    with pytest.raises(SimulatorNotImplementedError, match="float16"):
        host_pow2scale_cast_to_fp8(np.array([1000.0], np.float16), popxl.float8_143, 7, False)
    tiny = host_pow2scale_cast_to_fp8(np.array([2.0 ** -17], np.float32), popxl.float8_152)
    with pytest.raises(SimulatorNotImplementedError, match="float16 cannot hold exactly"):
        host_pow2scale_cast_from_fp8(tiny, popxl.float16, -10)
    with pytest.raises(ValueError, match=r"\[-32, 32\)"):
        host_pow2scale_cast_to_fp8(np.array([1.0]), popxl.float8_143, 32)
    with pytest.raises(RuntimeError):
        host_pow2scale_cast_to_fp8(np.array([1], np.int32), popxl.float8_143)


def test_float8_variables_and_constants() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.array([1.0, 3.0]), popxl.float8_143, log2_scale=1)
        raw = host_pow2scale_cast_to_fp8(np.array([0.5], np.float32), popxl.float8_152)
        c = popxl.constant(raw, popxl.float8_152)
        with pytest.raises(TypeError, match="explicitly set the data type"):
            popxl.constant(raw)
        with pytest.raises(RuntimeError, match="float8"):
            popxl.variable(1.0, popxl.float32, log2_scale=1)
    assert v.dtype == popxl.float8_143 and c.dtype == popxl.float8_152
    session = popxl.Session(ir, "ipu_model")
    data = session.get_tensor_data(v)
    np.testing.assert_array_equal(host_pow2scale_cast_from_fp8(data, popxl.float32), [2.0, 6.0])


def test_device_casts_and_scaled_matmul() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(-4, 4, (2, 3)).astype(np.float32)
    b = rng.uniform(-4, 4, (3, 4)).astype(np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        sa = popxl.variable(np.int32(2), popxl.int32)
        a_in = popxl.h2d_stream(a.shape, popxl.float32, "a")
        a8 = ops.pow2scale_cast_to_fp8(ops.host_load(a_in), sa, popxl.float8_143)
        b8 = popxl.variable(b, popxl.float8_152)
        y = ops.matmul_pow2scaled(a8, b8, popxl.constant(np.int32(-3)))
        back = ops.pow2scale_cast_from_fp8(a8, popxl.constant(np.int32(-2)), popxl.float32)
        y_out = popxl.d2h_stream(y.shape, y.dtype, "y")
        back_out = popxl.d2h_stream(back.shape, back.dtype, "back")
        ops.host_store(y_out, y)
        ops.host_store(back_out, back)
    assert y.dtype == popxl.float16 and y.shape == (2, 4)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run({a_in: a})
    a_q = host_pow2scale_cast_from_fp8(host_pow2scale_cast_to_fp8(a, popxl.float8_143, 2), popxl.float64)
    b_q = host_pow2scale_cast_from_fp8(host_pow2scale_cast_to_fp8(b, popxl.float8_152), popxl.float64)
    np.testing.assert_array_equal(out[back_out], (a_q / 4).astype(np.float32))
    np.testing.assert_array_equal(out[y_out], (a_q @ b_q / 8).astype(np.float16))


def test_device_cast_refuses_overflow_and_checks_arguments() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([100.0], np.float32))
        y = ops.pow2scale_cast_to_fp8(x, popxl.constant(np.int32(2)), popxl.float8_143)  # 400 > 240
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, "y"), y)
        with pytest.raises(TypeError, match="int32"):
            ops.pow2scale_cast_to_fp8(x, popxl.constant(np.float32(2)), popxl.float8_143)
        with pytest.raises(TypeError):
            ops.pow2scale_cast_to_fp8(x, popxl.constant(np.int32(0)), popxl.float16)
        with pytest.raises(TypeError, match="float8"):
            ops.matmul_pow2scaled(x, x, popxl.constant(np.int32(0)))
    with popxl.Session(ir, "ipu_model") as session, pytest.raises(SimulatorNotImplementedError,
                                                                   match="pow2scale_cast_to_fp8"):
        session.run()
