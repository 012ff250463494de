"""Modules of popxl-addons 3.4 that popxl-addons 3.0 does not have (its custom ops and the layers
built on them arrived after sdk-release-3.0): importing one while 3.0 is emulated fails as the
import fails on a 3.0 installation."""

from __future__ import annotations

from profcompare.backend.addons_generation import ENV_VAR
from profcompare.emulator.popxl_addons._generation import current


def require_34(module: str) -> None:
    """Raise ModuleNotFoundError naming ``module`` (``popxl_addons.ops.linear_layout``, ...)
    when popxl-addons 3.0 is emulated; return otherwise."""
    if current() == "3.0":
        raise ModuleNotFoundError(f"No module named {module!r} (not in popxl-addons 3.0; the 3.4 generation has it: "
                                  f"{ENV_VAR}=3.4 or --addons 3.4)", name=module)


__all__ = ["require_34"]
