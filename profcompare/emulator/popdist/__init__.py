"""``popdist`` on the simulator: the launch description of a single process.

popdist (Graphcore's distributed-launch helper) answers questions about the launch ``poprun``
described through ``POPDIST_*`` environment variables. The simulator runs one process, so it
answers from the same variables (:mod:`profcompare.emulator.popxl.popdist_env`), and without
them as a single instance holding every replica: ``isPopdistEnvSet()`` is False,
``getInstanceIndex()`` 0, ``getNumInstances()`` 1. Names popdist has that the simulator does not
(``popdist.popart``, ``popdist.init``, ...) are refused in one line naming them.
"""

from __future__ import annotations

from profcompare.emulator.popxl.errors import module_getattr
from profcompare.emulator.popxl.popdist_env import read_launch


def isPopdistEnvSet() -> bool:  # noqa: N802 - popdist's name
    """True when poprun exported the launch description (``POPDIST_NUM_TOTAL_REPLICAS``)."""
    return read_launch().env_set


def getInstanceIndex() -> int:  # noqa: N802 - popdist's name
    """Index of this process among the launch's instances (0 without poprun)."""
    return read_launch().instance_index


def getNumInstances() -> int:  # noqa: N802 - popdist's name
    """Number of instances (processes) of the launch (1 without poprun)."""
    return read_launch().num_instances


def getNumTotalReplicas() -> int:  # noqa: N802 - popdist's name
    """Replicas over all instances."""
    return read_launch().num_total_replicas


def getNumLocalReplicas() -> int:  # noqa: N802 - popdist's name
    """Replicas of this instance."""
    return read_launch().num_local_replicas


def getReplicaIndexOffset() -> int:  # noqa: N802 - popdist's name
    """Index of this instance's first replica."""
    return read_launch().replica_index_offset


def getNumIpusPerReplica() -> int:  # noqa: N802 - popdist's name
    """IPUs per replica."""
    return read_launch().num_ipus_per_replica


__getattr__ = module_getattr("popdist")

__all__ = ["getInstanceIndex", "getNumInstances", "getNumIpusPerReplica", "getNumLocalReplicas",
           "getNumTotalReplicas", "getReplicaIndexOffset", "isPopdistEnvSet"]
