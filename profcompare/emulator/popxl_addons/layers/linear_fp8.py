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


#: popxl-addons' names for the ways of choosing a log2 scale
_SCALE_METRICS = ("amax", "mse", "manual_scale")

#: the gradient's scale is lowered by this many binades to leave headroom against overflow in
#: the float16 accumulation of matmul_pow2scaled; the result must stay a valid bias
_GRAD_SCALE_HEADROOM = 3
_MIN_LOG2_SCALE, _MAX_LOG2_SCALE = -31, 31


class LinearFP8(Module):
    """Linear layer computing in float8 with power-of-two scales (see the module docstring)."""

    def __init__(self, out_features: int, bias: bool = True, scale_metric: str = "amax", scale: int = 0,
                 replica_grouping: Any = None) -> None:
        super().__init__()
        if scale_metric not in _SCALE_METRICS:
            raise ValueError(f"The scale_metric option {scale_metric} is not available; LinearFP8 "
                             f"takes one of: {', '.join(_SCALE_METRICS)}.")
        self.out_features = out_features
        self.bias = bias
        self.replica_grouping = replica_grouping
        self.scale_metric = scale_metric
        self.scale = scale
        self.forward_fp8_type = popxl.float8_143
        self.grad_fp8_type = popxl.float8_152
        self.fp8_scale: Callable[[popxl.Tensor, Any], popxl.Tensor] = {
            "amax": fp8_amax_scale,
            "mse": fp8_mse_scale,
            "manual_scale": self._manual_log2_scale,
        }[scale_metric]

    def _manual_log2_scale(self, tensor: popxl.Tensor, fp8_type: Any) -> popxl.Tensor:
        """The fixed ``scale`` as a constant, whatever the tensor (read when the graph is built)."""
        return popxl.constant(self.scale)

    def _to_float8(self, tensor: popxl.Tensor, fp8_type: Any,
                   log2_scale: popxl.Tensor | None = None) -> tuple[popxl.Tensor, popxl.Tensor]:
        """Return ``(log2 scale, float8 tensor)``: ``tensor`` cast to ``fp8_type`` after scaling by
        ``2 ** log2_scale`` (computed with ``fp8_scale`` for float8_143 when not given)."""
        if log2_scale is None:
            log2_scale = self.fp8_scale(tensor, popxl.float8_143)
        return log2_scale, ops.pow2scale_cast_to_fp8(tensor, data_type=fp8_type, log2_scale=log2_scale)

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        """Return ``x @ w (+ b)`` computed in float8 (see the module docstring)."""
        weight = self.add_variable_input("weight", partial(truncated_normal, (x.shape[-1], self.out_features)),
                                         x.dtype, replica_grouping=self.replica_grouping)
        weight_scale, weight_fp8 = self._to_float8(weight, self.forward_fp8_type)
        input_scale, input_fp8 = self._to_float8(x, self.forward_fp8_type)
        # kept for build_grad, under popxl-addons' names
        saved = {"w_log2scale": weight_scale, "w_fp8": weight_fp8, "x_log2scale": input_scale, "x_fp8": input_fp8}
        for key, tensor in saved.items():
            self.aux[key] = tensor

        # the product carries 2**(weight_scale + input_scale); undo it in the matmul
        out = ops.matmul_pow2scaled(input_fp8, weight_fp8, log2_scale=-weight_scale - input_scale)
        if x.dtype == popxl.float32:
            out = ops.cast(out, popxl.float32)  # matmul_pow2scaled gives float16
        if not self.bias:
            return out
        bias = self.add_variable_input("bias", partial(np.zeros, out.shape[-1]), x.dtype,
                                       replica_grouping=self.replica_grouping)
        return out + bias

    def build_grad(self, dLdy: popxl.Tensor) -> popxl.Tensor:
        """Return ``dL/dx`` and set the weight's (and bias') gradients, in float8 (see the module
        docstring)."""
        raw_scale = self.fp8_scale(dLdy, popxl.float8_152) - popxl.constant(_GRAD_SCALE_HEADROOM)
        grad_scale, grad_fp8 = self._to_float8(
            dLdy, self.grad_fp8_type, _clamp_int(raw_scale, _MIN_LOG2_SCALE, _MAX_LOG2_SCALE))
        saved = self.aux
        input_grad = ops.matmul_pow2scaled(grad_fp8, saved["w_fp8"].T,
                                           log2_scale=-saved["w_log2scale"] - grad_scale)
        # dL/dw = x^T dL/dy, formed as (dL/dy^T x)^T
        self.var_grad["weight"] = ops.matmul_pow2scaled(grad_fp8.T, saved["x_fp8"],
                                                        log2_scale=-saved["x_log2scale"] - grad_scale).T
        if self.bias:
            self.var_grad["bias"] = ops.sum(dLdy, 0)
        return input_grad

    @staticmethod
    def torch_mapping(variables: NamedTensors, nn_layer: Any, dtype: Any = popxl.float32) -> WeightsDict:
        """Return the layer's variables from a torch ``nn.Linear`` (weight transposed) in ``dtype``."""
        state = {variables.weight: to_numpy(nn_layer.weight.data, dtype).T}
        if "bias" in variables.keys():
            state[variables.bias] = to_numpy(nn_layer.bias.data, dtype)
        return WeightsDict(state)
