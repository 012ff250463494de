"""What popdist tells popxl about a distributed launch, for ``popxl.Ir(replication='popdist')``.

Real popxl hands its session options to ``popdist.popart.configureSessionOptions``, which reads
the launch description that ``poprun`` exports as ``POPDIST_*`` environment variables. A
process started without poprun has none of them and popdist answers as a single instance with
one replica. This module is the emulator's own reading of the same variables (popdist itself is
not imported, and no ``popdist`` module is registered: popxl programs do not import it, popxl
does internally). It offers only what ``popxl.Ir`` needs.

The simulator runs one process, so a launch of more than one instance (fewer local replicas
than total replicas) is refused: the other instances' replicas, and the collectives between
instances, cannot be simulated here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

#: the variables poprun exports that this module reads (absent: an un-launched process)
TOTAL_REPLICAS = "POPDIST_NUM_TOTAL_REPLICAS"
LOCAL_REPLICAS = "POPDIST_NUM_LOCAL_REPLICAS"
REPLICA_INDEX_OFFSET = "POPDIST_REPLICA_INDEX_OFFSET"
IPUS_PER_REPLICA = "POPDIST_NUM_IPUS_PER_REPLICA"


@dataclass(frozen=True)
class PopdistLaunch:
    """The launch popdist describes: replica counts and this instance's place in them."""

    num_total_replicas: int
    num_local_replicas: int
    replica_index_offset: int
    num_ipus_per_replica: int
    #: True when poprun exported the launch description (popdist.isPopdistEnvSet)
    env_set: bool

    @property
    def num_instances(self) -> int:
        """Number of instances (processes) of the launch: total / local replicas."""
        return self.num_total_replicas // self.num_local_replicas

    @property
    def instance_index(self) -> int:
        """Index of this instance: its first replica over the replicas per instance."""
        return self.replica_index_offset // self.num_local_replicas


def _positive(env: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    raw = env.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not an integer") from None
    if value < minimum:
        raise ValueError(f"{name}={raw!r} must be at least {minimum}")
    return value


def read_launch(environ: Mapping[str, str] | None = None) -> PopdistLaunch:
    """Return the launch described by the ``POPDIST_*`` variables of ``environ`` (default
    ``os.environ``); without them, a single instance with one replica."""
    env = os.environ if environ is None else environ
    total = _positive(env, TOTAL_REPLICAS, 1, 1)
    local = _positive(env, LOCAL_REPLICAS, total, 1)
    offset = _positive(env, REPLICA_INDEX_OFFSET, 0, 0)
    ipus = _positive(env, IPUS_PER_REPLICA, 1, 1)
    if total % local or offset + local > total:
        raise ValueError(f"inconsistent popdist launch: {LOCAL_REPLICAS}={local}, {TOTAL_REPLICAS}={total}, "
                         f"{REPLICA_INDEX_OFFSET}={offset}")
    return PopdistLaunch(total, local, offset, ipus, env_set=TOTAL_REPLICAS in env)


__all__ = ["PopdistLaunch", "read_launch"]
