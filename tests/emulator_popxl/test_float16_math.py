"""float16 conversions and arithmetic (profcompare.emulator.popxl.float16_math) are numpy's, bit for bit,
and the optimizer kernels that use them give what numpy's float16 ufuncs give, also for the
subnormal values an Adam first moment of small gradients holds."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator.popxl import float16_math as half
from profcompare.emulator.popxl import ops

from .run_program import run

F16 = np.float16
#: every float32 high half-word (sign, exponent, top 7 mantissa bits) with low half-words that
#: put it exactly on, just below and just above a float16 rounding tie, and the extremes
LOW_WORDS = (0x0000, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000, 0x7FFF, 0x8000, 0xF000, 0xFFFF)


def _bits16(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint16)


def test_to_half_is_numpys_cast_bit_for_bit() -> None:
    high = np.arange(65536, dtype=np.uint32) << 16
    for low in LOW_WORDS:
        x = (high | np.uint32(low)).view(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            expected = x.astype(F16)
        np.testing.assert_array_equal(_bits16(half.to_half(x)), _bits16(expected), err_msg=f"low word {low:#06x}")
    x = np.random.default_rng(7).integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        np.testing.assert_array_equal(_bits16(half.to_half(x)), _bits16(x.astype(F16)))


def test_to_half_rounds_ties_to_even_and_overflows_to_inf() -> None:
    step = 2.0**-24  # the float16 subnormal step
    x = np.array([0.5 * step, 1.5 * step, 2.5 * step, 1 + 2**-11, 1 + 3 * 2**-11, 65504, 65519.99, 65520,
                  -65520, 1e-9, -0.0], np.float32)
    got = half.to_half(x)
    assert got.tolist()[:5] == [0.0, 2 * step, 2 * step, 1.0, 1 + 2**-9]
    assert got.tolist()[5:10] == [65504.0, 65504.0, np.inf, -np.inf, 0.0]
    assert _bits16(got)[10] == 0x8000  # -0 keeps its sign
    assert half.to_half(np.float32(1.5)).shape == ()


def test_to_float32_is_exact_for_every_float16() -> None:
    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(F16)
    got = half.to_float32(every)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.view(np.uint32), every.astype(np.float32).view(np.uint32))


def test_float16_products_and_sums_through_float32_are_numpys() -> None:
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(200_000) * 10.0 ** rng.integers(-8, 4, 200_000)).astype(F16)
    b = (rng.standard_normal(200_000) * 10.0 ** rng.integers(-8, 4, 200_000)).astype(F16)
    fa, fb = half.to_float32(a), half.to_float32(b)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        for got, expected in ((fa * fb, a * b), (fa + fb, a + b), (fa / fb, a / b)):
            np.testing.assert_array_equal(_bits16(half.to_half(got)), _bits16(expected))
        np.testing.assert_array_equal(half.round_to_half(fa * fb), (a * b).astype(np.float32))


def test_cast_routes_only_float16_float32() -> None:
    x = np.array([[1e-6, 3.0]], np.float32)
    assert half.cast(x, F16).dtype == F16 and half.cast(half.cast(x, F16), np.float32).dtype == np.float32
    assert half.cast(x, np.float64).dtype == np.float64
    np.testing.assert_array_equal(half.cast(x, F16), x.astype(F16))


def _first_moment() -> tuple[np.ndarray, np.ndarray]:
    """A float16 first moment and float32 gradients, mostly below float16's smallest normal (the
    last four rows are normal: there rounding each product before the next step matters most)."""
    rng = np.random.default_rng(11)
    scale = np.array([[3e-5]] * 6 + [[1e-3]] * 2 + [[1.0]] * 2)
    m = (rng.standard_normal((10, 64)) * scale).astype(F16)
    m[0, :4] = [F16(2.0**-24), F16(-3 * 2.0**-24), F16(1.0), F16(60000.0)]
    g = (rng.standard_normal((10, 64)) * 3 * scale).astype(np.float32)
    return m, g


@pytest.mark.parametrize("piece", [None, 100])  # 100: the updates done in pieces, the last one partial
@pytest.mark.parametrize("replicas", [1, 2])
def test_float16_moving_averages_match_numpys_float16_arithmetic(replicas: int, piece: int | None,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    if piece is not None:
        from profcompare.emulator.popxl import execution

        monkeypatch.setattr(execution, "_PIECE", piece)
    m, g = _first_moment()

    def build(t, x, t2, x2):  # type: ignore[no-untyped-def]
        ops.var_updates.accumulate_moving_average_(t, x, f=0.9)
        ops.var_updates.accumulate_moving_average_square_(t2, x2, f=0.999)
        return t + 0, t2 + 0

    got, got_square = run(build, m, g, m, g, replicas=replicas)
    fa, fb = F16(0.9), F16(1.0 - 0.9)
    expected = m * fa + g.astype(F16) * fb  # each product and the sum rounded to float16
    x = g.astype(F16)
    expected_square = m * F16(0.999) + (x * x) * F16(1.0 - 0.999)
    for out, want in ((got, expected), (got_square, expected_square)):
        out = out.reshape((-1, *want.shape))
        assert out.dtype == F16
        for row in out:
            np.testing.assert_array_equal(_bits16(row), _bits16(want))
    assert np.count_nonzero(np.abs(expected) < 2.0**-14) > expected.size // 2  # mostly subnormal


def test_adam_updater_on_a_subnormal_float16_first_moment_matches_numpy() -> None:
    m, _ = _first_moment()
    v = np.abs(np.random.default_rng(5).standard_normal(m.shape)).astype(np.float32) * np.float32(1e-8)

    def build(m_t, v_t, step):  # type: ignore[no-untyped-def]
        return ops.var_updates.adam_updater(m_t, v_t, time_step=step, beta1=0.9, beta2=0.999, epsilon=1e-5)

    (got,) = run(build, m, v, np.float32(0.0))
    ts = np.float32(1.0)  # the step is incremented before use
    b1c = (np.float32(1) - np.power(np.float32(0.9), ts)).astype(F16)
    with np.errstate(over="ignore"):  # 60000 / 0.1 is inf in float16
        mh = (m / b1c).astype(np.float32)  # float16 division
    vh = v / (np.float32(1) - np.power(np.float32(0.999), ts))
    den = np.sqrt(vh) + np.float32(1e-5)
    expected = (mh / den).astype(F16)
    assert got.dtype == F16
    np.testing.assert_array_equal(_bits16(got), _bits16(expected))


def test_round_to_half_is_numpys_round_trip_bit_for_bit() -> None:
    high = np.arange(65536, dtype=np.uint32) << 16
    for low in LOW_WORDS:
        x = (high | np.uint32(low)).view(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            expected = x.astype(F16).astype(np.float32)
        np.testing.assert_array_equal(half.round_to_half(x).view(np.uint32), expected.view(np.uint32),
                                      err_msg=f"low word {low:#06x}")
    x = np.random.default_rng(11).integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = x.astype(F16).astype(np.float32)
    np.testing.assert_array_equal(half.round_to_half(x).view(np.uint32), expected.view(np.uint32))
    tiny = np.float32(3e-8) * np.arange(-50, 50, dtype=np.float32)  # mostly subnormal results: the whole-array pass
    np.testing.assert_array_equal(half.round_to_half(tiny).view(np.uint32),
                                  tiny.astype(F16).astype(np.float32).view(np.uint32))
    assert half.round_to_half(np.float32(1.0 + 2**-12)) == np.float32(1.0)
