"""Layer normalisation over the last axis of an ``(N, C)`` tensor."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import ops, popxl
from profcompare.emulator.popxl_addons.layers._init import to_numpy
from profcompare.emulator.popxl_addons.module import Module
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.utils import WeightsDict

__all__ = ["LayerNorm"]


class LayerNorm(Module):
    """``ops.layer_norm`` with a weight (ones) and bias (zeros) of shape ``(C,)``. Raises
    ValueError for an input that is not 2-D (flatten the normalised axes into the last)."""

    def build(self, x: popxl.Tensor, eps: float = 1e-5) -> popxl.Tensor:
        if len(x.shape) != 2:
            raise ValueError("The input tensor must be of shape N x C. Please flatten all extra dimensions.")
        w = self.add_variable_input("weight", partial(np.ones, x.shape[-1]), x.dtype)
        b = self.add_variable_input("bias", partial(np.zeros, x.shape[-1]), x.dtype)
        return ops.layer_norm(x, w, b, eps=eps)

    @staticmethod
    def torch_mapping(variables: NamedTensors, nn_layer: Any, dtype: Any = popxl.float32) -> WeightsDict:
        """Return the variables mapped to a ``torch.nn.LayerNorm``'s parameters (flattened to
        ``(C,)``)."""
        weight = to_numpy(nn_layer.weight.data, dtype).reshape(variables.weight.shape)
        bias = to_numpy(nn_layer.bias.data, dtype).reshape(variables.bias.shape)
        return WeightsDict({variables.weight: weight, variables.bias: bias})
