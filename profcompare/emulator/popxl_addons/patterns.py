"""``popxl_addons.patterns``: PopART's graph patterns applied before aliasing.

The popxl-addons release Graphcore's LLM applications pin (their requirements name it;
graphcore/examples ``nlp/*/popxl``) has ``apply_pre_alias_patterns(ir, level)``, which runs
PopART's pattern set of that level (``"no_patterns"``, ``"minimal"``, ``"default"``, ``"all"``:
PopART's ``PatternsLevel``) over every graph of the Ir before inplacing. The patterns rewrite
PopART ops into the ops Poplar lowers (a subtract into add + negate, a gradient op into its
parts, ...); the simulator's ops are already those it lowers and models, so there is nothing to
rewrite. The level is checked as PopART checks it and recorded on the Ir
(``ir._pre_alias_patterns``, reported in the report's ``meta.session_options`` as
``preAliasPatterns``).
"""

from __future__ import annotations

from typing import Any

#: PopART's PatternsLevel names (willow/include/popart/patterns/patterns.hpp)
LEVELS = ("no_patterns", "minimal", "default", "all")


def apply_pre_alias_patterns(ir: Any, level: str = "default") -> None:
    """Apply the pre-alias patterns of ``level`` to ``ir`` (records it: see the module doc).

    Raises ValueError for a level PopART does not have."""
    if level not in LEVELS:
        raise ValueError(f"apply_pre_alias_patterns: unknown patterns level {level!r}; one of {', '.join(LEVELS)}")
    ir._pre_alias_patterns = level


apply_pre_alias_patterns.__simulator_note__ = (  # type: ignore[attr-defined]
    "checks and records the level; the simulator's ops are already those it lowers, no PopART pattern rewrites them")

__all__ = ["apply_pre_alias_patterns"]
