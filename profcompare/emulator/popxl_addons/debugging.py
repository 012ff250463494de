"""popxl-addons 3.4 ``debugging``: ``print_tensor`` / ``print_text``, popxl's ``ops.print_tensor``
switched on and off by the ``MODEL_LOG_LEVEL`` environment variable (TRACE < DEBUG < INFO < WARN,
default INFO, read when the package is imported): a call of level L prints when
``MODEL_LOG_LEVEL <= L``, so the default DEBUG calls add nothing to the graph. popxl-addons 3.0
has neither.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from profcompare.emulator.popxl_addons._compat import ops, popxl

LEVELS_TYPE = Literal["TRACE", "DEBUG", "INFO", "WARN"]
LEVELS = {"TRACE": 0, "DEBUG": 1, "INFO": 2, "WARN": 3}
MODEL_LOG_LEVEL = os.environ.get("MODEL_LOG_LEVEL", "INFO")


def _enabled(level: str) -> bool:
    """True when a call of ``level`` prints (KeyError for an unknown level, as in popxl-addons)."""
    return LEVELS[MODEL_LOG_LEVEL] <= LEVELS[level]


def print_tensor(t: popxl.Tensor, *args: Any, level: LEVELS_TYPE = "DEBUG", **kwargs: Any) -> popxl.Tensor:
    """Return ``ops.print_tensor(t, *args, **kwargs)`` when ``level`` is enabled, else ``t``."""
    if _enabled(level):
        return ops.print_tensor(t, *args, **kwargs)
    return t


def print_text(text: str, num: popxl.Tensor | None = None, level: LEVELS_TYPE = "DEBUG") -> None:
    """When ``level`` is enabled, print ``text`` at run time with ``num`` (a non-empty tensor;
    otherwise an empty float32 constant) through ``ops.print_tensor``; returns None."""
    if _enabled(level):
        t = num if num else popxl.constant(tuple())
        ops.print_tensor(t, text)


__all__ = ["print_tensor", "print_text"]
