"""Linear layer: ``y = x @ weight (+ bias)``."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons.layers._init import to_numpy, truncated_normal
from profcompare.emulator.popxl_addons.module import Module
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.utils import WeightsDict

__all__ = ["Linear"]


class Linear(Module):
    """A dense layer with ``out_features`` outputs: weight ``(in, out)`` (truncated normal,
    scale 0.02) and, when ``bias``, bias ``(out,)`` (zeros), both of the input's dtype and in
    ``replica_grouping``."""

    def __init__(self, out_features: int, bias: bool = True, replica_grouping: Any = None) -> None:
        super().__init__()
        self.out_features = out_features
        self.bias = bias
        self.replica_grouping = replica_grouping

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w = self.add_variable_input("weight", partial(truncated_normal, (x.shape[-1], self.out_features)), x.dtype,
                                    replica_grouping=self.replica_grouping)
        y = x @ w
        if self.bias:
            b = self.add_variable_input("bias", partial(np.zeros, y.shape[-1]), x.dtype,
                                        replica_grouping=self.replica_grouping)
            y = y + b
        return y

    @staticmethod
    def torch_mapping(variables: NamedTensors, nn_layer: Any, dtype: Any = popxl.float32) -> WeightsDict:
        """Return the layer's variables mapped to a ``torch.nn.Linear``'s parameters (weight
        transposed)."""
        mapping = {variables.weight: to_numpy(nn_layer.weight.data, dtype).T}
        if "bias" in variables.keys():
            mapping[variables.bias] = to_numpy(nn_layer.bias.data, dtype)
        return WeightsDict(mapping)
