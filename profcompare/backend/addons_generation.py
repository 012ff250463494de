"""popxl-addons API generations: which one the emulator emulates, which one an installed copy has.

popxl-addons changed its replicated-tensor-sharding API between SDK releases:

- ``"3.0"``: the threshold API of popxl-addons up to ``sdk-release-3.0`` (the one the remote
  variables tutorial and its published figures were written for): ``threshold=`` on
  ``rts.replica_sharded_spec`` / ``rts.reduce_replica_sharded_graph``, ``sharded_threshold=`` on
  ``named_variable_buffers``.
- ``"3.4"``: the replica-grouping API of ``sdk-release-3.1`` to ``sdk-release-3.4``:
  ``shard_over``, ``shard_groups``, ``replica_group``, ``NamedReplicaGrouping``,
  ``shard_over_dict``.

The emulated generation is chosen by ``PROFCOMPARE_SIM_ADDONS`` (read every time the emulator
resolves a generation-dependent name, so a test or a subprocess can switch it), default
:data:`DEFAULT_GENERATION`. This module imports nothing heavy: the command line reads it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

#: environment variable selecting the emulated popxl-addons generation
ENV_VAR = "PROFCOMPARE_SIM_ADDONS"
#: the generations the emulator knows, oldest first
GENERATIONS = ("3.0", "3.4")
#: the generation emulated when nothing is selected
DEFAULT_GENERATION = "3.4"
#: what each generation's API is, for messages and help texts
DESCRIPTIONS = {
    "3.0": "popxl-addons <= sdk-release-3.0: the threshold API",
    "3.4": "popxl-addons sdk-release-3.1 .. 3.4: replica groupings (shard_over, shard_groups, ...)",
}


class UnknownGenerationError(ValueError):
    """A generation name that is neither 3.0 nor 3.4."""


def normalise(value: str | None) -> str:
    """Return the generation named by ``value`` ("3.0" or "3.4"; None or "" = the default).

    Accepts "3", "3.0", "3.0.0" for 3.0 and "3.4", "3.4.0" for 3.4; raises
    UnknownGenerationError for anything else."""
    if value is None or not str(value).strip():
        return DEFAULT_GENERATION
    text = str(value).strip()
    parts = text.split(".")
    if all(p.isdigit() for p in parts) and parts[0] == "3":
        minor = int(parts[1]) if len(parts) > 1 else 0
        rest_zero = all(int(p) == 0 for p in parts[2:])
        if minor == 0 and rest_zero:
            return "3.0"
        if minor == 4 and rest_zero:
            return "3.4"
    raise UnknownGenerationError(
        f"unknown popxl-addons generation {value!r}: choose one of {', '.join(GENERATIONS)} ({ENV_VAR})")


def current(environ: Mapping[str, str] | None = None) -> str:
    """Return the emulated generation: ``$PROFCOMPARE_SIM_ADDONS`` or the default."""
    env = os.environ if environ is None else environ
    return normalise(env.get(ENV_VAR))


def from_parameters(parameters: Iterable[str]) -> str:
    """Return the generation whose ``rts.replica_sharded_spec`` has these parameter names:
    "3.0" with ``threshold``, "3.4" with ``shard_over``. popxl-addons declares no version of its
    own (its setup.py has none, so an installed copy reports 0.0.0), so its API is what tells the
    generations apart. Raises UnknownGenerationError for neither."""
    names = set(parameters)
    if "threshold" in names:
        return "3.0"
    if "shard_over" in names:
        return "3.4"
    raise UnknownGenerationError(
        f"popxl_addons.rts.replica_sharded_spec has neither 'threshold' nor 'shard_over' (parameters: "
        f"{', '.join(sorted(names)) or 'none'}): a popxl-addons generation this tool does not know")


__all__ = ["DEFAULT_GENERATION", "DESCRIPTIONS", "ENV_VAR", "GENERATIONS", "UnknownGenerationError", "current",
           "from_parameters", "normalise"]
