"""ReplicaGrouping: which replicas form a group (popxl replica_grouping.py, minimal)."""

from __future__ import annotations

import numpy as np

from .errors import SimulatorNotImplementedError, not_implemented_message


class ReplicaGrouping:
    """Groups of ``group_size`` replicas, members ``stride`` apart (created by ``ir.replica_grouping``)."""

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
        self._stride = stride
        self._group_size = group_size

    @property
    def stride(self) -> int:
        """Distance between members of a group."""
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
        r = np.arange(self._num_replicas)
        block = self._stride * self._group_size
        return [int(x) for x in (r // block) * self._stride + r % self._stride]

    @property
    def is_const(self) -> bool:
        """True when the grouping is the contiguous kind variables support directly."""
        return self._stride == 1 or self._group_size == 1 or self.num_groups == 1

    @property
    def const_rg(self) -> ReplicaGrouping:
        """This grouping (the simulator does not rearrange variables)."""
        return self

    def transpose(self) -> ReplicaGrouping:
        """The complementary grouping (members of different groups of this one)."""
        if self._stride == 1:
            return ReplicaGrouping(self._num_replicas, self._group_size, self.num_groups)
        if self._group_size == 1:
            return ReplicaGrouping(self._num_replicas, 1, self._num_replicas)
        raise SimulatorNotImplementedError(not_implemented_message("ReplicaGrouping.transpose for strided groups"))

    def _layout(self) -> tuple[int, int, int]:
        """(outer, group_size, stride): replica r = (a*group_size + i)*stride + s, i = rank in group."""
        return (self._num_replicas // (self._stride * self._group_size), self._group_size, self._stride)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, ReplicaGrouping) and other._num_replicas == self._num_replicas
                and other._stride == self._stride and other._group_size == self._group_size)

    def __hash__(self) -> int:
        return hash((self._num_replicas, self._stride, self._group_size))

    def __repr__(self) -> str:
        return (f"ReplicaGrouping(num_replicas={self._num_replicas}, stride={self._stride}, "
                f"group_size={self._group_size})")
