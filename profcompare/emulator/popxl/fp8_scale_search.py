"""popxl.fp8_utils' host search for a float8 scale by mean squared error (``host_fp8_mse_scale``).

popxl 3.4 does the search in Python, and the simulator follows it step by step so that it picks
the same scale, ties included (candidates whose error is *exactly* equal tie, so the error must be
summed in the same order):

1. ``log_histogram``: count the magnitudes of the data per binary exponent. With ``min_exp, max_exp
   = find_exponential_range(fp32)`` = (-126, 127) the bin edges are ``limits = [2**e for e in
   range(min_exp, max_exp)]``; bin 0 holds magnitudes below ``limits[0]`` (zeros too), the last bin
   those above ``limits[-1]``, bin ``k`` in between those with ``frexp`` exponent ``min_exp + k``.
   A NaN lands in the bin of exponent 0 (frexp's exponent of NaN), as in popxl's loop.
2. ``CandidateConfig``: which histogram bins the float8 format covers under each scaling bias
   ``b`` in [-31, 31], and its relative quantisation error ``2 ** (-2 (m_src - m_dst))`` (``m`` the
   mantissa bits; the source's are float32's unless the data is float16).
3. ``calculate_metric_mse``: per bias, error = underflow (each bin below the window costs its
   lower edge squared times its share, plus a constant ``(limits[0] / 2) ** 2``) + quantisation
   (bins in the window cost edge squared x share x quantisation error) + overflow (bins above the
   window cost ``(limits[index + span - 1] - edge) ** 2`` x share -- popxl indexes that edge with
   the candidate's position, not the window's start; the simulator keeps it so). The lowest error
   wins; among equal ones the median bias (sorted, upper middle).
4. ``host_fp8_mse_scale`` returns ``(error, -bias)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from . import dtypes

#: the range of the scaling bias ``b`` (a 6-bit signed value)
max_scaling_bias = 31
min_scaling_bias = -31


class FpDef(NamedTuple):
    """A floating-point format as popxl's fp8 utilities describe it (a named tuple there too, so
    it unpacks and indexes the same way)."""

    num_exp_bits: int
    num_mantissa_bits: int
    fix_exponent_bias: int
    include_denorm: bool
    has_nans: bool


ieee_fp32_no_denorms = FpDef(8, 23, 127, False, True)
ieee_fp16_denorms = FpDef(5, 10, 15, True, True)
float8_152_def = FpDef(5, 2, 16, True, False)
float8_143_def = FpDef(4, 3, 8, True, False)


def find_exponential_range(fp_def: FpDef) -> tuple[int, int]:
    """Return ``(min, max)``: the lowest and highest binary exponents ``fp_def`` represents without
    a scale (the lowest counts denormals when the format has them; a NaN exponent code is left out)."""
    lowest = 1 - fp_def.fix_exponent_bias
    highest = (1 << fp_def.num_exp_bits) - 1 - int(fp_def.has_nans) - fp_def.fix_exponent_bias
    if fp_def.include_denorm:
        lowest -= fp_def.num_mantissa_bits
    return lowest, highest


def log_histogram(src: Any, ftype: FpDef) -> tuple[np.ndarray, list[float]]:
    """Return ``(histogram, limits)``: float64 counts per binary exponent of ``|src|`` (bins in the
    module docstring, ``len(limits) + 1`` of them) and the bin edges ``2**e`` for ``e`` in
    ``range(min_exp, max_exp)`` of ``find_exponential_range(ftype)``."""
    min_exp, max_exp = find_exponential_range(ftype)
    limits = [2.0 ** e for e in range(min_exp, max_exp)]
    magnitude = np.abs(np.asarray(src, dtype=np.float64).reshape(-1))
    under = magnitude < limits[0]
    over = magnitude > limits[-1]
    _, exponent = np.frexp(np.where(under | over, 1.0, magnitude))  # NaN gives exponent 0
    index = np.where(under, 0, np.where(over, len(limits), exponent - min_exp))
    histogram = np.bincount(index, minlength=len(limits) + 1).astype(np.float64)
    return histogram, limits


class CandidateConfig:
    """Which source exponents a destination format covers over the scaling biases (see the module
    docstring); the constructor's arguments are popxl's."""

    def __init__(self, format: Any, src_ftype: FpDef, dest_ftype: FpDef, src_type: Any) -> None:  # noqa: A002
        self.format = format
        self.exponent_size = dest_ftype.num_exp_bits
        self.mantissa_size = dest_ftype.num_mantissa_bits
        self.fix_exponent_bias = dest_ftype.fix_exponent_bias
        source_mantissa = (ieee_fp32_no_denorms.num_mantissa_bits if src_type == np.float32
                           else ieee_fp16_denorms.num_mantissa_bits)
        error_lsb = source_mantissa - self.mantissa_size
        self.quantisation_error = 2 ** (-2.0 * error_lsb)
        min_hist_exponent, max_hist_exponent = find_exponential_range(src_ftype)
        min_bias_exp, max_bias_exp = find_exponential_range(dest_ftype)
        self.format_span = max_bias_exp - min_bias_exp + 1
        #: first and last histogram bins (less one) a scaled window can start at
        self.min_src_exp_index = max(min_bias_exp + min_scaling_bias - min_hist_exponent, 0)
        self.max_src_exp_index = min(min_bias_exp + max_scaling_bias - min_hist_exponent,
                                     max_hist_exponent - min_hist_exponent)
        self.num_exp_src = self.max_src_exp_index - self.min_src_exp_index + 1

    def __repr__(self) -> str:
        return (f"CandidateConfig(format={self.format!r}, span={self.format_span}, "
                f"src_exp_index=[{self.min_src_exp_index}, {self.max_src_exp_index}])")


def _candidate_error(histogram: Sequence[Any], limits: Sequence[float], index: int, window_start: int,
                     span: int, quantisation_error: float) -> Any:
    """The error of one candidate, summed bin by bin in popxl's order (ties are exact)."""
    error: Any = 0
    n = len(limits)
    for i in range(window_start):
        if i == 0:
            error += (limits[0] / 2) ** 2
        error += (limits[i] ** 2) * histogram[i + 1]
    for i in range(window_start, min(window_start + span, n)):
        error += limits[i] ** 2 * histogram[i + 1] * quantisation_error
    for i in range(window_start + span, n):
        error += (limits[index + span - 1] - limits[i]) ** 2 * histogram[i + 1]
    return error


