"""Numeric kernels of popxl's float8 ops (see :mod:`.fp8_utils` for formats and rounding).

Values keep the ``(R, *shape)`` layout; float8 arrays hold bit patterns in popxl's structured
float8 dtypes. The log2 scale is read per replica at run time and must lie in [-32, 32), as
popxl asserts on device.

A device cast to float8 that overflows, or meets an infinity, is refused (popxl does not say
whether the device saturates or gives NaN there); NaN stays NaN. ``matmul_pow2scaled``,
``conv_pow2scaled`` and ``conv_transpose_pow2scaled`` sum the exact float8 products and round
the scaled sum to float16 once; the IPU accumulates float16 partials in an order the simulator
does not model (as for every matmul and convolution here), so its result can differ in the
last bits when partial sums round. The convolutions use the float ones' numpy kernels
(:mod:`.kernels_nn`) on the decoded values.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .errors import SimulatorNotImplementedError, not_implemented_message
from .execution import CompiledGraph, Executor, Kernel, _kernel
from .fp8_utils import FORMATS, decode, encode, to_target
from .graph import Op
from .kernels_nn import conv_transpose_values, conv_values


def _scale(value: np.ndarray, api: str) -> int:
    scale = int(value)
    if not -32 <= scale < 32:
        raise RuntimeError(f"{api}: log2 scale {scale} is outside [-32, 32)")
    return scale


def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x).view(np.uint8)


@_kernel("Pow2ScaleThenCast")
def _pow2scale_cast_to_fp8(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    x_slot, s_slot = (cg.slot[t] for t in op.inputs)
    o = cg.slot[op.outputs[0]]
    dt = op.attrs["dtype"]
    fmt = FORMATS[dt.name]
    api = "popxl.ops.pow2scale_cast_to_fp8"

    def run(env: list) -> None:
        x, scales = env[x_slot], env[s_slot]
        out = np.empty(x.shape, np.uint8)
        for r in range(x.shape[0]):
            scaled = np.abs(x[r].astype(np.float64)) * 2.0 ** _scale(scales[r], api)
            if np.any(np.isinf(scaled) | (scaled > fmt.max_value)):
                raise SimulatorNotImplementedError(not_implemented_message(
                    f"{api} of values beyond float8's range ({fmt.max_value:g}) on the device"))
            out[r] = encode(x[r], fmt, _scale(scales[r], api), True, api)
        env[o] = out.view(dt.as_numpy())
    return run


@_kernel("CastThenPow2Scale")
def _pow2scale_cast_from_fp8(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    x_slot, s_slot = (cg.slot[t] for t in op.inputs)
    o = cg.slot[op.outputs[0]]
    fmt = FORMATS[op.inputs[0].dtype.name]
    target = op.attrs["dtype"].as_numpy()
    api = "popxl.ops.pow2scale_cast_from_fp8"

    def run(env: list) -> None:
        x, scales = _bits(env[x_slot]), env[s_slot]
        env[o] = np.stack([to_target(decode(x[r], fmt, _scale(scales[r], api)), target, api)
                           for r in range(x.shape[0])])
    return run


@_kernel("MatMulPow2Scaled")
def _matmul_pow2scaled(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    lhs, rhs, _ = op.inputs
    a_slot, b_slot, s_slot = (cg.slot[t] for t in op.inputs)
    o = cg.slot[op.outputs[0]]
    fa, fb = FORMATS[lhs.dtype.name], FORMATS[rhs.dtype.name]
    api = "popxl.ops.matmul_pow2scaled"

    def run(env: list) -> None:
        a, b, scales = _bits(env[a_slot]), _bits(env[b_slot]), env[s_slot]
        outs = []
        for r in range(a.shape[0]):
            # float8 products are exact in float64; the sum rounds only if its terms span
            # more than float64's 53 bits, far finer than the float16 result
            z = np.matmul(decode(a[r], fa, 0), decode(b[r], fb, 0)) * 2.0 ** _scale(scales[r], api)
            outs.append(z.astype(np.float16))
        env[o] = np.stack(outs).reshape((a.shape[0], *op.outputs[0].shape))
    return run


def _scaled_conv(values: Callable[[Op, np.ndarray, np.ndarray], np.ndarray], api: str
                 ) -> Callable[[Op, CompiledGraph, Executor], Kernel]:
    def factory(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
        x_t, w_t, _ = op.inputs
        x_slot, w_slot, s_slot = (cg.slot[t] for t in op.inputs)
        o = cg.slot[op.outputs[0]]
        fx, fw = FORMATS[x_t.dtype.name], FORMATS[w_t.dtype.name]

        def run(env: list) -> None:
            x, w, scales = _bits(env[x_slot]), _bits(env[w_slot]), env[s_slot]
            factors = np.array([2.0 ** _scale(scales[r], api) for r in range(x.shape[0])])
            # float8 products are exact in float64 (see matmul_pow2scaled above)
            z = values(op, decode(x, fx, 0), decode(w, fw, 0))
            env[o] = (z * factors.reshape((-1,) + (1,) * (z.ndim - 1))).astype(np.float16)
        return run
    return factory


_kernel("ConvPow2Scaled")(_scaled_conv(conv_values, "popxl.ops.conv_pow2scaled"))
_kernel("ConvTransposePow2Scaled")(_scaled_conv(conv_transpose_values, "popxl.ops.conv_transpose_pow2scaled"))
