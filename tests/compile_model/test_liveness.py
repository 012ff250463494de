"""Liveness on small hand-checkable programs: exact not-always-live bytes per step."""

from __future__ import annotations

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.synthetic import ProgramBuilder

F = 1000 * 4  # bytes of a [1000] float32 tensor


def _straight_line():
    b = ProgramBuilder()
    b.variable("w", (1000,))
    (x,) = b.op("HostLoad", [], [("x", (1000,), "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.op("Neg", [x], [("y", (1000,), "float32")], flops=1000, name="neg")
    (z,) = b.op("Add", [x, y], [("z", (1000,), "float32")], flops=1000, name="add")
    b.op("HostStore", [z], attrs={"stream": "z"}, name="store_z")
    return b.build()


def test_intermediates_live_from_producer_to_last_consumer():
    report = compile_program(_straight_line()).report
    lv = report.liveness
    assert lv["program"].tolist() == ["load_x", "neg", "add", "store_z"]
    assert lv["program_type"].astype(str).tolist() == ["StreamCopy", "OnTileExecute", "OnTileExecute", "StreamCopy"]
    assert lv["not_always_live_bytes"].tolist() == [F, 2 * F, 3 * F, F]
    v = report.variables.set_index("name")
    assert bool(v.loc["w", "always_live"]) and v.loc["w", "bytes"] == F
    assert (v.loc["x", "first_step"], v.loc["x", "last_step"]) == (0, 2)
    assert (v.loc["z", "first_step"], v.loc["z", "last_step"]) == (2, 3)
    s = report.summary()
    assert s["not_always_live_peak_bytes"] == 3 * F
    assert s["peak_liveness_bytes"] == s["always_live_bytes"] + 3 * F


def test_called_graph_instances_are_live_per_call():
    b = ProgramBuilder()
    g = b.graph("g")
    a = b.graph_input(g, "a", (1000,))
    (out,) = b.op("Neg", [a], [("b", (1000,), "float32")], flops=1000, graph=g, name="g/neg")
    b.graph_output(g, out)
    (x,) = b.op("HostLoad", [], [("x", (1000,), "float32")], attrs={"stream": "x"}, name="load_x")
    (y1,) = b.call(g, [x])
    (y2,) = b.call(g, [y1])
    b.op("HostStore", [y2], attrs={"stream": "y"}, name="store_y")
    report = compile_program(b.build()).report
    lv = report.liveness
    assert lv["program_type"].astype(str).tolist() == [
        "StreamCopy", "Call", "OnTileExecute", "Copy", "Call", "OnTileExecute", "Copy", "StreamCopy"]
    # x | x,a1 | a1,b1 | b1,y1 | y1,a2 | a2,b2 | b2,y2 | y2
    assert lv["not_always_live_bytes"].tolist() == [F, 2 * F, 2 * F, 2 * F, 2 * F, 2 * F, 2 * F, F]


def test_views_and_inplace_outputs_share_storage():
    b = ProgramBuilder()
    acc = b.variable("acc", (1000,), kind="accumulator")
    (x,) = b.op("HostLoad", [], [("x", (1000,), "float32")], attrs={"stream": "x"})
    (xr,) = b.op("Reshape", [x], [("x_reshaped", (10, 100), "float32")])
    (xf,) = b.op("Reshape", [xr], [("x_flat", (1000,), "float32")])
    b.op("Accumulate", [acc, xf], [("acc_alias", (1000,), "float32")], modified=[acc], flops=1000)
    report = compile_program(b.build()).report
    names = set(report.variables["name"])
    assert {"acc", "x"} <= names and not names & {"x_reshaped", "x_flat", "acc_alias"}
    # reshapes have no step; x stays live until the accumulate reads it through the views
    assert report.liveness["not_always_live_bytes"].tolist() == [F, F]


def test_remote_loaded_tensor_is_not_always_live_and_buffer_is_streaming_memory():
    b = ProgramBuilder()
    bid = b.remote_buffer("state", (1000,), "float32", entries=2)
    b.tensor("state", (1000,), kind="optimizer_state", storage="remote", remote_buffer=bid)
    (t,) = b.op("RemoteLoad", [], [("state_loaded", (1000,), "float32")], attrs={"remote_buffer": bid},
                kind="remote_staging")
    (u,) = b.op("Neg", [t], [("state_new", (1000,), "float32")])
    b.op("RemoteStore", [u], attrs={"remote_buffer": bid})
    report = compile_program(b.build()).report
    assert report.liveness["program_type"].astype(str).tolist() == ["RemoteLoad", "OnTileExecute", "RemoteStore"]
    assert report.liveness["not_always_live_bytes"].tolist() == [F, 2 * F, F]
    v = report.variables.set_index("name")
    assert "state" not in v.index  # the remote variable itself takes no tile memory
    assert not bool(v.loc["state_loaded", "always_live"])
    rb = report.remote_buffers
    assert rb["bytes"].tolist() == [2 * F] and rb["entries"].tolist() == [2]
    assert report.summary()["streaming_memory_bytes"] == 2 * F
