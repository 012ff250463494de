"""ReplicaGrouping: which replicas form a group, as popxl 3.4's ``popxl.ReplicaGrouping``.

Two kinds, as in popxl:

- **constant stride** (``ir.replica_grouping(stride, group_size)``): groups of ``group_size``
  replicas ``stride`` apart; the kind Poplar's collectives and variable settings take;
- **by assignment** (``ir.replica_grouping_from_assignments``, or the transpose of a grouping
  that has no constant-stride transpose): any equal-sized groups. ``stride`` is undefined
  (NotImplementedError, as popxl), collectives refuse it, and a variable is laid out by its
  ``const_rg``: the constant-stride grouping that splits its groups, with ``to_device_map`` /
  ``to_host_map`` between the two, as popxl does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from .errors import SimulatorNotImplementedError, not_implemented_message

_NON_CONST = ("This ReplicaGrouping has a non-constant stride and has no constant-stride "
              "representation; it cannot be used with collective (GCL) ops.")


def _strides(assignment: Sequence[int]) -> set[int]:
    """Distances between consecutive members of each group."""
    out: set[int] = set()
    last: dict[int, int] = {}
    for replica, group in enumerate(assignment):
        if group in last:
            out.add(replica - last[group])
        last[group] = replica
    return out


def _const_stride_assignment(assignment: Sequence[int]) -> list[int]:
    """Split the groups of ``assignment`` where members are further apart than the smallest
    distance, so every part has a constant stride (the groups of popxl's ``const_rg``)."""
    step = min(_strides(assignment))
    split = list(assignment)
    next_group = max(assignment) + 1
    last: dict[int, int] = {}
    current: dict[int, int] = {}
    for replica, group in enumerate(assignment):
        if group in last and replica - last[group] > step:
            current[group] = next_group
            next_group += 1
        last[group] = replica
        split[replica] = current.get(group, group)
    return split


def _maps(const_assignment: Sequence[int], assignment: Sequence[int]) -> tuple[list[int], list[int]]:
    """(to_device_map, to_host_map): the group of ``assignment`` for each constant group (in
    order of first appearance), and the first constant group of each group."""
    to_device: list[int] = []
    to_host: list[int] = []
    seen_const: set[int] = set()
    seen_group: set[int] = set()
    for const, group in zip(const_assignment, assignment):
        if const not in seen_const:
            seen_const.add(const)
            to_device.append(group)
        if group not in seen_group:
            seen_group.add(group)
            to_host.append(const)
    return to_device, to_host


class ReplicaGrouping:
    """Groups of ``group_size`` replicas, members ``stride`` apart (created by ``ir.replica_grouping``),
    or equal-sized groups by assignment (``ir.replica_grouping_from_assignments``)."""

    def __init__(self, num_replicas: int, stride: int = 1, group_size: int | None = None) -> None:
        if group_size is None:
            group_size = num_replicas // stride if stride else 0
        if not (0 < stride <= num_replicas) or num_replicas % stride:
            raise ValueError(f"Invalid replica grouping stride {stride} for {num_replicas} replicas: "
                             "it must satisfy 0 < stride <= replicas and divide the replica count")
        if not 0 < group_size <= num_replicas:
            raise ValueError(f"Invalid replica grouping group_size {group_size} for {num_replicas} replicas")
        if num_replicas % (stride * group_size):
            raise SimulatorNotImplementedError(not_implemented_message(
                f"popxl.ReplicaGrouping(stride={stride}, group_size={group_size}) with {num_replicas} "
                "replicas (stride x group_size must divide the replica count)"))
        self._num_replicas = num_replicas
        # A stride means nothing for groups of one replica; popxl stores 1.
        self._stride: int | None = stride if group_size > 1 else 1
        self._group_size = group_size
        r = np.arange(num_replicas)
        block = stride * group_size
        self._assignment = [int(x) for x in (r // block) * stride + r % stride]
        self.const_rg: ReplicaGrouping = self
        self.to_device_map: list[int] | None = None
        self.to_host_map: list[int] | None = None

    @classmethod
    def _from_assignment(cls, num_replicas: int, assignment: Sequence[int]) -> ReplicaGrouping:
        """The grouping that puts replica i in group ``assignment[i]`` (ValueError as popxl for
        unequal groups, numbering that is not 0.. in order of first appearance, or a length other
        than the replica count). A constant-stride assignment gives a constant-stride grouping."""
        assignment = [int(a) for a in assignment]
        groups, counts = np.unique(assignment, return_counts=True)
        if len(set(counts.tolist())) != 1:
            raise ValueError("All groups should have the same size but they don't. (Group, Sizes): "
                             f"{list(zip(groups.tolist(), counts.tolist()))}")
        if not np.array_equal(groups, np.arange(len(groups))):
            raise ValueError("The group numbers are not numbered consecutively and/or do not start "
                             f"at 0. Groups: {groups.tolist()}")
        first_seen = list(dict.fromkeys(assignment))
        if first_seen != groups.tolist():
            raise ValueError("When ordered by first appearance, the group numbers are not "
                             f"monotonically increasing. Ordering: {first_seen}")
        if len(assignment) != num_replicas:
            raise ValueError(f"The length of `assignment` ({len(assignment)}) does not equal the "
                             f"number of replicas ({num_replicas}).")
        group_size = int(counts[0])
        strides = _strides(assignment)
        if len(strides) <= 1:
            return cls(num_replicas, strides.pop() if strides else 1, group_size)
        self = cls.__new__(cls)
        self._num_replicas = num_replicas
        self._stride = None
        self._group_size = group_size
        self._assignment = assignment
        split = _const_stride_assignment(assignment)
        sizes = np.unique(split, return_counts=True)[1]
        const_size = math.gcd(*sizes.tolist())
        const_stride = min(_strides(assignment)) if const_size > 1 else 1
        self.const_rg = cls(num_replicas, const_stride, const_size)
        self.to_device_map, self.to_host_map = _maps(self.const_rg.assignment, assignment)
        return self

    @property
    def stride(self) -> int:
        """Distance between members of a group (NotImplementedError for a grouping by assignment
        without a constant stride, as popxl)."""
        if self._stride is None:
            raise NotImplementedError(_NON_CONST)
        return self._stride

    @property
    def group_size(self) -> int:
        """Replicas per group."""
        return self._group_size

    @property
    def num_groups(self) -> int:
        """Number of groups."""
        return self._num_replicas // self._group_size

    @property
    def num_replicas(self) -> int:
        """The replication factor the grouping was made for."""
        return self._num_replicas

    @property
    def assignment(self) -> list[int]:
        """Group index of each replica."""
        return list(self._assignment)

    @property
    def is_const(self) -> bool:
        """True when the groups have a constant stride (the kind collectives can use)."""
        return self._stride is not None

    def transpose(self) -> ReplicaGrouping:
        """The grouping whose group j holds the j-th member of every group of this one.

        Constant-stride when it can be (popxl's rule); otherwise a grouping by assignment."""
        if self._stride is not None and (self._stride == 1 or self._stride * self._group_size == self._num_replicas):
            stride = 1 if self._stride > 1 else self._group_size
            return ReplicaGrouping(self._num_replicas, stride, self.num_groups)
        rank: dict[int, int] = {}
        transposed = []
        for group in self._assignment:
            transposed.append(rank.get(group, 0))
            rank[group] = rank.get(group, 0) + 1
        return ReplicaGrouping._from_assignment(self._num_replicas, transposed)

    def _require_const(self, api: str) -> None:
        """NotImplementedError (popxl's) when ``api`` is given a grouping without a constant stride."""
        if self._stride is None:
            raise NotImplementedError(f"{api}: {_NON_CONST}")

    def _layout(self) -> tuple[int, int, int]:
        """(outer, group_size, stride): replica r = (a*group_size + i)*stride + s, i = rank in group."""
        self._require_const("this replica grouping")
        assert self._stride is not None
        return (self._num_replicas // (self._stride * self._group_size), self._group_size, self._stride)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ReplicaGrouping):
            raise TypeError(f"Value must be of type popxl.ReplicaGrouping. Type: {type(other)}. Value: {other}.")
        return other._num_replicas == self._num_replicas and other._assignment == self._assignment

    def __hash__(self) -> int:
        return hash((self._num_replicas, tuple(self._assignment)))

    def __repr__(self) -> str:
        if self._stride is None:
            return f"ReplicaGrouping(assignment={self._assignment})"
        return (f"ReplicaGrouping(num_replicas={self._num_replicas}, stride={self._stride}, "
                f"group_size={self._group_size}, num_groups={self.num_groups})")
