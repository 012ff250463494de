"""popxl-addons layers (``popxl_addons.layers``): Linear, LayerNorm, GroupNorm, Embedding and
Conv2D Modules. Layers built on popxl-addons' custom C++ ops (fp8 and group-quantised linear,
distributed layer norm) are not part of the package's import, as in popxl-addons."""

from __future__ import annotations

from profcompare.emulator.popxl_addons.layers.conv import Conv2D
from profcompare.emulator.popxl_addons.layers.embedding import MULTISLICE_MAGIC_NUMBER, Embedding
from profcompare.emulator.popxl_addons.layers.group_norm import GroupNorm
from profcompare.emulator.popxl_addons.layers.layer_norm import LayerNorm
from profcompare.emulator.popxl_addons.layers.linear import Linear

__all__ = ["Conv2D", "Embedding", "GroupNorm", "LayerNorm", "Linear", "MULTISLICE_MAGIC_NUMBER"]
