"""A tiny program built through the simulator's popxl, compiled by the Engine via Session."""

from __future__ import annotations

import json

import numpy as np
import pytest

popxl = pytest.importorskip("profcompare.emulator.popxl")
pytest.importorskip("profcompare.emulator.lowering")

from profcompare.emulator.popxl import ops  # noqa: E402  (after the importorskip guards)
from profcompare.readers.store import read_report  # noqa: E402


def _build(replicas: int = 1):
    ir = popxl.Ir()
    ir.replication_factor = replicas
    main = ir.main_graph
    with main:
        x_stream = popxl.h2d_stream((4, 16), popxl.float32, "x")
        y_stream = popxl.d2h_stream((4, 8), popxl.float32, "y")
        w = popxl.variable(np.ones((16, 8), np.float32), popxl.float32, name="w")
        sub = ir.create_graph(lambda a, b: ops.gelu(ops.matmul(a, b)), popxl.TensorSpec((4, 16), popxl.float32),
                              popxl.TensorSpec((16, 8), popxl.float32))
        with popxl.in_sequence(True):
            x = ops.host_load(x_stream, "x")
            (y1,) = ops.call(sub, x, w)
            (y2,) = ops.call(sub, x, w)
            ops.host_store(y_stream, ops.add(y1, y2))
    return ir, x_stream


def test_session_writes_simulated_profile_with_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps({"autoReport.all": "true",
                                                            "autoReport.directory": str(tmp_path)}))
    ir, x_stream = _build()
    session = popxl.Session(ir, "ipu_model")
    assert (tmp_path / "profile.sqlite").exists()  # written at compile time
    with session:
        for _ in range(3):
            session.run({x_stream: np.ones((4, 16), np.float32)})
    report = read_report(tmp_path / "profile.sqlite")
    assert report.meta.simulated and not report.meta.oom
    assert report.meta.target.architecture == "Mk2"
    assert report.execution["run"].nunique() == 2
    names = set(report.variables["name"])
    assert "w" in names
    w = report.variables.set_index("name").loc["w"]
    assert bool(w["always_live"]) and w["bytes"] == 16 * 8 * 4
    lv = report.liveness
    calls = (lv["program_type"].astype(str) == "Call").sum()
    assert calls == 2
    # the called graph's matmul runs twice but its code is compiled once
    amp_steps = lv[lv["program_type"].astype(str) == "OnTileExecute"]["program"]
    repeated = amp_steps.value_counts()
    assert (repeated == 2).any()
    for name in repeated[repeated == 2].index:
        assert (report.code["name"] == name).sum() <= 1
