"""popxl.fp8_utils' MSE scale search on the simulator: hand-worked values, the tie rule, and an
independent numpy reference of the error over every scaling bias."""

from __future__ import annotations

from fractions import Fraction

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
    # the quantisation error of the one full bin; the constant underflow term (2**-127)**2 is also
    # added but lies 214 binades lower and vanishes in float64 (the hand-made histograms below
    # are the ones that see it)
    assert error == quantisation


def test_float16_data_uses_float16_quantisation_error() -> None:
    error, scale = fp8_utils.host_fp8_mse_scale(np.ones(3, np.float16), popxl.float8_143)
    assert (error, scale) == (2.0 ** -14, -2)


#: float32's histogram edges 2**-126 .. 2**126; the bin of edge k is histogram[k + 1]
_EDGES = [2.0 ** e for e in range(-126, 127)]


def _histogram(shares_by_edge: dict[int, float], below_lowest_edge: float = 0.0) -> np.ndarray:
    histogram = np.zeros(len(_EDGES) + 1)
    histogram[0] = below_lowest_edge
    for edge, share in shares_by_edge.items():
        histogram[edge + 1] = share
    return histogram


def _float16_to_143() -> fp8_utils.CandidateConfig:
    """span 18, quantisation error 2**-14"""
    return fp8_utils.CandidateConfig(popxl.float8_143, fp8_utils.ieee_fp32_no_denorms, fp8_utils.float8_143_def,
                                     np.dtype(np.float16))


def _pow2(exponent: int) -> Fraction:
    return Fraction(2) ** exponent


def test_overflow_is_measured_from_the_edge_at_the_candidates_rank() -> None:
    # windows start at edges 5 (rank 0, bias -31) and 2 (rank 1, bias -30); both have edge 1 below
    # them and edge 24 (2**-102) above them. popxl measures the overflow of edge 24 from edge
    # rank + 17 (2**-109, 2**-108), not from the window's top edge (2**-104, 2**-107): the rank 1
    # window then loses less, although measured from its top edge it would lose more. The bin below
    # the lowest edge is never read.
    histogram = _histogram({1: 0.25, 24: 0.5}, below_lowest_edge=0.25)
    underflow = _pow2(-254) + _pow2(-250) * Fraction(1, 4)  # constant + edge 1's cost
    rank0 = underflow + (_pow2(-109) - _pow2(-102)) ** 2 * Fraction(1, 2)
    rank1 = underflow + (_pow2(-108) - _pow2(-102)) ** 2 * Fraction(1, 2)
    assert rank1 < rank0

    error, bias = fp8_utils.calculate_metric_mse(histogram, _EDGES, [5, 2], _float16_to_143())
    assert (Fraction(float(error)), bias) == (rank1, -30)
    # the same window alone is rank 0, measured from edge 17
    alone, alone_bias = fp8_utils.calculate_metric_mse(histogram, _EDGES, [2], _float16_to_143())
    assert (Fraction(float(alone)), alone_bias) == (rank0, -31)


def test_underflow_terms_decide_between_windows() -> None:
    # edge 5 (share 1/2) is inside both windows (starts 0 and 1), costing 2**-242 * 2**-14 / 2;
    # edge 0 (share 1/16) is inside the first and below the second. Only a window that does not
    # start at edge 0 pays the constant (2**-126 / 2)**2 = 2**-254, so the start-0 window wins.
    histogram = _histogram({0: 1 / 16, 5: 0.5})
    inside_edge5 = _pow2(-242) * _pow2(-14) / 2
    start0 = _pow2(-252) / 16 * _pow2(-14) + inside_edge5
    start1 = _pow2(-254) + _pow2(-252) / 16 + inside_edge5
    candidate = _float16_to_143()

    error, bias = fp8_utils.calculate_metric_mse(histogram, _EDGES, [0, 1], candidate)
    assert (Fraction(float(error)), bias) == (start0, -31)
    error, bias = fp8_utils.calculate_metric_mse(histogram, _EDGES, [1], candidate)
    assert Fraction(float(error)) == start1


def test_equal_windows_tie_exactly_and_take_the_upper_median() -> None:
    # all data at edge 100: the window starting at 82 (rank 0) has it above, the 18 starting at
    # 83..100 (ranks 1..18) hold it and cost exactly the same; the upper middle one (rank 10) wins
    histogram = _histogram({100: 1.0})
    error, bias = fp8_utils.calculate_metric_mse(histogram, _EDGES, list(range(82, 101)), _float16_to_143())
    # the constant 2**-254 is far below the quantisation cost here and is lost in float64
    assert (error, bias) == (2.0 ** (2 * (100 - 126)) * 2.0 ** -14, 10 + fp8_utils.min_scaling_bias)


def test_the_error_is_summed_edge_by_edge_in_order() -> None:
    # a large overflow cost (edge 126, ~0.5) followed by many costs of ~2**-55 each: added one at a
    # time after it (popxl's order) each is lost, summed pairwise they are not. Ties depend on it.
    shares = {126: 0.5}
    shares.update({edge: 2.0 ** (-2 * (edge - 126) - 55) for edge in range(127, 191)})
    histogram = _histogram(shares)
    reference_edge = _EDGES[17]  # rank 0 with span 18
    leading = (_EDGES[0] / 2) ** 2
    costs = [(reference_edge - _EDGES[edge]) ** 2 * share for edge, share in sorted(shares.items())]
    in_order = leading
    for cost in costs:
        in_order += cost
    assert in_order != float(np.sum([leading, *costs]))  # the order is visible here
    error, _ = fp8_utils.calculate_metric_mse(histogram, _EDGES, [100], _float16_to_143())
    assert error == in_order


def test_candidate_metric_covers_the_candidates_windows() -> None:
    # the full search (windows 85..147 for float8_143) on a hand-made histogram equals the direct
    # call over those starts
    histogram = _histogram({60: 0.25, 90: 0.25, 120: 0.125, 200: 0.375})
    candidate = _float16_to_143()
    direct = fp8_utils.calculate_metric_mse(histogram, _EDGES, list(range(85, 148)), candidate)
    assert fp8_utils.calculate_candidate_metric(histogram, _EDGES, candidate, "MSE") == direct


def test_empty_data_reports_nan_and_the_first_bias() -> None:
    with np.errstate(invalid="ignore"):
        error, scale = fp8_utils.host_fp8_mse_scale(np.zeros(0, np.float32), popxl.float8_143)
    assert np.isnan(error) and scale == -fp8_utils.min_scaling_bias


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
