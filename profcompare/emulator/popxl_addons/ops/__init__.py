"""popxl-addons ops of the emulated subset."""

from __future__ import annotations

from profcompare.emulator.popxl_addons.ops.cross_entropy import cross_entropy, cross_entropy_with_grad
from profcompare.emulator.popxl_addons.ops.streams import host_load, host_store

__all__ = ["cross_entropy", "cross_entropy_with_grad", "host_load", "host_store"]
