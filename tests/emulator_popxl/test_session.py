"""Session: device names, attach/detach, host array shapes and clear input errors, engine hooks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from profcompare.emulator import engine as engine_module
from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops
from profcompare.emulator.program import LoweredProgram
from profcompare.errors import ProfcompareError


def _program(replicas: int = 4, transfers: int = 8) -> tuple[popxl.Ir, Any, Any, Any, popxl.Variable]:
    ir = popxl.Ir()
    ir.replication_factor = replicas
    with ir.main_graph, popxl.in_sequence(True):
        img = popxl.h2d_stream((2, 3), popxl.float32, "image")
        lab = popxl.h2d_stream((2,), popxl.int32, "labels")
        loss = popxl.d2h_stream((), popxl.float32, "loss")
        total = popxl.variable(np.zeros((), np.float32), name="total")
        for _ in range(transfers):
            x = ops.host_load(img)
            y = ops.host_load(lab, "labels")
            s = ops.sum(x) + ops.sum(ops.cast(y, popxl.float32))
            ops.host_store(loss, s)
            total += s
    ir.num_host_transfers = transfers
    return ir, img, lab, loss, total


def test_session_runs_with_host_shapes_and_says_it_is_simulated() -> None:
    ir, img, lab, loss, total = _program()
    session = popxl.Session(ir, "ipu_hw")
    assert session.simulated is True and "profcompare simulator (not hardware)" in repr(session)
    assert session.num_ipus == 4 and not session.is_attached
    assert session.expected_inputs() == [img, lab]
    assert session._full_input_shape(img.shape) == (8, 4, 2, 3)
    images = np.arange(8 * 4 * 6, dtype=np.float32).reshape(8, 4, 2, 3)
    labels = np.ones((8, 4, 2), np.int64)  # downcast to int32 by default
    with session:
        assert session.is_attached
        out = session.run({img: images, lab: labels})
        # reading a variable while attached brings fresh device values to the host
        assert session.get_tensor_data(total) == pytest.approx(float(images[:, 0].sum() + 16))
    assert out[loss].shape == (8, 4)
    np.testing.assert_allclose(out[loss], images.sum(axis=(2, 3)) + 2)
    assert not session.is_attached


def test_run_errors_name_the_stream_and_the_expected_shape() -> None:
    ir, img, lab, _loss, _total = _program()
    session = popxl.Session(ir, "ipu_model")
    good = {img: np.zeros((8, 4, 2, 3), np.float32), lab: np.zeros((8, 4, 2), np.int32)}
    with pytest.raises(ValueError, match="inside `with session:`"):
        session.run(good)
    with session:
        with pytest.raises(ProfcompareError, match=r"'image'.*\(8, 4, 2, 3\).*got \(4, 8, 2, 3\)"):
            session.run({**good, img: np.zeros((4, 8, 2, 3), np.float32)})
        with pytest.raises(ValueError, match="Missing input stream.*'labels'"):
            session.run({img: good[img]})
        with pytest.raises(ValueError, match="'image': expected dtype float32, got int32"):
            session.run({**good, img: np.zeros((8, 4, 2, 3), np.int32)})
        with pytest.raises(ValueError, match="expected dtype int32, got int64"):
            session.run({**good, lab: np.zeros((8, 4, 2), np.int64)}, downcast_inputs=False)
        other = popxl.Ir()
        with other.main_graph:
            stray = popxl.h2d_stream((1,), popxl.float32, "stray")
        with pytest.raises(ValueError, match="Unexpected input stream.*'stray'"):
            session.run({**good, stray: np.zeros(1, np.float32)})
        session.run(good)


def test_single_replica_single_transfer_shapes_have_no_extra_dims() -> None:
    ir, img, lab, loss, _total = _program(replicas=1, transfers=1)
    with popxl.Session(ir, "cpu") as session:
        out = session.run({img: np.ones((2, 3), np.float32), lab: np.zeros((2,), np.int32)})
    assert out[loss].shape == () and float(out[loss]) == 6.0


def test_device_names_and_cpu_limit() -> None:
    ir, *_ = _program(replicas=2, transfers=8)
    with pytest.raises(ValueError, match="one of cpu, ipu_model, ipu_hw"):
        popxl.Session(ir, "gpu")
    with pytest.raises(ValueError, match="device 'cpu' supports one IPU"):
        popxl.Session(ir, "cpu")
    ir3, *_ = _program(replicas=3, transfers=8)
    assert popxl.Session(ir3, "ipu_model").num_ipus == 4


def test_too_few_host_transfers_is_an_error_at_session_creation() -> None:
    ir, *_ = _program(replicas=1, transfers=2)
    ir.num_host_transfers = 1
    with pytest.raises(ValueError, match="transferred 2 times per run"):
        popxl.Session(ir, "ipu_model")


def test_variable_data_io_and_types() -> None:
    ir = popxl.Ir()
    ir.replication_factor = 2
    with ir.main_graph:
        w = popxl.variable(np.arange(3, dtype=np.float32), name="w")
        c = popxl.constant(np.float32(7.0), name="c")
        w += c
        inter = w + 0.0
    session = popxl.Session(ir, "ipu_model")
    np.testing.assert_array_equal(session.get_tensor_data(w), [0, 1, 2])  # host copy before any run
    with pytest.raises(TypeError, match="Variables or Constants"):
        session.get_tensor_data(inter)
    with session:
        session.run()
        np.testing.assert_array_equal(session.get_tensor_data(w), [7, 8, 9])
        session.write_variables_data({w: np.zeros(3, np.float32)})
        session.run()
    assert float(session.get_tensor_data(c)) == 7.0
    np.testing.assert_array_equal(session.get_tensor_data(w), [7, 7, 7])
    with pytest.raises(ValueError, match="data shape"):
        session.write_variable_data(w, np.zeros(4, np.float32))


def test_session_hands_the_lowered_program_to_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []

    class Recorder:
        def __init__(self, program: LoweredProgram, device: str = "ipu_model", environ: Any = None) -> None:
            calls.append(("init", program, device, environ is not None))

        def on_run(self) -> None:
            calls.append("run")

        def on_detach(self) -> None:
            calls.append("detach")

    monkeypatch.setattr(engine_module, "Engine", Recorder)
    ir, img, lab, *_ = _program(replicas=2, transfers=8)
    session = popxl.Session(ir, "ipu_hw")
    kind, program, device, has_env = calls[0]
    assert kind == "init" and isinstance(program, LoweredProgram) and device == "ipu_hw" and has_env
    assert program.replicas == 2 and program.num_host_transfers == 8
    with session:
        session.run({img: np.zeros((8, 2, 2, 3), np.float32), lab: np.zeros((8, 2, 2), np.int32)})
        session.run({img: np.zeros((8, 2, 2, 3), np.float32), lab: np.zeros((8, 2, 2), np.int32)})
    assert calls[1:] == ["run", "run", "detach"]
    # the Ir is frozen once a session exists
    with pytest.raises(RuntimeError):
        ir.replication_factor = 4


def test_engine_errors_propagate(monkeypatch: pytest.MonkeyPatch) -> None:
    from profcompare.errors import IpuOutOfMemoryError

    class Failing:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise IpuOutOfMemoryError("does not fit", "/tmp/x")

    monkeypatch.setattr(engine_module, "Engine", Failing)
    ir, *_ = _program(replicas=1, transfers=8)
    with pytest.raises(IpuOutOfMemoryError):
        popxl.Session(ir, "ipu_hw")


def test_grouped_variables_have_a_group_dimension_on_the_host() -> None:
    ir = popxl.Ir()
    ir.replication_factor = 4
    with ir.main_graph:
        groups = ir.replica_grouping(group_size=2)
        v = popxl.variable(np.array([[1.0, 1.0], [5.0, 5.0]], np.float32), name="v", replica_grouping=groups)
        v += popxl.constant(np.float32(1.0))
        s = popxl.d2h_stream(v.shape, v.dtype, "v_out")
        ops.host_store(s, v + 0.0)
    assert v.shape == (2,) and v.shape_on_host == (2, 2)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()
    np.testing.assert_array_equal(out[s], [[2, 2], [2, 2], [6, 6], [6, 6]])
    np.testing.assert_array_equal(session.get_tensor_data(v), [[2, 2], [6, 6]])
