"""popxl-addons ops of the emulated subset."""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons._generation import current
from profcompare.emulator.popxl_addons.ops import fp8_amax_scale as _fp8_amax_scale_module
from profcompare.emulator.popxl_addons.ops.cross_entropy import cross_entropy, cross_entropy_with_grad
from profcompare.emulator.popxl_addons.ops.streams import host_load, host_store

# importing the submodule bound ``fp8_amax_scale`` to it; popxl-addons 3.4 binds the function
# there (3.0 has neither), so the name is resolved by __getattr__
globals().pop("fp8_amax_scale", None)

#: names popxl-addons 3.4 has here and 3.0 does not
_SINCE_30 = {"fp8_amax_scale": lambda: _fp8_amax_scale_module.fp8_amax_scale}

__all__ = ["cross_entropy", "cross_entropy_with_grad", "host_load", "host_store"]


def __getattr__(name: str) -> Any:
    if name in _SINCE_30:
        if current() == "3.0":
            raise AttributeError(f"module 'popxl_addons.ops' has no attribute {name!r} (not in popxl-addons 3.0; "
                                 "the 3.4 generation has it: PROFCOMPARE_SIM_ADDONS=3.4 or --addons 3.4)")
        return _SINCE_30[name]()
    raise AttributeError(f"module 'popxl_addons.ops' has no attribute {name!r}")
