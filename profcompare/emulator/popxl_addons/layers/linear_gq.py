"""popxl-addons 3.4's group-quantised linear layer (``popxl_addons.layers.linear_gq``; not in 3.0):
``x @ decompress(w) (+ b)`` with the weight stored 4-bit packed
(:mod:`..ops.group_quantize_decompress`). The variables (zeros until overwritten, usually from
:meth:`LinearGQ.torch_mapping`):

- ``weight_compressed`` uint16 ``(uncompressed, compressed // group_size, group_size // 4)``,
- ``weight_decompression_scale`` and ``weight_decompression_bias``
  ``(uncompressed, compressed // group_size, 1)`` in x's dtype,
- ``bias`` ``(out_features,)`` when ``bias``,

where for ``dim`` -1 (or 1) the compressed axis is ``out_features`` and the uncompressed one the
input features, and for ``dim`` 0 the other way round.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons.layers._init import to_numpy
from profcompare.emulator.popxl_addons.module import Module
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.ops._generation_gate import require_34

require_34("popxl_addons.layers.linear_gq")

from profcompare.emulator.popxl_addons.ops.group_quantize_decompress import (  # noqa: E402
    group_quantize_compress_numpy,
    group_quantize_decompress,
)
from profcompare.emulator.popxl_addons.utils import WeightsDict  # noqa: E402

__all__ = ["LinearGQ"]


class LinearGQ(Module):
    """Linear layer whose weight is decompressed from 4-bit groups on every call."""

    def __init__(self, out_features: int, bias: bool = True, replica_grouping: Any = None, group_size: int = 0,
                 dim: int = -1) -> None:
        super().__init__()
        self.out_features = out_features
        self.bias = bias
        self.replica_grouping = replica_grouping
        self.group_size = group_size
        self.dim = dim

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        """Return ``x @ w (+ b)`` with ``w`` decompressed (see the module docstring)."""
        in_features = x.shape[-1]
        if self.dim in (1, -1):
            compressed, uncompressed = self.out_features, in_features
        elif self.dim == 0:
            compressed, uncompressed = in_features, self.out_features
        else:
            raise UnboundLocalError(f"LinearGQ: dim must be 0, 1 or -1, got {self.dim}")
        groups = compressed // self.group_size
        rg = self.replica_grouping
        w_compressed = self.add_variable_input(
            "weight_compressed", partial(np.zeros, shape=(uncompressed, groups, self.group_size // 4)), popxl.uint16,
            replica_grouping=rg)
        w_scale = self.add_variable_input("weight_decompression_scale",
                                          partial(np.zeros, shape=(uncompressed, groups, 1)), x.dtype,
                                          replica_grouping=rg)
        w_bias = self.add_variable_input("weight_decompression_bias",
                                         partial(np.zeros, shape=(uncompressed, groups, 1)), x.dtype,
                                         replica_grouping=rg)
        y = x @ group_quantize_decompress(w_compressed, w_scale, w_bias, self.dim)
        if self.bias:
            b = self.add_variable_input("bias", partial(np.zeros, y.shape[-1]), x.dtype, replica_grouping=rg)
            y = y + b
        return y

    @staticmethod
    def torch_mapping(variables: NamedTensors, nn_layer: Any, dtype: Any = popxl.float32, group_size: int = 64,
                      dim: int = -1) -> WeightsDict:
        """Return the layer's variables from a torch ``nn.Linear``: its weight transposed and
        compressed along ``dim`` in groups of ``group_size``, its bias (when the layer has one)
        cast to ``dtype``."""
        packed = group_quantize_compress_numpy(nn_layer.weight.T.detach().numpy(), group_size, dim=dim)
        state = dict(zip((variables.weight_compressed, variables.weight_decompression_scale,
                          variables.weight_decompression_bias), packed))
        if "bias" in variables.keys():
            state[variables.bias] = to_numpy(nn_layer.bias.data, dtype)
        return WeightsDict(state)
