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
    lv = report.liveness
    step_of = {str(p): int(st) for p, st in zip(lv["program"], lv["step"])}
    # w is written from the host before the first run (WeightsFromHost Begin/Mid/End) and is not
    # always live: live from the Mid step that writes it to the last step
    assert [str(p) for p in lv["program"][:3]] == ["WeightsFromHost/w/Begin", "WeightsFromHost/w/Mid",
                                                   "WeightsFromHost/w/End"]
    w = report.variables.set_index("name").loc["w"]
    assert not bool(w["always_live"]) and w["bytes"] == 16 * 8 * 4
    assert w["first_step"] == step_of["WeightsFromHost/w/Mid"] == 1 and w["last_step"] == len(lv) - 1
    assert lv["not_always_live_bytes"].tolist()[:2] == [0, 512]
    calls = (lv["program_type"].astype(str) == "Call").sum()
    assert calls == 2
    # x and w are passed by both call sites: aliased (zero-copy), no copy-in; the output is copied out
    assert not lv["program"].astype(str).str.contains("/copy_in/").any()
    copy_out = lv[lv["program"].astype(str).str.contains("/copy_out/")]
    assert len(copy_out) == 2 and copy_out["program"].nunique() == 1
    # the called graph's matmul and gelu run twice but their code is compiled once; the call copies
    # belong to each call site, so their code exists once per site
    body = lv[lv["program_type"].astype(str) == "OnTileExecute"]["program"].astype(str)
    body = body[body.str.startswith(("matmul/", "gelu"))]
    repeated = body.value_counts()
    assert set(repeated.index) == {"matmul/weightsRearranged/OnTileCopy", "matmul/Convolve", "matmul/Reduce0",
                                   "gelu"}
    assert (repeated == 2).all()
    code_names = report.code["name"].astype(str)
    for name in repeated.index:
        assert (code_names == name).sum() == 1
    assert (code_names == copy_out["program"].iloc[0]).sum() == 2
    # time: device cycles per run plus one host/runtime row, ceil(run_overhead_seconds x clock) =
    # 925,148 less the 464,832 cycles of it the device spends waiting in the run's opening copy
    ex = report.execution
    runtime = ex[ex["phase"].astype(str) == "runtime"]
    assert runtime["cycles"].tolist() == [460_316, 460_316]
    device = int(ex[(ex["run"] == 0) & (ex["phase"].astype(str) != "runtime")]["cycles"].sum())
    # host_io: two host transfers, each a control copy (269 + 1,109 + 140) and the data copy's Begin
    # (7,903), Mid (1,109 + 256 B and 128 B over 5.5 GB/s at 1.33 GHz = 62 and 31 cycles) and End
    # (9,870); the run's first Begin also holds its two opening control copies and the host's wait
    # (2 x 1,518 + 464,832)
    host_io = ex[(ex["run"] == 0) & (ex["phase"].astype(str) == "host_io")]["cycles"].tolist()
    assert host_io == [9421 + 467_868, 1109 + 62, 9870, 9421, 1109 + 31, 9870]
    summary = report.summary()
    assert summary["cycles_per_step"] == device
    assert summary["seconds_per_step"] == pytest.approx((device + 460_316) / report.meta.target.clock_hz, rel=1e-9)
