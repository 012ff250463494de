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
    assert lv["program"].tolist() == [
        "WeightsFromHost/w/Begin", "WeightsFromHost/w/Mid", "WeightsFromHost/w/End",
        "load_x/Begin", "load_x/Mid", "load_x/End", "neg", "neg/Internal Sync", "add", "add/Internal Sync",
        "store_z/Begin", "store_z/Mid", "store_z/End"]
    assert lv["program_type"].astype(str).tolist() == [
        "StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd"] * 2 + ["OnTileExecute", "Sync"] * 2 + [
        "StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd"]
    # w from its host write (step 1) to the end; x from its load to add; y neg..add; z add..store.
    # Each sync precedes a step that receives (programs.place_syncs): neg's the add (it reads x and
    # y, made by different ops), the add's the store
    assert (lv["not_always_live_bytes"] // F).tolist() == [0, 1, 1, 2, 2, 2, 3, 3, 4, 4, 2, 2, 2]
    v = report.variables.set_index("name")
    assert not bool(v.loc["w", "always_live"]) and v.loc["w", "bytes"] == F
    assert (v.loc["w", "first_step"], v.loc["w", "last_step"]) == (1, 12)
    assert (v.loc["x", "first_step"], v.loc["x", "last_step"]) == (3, 9)
    assert (v.loc["y", "first_step"], v.loc["y", "last_step"]) == (6, 9)
    assert (v.loc["z", "first_step"], v.loc["z", "last_step"]) == (8, 12)
    s = report.summary()
    assert s["not_always_live_peak_bytes"] == 4 * F
    assert s["peak_liveness_bytes"] == s["always_live_bytes"] + 4 * F


def test_a_variable_is_not_always_live_from_the_step_that_writes_it():
    b = ProgramBuilder()
    b.variable("w1", (1000,))
    b.variable("w2", (1000,))
    (x,) = b.op("HostLoad", [], [("x", (1000,), "float32")], attrs={"stream": "x"}, name="load_x")
    report = compile_program(b.build()).report
    lv = report.liveness
    # WeightsFromHost writes w1 (Mid = step 1) then w2 (Mid = step 4): each rises at its own write
    assert (lv["not_always_live_bytes"] // F).tolist()[:6] == [0, 1, 1, 1, 2, 2]
    v = report.variables.set_index("name")
    assert v.loc[["w1", "w2"], "first_step"].tolist() == [1, 4]
    assert not v.loc[["w1", "w2"], "always_live"].any()
    # no variable bytes in the tiles' always-live memory: only code, vertex data, stack, headers
    assert int(report.tiles["always_live_bytes"].sum()) == int(
        report.categories.loc[report.categories["category"] != "variable", "bytes"].sum())


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
    # two call sites feed different tensors: the input is copied in (CopyInput) and the output
    # copied out (CopyOutput) at each, around the outlined body
    assert lv["program_type"].astype(str).tolist() == [
        "StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd",
        "Call", "OnTileExecute", "OnTileExecute", "OnTileExecute",
        "Call", "OnTileExecute", "OnTileExecute", "OnTileExecute",
        "StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd"]
    # no sync: the copies and the neg read only their own tiles' data (programs.place_syncs)
    # x (0-4) | a1 copied in at 4, read by the neg (5) | b1 5-6 copied out | y1 6-8 copied in
    # | a2 8-9 | b2 9-10 | y2 10 to the store
    assert (lv["not_always_live_bytes"] // F).tolist() == [1, 1, 1, 1, 2, 2, 2, 1, 2, 2, 2, 1, 1, 1]


def test_a_graph_input_fed_the_same_tensor_at_every_call_is_aliased_not_copied():
    b = ProgramBuilder()
    g = b.graph("g")
    a = b.graph_input(g, "a", (1000,))
    (out,) = b.op("Neg", [a], [("b", (1000,), "float32")], flops=1000, graph=g, name="g/neg")
    b.graph_output(g, out)
    (x,) = b.op("HostLoad", [], [("x", (1000,), "float32")], attrs={"stream": "x"}, name="load_x")
    (y1,) = b.call(g, [x])
    (y2,) = b.call(g, [x])
    (z,) = b.op("Add", [y1, y2], [("z", (1000,), "float32")], flops=1000, name="add")
    b.op("HostStore", [z], attrs={"stream": "z"}, name="store_z")
    report = compile_program(b.build()).report
    lv = report.liveness
    assert not lv["program"].str.contains("/copy_in/").any()  # aliasZeroCopy: no CopyInput
    assert lv["program"].str.contains("/copy_out/").sum() == 2  # outputs still copied out
    names = set(report.variables["name"])
    assert "x" in names and not any(n.endswith("/a") or n == "a" for n in names)


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
    # reshapes have no step; x stays live until the accumulate reads it through the views;
    # acc is written by WeightsFromHost (steps 0-2) and live from its Mid to the end. The
    # accumulate reads acc and x, made apart: a sync before it (programs.place_syncs), and the
    # run ends with its own sync, the accumulate's last step
    lv = report.liveness
    assert lv["program_type"].astype(str).tolist() == ["StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd"] * 2 + [
        "Sync", "OnTileExecute", "Sync"]
    assert (lv["not_always_live_bytes"] // F).tolist() == [0, 1, 1, 2, 2, 2, 2, 2, 2]


def test_remote_loaded_tensor_is_not_always_live_and_buffer_is_streaming_memory():
    b = ProgramBuilder()
    bid = b.remote_buffer("state", (1000,), "float32", entries=2)
    b.tensor("state", (1000,), kind="optimizer_state", storage="remote", remote_buffer=bid)
    (t,) = b.op("RemoteLoad", [], [("state_loaded", (1000,), "float32")], attrs={"remote_buffer": bid},
                kind="remote_staging")
    (u,) = b.op("Neg", [t], [("state_new", (1000,), "float32")])
    b.op("RemoteStore", [u], attrs={"remote_buffer": bid})
    report = compile_program(b.build()).report
    assert report.liveness["program_type"].astype(str).tolist() == [
        "StreamCopyBegin", "RemoteLoad", "StreamCopyEnd", "OnTileExecute", "Sync",
        "StreamCopyBegin", "RemoteStore", "StreamCopyEnd"]
    assert (report.liveness["not_always_live_bytes"] // F).tolist() == [1, 1, 1, 2, 2, 1, 1, 1]
    v = report.variables.set_index("name")
    assert "state" not in v.index  # the remote variable itself takes no tile memory
    assert not bool(v.loc["state_loaded", "always_live"])
    rb = report.remote_buffers
    assert rb["bytes"].tolist() == [2 * F] and rb["entries"].tolist() == [2]
    assert report.summary()["streaming_memory_bytes"] == 2 * F
