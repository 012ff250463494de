"""Compile-only execution of a popxl program: the same report as numeric execution, no values.

The program has what decides memory and cycles: on-chip, grouped, remote and replica-sharded
variables, two h2d streams and a d2h stream over two host transfers, a called subgraph and a
training-style in-place update, on 2 replicas.
"""

from __future__ import annotations

import json
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pandas.testing as pdt
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl.errors import CompileOnlyWarning, SessionInputError
from profcompare.readers.store import read_report

from .forbid import forbid_numeric_execution

COMPILE_ONLY = {"PROFCOMPARE_SIM_EXECUTION": "compile-only"}


def _build():
    ir = popxl.Ir()
    ir.replication_factor = 2
    ir.num_host_transfers = 2
    with ir.main_graph:
        x_stream = popxl.h2d_stream((4, 16), popxl.float32, "x")
        lr_stream = popxl.h2d_stream((), popxl.float32, "lr")
        y_stream = popxl.d2h_stream((4, 8), popxl.float16, "y")
        w = popxl.variable(np.arange(16 * 8, dtype=np.float64).reshape(16, 8) / 100, name="w")
        groups = ir.replica_grouping(group_size=1)  # two groups of one replica
        g = popxl.variable(np.ones((2, 8), np.float32), name="g", replica_grouping=groups)
        buffer = popxl.remote_buffer((8,), popxl.float32, entries=2)
        r = popxl.remote_variable(np.full(8, 3.0, np.float32), buffer, 1, name="r")
        full, shard = popxl.replica_sharded_variable(np.ones((4, 8), np.float32), name="s")
        sub = ir.create_graph(lambda a, b: ops.gelu(ops.matmul(a, b)), popxl.TensorSpec((4, 16), popxl.float32),
                              popxl.TensorSpec((16, 8), popxl.float32))
        with popxl.in_sequence(True):
            for _ in range(2):
                x = ops.host_load(x_stream, "x")
                lr = ops.host_load(lr_stream, "lr")
                (h,) = ops.call(sub, x, w)
                loaded = ops.remote_load(buffer, 1)
                y = ops.add(ops.add(h, g), loaded)
                ops.host_store(y_stream, ops.cast(y, popxl.float16))
                ops.scaled_add_(w, ops.matmul(ops.transpose(x), y), b=lr)
                ops.remote_store(buffer, 1, ops.add(loaded, lr))
            ops.var_updates.accumulate_(shard, ops.collectives.replica_sharded_slice(y))
    return ir, {"x": x_stream, "lr": lr_stream, "y": y_stream, "w": w, "g": g, "r": r, "s": full}


def _inputs(t):
    return {t["x"]: np.ones((2, 2, 4, 16), np.float32), t["lr"]: np.full((2, 2), 0.01, np.float64)}


def _profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compile_only: bool):
    directory = tmp_path / ("compile-only" if compile_only else "numeric")
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps({"autoReport.all": "true",
                                                            "autoReport.directory": str(directory)}))
    if compile_only:
        monkeypatch.setenv("PROFCOMPARE_SIM_EXECUTION", "compile-only")
    else:
        monkeypatch.delenv("PROFCOMPARE_SIM_EXECUTION", raising=False)
    ir, t = _build()
    session = popxl.Session(ir, "ipu_model")
    with session:
        outputs = [session.run(_inputs(t)) for _ in range(3)]
    return read_report(directory / "profile.sqlite"), outputs, t, session


def test_compile_only_report_tables_are_those_of_numeric_execution(tmp_path, monkeypatch):
    numeric, numeric_out, t, _ = _profile(tmp_path, monkeypatch, compile_only=False)
    assert numeric_out[0][t["y"]].any()  # the numeric run computes values
    forbid_numeric_execution(monkeypatch)
    abstract, abstract_out, t2, _ = _profile(tmp_path, monkeypatch, compile_only=True)
    assert numeric.meta.execution == "numeric" and abstract.meta.execution == "compile-only"
    assert len(abstract.execution) and len(abstract.liveness) and len(abstract.variables)
    for table in ("tiles", "categories", "variables", "liveness", "code", "execution", "remote_buffers"):
        pdt.assert_frame_equal(getattr(abstract, table), getattr(numeric, table), obj=table)
    pdt.assert_series_equal(abstract.summary(), numeric.summary(), check_names=False)
    # outputs: zeros of the host shape (num_host_transfers, replicas, *stream shape) and dtype
    y = abstract_out[-1][t2["y"]]
    assert y.shape == (2, 2, 4, 8) and y.dtype == np.float16 and not y.any()


