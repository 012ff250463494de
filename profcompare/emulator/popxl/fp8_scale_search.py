"""popxl.fp8_utils' host search for a float8 scale by mean squared error (``host_fp8_mse_scale``).

popxl 3.4 does the search in Python. The simulator computes the same quantities with numpy,
costing every candidate window at once, and picks the same scale, ties included: candidates tie
only when their errors are *exactly* equal, so each candidate's terms are added one at a time in
popxl's order (see ``_error_per_window``) rather than by numpy's pairwise summation:

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


def _window_start_bounds(src_ftype: FpDef, dest_ftype: FpDef) -> tuple[int, int]:
    """Return the lowest and highest histogram edge index that the destination format's smallest
    exponent can be moved onto by a scaling bias in ``[min_scaling_bias, max_scaling_bias]``,
    clipped to the source's edges."""
    src_lowest, src_highest = find_exponential_range(src_ftype)
    dest_lowest, _ = find_exponential_range(dest_ftype)
    shifted_low = dest_lowest + min_scaling_bias - src_lowest
    shifted_high = dest_lowest + max_scaling_bias - src_lowest
    return max(shifted_low, 0), min(shifted_high, src_highest - src_lowest)


class CandidateConfig:
    """Which source exponents a destination format covers over the scaling biases (see the module
    docstring); the constructor's arguments are popxl's.

    Attributes: ``format`` (as given), ``exponent_size``, ``mantissa_size`` and
    ``fix_exponent_bias`` of ``dest_ftype``; ``quantisation_error``; ``format_span`` (how many
    binary exponents the destination holds); ``min_src_exp_index`` / ``max_src_exp_index`` (the
    histogram edge indices a window may start at) and ``num_exp_src`` (how many starts)."""

    def __init__(self, format: Any, src_ftype: FpDef, dest_ftype: FpDef, src_type: Any) -> None:  # noqa: A002
        # only the element type decides the mantissa the data loses bits from: float32 data keeps
        # float32's, anything else is taken as float16 (popxl's rule, whatever src_ftype says)
        data_format = ieee_fp32_no_denorms if src_type == np.float32 else ieee_fp16_denorms
        dropped_bits = data_format.num_mantissa_bits - dest_ftype.num_mantissa_bits
        dest_lowest, dest_highest = find_exponential_range(dest_ftype)
        first_start, last_start = _window_start_bounds(src_ftype, dest_ftype)

        self.format = format
        self.exponent_size = dest_ftype.num_exp_bits
        self.mantissa_size = dest_ftype.num_mantissa_bits
        self.fix_exponent_bias = dest_ftype.fix_exponent_bias
        self.quantisation_error = 2.0 ** (-2 * dropped_bits)
        self.format_span = dest_highest - dest_lowest + 1
        self.min_src_exp_index = first_start
        self.max_src_exp_index = last_start
        self.num_exp_src = last_start - first_start + 1

    def __repr__(self) -> str:
        return (f"CandidateConfig(format={self.format!r}, span={self.format_span}, "
                f"src_exp_index=[{self.min_src_exp_index}, {self.max_src_exp_index}])")


def _error_per_window(shares: np.ndarray, edges: np.ndarray, window_starts: np.ndarray, span: int,
                      quantisation_error: float) -> np.ndarray:
    """Return the float64 error of every candidate window (one row per entry of ``window_starts``).

    ``shares[k]`` is the share of data in the bin whose lower edge is ``edges[k]``. Each candidate
    is costed as a row: a leading constant (``(edges[0] / 2) ** 2`` when the window does not start
    at edge 0, else 0.0) followed by one cost per edge in increasing edge order. The row is then
    summed strictly left to right with ``np.add.accumulate`` (its last partial sum), not with
    ``np.sum``'s pairwise reduction: equal candidates must produce bit-identical sums for the tie
    rule, and popxl adds the same terms one at a time in this order. The per-edge products are
    also evaluated in popxl's association (``(edge**2 * share) * q``, ``(ref - edge)**2 * share``);
    a window that leaves no edge in some region contributes exact zeros there, which does not
    change a sequential float sum of non-negative terms."""
    edge_count = edges.size
    candidate_rank = np.arange(window_starts.size)
    # popxl measures the overshoot of an edge above the window from the edge at
    # rank + span - 1 (the candidate's place in the list), not from the window's top edge
    overshoot_ref_index = candidate_rank + span - 1
    has_edges_above = window_starts + span < edge_count
    if np.any(has_edges_above & (overshoot_ref_index >= edge_count)):
        raise IndexError("the overflow reference edge of a candidate lies beyond the histogram's edges")
    overshoot_ref = edges[np.minimum(overshoot_ref_index, edge_count - 1)][:, None]

    edge_index = np.arange(edge_count)[None, :]
    first_in_window = window_starts[:, None]
    below_window = edge_index < first_in_window
    above_window = edge_index >= first_in_window + span

    weighted_power = edges ** 2 * shares
    per_edge = np.where(below_window, weighted_power, weighted_power * quantisation_error)
    per_edge = np.where(above_window, (overshoot_ref - edges) ** 2 * shares, per_edge)

    leading = np.where(window_starts > 0, (edges[0] / 2) ** 2, 0.0)
    row = np.concatenate([leading[:, None], per_edge], axis=1)
    return np.add.accumulate(row, axis=1)[:, -1]


