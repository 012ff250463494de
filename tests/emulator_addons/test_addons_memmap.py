"""popxl-addons 3.4 ``memmap_dir``: ``init``/``init_remote`` (and the factories' ``create_*``)
back each variable with ``np.memmap`` of ``<memmap_dir>/<name>.npy``, created and filled from
the factory when missing, reused (``r+``, or ``r`` with ``read_only_if_exists``) when present;
the Session writes device values into it. 3.0 has no ``memmap_dir``: its signature refuses it."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons import remote
from profcompare.emulator.popxl_addons.task_session import TaskSession


def _use(monkeypatch: pytest.MonkeyPatch, generation: str) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", generation)


class _Counting:
    """A data_iter callable returning 1, 2, 3, ... filled into a (2, 3) float32 array."""

    def __init__(self) -> None:
        self.counter = itertools.count(1)

    def __call__(self) -> np.ndarray:
        return np.full((2, 3), float(next(self.counter)), np.float32)


class _Scale(addons.Module):
    def __init__(self, data: _Counting) -> None:
        super().__init__()
        self.data = data

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w = self.add_variable_input("w", self.data, popxl.float32)
        return x * w


def _factories(data: _Counting) -> addons.NamedVariableFactories:
    facts, _ = _Scale(data).create_graph(popxl.TensorSpec((2, 3), popxl.float32))
    return facts


def _on_disk(path: Path) -> np.ndarray:
    """The raw float32 contents of a memmap file (popxl-addons writes no .npy header)."""
    return np.fromfile(path, dtype=np.float32).reshape(2, 3)


def test_init_creates_and_fills_one_memmap_file_per_variable(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    _use(monkeypatch, "3.4")
    data = _Counting()
    memmap_dir = tmp_path / "new" / "dir"  # created when missing
    ir = popxl.Ir()
    with ir.main_graph:
        variables = _factories(data).init("model", memmap_dir=str(memmap_dir))
    w = variables.w
    assert w.name == "model.w"
    assert isinstance(w._memmap_arr, np.memmap) and w._memmap_arr.mode == "w+"
    assert Path(w._memmap_arr.filename) == memmap_dir / "model.w.npy"
    # the value drawn at build time (call 1 tests the callable, call 2 is peeked and used)
    np.testing.assert_array_equal(w._memmap_arr, np.full((2, 3), 2.0))
    session = popxl.Session(ir, "ipu_model")
    assert session.get_tensor_data(w) is w._memmap_arr


def test_a_training_step_lands_in_the_memmap_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _use(monkeypatch, "3.4")
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        facts, graph = _Scale(_Counting()).create_graph(popxl.TensorSpec((2, 3), popxl.float32))
        variables = facts.init("model", memmap_dir=str(tmp_path))
        x = popxl.variable(np.ones((2, 3), np.float32), name="x")
        (y,) = graph.bind(variables).call(x)
        ops.var_updates.accumulate_(variables.w, y)  # w += x * w with x = 1: w doubles
    session = TaskSession(inputs=[], outputs=[], state=variables, ir=ir, device_desc="ipu_hw")
    weight = session.get_tensor_data(session.state.w)
    assert weight is session.state.w._memmap_arr
    with session:
        session.run()
    np.testing.assert_array_equal(weight, np.full((2, 3), 4.0))
    np.testing.assert_array_equal(_on_disk(tmp_path / "model.w.npy"), np.full((2, 3), 4.0))


def test_an_existing_file_is_reused_without_drawing_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _use(monkeypatch, "3.4")
    np.full((2, 3), 9.0, np.float32).tofile(tmp_path / "model.w.npy")
    data = _Counting()
    ir = popxl.Ir()
    with ir.main_graph:
        facts = _factories(data)
        drawn = next(data.counter)
        w = facts.init("model", memmap_dir=str(tmp_path)).w
    assert w._memmap_arr.mode == "r+" and not ir._has_read_only_memmap
    np.testing.assert_array_equal(w._memmap_arr, np.full((2, 3), 9.0))
    assert next(data.counter) == drawn + 1  # the factory drew nothing for the reused file


def test_read_only_if_exists_opens_an_existing_file_read_only(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    _use(monkeypatch, "3.4")
    ir = popxl.Ir()
    with ir.main_graph:
        # a missing file is still created writable
        first = _factories(_Counting()).init("a", memmap_dir=str(tmp_path), read_only_if_exists=True).w
        assert first._memmap_arr.mode == "w+" and not ir._has_read_only_memmap
        second = _factories(_Counting()).init("a", memmap_dir=str(tmp_path), read_only_if_exists=True).w
    assert second._memmap_arr.mode == "r" and ir._has_read_only_memmap
    np.testing.assert_array_equal(second._memmap_arr, np.full((2, 3), 2.0))
    session = popxl.Session(ir, "ipu_model")
    assert session.weights_to_host_on_exit is False
    with session, pytest.raises(Exception, match="read-only memmap"):
        session.weights_to_host()


def test_empty_creates_a_zero_file_without_drawing(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _use(monkeypatch, "3.4")
    data = _Counting()
    ir = popxl.Ir()
    with ir.main_graph:
        facts = _factories(data)
        drawn = next(data.counter)
        w = facts.init(memmap_dir=str(tmp_path), empty=True).w
    assert Path(w._memmap_arr.filename) == tmp_path / "w.npy"
    np.testing.assert_array_equal(_on_disk(tmp_path / "w.npy"), np.zeros((2, 3)))
    assert next(data.counter) == drawn + 1


def test_an_empty_memmap_dir_means_no_memmap(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, "3.4")
    ir = popxl.Ir()
    with ir.main_graph:
        w = _factories(_Counting()).init(memmap_dir="").w
    assert w._memmap_arr is None


def test_init_remote_backs_remote_variables_with_memmaps(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _use(monkeypatch, "3.4")
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        facts = _factories(_Counting())
        buffers = addons.named_variable_buffers(facts)
        variables = facts.init_remote(buffers, 0, "model", memmap_dir=str(tmp_path))
        loaded = remote.load_remote(buffers)
        ops.var_updates.accumulate_(loaded.w, popxl.constant(np.full((2, 3), 0.5, np.float32)))
        remote.store_remote(buffers, loaded)
    w = variables.w
    assert w.remote_buffer is buffers.w and Path(w._memmap_arr.filename) == tmp_path / "model.w.npy"
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.run()
    assert session.get_tensor_data(w) is w._memmap_arr
    np.testing.assert_array_equal(_on_disk(tmp_path / "model.w.npy"), np.full((2, 3), 2.5))


def test_factory_methods_take_memmap_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _use(monkeypatch, "3.4")
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        grouped = addons.VariableFactory(lambda: np.ones((3,), np.float32), popxl.float32, "g",
                                         replica_grouping=ir.replica_grouping(group_size=2))
        v = grouped.create_tensor(memmap_dir=str(tmp_path))
        buffer = popxl.remote_buffer((3,), popxl.float32, entries=2)
        plain = addons.VariableFactory(lambda: np.full((3,), 4.0, np.float32), popxl.float32, "p")
        r = plain.create_remote_tensor(buffer, 1, "remote", memmap_dir=str(tmp_path))
    # two replica groups: a leading groups dimension in the file
    assert v._memmap_arr.shape == (2, 3) and Path(v._memmap_arr.filename) == tmp_path / "g.npy"
    assert r._memmap_arr.shape == (3,) and Path(r._memmap_arr.filename) == tmp_path / "remote.npy"
    np.testing.assert_array_equal(np.fromfile(tmp_path / "remote.npy", np.float32), [4.0, 4.0, 4.0])
    memmap = plain.next_memmap(str(tmp_path), "remote")
    assert isinstance(memmap, np.memmap) and memmap.mode == "r+"


def test_3_0_has_no_memmap_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _use(monkeypatch, "3.0")
    ir = popxl.Ir()
    with ir.main_graph:
        facts = _factories(_Counting())
        with pytest.raises(TypeError, match=r"^NamedVariableFactories.init\(\) got an unexpected keyword argument "
                                            r"'memmap_dir' \(popxl-addons 3.0: init\(prefix=None\)"):
            facts.init("model", memmap_dir=str(tmp_path))
        buffers = addons.named_variable_buffers(facts)
        with pytest.raises(TypeError, match=r"unexpected keyword argument 'memmap_dir' \(popxl-addons 3.0"):
            facts.init_remote(buffers, 0, "model", memmap_dir=str(tmp_path))
        factory = facts.to_dict()["w"]
        with pytest.raises(TypeError, match=r"unexpected keyword argument 'memmap_dir' \(popxl-addons 3.0"):
            factory.create_tensor("w", memmap_dir=str(tmp_path))
        with pytest.raises(TypeError, match=r"unexpected keyword argument 'memmap_dir' \(popxl-addons 3.0"):
            factory.create_remote_tensor(buffers.w, 0, memmap_dir=str(tmp_path))
        with pytest.raises(AttributeError, match="only in popxl-addons 3.4"):
            factory.next_memmap(str(tmp_path), "w")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("generation", ["3.0", "3.4"])
def test_create_remote_tensor_needs_an_entry_in_both_generations(monkeypatch: pytest.MonkeyPatch,
                                                                 generation: str) -> None:
    _use(monkeypatch, generation)
    ir = popxl.Ir()
    with ir.main_graph:
        factory = addons.VariableFactory(lambda: np.zeros((3,), np.float32), popxl.float32, "p")
        buffer = popxl.remote_buffer((3,), popxl.float32)
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'entry'"):
            factory.create_remote_tensor(buffer)
        assert factory.create_remote_tensor(buffer, 0)._memmap_arr is None
