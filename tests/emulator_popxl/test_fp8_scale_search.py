"""popxl.fp8_utils' MSE scale search on the simulator: hand-worked values, the tie rule, and an
independent numpy reference of the error over every scaling bias."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import fp8_utils
from profcompare.emulator.popxl.errors import SimulatorNotImplementedError


def test_exponential_ranges_of_the_formats() -> None:
    assert fp8_utils.find_exponential_range(fp8_utils.ieee_fp32_no_denorms) == (-126, 127)
    assert fp8_utils.find_exponential_range(fp8_utils.ieee_fp16_denorms) == (-24, 15)
    assert fp8_utils.find_exponential_range(fp8_utils.float8_143_def) == (-10, 7)
    assert fp8_utils.find_exponential_range(fp8_utils.float8_152_def) == (-17, 15)


def test_log_histogram_bins_by_binary_exponent() -> None:
    fmt = fp8_utils.float8_143_def  # limits 2**-10 .. 2**6, 17 edges, 18 bins
    data = np.array([0.0, 2.0 ** -11, 2.0 ** -10, 0.75, -1.0, 1.5, 64.0, 100.0, np.inf, np.nan])
    hist, limits = fp8_utils.log_histogram(data, fmt)
    assert limits == [2.0 ** e for e in range(-10, 7)]
    expected = np.zeros(18)
    expected[0] = 2  # 0 and 2**-11: below 2**-10
    expected[1] += 1  # 2**-10: exponent -9 (frexp) -> bin -9 + 10
    expected[10] += 1  # 0.75 = 0.75 * 2**0 -> bin 10; NaN (frexp exponent 0) joins it
    expected[10] += 1
    expected[11] += 2  # -1.0 and 1.5 = 0.5/0.75 * 2**1
    expected[17] += 1  # 64.0 = 2**6 is the last edge: frexp exponent 7 -> bin 17
    expected[17] += 2  # 100 and inf: above the last edge
    np.testing.assert_array_equal(hist, expected)


def test_candidate_config_of_float8_143_from_float32() -> None:
    c = fp8_utils.CandidateConfig(popxl.float8_143, fp8_utils.ieee_fp32_no_denorms, fp8_utils.float8_143_def,
                                  np.dtype(np.float32))
    assert (c.exponent_size, c.mantissa_size, c.fix_exponent_bias) == (4, 3, 8)
    assert c.quantisation_error == 2.0 ** -40  # (23 - 3) mantissa bits lost, squared
    assert c.format_span == 18
    assert (c.min_src_exp_index, c.max_src_exp_index, c.num_exp_src) == (85, 147, 63)
    c16 = fp8_utils.CandidateConfig(popxl.float8_152, fp8_utils.ieee_fp32_no_denorms, fp8_utils.float8_152_def,
                                    np.dtype(np.float16))
    assert c16.quantisation_error == 2.0 ** -16  # float16 source: (10 - 2) bits
    assert (c16.format_span, c16.min_src_exp_index, c16.max_src_exp_index) == (33, 78, 140)


@pytest.mark.parametrize(("dtype", "span_low", "quantisation", "scale"), [
    # every bias whose window holds exponent 0 ties; the median of the sorted biases wins:
    # float8_143: biases -7..10 tie -> 2, scale -2; float8_152: -15..17 -> 1, scale -1
    (popxl.float8_143, 2.0 ** -40, 2.0 ** -40, -2),
    (popxl.float8_152, 2.0 ** -42, 2.0 ** -42, -1),
])
def test_all_ones_tie_and_take_the_median_bias(dtype, span_low, quantisation, scale) -> None:
    error, got = fp8_utils.host_fp8_mse_scale(np.ones(5, np.float32), dtype)
    assert got == scale
    # the constant underflow term (2**-127)**2 plus the quantisation error of the one full bin
    assert error == 2.0 ** -254 + quantisation


def test_float16_data_uses_float16_quantisation_error() -> None:
    error, scale = fp8_utils.host_fp8_mse_scale(np.ones(3, np.float16), popxl.float8_143)
    assert (error, scale) == (2.0 ** -254 + 2.0 ** -14, -2)


def _reference(data: np.ndarray, mantissa: int, span: int, low: int, src_mantissa: int = 23) -> tuple[float, int]:
    """Error per bias written independently (vectorised over bins), from the formula."""
    mag = np.abs(data.astype(np.float64))
    limits = 2.0 ** np.arange(-126, 127)
    hist = np.zeros(limits.size + 1)
    for m in mag:
        if m < limits[0]:
            hist[0] += 1
        elif m > limits[-1]:
            hist[-1] += 1
        else:
            hist[int(np.floor(np.log2(m))) + 127] += 1
    share = hist / hist.sum()
    q = 2.0 ** (-2 * (src_mantissa - mantissa))
    errors = []
    for index in range(63):
        start = low + 126 + index - 31
        bins = np.arange(limits.size)
        under = bins < start
        inside = (bins >= start) & (bins < start + span)
        over = bins >= start + span
        e = (limits[0] / 2) ** 2 if start > 0 else 0.0
        e += np.sum(limits[under] ** 2 * share[1:][under])
        e += np.sum(limits[inside] ** 2 * share[1:][inside] * q)
        e += np.sum((limits[index + span - 1] - limits[over]) ** 2 * share[1:][over])
        errors.append(e)
    lowest = min(errors)
    tied = [i for i, e in enumerate(errors) if e == lowest]  # the same bins in the window: equal sums
    best = tied[len(tied) // 2]
    return lowest, -(best - 31)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize(("dtype", "mantissa", "span", "low"), [(popxl.float8_143, 3, 18, -10),
                                                                 (popxl.float8_152, 2, 33, -17)])
def test_search_matches_an_independent_reference(seed, dtype, mantissa, span, low) -> None:
    rng = np.random.default_rng(seed)
    data = (rng.lognormal(mean=rng.uniform(-8, 8), sigma=3.0, size=400) * rng.choice([-1, 1], 400)).astype(np.float32)
    error, scale = fp8_utils.host_fp8_mse_scale(data, dtype)
    want_error, want_scale = _reference(data, mantissa, span, low)
    assert scale == want_scale
    assert error == pytest.approx(want_error, rel=1e-12)


def test_the_scale_moves_data_towards_the_format() -> None:
    near_overflow = np.full(50, 48.0, np.float32)  # 143's largest exponent is 7
    near_underflow = np.full(50, 2.0 ** -9, np.float32)
    assert fp8_utils.host_fp8_mse_scale(near_overflow, popxl.float8_143)[1] < 0
    assert fp8_utils.host_fp8_mse_scale(near_underflow, popxl.float8_143)[1] > 0


def test_unsupported_inputs_are_popxl_errors() -> None:
    with pytest.raises(RuntimeError, match="float64 not currently supported"):
        fp8_utils.host_fp8_mse_scale(np.ones(2), popxl.float8_143)
    c = fp8_utils.CandidateConfig(popxl.float8_143, fp8_utils.ieee_fp32_no_denorms, fp8_utils.float8_143_def,
                                  np.float32)
    hist, limits = fp8_utils.log_histogram(np.ones(2), fp8_utils.ieee_fp32_no_denorms)
    with pytest.raises(RuntimeError, match="Only MSE"):
        fp8_utils.calculate_candidate_metric(hist, limits, c, "MAE")


def test_the_poplar_search_is_refused_by_name() -> None:
    with pytest.raises(SimulatorNotImplementedError, match=r"popxl.fp8_utils.host_fp8_mse_scale_pb"):
        fp8_utils.host_fp8_mse_scale_pb(np.ones(2, np.float32), popxl.float8_143)
