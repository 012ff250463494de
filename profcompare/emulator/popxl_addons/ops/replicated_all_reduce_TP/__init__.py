"""popxl-addons' ``replicated_all_reduce_TP`` package (3.0 and 3.4); see the submodule."""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons.ops.replicated_all_reduce_TP import replicated_all_reduce_TP as _impl


def __getattr__(name: str) -> Any:
    return getattr(_impl, name)
