"""2-D convolution layer over ``(N, C, H, W)`` inputs."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import ops, popxl
from profcompare.emulator.popxl_addons.layers._init import to_numpy, truncated_normal
from profcompare.emulator.popxl_addons.module import Module
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.utils import WeightsDict

__all__ = ["Conv2D"]


class Conv2D(Module):
    """``ops.conv`` with a weight ``(out_channels, C / groups, k_h, k_w)`` (truncated normal,
    scale 0.02) and, when ``bias``, a bias ``(1, out_channels, 1, 1)`` (zeros). ``paddings`` is
    four explicit pads or a pad type (``same_upper``, ``same_lower``, ``valid``); the other
    options go to ``ops.conv``. After a build ``weight`` and ``bias`` hold the graph inputs."""

    def __init__(self, out_channels: int, kernel_size: tuple[int, int] | int, strides: Any = (1, 1),
                 paddings: Any = (0, 0, 0, 0), dilations: Any = (1, 1), groups: int = 1, bias: bool = True,
                 available_memory_proportions: Any = None, partials_types: Any = None,
                 enable_conv_dithering: Any = None, replica_grouping: Any = None) -> None:
        super().__init__()
        self.out_channels = out_channels
        self.k_h, self.k_w = kernel_size if isinstance(kernel_size, tuple) else (kernel_size, kernel_size)
        self.strides = strides
        self.dilations = dilations
        self.groups = groups
        if isinstance(paddings, str):
            self.pad_type, self.paddings = paddings, (0, 0, 0, 0)
        else:
            self.pad_type, self.paddings = "not_set", paddings
        self.replica_grouping = replica_grouping
        self.bias = bias
        self._with_bias = bias
        self.available_memory_proportions = available_memory_proportions
        self.partial_types = partials_types
        self.enable_conv_dithering = enable_conv_dithering

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        if len(x.shape) != 4:
            raise ValueError(f"Conv2D expects an (N, C, H, W) input, got shape {x.shape}")
        kernel = (self.out_channels, x.shape[1] // self.groups, self.k_h, self.k_w)
        self.weight = self.add_variable_input("weight", partial(truncated_normal, kernel), x.dtype,
                                              replica_grouping=self.replica_grouping)
        y = ops.conv(t=x, weight=self.weight, stride=self.strides, padding=self.paddings, dilation=self.dilations,
                     groups=self.groups, pad_type=self.pad_type,
                     available_memory_proportions=self.available_memory_proportions,
                     partials_types=self.partial_types, enable_conv_dithering=self.enable_conv_dithering)
        if self._with_bias:
            shape = [1] * len(y.shape)
            shape[1] = self.out_channels
            self.bias = self.add_variable_input("bias", partial(np.zeros, shape), x.dtype,
                                                replica_grouping=self.replica_grouping)
            y = y + self.bias
        return y

    @staticmethod
    def torch_mapping(variables: NamedTensors, nn_layer: Any, dtype: Any = popxl.float32) -> WeightsDict:
        """Return the variables mapped to a ``torch.nn.Conv2d``'s parameters."""
        mapping = {variables.weight: to_numpy(nn_layer.weight.data, dtype)}
        if "bias" in variables:
            mapping[variables.bias] = to_numpy(nn_layer.bias.data, dtype).reshape(variables.bias.shape)
        return WeightsDict(mapping)
