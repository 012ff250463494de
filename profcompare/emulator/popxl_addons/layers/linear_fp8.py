"""popxl-addons 3.4's float8 linear layer (``popxl_addons.layers.linear_fp8``; not in 3.0).

Forward: the weight ``(in, out)`` (truncated normal, scale 0.02) and the input are cast to
float8_143 with log2 scales from ``scale_metric`` (``amax``: :func:`..ops.fp8_amax_scale`,
``mse``: :func:`..ops.fp8_mse_scale.fp8_mse_scale`, ``manual_scale``: the constant ``scale``),
multiplied by ``matmul_pow2scaled`` with ``log2_scale = -(w_scale + x_scale)`` (float16 result,
cast to float32 for a float32 input), plus a zero-initialised bias. The hand-written gradient
casts ``dL/dy`` to float8_152 with its own scale less 3 (clamped to [-31, 31]) and computes
``dL/dx`` and ``dL/dw`` with ``matmul_pow2scaled``; ``dL/db = sum(dL/dy, 0)``.

Approximation: popxl-addons clamps the gradient scale with ``ops.clip``, which the simulator's
clip takes for float tensors only; the same clamp is built from ``where`` and ``maximum``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import ops, popxl
from profcompare.emulator.popxl_addons.layers._init import to_numpy, truncated_normal
from profcompare.emulator.popxl_addons.module import Module
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.ops._generation_gate import require_34

require_34("popxl_addons.layers.linear_fp8")

from profcompare.emulator.popxl_addons.ops.fp8_amax_scale import fp8_amax_scale  # noqa: E402
from profcompare.emulator.popxl_addons.ops.fp8_mse_scale import fp8_mse_scale  # noqa: E402
from profcompare.emulator.popxl_addons.utils import WeightsDict  # noqa: E402

__all__ = ["LinearFP8"]


def _clamp_int(t: popxl.Tensor, low: int, high: int) -> popxl.Tensor:
    lo = popxl.constant(low, popxl.int32)
    hi = popxl.constant(high, popxl.int32)
    return ops.maximum(ops.where(ops.greater(t, hi), hi, t), lo)


class LinearFP8(Module):
    """Linear layer computing in float8 with power-of-two scales (see the module docstring)."""

    def __init__(self, out_features: int, bias: bool = True, scale_metric: str = "amax", scale: int = 0,
                 replica_grouping: Any = None) -> None:
        super().__init__()
        self.out_features = out_features
        self.bias = bias
        self.replica_grouping = replica_grouping
        self.scale_metric = scale_metric
        self.scale = scale
        self.forward_fp8_type = popxl.float8_143
        self.grad_fp8_type = popxl.float8_152
        self.fp8_scale: Callable[[popxl.Tensor, Any], popxl.Tensor]
        if scale_metric == "amax":
            self.fp8_scale = fp8_amax_scale
        elif scale_metric == "mse":
            self.fp8_scale = fp8_mse_scale
        elif scale_metric == "manual_scale":
            self.fp8_scale = lambda x, y: popxl.constant(self.scale)
        else:
            raise ValueError(f"The scale_metric option {scale_metric} is not available. "
                             "Please provide one of the following options: amax, mse or manual_scale.")

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        """Return ``x @ w (+ b)`` computed in float8 (see the module docstring)."""
        w = self.add_variable_input("weight", partial(truncated_normal, (x.shape[-1], self.out_features)), x.dtype,
                                    replica_grouping=self.replica_grouping)
        w_log2scale = self.fp8_scale(w, popxl.float8_143)
        w_fp8 = ops.pow2scale_cast_to_fp8(w, data_type=self.forward_fp8_type, log2_scale=w_log2scale)
        x_log2scale = self.fp8_scale(x, popxl.float8_143)
        x_fp8 = ops.pow2scale_cast_to_fp8(x, data_type=self.forward_fp8_type, log2_scale=x_log2scale)
        self.aux["w_log2scale"] = w_log2scale
        self.aux["w_fp8"] = w_fp8
        self.aux["x_log2scale"] = x_log2scale
        self.aux["x_fp8"] = x_fp8
        y = ops.matmul_pow2scaled(x_fp8, w_fp8, log2_scale=-w_log2scale - x_log2scale)
        if x.dtype == popxl.float32:
            y = ops.cast(y, popxl.float32)
        if self.bias:
            b = self.add_variable_input("bias", partial(np.zeros, y.shape[-1]), x.dtype,
                                        replica_grouping=self.replica_grouping)
            y = y + b
        return y

    def build_grad(self, dLdy: popxl.Tensor) -> popxl.Tensor:
        """Return ``dL/dx`` and set the weight's (and bias') gradients, in float8 (see the module
        docstring)."""
        dLdy_log2scale = _clamp_int(self.fp8_scale(dLdy, popxl.float8_152) - popxl.constant(3), -31, 31)
        dLdy_fp8 = ops.pow2scale_cast_to_fp8(dLdy, data_type=self.grad_fp8_type, log2_scale=dLdy_log2scale)
        dLdx = ops.matmul_pow2scaled(dLdy_fp8, self.aux["w_fp8"].T, log2_scale=-self.aux["w_log2scale"] - dLdy_log2scale)
        dLdw = ops.matmul_pow2scaled(dLdy_fp8.T, self.aux["x_fp8"],
                                     log2_scale=-self.aux["x_log2scale"] - dLdy_log2scale).T
        self.var_grad["weight"] = dLdw
        if self.bias:
            self.var_grad["bias"] = ops.sum(dLdy, 0)
        return dLdx

    @staticmethod
    def torch_mapping(variables: NamedTensors, nn_layer: Any, dtype: Any = popxl.float32) -> WeightsDict:
        """Return the layer's variables from a torch ``nn.Linear`` (weight transposed) in ``dtype``."""
        state = {variables.weight: to_numpy(nn_layer.weight.data, dtype).T}
        if "bias" in variables.keys():
            state[variables.bias] = to_numpy(nn_layer.bias.data, dtype)
        return WeightsDict(state)
