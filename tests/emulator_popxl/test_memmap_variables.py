"""Variables created from an ``np.memmap`` (popxl 3.4): the memmap is the variable's host data,
never copied, so the Session reads it, writes the device values into it (and flushes it to its
file) and writes new values into it; a read-only memmap turns off weights to host; a
non-constant replica grouping copies the data (with a warning) and drops the memmap."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops


def _memmap(path: Path, values: np.ndarray, mode: str = "w+") -> np.memmap:
    """A memmap of ``path`` holding ``values`` (written, flushed, then opened with ``mode``)."""
    created = np.memmap(path, dtype=values.dtype, shape=values.shape, mode="w+")
    created[...] = values
    created.flush()
    return created if mode == "w+" else np.memmap(path, dtype=values.dtype, shape=values.shape, mode=mode)


def _on_disk(path: Path, like: np.ndarray) -> np.ndarray:
    """What the file holds now, read without the memmap."""
    return np.fromfile(path, dtype=like.dtype).reshape(like.shape)


def _add_one_program(data: np.memmap) -> tuple[popxl.Ir, popxl.Variable]:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(data, name="w")
        ops.var_updates.accumulate_(v, popxl.constant(np.ones(v.shape, np.float32)))
    return ir, v


def test_the_variable_keeps_the_memmap_and_get_tensor_data_returns_it(tmp_path: Path) -> None:
    mm = _memmap(tmp_path / "w.npy", np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    ir, v = _add_one_program(mm)
    assert v._memmap_arr is mm
    assert v.dtype == popxl.float32 and v.shape == (2, 2)
    session = popxl.Session(ir, "ipu_model")
    assert session.get_tensor_data(v) is mm
    assert session.get_tensors_data([v])[v] is mm


def test_weights_to_host_writes_into_the_memmap_and_flushes_the_file(tmp_path: Path) -> None:
    path = tmp_path / "w.npy"
    mm = _memmap(path, np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    ir, v = _add_one_program(mm)
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.run()
        # reading while attached copies the device values into the memmap, not a new array
        got = session.get_tensor_data(v)
        assert got is mm
        np.testing.assert_array_equal(mm, [[2.0, 3.0], [4.0, 5.0]])
        np.testing.assert_array_equal(_on_disk(path, mm), [[2.0, 3.0], [4.0, 5.0]])
        session.run()
    # the weights to host on exit lands in the same memmap and file
    np.testing.assert_array_equal(mm, [[3.0, 4.0], [5.0, 6.0]])
    np.testing.assert_array_equal(_on_disk(path, mm), [[3.0, 4.0], [5.0, 6.0]])
    assert session.get_tensor_data(v) is mm


def test_write_variable_data_writes_into_the_memmap(tmp_path: Path) -> None:
    mm = _memmap(tmp_path / "w.npy", np.zeros((2, 2), np.float32))
    ir, v = _add_one_program(mm)
    session = popxl.Session(ir, "ipu_model")
    session.write_variable_data(v, np.array([[10.0, 20.0], [30.0, 40.0]], np.float32))
    np.testing.assert_array_equal(mm, [[10.0, 20.0], [30.0, 40.0]])
    assert session.get_tensor_data(v) is mm
    with session:
        session.run()
        session.write_variable_data(v, np.full((2, 2), 7.0, np.float32))
        np.testing.assert_array_equal(mm, np.full((2, 2), 7.0))
        session.run()
    np.testing.assert_array_equal(mm, np.full((2, 2), 8.0))


def test_changes_to_the_memmap_before_attaching_reach_the_device(tmp_path: Path) -> None:
    mm = _memmap(tmp_path / "w.npy", np.zeros((2, 2), np.float32))
    ir, _v = _add_one_program(mm)
    session = popxl.Session(ir, "ipu_model")
    mm[...] = 5.0  # the memmap is shared, not copied at variable or session creation
    with session:
        session.run()
    np.testing.assert_array_equal(mm, np.full((2, 2), 6.0))


def test_a_remote_variable_keeps_the_memmap(tmp_path: Path) -> None:
    path = tmp_path / "r.npy"
    mm = _memmap(path, np.array([1.0, 2.0, 3.0], np.float32))
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        buffer = popxl.remote_buffer((3,), popxl.float32, entries=1)
        v = popxl.remote_variable(mm, buffer, 0, name="r")
        loaded = ops.remote_load(buffer, 0)
        ops.remote_store(buffer, 0, loaded * 2)
    assert v._memmap_arr is mm
    session = popxl.Session(ir, "ipu_model")
    assert session.get_tensor_data(v) is mm
    with session:
        session.run()
    np.testing.assert_array_equal(mm, [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(_on_disk(path, mm), [2.0, 4.0, 6.0])


def test_a_replica_sharded_variable_keeps_the_memmap_in_its_full_shape(tmp_path: Path) -> None:
    mm = _memmap(tmp_path / "s.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        v, shard = popxl.replica_sharded_variable(mm, name="s")
        ops.var_updates.accumulate_(shard, popxl.constant(np.full(shard.shape, 10.0, np.float32)))
    assert v._memmap_arr is mm and shard.shape == (3,)
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.run()
    np.testing.assert_array_equal(mm, np.arange(6, dtype=np.float32).reshape(2, 3) + 10)


def test_a_constant_replica_grouping_keeps_the_memmap_with_its_groups_dimension(tmp_path: Path) -> None:
    mm = _memmap(tmp_path / "g.npy", np.array([[1.0, 2.0], [10.0, 20.0]], np.float32))
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        v = popxl.variable(mm, replica_grouping=ir.replica_grouping(group_size=2), name="g")
        ops.var_updates.accumulate_(v, popxl.constant(np.ones((2,), np.float32)))
    assert v._memmap_arr is mm and v.shape == (2,) and v.shape_on_host == (2, 2)
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.run()
    np.testing.assert_array_equal(mm, [[2.0, 3.0], [11.0, 21.0]])


def test_all_replicas_retrieval_returns_every_replica_value_not_the_memmap(tmp_path: Path) -> None:
    mm = _memmap(tmp_path / "a.npy", np.array([1.0, 2.0], np.float32))
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        v = popxl.variable(mm, retrieval_mode="all_replicas", name="a")
        ops.var_updates.accumulate_(v, popxl.constant(np.ones((2,), np.float32)))
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.run()
        got = session.get_tensor_data(v)
    assert got is not mm
    np.testing.assert_array_equal(got, [[2.0, 3.0], [2.0, 3.0]])
    np.testing.assert_array_equal(mm, [2.0, 3.0])  # the memmap holds the first replica's value


def test_a_non_constant_replica_grouping_copies_the_data_and_warns(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    mm = _memmap(tmp_path / "n.npy", np.array([[1.0, 2.0], [10.0, 20.0]], np.float32))
    ir = popxl.Ir(replication=4)
    with ir.main_graph, caplog.at_level(logging.WARNING, logger="popart"):
        rg = ir.replica_grouping_from_assignments([0, 1, 1, 0])
        v = popxl.variable(mm, replica_grouping=rg, name="n")
        ops.var_updates.accumulate_(v, popxl.constant(np.ones((2,), np.float32)))
    assert v._memmap_arr is None
    assert [r.getMessage() for r in caplog.records if r.name == "popart"] == [
        "In creation of variable n, you have passed np.memmap data and a non-const replica grouping, "
        "which requires a copy of the np.memmap data. The variable will be treated as NOT an np.memmap."]
    session = popxl.Session(ir, "ipu_model")
    got = session.get_tensor_data(v)
    assert not isinstance(got, np.memmap)
    with session:
        session.run()
    np.testing.assert_array_equal(session.get_tensor_data(v), [[2.0, 3.0], [11.0, 21.0]])
    np.testing.assert_array_equal(mm, [[1.0, 2.0], [10.0, 20.0]])  # the file is left alone


def test_a_read_only_memmap_turns_off_weights_to_host(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "ro.npy"
    mm = _memmap(path, np.array([[1.0, 2.0], [3.0, 4.0]], np.float32), mode="r")
    ir = popxl.Ir()
    assert ir._has_read_only_memmap is False
    with ir.main_graph:
        v = popxl.variable(mm, name="ro")
        other = popxl.variable(np.zeros((2,), np.float32), name="other")
        ops.var_updates.accumulate_(v, popxl.constant(np.ones((2, 2), np.float32)))
        ops.var_updates.accumulate_(other, popxl.constant(np.ones((2,), np.float32)))
    assert ir._has_read_only_memmap is True and v._memmap_arr is mm
    with caplog.at_level(logging.INFO, logger="popart"):
        session = popxl.Session(ir, "ipu_model")
    assert session.weights_to_host_on_exit is False
    assert any("Weights to host has been disabled" in r.getMessage() for r in caplog.records)
    assert session.get_tensor_data(v) is mm
    with session:
        session.run()
        with pytest.raises(Exception, match="contains a read-only memmap"):
            session.weights_to_host()
        # reading after a run needs the device values on the host, which this Ir cannot copy
        with pytest.raises(Exception, match="contains a read-only memmap"):
            session.get_tensor_data(other)
    # no copy on exit: the host values and the file are the initial ones
    np.testing.assert_array_equal(mm, [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(_on_disk(path, mm), [[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_array_equal(session.get_tensor_data(other), [0.0, 0.0])


def test_a_read_only_memmap_in_a_copied_grouping_still_turns_off_weights_to_host(tmp_path: Path) -> None:
    # popxl marks the Ir before it decides to copy the data of a non-constant grouping
    mm = _memmap(tmp_path / "ro.npy", np.zeros((2, 2), np.float32), mode="r")
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        v = popxl.variable(mm, replica_grouping=ir.replica_grouping_from_assignments([0, 1, 1, 0]))
    assert v._memmap_arr is None and ir._has_read_only_memmap is True
    assert popxl.Session(ir, "ipu_model").weights_to_host_on_exit is False


@pytest.mark.parametrize(("values", "dtype", "message"), [
    (np.zeros((2, 2), np.float64), None, "requires downcasting"),
    (np.zeros((2, 2), np.int64), None, "requires downcasting"),
    (np.zeros((2, 2), np.float32), popxl.float16, "must be None or the same"),
])
def test_memmaps_popxl_would_have_to_copy_are_refused(tmp_path: Path, values: np.ndarray,
                                                      dtype: popxl.dtype | None, message: str) -> None:
    mm = _memmap(tmp_path / "bad.npy", values)
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(ValueError, match=message):
        popxl.variable(mm, dtype)


def test_a_fortran_ordered_memmap_is_refused(tmp_path: Path) -> None:
    mm = np.memmap(tmp_path / "f.npy", dtype=np.float32, shape=(2, 3), mode="w+", order="F")
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(ValueError, match="C-ordered and aligned"):
        popxl.variable(mm)


def test_a_matching_dtype_is_accepted_and_the_downcast_flag_does_not_matter(tmp_path: Path) -> None:
    mm = _memmap(tmp_path / "h.npy", np.array([1.5, 2.5], np.float16))
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(mm, popxl.float16, downcast=False)
    assert v._memmap_arr is mm and v.dtype == popxl.float16
    with ir.main_graph, pytest.raises(ValueError, match="requires downcasting"):
        popxl.variable(_memmap(tmp_path / "d.npy", np.zeros((2,), np.float64)), downcast=False)


def test_ordinary_arrays_are_still_copied() -> None:
    data = np.array([1.0, 2.0], np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(data)
    assert v._memmap_arr is None
    session = popxl.Session(ir, "ipu_model")
    data[0] = 100.0
    np.testing.assert_array_equal(session.get_tensor_data(v), [1.0, 2.0])
