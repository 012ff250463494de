"""``popart._internal`` on the simulator: only ``popart._internal.ir`` (see there); every other
name is refused in one line naming it."""

from __future__ import annotations

from profcompare.emulator.popxl.errors import module_getattr

__getattr__ = module_getattr("popart._internal")
