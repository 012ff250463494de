"""popxl-addons optimizers (both generations): ``AdamOptimizerStep``."""

from __future__ import annotations

from profcompare.emulator.popxl_addons.optimizers import adam
from profcompare.emulator.popxl_addons.optimizers.adam import AdamOptimizerStep

__all__ = ["AdamOptimizerStep", "adam"]
