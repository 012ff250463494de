"""popxl-addons transforms of the emulated subset."""

from __future__ import annotations

from profcompare.emulator.popxl_addons.transforms.autodiff import autodiff, autodiff_with_accumulation
from profcompare.emulator.popxl_addons.transforms.pipelining import pipelined_execution

__all__ = ["autodiff", "autodiff_with_accumulation", "pipelined_execution"]
