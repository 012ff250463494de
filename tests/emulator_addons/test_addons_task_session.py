"""popxl_addons.TaskSession on the simulator: checkpoint files and the values they hold, loading
them into another session, missing-key reports, step counting, the kept-checkpoint limit, the
dataloader hooks, loading from a session, and the 3.0 single-file checkpoints."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons.named_tensors import NamedTensorData

W0 = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
B0 = np.array([0.5, -0.5], np.float32)


class _Layer(addons.Module):
    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w = self.add_variable_input("weight", lambda: W0.copy(), popxl.float32)
        b = self.add_variable_input("bias", lambda: B0.copy(), popxl.float32)
        return x @ w + b


class _Model(addons.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = _Layer()

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        return self.fc(x)


def _session(max_checkpoints: int | None = None) -> Any:
    """A session whose run adds 1 to every weight and outputs x @ w + b."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        x_h2d = popxl.h2d_stream((2,), popxl.float32, "x")
        x = ops.host_load(x_h2d)
        facts, graph = _Model().create_graph(x)
        state = facts.init()
        (y,) = graph.bind(state).call(x)
        y_d2h = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(y_d2h, y)
        for t in state.tensors:
            ops.var_updates.accumulate_(t, popxl.constant(np.ones(t.shape, np.float32)))
    extra = {} if max_checkpoints is None else {"max_checkpoints": max_checkpoints}
    return addons.TaskSession([x_h2d], [y_d2h], state, ir=ir, device_desc="ipu_hw", **extra)


def test_streams_state_and_named_data() -> None:
    session = _session()
    assert list(session.inputs.keys()) == ["x"] and list(session.outputs.keys()) == ["y"]
    with session:
        y = session.run({session.inputs.x: np.array([1.0, 1.0], np.float32)})[session.outputs.y]
    np.testing.assert_array_equal(y, [4.5, 5.5])
    data = session.get_named_tensors_data()
    assert isinstance(data, NamedTensorData)
    np.testing.assert_array_equal(data.fc.weight, W0 + 1)
    np.testing.assert_array_equal(data.fc.bias, B0 + 1)
    assert session.session_state == {"steps": 1}


def test_a_checkpoint_round_trips_the_values(tmp_path: Path) -> None:
    session = _session()
    with session:
        for _ in range(3):
            session.run({session.inputs.x: np.zeros(2, np.float32)})
    session.add_session_state_info({"lr": 0.1})
    session.save_checkpoint(str(tmp_path / "ckpt"))
    files = sorted(os.listdir(tmp_path / "ckpt" / "model"))
    assert files == ["fc.bias.npz", "fc.weight.npz"]
    np.testing.assert_array_equal(np.load(tmp_path / "ckpt" / "model" / "fc.weight.npz")["fc.weight"], W0 + 3)
    assert json.loads((tmp_path / "ckpt" / "session_info.json").read_text()) == {"steps": 3, "lr": 0.1}

    fresh = _session()
    fresh.add_session_state_info({"lr": 0.1})
    fresh.load_checkpoint(str(tmp_path / "ckpt"), report_missing="error")
    assert fresh.session_state == {"steps": 3, "lr": 0.1}
    np.testing.assert_array_equal(fresh.get_tensor_data(fresh.state.fc.bias), B0 + 3)
    with fresh:  # the loaded values are what the device starts from
        y = fresh.run({fresh.inputs.x: np.array([1.0, 0.0], np.float32)})[fresh.outputs.y]
    np.testing.assert_array_equal(y, (W0 + 3)[0] + B0 + 3)
    assert fresh.session_state["steps"] == 4


def test_missing_files_are_reported(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    session = _session()
    session.save_checkpoint(str(tmp_path))
    os.remove(tmp_path / "model" / "fc.bias.npz")
    os.remove(tmp_path / "session_info.json")
    fresh = _session()
    with pytest.raises(ValueError, match="state keys not in checkpoint: .*fc.bias.npz"):
        fresh.load_checkpoint(str(tmp_path), report_missing="error")
    with caplog.at_level(logging.WARNING):
        fresh.load_checkpoint(str(tmp_path))
    assert "fc.bias.npz" in caplog.text
    fresh.load_checkpoint(str(tmp_path), report_missing="none")
    assert fresh.session_state == {"steps": 0}  # no session_info.json


def test_only_max_checkpoints_directories_are_kept(tmp_path: Path) -> None:
    session = _session(max_checkpoints=2)
    for name in ("a", "b", "c"):
        session.save_checkpoint(str(tmp_path / name))
    assert sorted(os.listdir(tmp_path)) == ["b", "c"]


def test_the_dataloader_is_saved_and_resumed(tmp_path: Path) -> None:
    class Loader:
        def __init__(self) -> None:
            self.calls: list[tuple[str, str]] = []

        def save(self, filename: str) -> None:
            self.calls.append(("save", os.path.basename(filename)))

        def resume(self, filename: str) -> None:
            self.calls.append(("resume", os.path.basename(filename)))

        def get_state(self) -> dict[str, int]:
            return {}

    session = _session()
    with pytest.raises(ValueError, match="save and resume"):
        session.dataloader = object()
    session.dataloader = loader = Loader()
    session.save_checkpoint(str(tmp_path))
    session.load_checkpoint(str(tmp_path))
    assert loader.calls == [("save", "dataloader.bin"), ("resume", "dataloader.bin")]


def test_load_from_session_copies_by_key() -> None:
    src = _session()
    with src:
        src.run({src.inputs.x: np.zeros(2, np.float32)})
    dst = _session()
    dst.load_from_session(src, report_missing="error")
    np.testing.assert_array_equal(dst.get_tensor_data(dst.state.fc.weight), W0 + 1)


def test_30_checkpoints_are_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    session = _session()
    with session:
        session.run({session.inputs.x: np.zeros(2, np.float32)})
    path = str(tmp_path / "sub" / "state.npz")
    session.save_checkpoint(path)
    ckpt = np.load(path, allow_pickle=True)["ckpt"].item()
    assert sorted(ckpt) == ["fc.bias", "fc.weight"]
    np.testing.assert_array_equal(ckpt["fc.weight"], W0 + 1)
    fresh = _session()
    fresh.load_checkpoint(path, report_missing="error")
    np.testing.assert_array_equal(fresh.get_tensor_data(fresh.state.fc.bias), B0 + 1)
    assert not hasattr(fresh, "session_state")
    with pytest.raises(AttributeError, match="only in popxl-addons 3.4"):
        fresh.add_session_state_info({})
    with pytest.raises(TypeError):
        _session(max_checkpoints=2)
