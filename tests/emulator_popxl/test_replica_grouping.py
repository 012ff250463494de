"""Replica groupings as popxl 3.4 builds them: constant-stride groupings, groupings by
assignment, their transpose, and variables laid out over a grouping by assignment."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops


@pytest.fixture
def ir8() -> popxl.Ir:
    return popxl.Ir(replication=8)


@pytest.mark.parametrize(("stride", "group_size", "assignment", "transposed"), [
    # popxl's own documented assignments for 8 replicas, and what their transpose is.
    (1, 2, [0, 0, 1, 1, 2, 2, 3, 3], [0, 1, 0, 1, 0, 1, 0, 1]),
    (1, 4, [0, 0, 0, 0, 1, 1, 1, 1], [0, 1, 2, 3, 0, 1, 2, 3]),
    (2, 4, [0, 1, 0, 1, 0, 1, 0, 1], [0, 0, 1, 1, 2, 2, 3, 3]),
    (4, 2, [0, 1, 2, 3, 0, 1, 2, 3], [0, 0, 0, 0, 1, 1, 1, 1]),
    (1, 8, [0] * 8, list(range(8))),
    (1, 1, list(range(8)), [0] * 8),
])
def test_constant_stride_groupings_and_their_transpose(ir8: popxl.Ir, stride: int, group_size: int,
                                                       assignment: list[int], transposed: list[int]) -> None:
    rg = ir8.replica_grouping(stride=stride, group_size=group_size)
    assert rg.assignment == assignment and rg.is_const
    t = rg.transpose()
    assert t.assignment == transposed and t.is_const
    assert t.transpose() == rg


def test_a_transpose_without_constant_stride_is_a_grouping_by_assignment(ir8: popxl.Ir) -> None:
    rg = ir8.replica_grouping(stride=2, group_size=2)
    assert rg.assignment == [0, 1, 0, 1, 2, 3, 2, 3]
    t = rg.transpose()
    assert t.assignment == [0, 0, 1, 1, 0, 0, 1, 1]
    assert not t.is_const and t.group_size == 4 and t.num_groups == 2
    assert repr(t) == "ReplicaGrouping(assignment=[0, 0, 1, 1, 0, 0, 1, 1])"
    with pytest.raises(NotImplementedError, match="non-constant stride"):
        t.stride  # noqa: B018
    assert t.transpose() == rg


def test_grouping_from_assignments_splits_into_a_constant_grouping(ir8: popxl.Ir) -> None:
    rg = ir8.replica_grouping_from_assignments([0, 0, 1, 1, 0, 0, 1, 1])
    assert rg.const_rg.assignment == [0, 0, 1, 1, 2, 2, 3, 3]
    assert rg.to_device_map == [0, 1, 0, 1]
    assert rg.to_host_map == [0, 1]
    # An assignment with one stride is an ordinary grouping.
    same = ir8.replica_grouping_from_assignments([0, 1, 0, 1, 0, 1, 0, 1])
    assert same.is_const and (same.stride, same.group_size) == (2, 4)
    assert same == ir8.replica_grouping(stride=2, group_size=4)


@pytest.mark.parametrize(("assignment", "message"), [
    ([0, 0, 0, 1, 1, 1, 1, 1], "same size"),
    ([1, 1, 1, 1, 0, 0, 0, 0], "first appearance"),
    ([0, 0, 2, 2, 0, 0, 2, 2], "consecutively"),
    ([0, 0, 1, 1], "number of replicas"),
])
def test_invalid_assignments_are_value_errors(ir8: popxl.Ir, assignment: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ir8.replica_grouping_from_assignments(assignment)


def test_repr_and_equality_as_popxl(ir8: popxl.Ir) -> None:
    rg = ir8.replica_grouping(stride=2, group_size=4)
    assert repr(rg) == "ReplicaGrouping(num_replicas=8, stride=2, group_size=4, num_groups=2)"
    # A stride means nothing for groups of one replica.
    assert ir8.replica_grouping(stride=2, group_size=1) == ir8.replica_grouping(stride=1, group_size=1)
    with pytest.raises(TypeError, match="popxl.ReplicaGrouping"):
        rg == 3  # noqa: B015


def _grouped_program(assignment: list[int], data: np.ndarray) -> tuple[popxl.Ir, popxl.Variable, popxl.DeviceToHostStream]:
    ir = popxl.Ir(replication=len(assignment))
    rg = ir.replica_grouping_from_assignments(assignment)
    with ir.main_graph:
        v = popxl.variable(data, popxl.float32, "w", replica_grouping=rg)
        ops.var_updates.accumulate_(v, popxl.constant(np.ones(data.shape[1:], np.float32)))
        s = popxl.d2h_stream(v.shape, v.dtype, "w_out")
        ops.host_store(s, v)
    return ir, v, s


def test_a_variable_over_a_grouping_by_assignment_holds_its_groups_value_on_each_replica() -> None:
    data = np.array([[1.0, 2.0], [10.0, 20.0]], np.float32)  # one value per group
    ir, v, s = _grouped_program([0, 0, 1, 1, 0, 0, 1, 1], data)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()[s]
        assert out.shape == (8, 2)
        np.testing.assert_array_equal(out[:, 0], [2, 2, 11, 11, 2, 2, 11, 11])
        host = session.get_tensor_data(v)
        np.testing.assert_array_equal(host, [[2.0, 3.0], [11.0, 21.0]])
        session.write_variable_data(v, np.array([[5.0, 5.0], [7.0, 7.0]], np.float32))
        np.testing.assert_array_equal(session.run()[s][:, 1], [6, 6, 8, 8, 6, 6, 8, 8])


def test_collectives_refuse_a_grouping_without_constant_stride() -> None:
    ir = popxl.Ir(replication=4)
    rg = ir.replica_grouping_from_assignments([0, 1, 1, 0])
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        with pytest.raises(NotImplementedError, match="popxl.ops.collectives.*non-constant stride"):
            ops.collectives.replicated_all_reduce(x, group=rg)


def test_const_rg_of_a_strided_assignment_keeps_its_stride() -> None:
    # Groups {0,2,8,10}, {1,3,9,11}, {4,6,12,14}, {5,7,13,15}: members 2 or 6 apart, so the
    # constant grouping splits each into pairs 2 apart.
    ir = popxl.Ir(replication=16)
    rg = ir.replica_grouping_from_assignments([0, 1, 0, 1, 2, 3, 2, 3, 0, 1, 0, 1, 2, 3, 2, 3])
    assert not rg.is_const and rg.group_size == 4
    assert (rg.const_rg.stride, rg.const_rg.group_size) == (2, 2)
    assert rg.const_rg.assignment == [0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7]
    assert rg.to_device_map == [0, 1, 2, 3, 0, 1, 2, 3]
    assert rg.to_host_map == [0, 1, 2, 3]


def test_remote_sharded_variable_of_a_grouping_by_assignment_shards_over_its_const_rg(ir8: popxl.Ir) -> None:
    # groups {0, 1, 4, 5} and {2, 3, 6, 7}: sharded over the constant-stride parts of 2 replicas,
    # as popxl's replica_sharded_buffer lays them out, so a (2 groups, 128) variable has 64-element shards
    rg = ir8.replica_grouping_from_assignments([0, 0, 1, 1, 0, 0, 1, 1])
    with ir8.main_graph:
        buffer = popxl.replica_sharded_buffer((2, 128), popxl.float32, rg)
        v = popxl.remote_replica_sharded_variable(np.zeros((2, 128), np.float32), buffer, replica_grouping=rg)
    assert buffer.tensor_shape == (64,) and buffer.meta_shape == (128,)
    assert v.replica_grouping is rg
    with ir8.main_graph, pytest.raises(ValueError, match=r"a shard of \(128,\) over 2 replicas needs \(64,\)"):
        popxl.remote_replica_sharded_variable(np.zeros((2, 128), np.float32), popxl.remote_buffer((32,), popxl.float32),
                                              replica_grouping=rg)
