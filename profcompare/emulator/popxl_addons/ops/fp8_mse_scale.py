"""popxl-addons 3.4's on-device float8 scale search (``popxl_addons.ops.fp8_mse_scale``, the C++ op
``Fp8Scale``; not in 3.0). It returns the int32 scalar log2 scale with the least estimated mean
squared error of casting ``src`` to the float8 format, as the Opx's Poplar program computes it:

1. A histogram of ``|src|`` over the limits ``2**e``, ``e`` in [-126, 127] cast to src's dtype
   (in float16 the low limits become 0 and the high ones inf), bins ``[limit_k, limit_k+1)``;
   the bin below the first limit is dropped and the rest divided by the element count.
2. For each of 62 biases ``b`` (``u = min_src_exp + b``, ``o = u + format_span``), summed in
   float32 from bin 1 upwards: ``h * l * l`` below ``u``, ``h * l * l * quantisation_error`` in
   ``[u, o)``, and ``h * (L - l) * (L - l)`` from ``o`` to the last bin, where ``l = 2**(k-126)``
   is a bin's lower edge and ``L`` that of bin ``o - 1``. The IPU flushes float32 denormals.
3. ``scale = 31 - (argmin + ties // 2)`` with ``ties`` the number of biases sharing the least
   error (the middle one of a run of ties).

``min_src_exp`` and ``format_span`` come from popxl-addons' ``CandidateConfig`` (85 and 18 for
float8_143, 78 and 33 for float8_152); its quantisation error ``2 ** (-2 (m_src - m_dst))``
always takes float16's 10 mantissa bits as ``m_src``, since popxl-addons compares a popxl dtype
with ``np.float32``, which is never equal. The op has no gradient. Here it is one simulator op
with a numpy kernel following those steps in the same order.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profcompare.emulator.popxl.execution import CompiledGraph, Executor, Kernel, _kernel
from profcompare.emulator.popxl.graph import Op, add_op
from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons.ops._generation_gate import require_34

require_34("popxl_addons.ops.fp8_mse_scale")

from profcompare.emulator.popxl_addons.ops.fp8_utils import (  # noqa: E402
    FpDef,
    float8_143_def,
    float8_152_def,
    ieee_fp16_denorms,
    ieee_fp32_no_denorms,
)

__all__ = ["fp8_mse_scale"]

max_scaling_bias = 31
min_scaling_bias = -31
#: float32 histogram limits 2**-126 .. 2**127
_EXPONENTS = np.arange(-126, 128)
_N_BIASES = max_scaling_bias - min_scaling_bias
_FLT_MIN = np.float32(2.0 ** -126)


def search_parameters(dest: FpDef) -> tuple[int, int, float]:
    """Return ``(min_src_exp, format_span, quantisation_error)`` of the search for ``dest``
    (see the module docstring)."""
    span = dest.max_exp - dest.min_exp + 1
    min_src_exp = dest.min_exp + min_scaling_bias - ieee_fp32_no_denorms.min_exp
    error_lsb = ieee_fp16_denorms.num_mantissa_bits - dest.num_mantissa_bits
    return min_src_exp, span, 2 ** (-2.0 * error_lsb)


def _ftz(v: np.float32) -> np.float32:
    return np.float32(0) if abs(v) < _FLT_MIN else v


def best_scale(src: np.ndarray, min_src_exp: int, span: int, quantisation_error: float) -> int:
    """Return the scale the Opx picks for the flat array ``src`` (float16 or float32)."""
    edges = np.exp2(_EXPONENTS.astype(np.float32))
    with np.errstate(over="ignore"):
        limits = edges.astype(src.dtype).astype(np.float32)
    bins = np.searchsorted(limits, np.abs(src).astype(np.float32), side="right")
    hist = np.bincount(bins, minlength=len(limits) + 1).astype(np.float32)[1:] / np.float32(src.size)
    q = np.float32(quantisation_error)
    errors = np.zeros(_N_BIASES, np.float32)
    with np.errstate(over="ignore", under="ignore"):
        for b in range(_N_BIASES):
            low, high = min_src_exp + b, min_src_exp + span + b
            top = edges[high - 1]
            acc = np.float32(0)
            for k in range(1, len(hist)):
                h, edge = hist[k], edges[k]
                if k < low:
                    term = _ftz(_ftz(h * edge) * edge)
                elif k < high:
                    term = _ftz(_ftz(_ftz(h * edge) * edge) * q)
                else:
                    d = _ftz(top - edge)
                    term = _ftz(_ftz(h * d) * d)
                acc = _ftz(np.float32(acc + term))
            errors[b] = acc
    least = errors.min()
    ties = int(np.count_nonzero(errors == least))
    return max_scaling_bias - (int(np.argmin(errors)) + ties // 2)


@_kernel("Fp8Scale")
def _fp8_scale_kernel(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
    params = (op.attrs["min_fp32_exp_index"], op.attrs["format_span"], op.attrs["quantisation_error"])

    def run(env: list) -> None:
        x = env[i]
        env[o] = np.array([best_scale(x[r].reshape(-1), *params) for r in range(x.shape[0])], np.int32)
    return run


def fp8_mse_scale(src: popxl.Tensor, dtype: Any = popxl.float8_143) -> popxl.Tensor:
    """Return an int32 scalar: the log2 scale for casting ``src`` (float16 or float32, else
    RuntimeError) to ``dtype`` (popxl.float8_143 or float8_152) with the least estimated error
    (see the module docstring)."""
    src = src.flatten()
    if src.dtype not in (popxl.float32, popxl.float16):
        raise RuntimeError(f"dtype {src.dtype} not currently supported.")
    if dtype == popxl.float8_143:
        dest = float8_143_def
    elif dtype == popxl.float8_152:
        dest = float8_152_def
    else:
        raise UnboundLocalError("fp8_mse_scale: dtype must be popxl.float8_143 or popxl.float8_152 "
                                "(popxl-addons fails on an unbound name)")
    min_src_exp, span, q_error = search_parameters(dest)
    flops = src.nelms + _N_BIASES * len(_EXPONENTS) * 4
    op = add_op("Fp8Scale", "fp8_scale", [src], [("scaling_bias", (), popxl.int32, ())],
                {"min_fp32_exp_index": min_src_exp, "format_span": span, "quantisation_error": q_error,
                 "flops": flops})
    return op.outputs[0]
