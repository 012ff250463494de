"""Errors raised by the simulator's popxl subset."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from profcompare.errors import ProfcompareError


class SimulatorNotImplementedError(NotImplementedError, AttributeError):
    """A popxl API outside the simulated subset was used.

    Also an AttributeError so that ``hasattr(popxl.ops, "conv")`` answers False instead of
    raising, while ``popxl.ops.conv`` itself says clearly what is missing."""


class SessionInputError(ProfcompareError, ValueError):
    """Host data given to ``Session.run`` / ``write_variable_data`` does not match the program."""


def not_implemented_message(api: str) -> str:
    """Return the one-line message for an unsupported popxl API."""
    return f"{api} is not implemented by the profcompare simulator"


def module_getattr(module_name: str) -> Callable[[str], Any]:
    """Return a module-level ``__getattr__`` that rejects public names outside the subset."""

    def __getattr__(name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        raise SimulatorNotImplementedError(not_implemented_message(f"{module_name}.{name}"))

    return __getattr__


class SimulatorHostMemoryError(ProfcompareError, MemoryError):
    """The numeric simulation of a program would not fit in the host's memory (checked before
    the per-replica copies are allocated); the message suggests ``--compile-only``."""


class CompileOnlyWarning(UserWarning):
    """A compile-only Session was asked for values it never computed (it returns zeros)."""
