"""popxl-addons transforms of the emulated subset."""

from __future__ import annotations

from profcompare.emulator.popxl_addons.transforms.autodiff import autodiff, autodiff_with_accumulation

__all__ = ["autodiff", "autodiff_with_accumulation"]
