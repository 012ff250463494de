"""NamedReplicaGrouping: a DotTree of popxl ReplicaGroupings (``popxl_addons.named_replica_grouping``;
not exported at the package's top level in either generation)."""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from typing import Any

from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons._generation import Generational, current
from profcompare.emulator.popxl_addons.dot_tree import DotTree

__all__ = ["NamedReplicaGrouping", "fill_none_group", "get_instance_replica_grouping", "is_cross_instance"]


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


def fill_none_group(rg: Any, none_value: Any) -> Any:
    """Return ``rg``, or ``none_value`` when ``rg`` is None."""
    return none_value if rg is None else rg


def is_cross_instance(replica_grouping: Any) -> bool:
    """Whether the grouping spans more replicas than one instance holds."""
    ir = popxl.gcg().ir
    return replica_grouping.group_size * replica_grouping.stride > ir.instance_replication_factor


def get_instance_replica_grouping(replica_grouping: Any = None) -> Any:
    """Return ``replica_grouping`` (default: all replicas) restricted to one instance: the same
    stride, only the replicas of the instance. A constant (assignment-pattern) grouping must
    repeat the same pattern in every instance. Raises ValueError otherwise, or when the stride
    exceeds the instance's replicas."""
    ir = popxl.gcg().ir
    rg = replica_grouping or ir.replica_grouping()
    per_instance = ir.instance_replication_factor
    if getattr(rg, "is_const", False):
        first = list(rg.assignment[:per_instance])
        if first * (ir.replication_factor // per_instance) != list(rg.assignment):
            raise ValueError("Assignment pattern is different across instances")
        return rg.const_rg
    if rg.stride > per_instance:
        raise ValueError("replica grouping stride must be < ir.instance_replication_factor")
    if is_cross_instance(rg):
        return ir.replica_grouping(stride=rg.stride, group_size=per_instance // rg.stride)
    return rg


def _ild_size_from_popdist() -> int:
    """The IPU-Link domain size from ``POPLAR_TARGET_OPTIONS`` (``ipuLinkDomainSize``), else the
    replication factor capped at 64 (logged once when running under popdist)."""
    options = json.loads(os.environ.get("POPLAR_TARGET_OPTIONS", "{}"))
    size = options.get("ipuLinkDomainSize")
    if size is not None:
        return int(size)
    size = min(popxl.gcg().ir.replication_factor, 64)
    global _WARNED
    if not _WARNED and any(k.startswith("POPDIST_") for k in os.environ):
        _WARNED = True
        logging.getLogger(__name__).warning(f"Could not read IPU link domain size from enviroment. Assuming {size}.")
    return size


_WARNED = False


def _is_cross_ild(replica_grouping: Any) -> bool:
    """Whether the grouping spans more replicas than one IPU-Link domain."""
    return replica_grouping.group_size * replica_grouping.stride > _ild_size_from_popdist()


def _ild_replica_grouping(replica_grouping: Any = None) -> Any:
    """Return ``replica_grouping`` (default: all replicas) restricted to one IPU-Link domain
    (same stride). Raises ValueError when the stride exceeds the domain."""
    ir = popxl.gcg().ir
    rg = replica_grouping or ir.replica_grouping()
    size = _ild_size_from_popdist()
    if rg.stride > size:
        raise ValueError("replica grouping stride must be < IPU Link Domain size")
    if _is_cross_ild(rg):
        return ir.replica_grouping(stride=rg.stride, group_size=size // rg.stride)
    return rg


#: names new in popxl-addons 3.4 (absent from 3.0)
_SINCE_30 = {
    "get_ild_size_from_popdist": _ild_size_from_popdist,
    "is_cross_ild": _is_cross_ild,
    "get_ild_replica_grouping": _ild_replica_grouping,
}
for _name, _fn in _SINCE_30.items():
    _fn.__name__ = _fn.__qualname__ = _name
del _name, _fn


def __getattr__(name: str) -> Any:
    if name in _SINCE_30:
        if current() == "3.0":
            raise AttributeError(f"module 'popxl_addons.named_replica_grouping' has no attribute {name!r} (not in "
                                 "popxl-addons 3.0; select 3.4 with PROFCOMPARE_SIM_ADDONS or --addons)")
        return _SINCE_30[name]
    raise AttributeError(f"module 'popxl_addons.named_replica_grouping' has no attribute {name!r}")
