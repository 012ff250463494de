"""Group normalisation of an ``(N, C, ...)`` tensor over ``num_groups`` channel groups."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import ops, popxl
from profcompare.emulator.popxl_addons.layers._init import to_numpy
from profcompare.emulator.popxl_addons.module import Module
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.utils import WeightsDict

__all__ = ["GroupNorm"]


class GroupNorm(Module):
    """``ops.group_norm`` with weight (ones) and bias (zeros) of shape ``(C,)`` (axis 1), in
    ``replica_grouping``."""

    def __init__(self, num_groups: int, replica_grouping: Any = None, eps: float = 1e-5, cache: bool = False) -> None:
        super().__init__(cache)
        self.num_groups = num_groups
        self.replica_grouping = replica_grouping
        self.eps = eps

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        channels = x.shape[1]
        self.weight = self.add_variable_input("weight", partial(np.ones, channels), x.dtype,
                                              replica_grouping=self.replica_grouping)
        self.bias = self.add_variable_input("bias", partial(np.zeros, channels), x.dtype,
                                            replica_grouping=self.replica_grouping)
        return ops.group_norm(x, self.weight, self.bias, num_groups=self.num_groups, eps=self.eps)

    @staticmethod
    def torch_mapping(variables: NamedTensors, nn_layer: Any, dtype: Any = popxl.float32) -> WeightsDict:
        """Return the variables mapped to a ``torch.nn.GroupNorm``'s parameters."""
        return WeightsDict({variables.weight: to_numpy(nn_layer.weight.data, dtype),
                            variables.bias: to_numpy(nn_layer.bias.data, dtype)})