def calculate_metric_mse(histogram: Sequence[Any], limits: Sequence[float], src_bias_starting_indices: Sequence[int],
                         candidate: CandidateConfig) -> tuple[Any, int]:
    """Return ``(lowest error, best scaling bias)`` over the candidate windows
    ``src_bias_starting_indices`` (bias = position + ``min_scaling_bias``); equal errors give the
    median bias."""
    by_error: dict[Any, list[int]] = {}
    for index, start in enumerate(src_bias_starting_indices):
        error = _candidate_error(histogram, limits, index, int(start), candidate.format_span,
                                 candidate.quantisation_error)
        by_error.setdefault(error, []).append(index + min_scaling_bias)
    lowest = sorted(by_error)[0]
    biases = sorted(by_error[lowest])
    return lowest, biases[len(biases) // 2]


def calculate_candidate_metric(hist_norm: Sequence[Any], limits: Sequence[float], candidate: CandidateConfig,
                               metric_type: str | None = None) -> tuple[Any, int]:
    """Return ``(lowest error, best scaling bias)`` of ``candidate`` for the normalised histogram;
    ``metric_type`` must be ``"MSE"`` (RuntimeError otherwise, as in popxl)."""
    starts = np.arange(candidate.min_src_exp_index, candidate.min_src_exp_index + candidate.num_exp_src)
    if metric_type != "MSE":
        raise RuntimeError("Only MSE metric is supported.")
    return calculate_metric_mse(hist_norm, limits, starts, candidate)


def host_fp8_mse_scale(src: np.ndarray, dtype: dtypes.dtype | None = None) -> tuple[Any, int]:
    """Return ``(error, log2_scale)``: the scale ``s`` for which ``cast(src * 2**s, dtype)`` loses
    the least by popxl's mean-squared-error estimate, and that estimate. ``src`` must be a float16
    or float32 numpy array (RuntimeError otherwise); ``dtype`` popxl.float8_152 selects that
    format, anything else float8_143 (as popxl does)."""
    if src.dtype not in (np.float32, np.float16):
        raise RuntimeError(f"dtype {src.dtype} not currently supported.")
    src_ftype = ieee_fp32_no_denorms
    dest_ftype = float8_152_def if dtype == dtypes.float8_152 else float8_143_def
    flat = np.ascontiguousarray(src).reshape(-1)
    histogram, limits = log_histogram(flat, src_ftype)
    hist_norm = histogram / np.sum(histogram)
    candidate = CandidateConfig(dtype, src_ftype, dest_ftype, flat.dtype)
    error, bias = calculate_candidate_metric(hist_norm, limits, candidate, "MSE")
    return error, -bias


__all__ = ["CandidateConfig", "FpDef", "calculate_candidate_metric", "calculate_metric_mse", "find_exponential_range",
           "float8_143_def", "float8_152_def", "host_fp8_mse_scale", "ieee_fp16_denorms", "ieee_fp32_no_denorms",
           "log_histogram", "max_scaling_bias", "min_scaling_bias"]
