"""``popart._internal.ir.patterns``: PopART's pattern sets, as programs pick one.

``ir._pb_ir.setPatterns(_ir.patterns.Patterns(_ir.patterns.PatternsLevel.Default))`` then
``ir._pb_ir.applyPreAliasPatterns(graph)`` for each graph is what popxl-addons'
``apply_pre_alias_patterns`` does; the simulator's ops are already those PopART's patterns
lower to, so applying them records the level (see :mod:`profcompare.emulator.popxl_addons.patterns`).
Every other name is refused in one line naming it.
"""

from __future__ import annotations

from enum import Enum

from profcompare.emulator.popxl.errors import module_getattr


class PatternsLevel(Enum):
    """PopART's PatternsLevel (willow/include/popart/patterns/patterns.hpp), valued by the name
    popxl-addons' ``apply_pre_alias_patterns`` takes for it."""

    NoPatterns = "no_patterns"
    Minimal = "minimal"
    Default = "default"
    All = "all"


class Patterns:
    """A pattern set of one level."""

    def __init__(self, level: PatternsLevel = PatternsLevel.Default) -> None:
        if not isinstance(level, PatternsLevel):
            raise TypeError(f"Patterns: level must be a PatternsLevel, got {type(level).__name__}")
        self.level = level


__getattr__ = module_getattr("popart._internal.ir.patterns")

__all__ = ["Patterns", "PatternsLevel"]