def calculate_metric_mse(histogram: Sequence[Any], limits: Sequence[float], src_bias_starting_indices: Sequence[int],
                         candidate: CandidateConfig) -> tuple[Any, int]:
    """Return ``(lowest error, best scaling bias)`` over the candidate windows
    ``src_bias_starting_indices`` (the ``k``-th start is bias ``k + min_scaling_bias``); the error
    is a numpy float64. Equal lowest errors give the median bias (upper middle); when every error
    is NaN (an empty input normalises to NaN shares) the first bias is reported, as popxl's sort
    leaves NaN keys in candidate order. Only ``histogram[1:len(limits) + 1]`` is read: the bin
    below the lowest edge enters through the constant term alone."""
    edges = np.asarray(limits, dtype=np.float64)
    counts = np.asarray(histogram, dtype=np.float64)
    starts = np.asarray(src_bias_starting_indices, dtype=np.int64).reshape(-1)
    if counts.size <= edges.size:
        raise IndexError(f"a histogram over {edges.size} edges needs {edges.size + 1} bins, got {counts.size}")
    if starts.size and (starts.min() < 0 or starts.max() > edges.size):
        raise IndexError(f"window starts must lie in [0, {edges.size}]")
    errors = _error_per_window(counts[1:edges.size + 1], edges, starts, candidate.format_span,
                               candidate.quantisation_error)
    lowest = errors.min()
    tied_ranks = np.flatnonzero(errors == lowest)
    chosen = int(tied_ranks[tied_ranks.size // 2]) if tied_ranks.size else 0
    return errors[chosen], chosen + min_scaling_bias


def calculate_candidate_metric(hist_norm: Sequence[Any], limits: Sequence[float], candidate: CandidateConfig,
                               metric_type: str | None = None) -> tuple[Any, int]:
    """Return ``(lowest error, best scaling bias)`` of ``candidate`` for the normalised histogram,
    trying every window start the candidate allows; ``metric_type`` must be ``"MSE"``
    (RuntimeError otherwise, as in popxl)."""
    if metric_type != "MSE":
        raise RuntimeError("Only MSE metric is supported.")
    window_starts = candidate.min_src_exp_index + np.arange(candidate.num_exp_src)
    return calculate_metric_mse(hist_norm, limits, window_starts, candidate)


def _float8_format(dtype: dtypes.dtype | None) -> FpDef:
    """float8_152's description for ``popxl.float8_152``; any other value means float8_143."""
    return float8_152_def if dtype == dtypes.float8_152 else float8_143_def


def host_fp8_mse_scale(src: np.ndarray, dtype: dtypes.dtype | None = None) -> tuple[Any, int]:
    """Return ``(error, log2_scale)``: the scale ``s`` for which ``cast(src * 2**s, dtype)`` loses
    the least by popxl's mean-squared-error estimate, and that estimate. ``src`` must be a float16
    or float32 numpy array (RuntimeError otherwise); ``dtype`` popxl.float8_152 selects that
    format, anything else float8_143 (as popxl does)."""
    if src.dtype != np.float32 and src.dtype != np.float16:
        raise RuntimeError(f"dtype {src.dtype} not currently supported.")
    # float16 data is histogrammed over float32's exponents too; only the quantisation error
    # (from the element type) tells the two apart
    values = np.ascontiguousarray(src).reshape(-1)
    counts, edges = log_histogram(values, ieee_fp32_no_denorms)
    config = CandidateConfig(dtype, ieee_fp32_no_denorms, _float8_format(dtype), values.dtype)
    error, bias = calculate_candidate_metric(counts / counts.sum(), edges, config, "MSE")
    # a bias b multiplies by 2**b inside the format; the caller's scale is applied to the data
    return error, -bias


__all__ = ["CandidateConfig", "FpDef", "calculate_candidate_metric", "calculate_metric_mse", "find_exponential_range",
           "float8_143_def", "float8_152_def", "host_fp8_mse_scale", "ieee_fp16_denorms", "ieee_fp32_no_denorms",
           "log_histogram", "max_scaling_bias", "min_scaling_bias"]