def test_compile_only_keeps_no_host_data_and_reads_back_zeros(tmp_path, monkeypatch):
    forbid_numeric_execution(monkeypatch)
    _, _, t, session = _profile(tmp_path, monkeypatch, compile_only=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = session.get_tensors_data([t["w"], t["g"], t["r"], t["s"]])
        again = session.get_tensor_data(t["w"])
    # one warning per Session, naming the mode
    assert [str(w.message) for w in caught if w.category is CompileOnlyWarning] == [
        "get_tensor_data: values were not computed (compile-only mode, PROFCOMPARE_SIM_EXECUTION=compile-only); "
        "returning zeros of the variables' host shapes and dtypes"]
    shapes = {k: (values[t[k]].shape, values[t[k]].dtype) for k in ("w", "g", "r", "s")}
    assert shapes == {"w": ((16, 8), np.float32), "g": ((2, 8), np.float32), "r": ((8,), np.float32),
                      "s": ((4, 8), np.float32)}
    assert not any(v.any() for v in values.values()) and not again.any()
    # weights to host (explicit, and on exit above) moves nothing and does not fail
    with session:
        session.weights_to_host()
        # inputs are still checked for shape and dtype
        with pytest.raises(SessionInputError, match="expected a host array of shape"):
            session.run({t["x"]: np.ones((4, 16), np.float32), t["lr"]: np.zeros((2, 2), np.float32)})
        with pytest.raises(SessionInputError, match="expected dtype float32, got int32"):
            session.run({t["x"]: np.ones((2, 2, 4, 16), np.int32), t["lr"]: np.zeros((2, 2), np.float32)})
        with pytest.raises(SessionInputError, match="does not match the host shape"):
            session.write_variable_data(t["w"], np.ones((8, 16), np.float32))
        session.write_variable_data(t["w"], np.ones((16, 8), np.float32))
        assert not session.get_tensor_data(t["w"]).any()


def test_compile_only_variables_hold_no_copy_of_their_data(monkeypatch):
    monkeypatch.setenv("PROFCOMPARE_SIM_EXECUTION", "compile-only")
    data = np.ones((2, 2048, 2048), np.float64)  # 64 MiB, downcast to float32 by popxl
    ir = popxl.Ir()
    ir.replication_factor = 8
    tracemalloc.start()
    try:
        with ir.main_graph:
            v = popxl.variable(data, name="v", replica_grouping=ir.replica_grouping(group_size=4))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert v.shape == (2048, 2048) and v.dtype == popxl.float32 and v.shape_on_host == (2, 2048, 2048)
    assert peak < 1 << 20  # neither a float32 copy (32 MiB) nor one per group or replica


def test_numeric_execution_keeps_the_data(monkeypatch):
    monkeypatch.delenv("PROFCOMPARE_SIM_EXECUTION", raising=False)
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.arange(6.0).reshape(2, 3), name="v")
    session = popxl.Session(ir, "cpu")
    assert session.execution == "numeric"
    np.testing.assert_array_equal(session.get_tensor_data(v), np.arange(6.0, dtype=np.float32).reshape(2, 3))


def test_compile_only_still_refuses_a_remote_variable_used_without_a_load(monkeypatch):
    monkeypatch.setenv("PROFCOMPARE_SIM_EXECUTION", "compile-only")
    ir = popxl.Ir()
    with ir.main_graph:
        buffer = popxl.remote_buffer((4,), popxl.float32, 1)
        r = popxl.remote_variable(np.zeros(4, np.float32), buffer, 0, name="r")
        ops.add(r, r)
    with pytest.raises(ValueError, match="remote variable r lives in Streaming Memory"):
        popxl.Session(ir, "cpu")


def test_an_unknown_mode_is_refused(monkeypatch):
    monkeypatch.setenv("PROFCOMPARE_SIM_EXECUTION", "lazy")
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(ValueError, match="unknown execution mode 'lazy'"):
        popxl.variable(np.zeros(2, np.float32))


def test_run_with_outputs_zeroes_the_given_arrays(monkeypatch):
    monkeypatch.setenv("PROFCOMPARE_SIM_EXECUTION", "compile-only")
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
    ir, t = _build()
    with popxl.Session(ir, "ipu_model") as session:
        given = {t["y"]: np.full((2, 2, 4, 8), 7, np.float16)}
        session.run_with_outputs(_inputs(t), given)
        assert not given[t["y"]].any()
        with pytest.raises(SessionInputError, match="expected a host array of shape"):
            session.run_with_outputs(_inputs(t), {t["y"]: np.zeros((2, 4, 8), np.float16)})
