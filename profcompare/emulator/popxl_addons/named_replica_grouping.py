"""NamedReplicaGrouping: a DotTree of popxl ReplicaGroupings (``popxl_addons.named_replica_grouping``;
not exported at the package's top level in either generation)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons._generation import Generational
from profcompare.emulator.popxl_addons.dot_tree import DotTree

__all__ = ["NamedReplicaGrouping"]


def _build_groups_30(cls: type[NamedReplicaGrouping], names: Sequence[str], value: Any = None) -> NamedReplicaGrouping:
    value = value or popxl.gcg().ir.replica_grouping()
    return cls.pack(list(names), [value] * len(names))


def _build_groups_34(cls: type[NamedReplicaGrouping], names: Sequence[str], value: Any) -> NamedReplicaGrouping:
    return cls.pack(list(names), [value] * len(names))


class NamedReplicaGrouping(DotTree[Any]):
    """A DotTree of ReplicaGroupings (keys like ``fc1.weight``)."""

    build_groups = Generational("build_groups", {"3.0": _build_groups_30, "3.4": _build_groups_34}, {
        "3.0": "build_groups(names, value=None), None meaning all replicas",
        "3.4": "build_groups(names, value): the grouping is required",
    }, classmethod=True)
