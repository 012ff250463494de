"""Remote buffers, remote variables and replica-sharded (RTS) variables on the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops


def _add_weight(x: popxl.Tensor, weight: popxl.Tensor) -> popxl.Tensor:
    return ops.add(weight, x)


def test_tutorial_remote_variables_two_entries_give_the_stated_values() -> None:
    # The tutorial's example: one Add layer, two copies of its weight in two buffer entries;
    # load, bind, add, update (+1 / +2), store, reload.
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        x = popxl.constant(np.ones((5,), np.float32))
        add_graph = ir.create_graph(_add_weight, x.spec, popxl.TensorSpec((5,), popxl.float32))
        buffer = popxl.remote_buffer((5,), popxl.float32, entries=2)

        def load(index: popxl.Tensor) -> popxl.Tensor:
            return ops.remote_load(buffer, index, "weight")

        def store(index: popxl.Tensor, weight: popxl.Tensor) -> None:
            ops.remote_store(buffer, index, weight)

        load_graph = ir.create_graph(load, popxl.TensorSpec((), popxl.int32))
        store_graph = ir.create_graph(store, popxl.TensorSpec((), popxl.int32), popxl.TensorSpec((5,), popxl.float32))
        popxl.remote_variable(np.ones((5,), np.float32), buffer, 0, name="weight")
        popxl.remote_variable(np.ones((5,), np.float32), buffer, 1, name="weight")

        (w0,) = ops.call(load_graph, 0)
        (w1,) = ops.call(load_graph, 1)
        streams = {}

        def out(name: str, t: popxl.Tensor) -> None:
            s = popxl.d2h_stream(t.shape, t.dtype, name)
            ops.host_store(s, t)
            streams[name] = s

        out("w0_initial", w0)
        out("w1_initial", w1)
        (x0,) = ops.call(add_graph, x, w0)
        (x1,) = ops.call(add_graph, x, w1)
        out("x0", x0)
        out("x1", x1)
        w0 += popxl.constant(np.full((5,), 1.0, np.float32))
        w1 += popxl.constant(np.full((5,), 2.0, np.float32))
        ops.call(store_graph, 0, w0)
        ops.call(store_graph, 1, w1)
        (w0b,) = ops.call(load_graph, 0)
        (x0b,) = ops.call(add_graph, x, w0b)
        (w1b,) = ops.call(load_graph, 1)
        (x1b,) = ops.call(add_graph, x, w1b)
        out("w0_after", w0b)
        out("x0_new", x0b)
        out("w1_after", w1b)
        out("x1_new", x1b)

    with popxl.Session(ir, "ipu_hw") as session:
        outputs = session.run()
    expected = {"w0_initial": 1, "w1_initial": 1, "x0": 2, "x1": 2, "w0_after": 2, "x0_new": 3,
                "w1_after": 3, "x1_new": 4}
    for name, value in expected.items():
        np.testing.assert_array_equal(outputs[streams[name]], np.full((5,), value, np.float32), err_msg=name)
    # the duplicate name got popxl's __t suffix, and both variables read back at their entries
    ids = [v.id for v in ir.main_graph.variables]
    assert ids[0] == "weight" and ids[1].startswith("weight__t")


def test_remote_load_shape_meta_shape_and_ids() -> None:
    ir = popxl.Ir()
    ir.replication_factor = 4
    with ir.main_graph:
        buf = popxl.replica_sharded_buffer((3, 5), popxl.float32)
        assert buf.tensor_shape == (4,) and buf.meta_shape == (3, 5) and buf.remote_buffer_id == 1
        second = popxl.remote_buffer((2,), popxl.float16, entries=3)
        assert second.remote_buffer_id == 2
        second.entries = 4
        assert second.entries == 4
        v = popxl.remote_replica_sharded_variable(np.arange(15, dtype=np.float32).reshape(3, 5), buf)
        loaded = ops.remote_load(buf, 0)
    assert v.shape == (3, 5)
    assert loaded.shape == (4,) and loaded.meta_shape == (3, 5)
    assert loaded.id == "id_1_offset_offset_remote_loaded"


def test_remote_replica_sharded_variable_needs_replicas_and_matching_meta_shape() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        buf = popxl.remote_buffer((4,), popxl.float32)
        with pytest.raises(ValueError, match="replication factor is 1"):
            popxl.remote_replica_sharded_variable(np.zeros(8, np.float32), buf)
    ir2 = popxl.Ir()
    ir2.replication_factor = 2
    with ir2.main_graph:
        buf = popxl.remote_buffer((4,), popxl.float32)
        buf.meta_shape = (2, 4)
        with pytest.raises(ValueError, match="meta_shape has already been set"):
            popxl.remote_replica_sharded_variable(np.zeros(8, np.float32), buf)


def test_a_variable_sharded_over_part_of_its_grouping_is_refused_by_name() -> None:
    """A buffer sharded over 2 replicas (its own grouping) holding a variable whose grouping has
    4 (GPT-3 175B's layout: data-parallel shards of tensor-parallel replicated weights): the
    simulator shards a variable over its whole grouping only, so it says so in one line instead
    of calling the buffer wrong."""
    from profcompare.emulator.popxl.errors import SimulatorNotImplementedError

    ir = popxl.Ir()
    ir.replication_factor = 8
    with ir.main_graph:
        buf = popxl.replica_sharded_buffer((4, 128), popxl.float32, ir.replica_grouping(stride=1, group_size=2))
        with pytest.raises(SimulatorNotImplementedError, match=r"^popxl\.remote_replica_sharded_variable sharded "
                           r"over 2 of the 4 replicas of its replica grouping \(RemoteBuffer\[id=\d+\] holds "
                           r"shards of 64\) is not implemented by the profcompare simulator$"):
            popxl.remote_replica_sharded_variable(np.zeros((2, 128), np.float32), buf,
                                                  replica_grouping=ir.replica_grouping(stride=2, group_size=4))


def _rts_program(n: int, replicas: int = 4) -> tuple:
    ir = popxl.Ir()
    ir.replication_factor = replicas
    with ir.main_graph, popxl.in_sequence(True):
        buf = popxl.replica_sharded_buffer((n,), popxl.float32)
        data = np.arange(1, n + 1, dtype=np.float32)
        var = popxl.remote_replica_sharded_variable(data, buf, name="state")
        shard = ops.remote_load(buf, 0)
        shard_s = popxl.d2h_stream(shard.shape, shard.dtype, "shard")
        ops.host_store(shard_s, shard)
        shard += popxl.constant(np.ones(shard.shape, np.float32))
        ops.remote_store(buf, 0, shard)
        full = ops.collectives.replicated_all_gather(shard)
        full_s = popxl.d2h_stream(full.shape, full.dtype, "full")
        ops.host_store(full_s, full)
    return ir, var, shard_s, full_s


def test_rts_variable_is_sharded_with_zero_padding_and_regathered_for_the_host() -> None:
    ir, var, shard_s, full_s = _rts_program(10)
    session = popxl.Session(ir, "ipu_model")
    with session:
        out = session.run()
        # each replica held ceil(10/4) = 3 elements, the last one padded with zeros
        np.testing.assert_array_equal(out[shard_s], [[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 0, 0]])
        # the gathered full tensor drops the padding
        np.testing.assert_array_equal(out[full_s], np.tile(np.arange(2, 12, dtype=np.float32), (4, 1)))
        # the host sees the full shape, with the stored update
        np.testing.assert_array_equal(session.get_tensor_data(var), np.arange(2, 12, dtype=np.float32))
        session.write_variable_data(var, np.full((10,), 5.0, np.float32))
        out = session.run()
        np.testing.assert_array_equal(out[shard_s], [[5, 5, 5], [5, 5, 5], [5, 5, 5], [5, 0, 0]])
    np.testing.assert_array_equal(session.get_tensor_data(var), np.full((10,), 6.0, np.float32))


def test_remote_variable_data_round_trip_and_write_checks() -> None:
    ir = popxl.Ir()
    ir.replication_factor = 2
    with ir.main_graph, popxl.in_sequence(True):
        buf = popxl.remote_buffer((2, 3), popxl.float32, entries=2)
        a = popxl.remote_variable(np.zeros((2, 3), np.float32), buf, 0, name="a")
        b = popxl.remote_variable(np.ones((2, 3), np.float32), buf, 1, name="b")
        t = ops.remote_load(buf, 1)
        t += popxl.constant(np.float32(2.0))
        ops.remote_store(buf, 0, t)
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.run()
        data = session.get_tensors_data([a, b])
    np.testing.assert_array_equal(data[a], np.full((2, 3), 3.0, np.float32))
    np.testing.assert_array_equal(data[b], np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match="dtype"):
        session.write_variable_data(a, np.zeros((2, 3), np.float64))
    with pytest.raises(ValueError, match="shape"):
        session.write_variable_data(a, np.zeros((3, 2), np.float32))
