"""retrieval_mode="all_replicas": one value per replica from get_tensor(s)_data, indexed by
replica, for on-chip, remote and replica-sharded variables; writes refused as in popxl 3.4."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops


def _diverging_program(mode: str) -> tuple[popxl.Ir, popxl.HostToDeviceStream, popxl.Variable]:
    """4 replicas in groups {0,1} and {2,3}; each replica adds its own host data to v."""
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        rg = ir.replica_grouping(group_size=2)
        v = popxl.variable(np.array([[1.0, 2.0], [10.0, 20.0]], np.float32), replica_grouping=rg,
                           retrieval_mode=mode, name="v")
        x = popxl.h2d_stream((2,), popxl.float32, "x")
        ops.add_(v, ops.host_load(x))
    return ir, x, v


def test_all_replicas_returns_every_replica_value_by_replica_index() -> None:
    ir, x, v = _diverging_program("all_replicas")
    assert v.retrieval_mode == "all_replicas" and v.shape_on_host == (2, 2)
    data = np.array([[100, 0], [200, 0], [300, 0], [400, 0]], np.float32)
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.run({x: data})
        got = session.get_tensor_data(v)
    group_of_replica = np.array([[1, 2], [1, 2], [10, 20], [10, 20]], np.float32)
    np.testing.assert_array_equal(got, group_of_replica + data)
    assert got.shape == (4, 2) and got.dtype == np.float32
    # outside the context: the values of the weights_to_host done on exit
    np.testing.assert_array_equal(session.get_tensor_data(v), group_of_replica + data)


def test_one_per_group_returns_the_first_replica_of_each_group() -> None:
    ir, x, v = _diverging_program("one_per_group")
    data = np.array([[100, 0], [200, 0], [300, 0], [400, 0]], np.float32)
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.run({x: data})
    np.testing.assert_array_equal(session.get_tensor_data(v), np.array([[101, 2], [310, 20]], np.float32))


def test_ungrouped_variable_gets_a_new_replica_axis() -> None:
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        v = popxl.variable(np.arange(3, dtype=np.int32), retrieval_mode="all_replicas")
        x = popxl.h2d_stream((3,), popxl.int32, "x")
        ops.add_(v, ops.host_load(x))
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.run({x: np.array([[1, 1, 1], [5, 5, 5]], np.int32)})
        got = session.get_tensors_data([v])[v]
    np.testing.assert_array_equal(got, np.array([[1, 2, 3], [5, 6, 7]], np.int32))


def test_groups_of_one_replica_behave_as_one_per_group() -> None:
    # group_size 1: popxl uses the one-per-group path, so the shape is (num_groups, *shape)
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        rg = ir.replica_grouping(group_size=1)
        v = popxl.variable(np.array([[1.0], [2.0]], np.float32), replica_grouping=rg, retrieval_mode="all_replicas")
    session = popxl.Session(ir, "ipu_model")
    np.testing.assert_array_equal(session.get_tensor_data(v), np.array([[1.0], [2.0]], np.float32))
    session.write_variable_data(v, np.array([[3.0], [4.0]], np.float32))
    np.testing.assert_array_equal(session.get_tensor_data(v), np.array([[3.0], [4.0]], np.float32))


def test_strided_groups_are_returned_in_replica_order() -> None:
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        rg = ir.replica_grouping(stride=2, group_size=2)  # groups {0,2} and {1,3}
        v = popxl.variable(np.array([7, 9], np.int32), replica_grouping=rg, retrieval_mode="all_replicas")
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.weights_to_host()
        np.testing.assert_array_equal(session.get_tensor_data(v), np.array([7, 9, 7, 9], np.int32))


def test_before_any_device_to_host_copy_the_buffer_is_zero() -> None:
    # popxl reads its per-replica device-to-host buffer, zeroed when the session attaches
    ir, _, v = _diverging_program("all_replicas")
    session = popxl.Session(ir, "ipu_model")
    with pytest.raises(ValueError, match="after the session has been attached"):
        session.get_tensor_data(v)
    with session:
        np.testing.assert_array_equal(session.get_tensor_data(v), np.zeros((4, 2), np.float32))


def test_remote_and_replica_sharded_variables() -> None:
    ir = popxl.Ir(replication=2)
    with ir.main_graph, popxl.in_sequence(True):
        buf = popxl.remote_buffer((2,), popxl.float32)
        r = popxl.remote_variable(np.array([1.0, 2.0], np.float32), buf, retrieval_mode="all_replicas")
        x = popxl.h2d_stream((2,), popxl.float32, "x")
        loaded = ops.remote_load(buf, 0)
        ops.add_(loaded, ops.host_load(x))
        ops.remote_store(buf, 0, loaded)
        full, shard = popxl.replica_sharded_variable(np.array([1.0, 2.0, 3.0, 4.0], np.float32),
                                                     retrieval_mode="all_replicas")
        ops.add_(shard, popxl.constant(np.float32(10)))
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.run({x: np.array([[1, 1], [3, 3]], np.float32)})
        got = session.get_tensors_data([r, full])
    np.testing.assert_array_equal(got[r], np.array([[2, 3], [4, 5]], np.float32))
    np.testing.assert_array_equal(got[full], np.array([[11, 12, 13, 14]] * 2, np.float32))


def test_write_is_refused_as_in_popxl() -> None:
    ir, _, v = _diverging_program("all_replicas")
    session = popxl.Session(ir, "ipu_model")
    with pytest.raises(ValueError, match="shape"):  # the shape is checked first
        session.write_variable_data(v, np.zeros((4, 2), np.float32))
    with pytest.raises(NotImplementedError, match="all_replicas"):
        session.write_variable_data(v, np.zeros((2, 2), np.float32))


def test_unknown_mode_is_rejected() -> None:
    with popxl.Ir().main_graph, pytest.raises(ValueError, match="retrieval_mode"):
        popxl.variable(1.0, retrieval_mode="every_replica")
