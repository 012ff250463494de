"""How the simulator executes a program: ``numeric`` (numpy computes every value) or
``compile-only`` (shapes and dtypes only: nothing is computed and no host data is kept).

The mode is chosen by ``PROFCOMPARE_SIM_EXECUTION`` (read every time the emulator creates a
variable or a Session, so a test or a subprocess can switch it); the runner sets it for its
children from ``--compile-only``. This module imports nothing heavy: the command line reads it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

#: environment variable selecting the simulator's execution mode
ENV_VAR = "PROFCOMPARE_SIM_EXECUTION"
NUMERIC = "numeric"
COMPILE_ONLY = "compile-only"
#: the modes, the default first
MODES = (NUMERIC, COMPILE_ONLY)
#: what a report made in each mode is, for banners and messages
DESCRIPTIONS = {
    NUMERIC: "numeric: values computed with numpy",
    COMPILE_ONLY: "compile only: memory and time modelled, no values computed",
}


class UnknownExecutionModeError(ValueError):
    """A mode name that is neither numeric nor compile-only."""


def normalise(value: str | None) -> str:
    """Return the mode named by ``value`` (None or "" = numeric; ``compile_only`` is accepted
    for ``compile-only``); UnknownExecutionModeError for anything else."""
    if value is None or not str(value).strip():
        return NUMERIC
    text = str(value).strip().lower().replace("_", "-")
    if text in MODES:
        return text
    raise UnknownExecutionModeError(
        f"unknown execution mode {value!r}: choose one of {', '.join(MODES)} ({ENV_VAR})")


def current(environ: Mapping[str, str] | None = None) -> str:
    """Return the selected mode: ``$PROFCOMPARE_SIM_EXECUTION`` or numeric."""
    env = os.environ if environ is None else environ
    return normalise(env.get(ENV_VAR))


def is_compile_only(environ: Mapping[str, str] | None = None) -> bool:
    """True when the simulator runs compile-only."""
    return current(environ) == COMPILE_ONLY


__all__ = ["COMPILE_ONLY", "DESCRIPTIONS", "ENV_VAR", "MODES", "NUMERIC", "UnknownExecutionModeError", "current",
           "is_compile_only", "normalise"]
