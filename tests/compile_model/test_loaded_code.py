"""Code loaded by ``ops.remote_code_load(graph, "executable")`` (docs/ipu-model.md sections 5-7).

PopART gives the loaded graph a FunctionBuffer in Streaming Memory and copies it to the tiles at
the op; popxl says only a graph that is never loaded is always live. The model takes the loaded
graph's control and exchange code out of the always-live code categories, makes it a
not-always-live allocation from the load to the graph's last run, and charges the load the
code's bytes at the gateway bandwidth of remote buffer loads. The figures below are computed by
hand from the model's rules (section 2 sizes, Mk2), so a different model fails them.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.loaded_code import live_intervals
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.targets import get_device
from profcompare.model import PHASES

MK2 = get_device("mk2")
TILES = MK2.tiles_per_ipu  # 1472
PER_STEP = MK2.control_code_bytes_per_step  # 8 B on every tile per static step
PER_PART = MK2.control_code_bytes_per_participating_step  # 24 B per participating tile
HOST_EX = MK2.host_exchange_code_bytes  # 96 B per transfer step on participating tiles
X_BYTES = 8 * 4  # x: 8 x float32, on one tile (as every (8,) float32 tensor here)


def _doubling_program(adds: int, *, load: bool, reduce: bool = False):
    """main: [remote_code_load(body)], y = call(body, x), host_store(y); body doubles ``adds`` times."""
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((8,), np.float32), name="x")

    def body(a):
        for _ in range(adds):
            a = a + a
        if reduce:
            a = a + ops.sum(a, keepdims=True)
        return a

    g = ir.create_graph(body, x)
    with ir.main_graph, popxl.in_sequence(True):
        if load:
            ops.remote_code_load(g, "executable")
        (y,) = ops.call(g, x)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, "y"), y)
    program = lower(ir)
    return program, compile_program(program, MK2), g


def _executed(compiled) -> list:
    st = compiled.steps
    return [st.static[int(i)] for i in st.exec_static]


def _code_bytes(compiled) -> int:
    return int(compiled.report.summary()["code_bytes"])


def _category(compiled, name: str) -> int:
    cats = compiled.report.categories
    return int(cats.loc[cats["category"] == name, "bytes"].sum())


@pytest.mark.parametrize("adds", [2, 3])
def test_loaded_code_is_not_always_live_code(adds: int) -> None:
    _, plain, _ = _doubling_program(adds, load=False)
    _, loading, g = _doubling_program(adds, load=True)
    # the body's own steps: an OnTileExecute and a Sync per add; its ops touch one tile
    loaded_bytes = TILES * PER_STEP * 2 * adds + PER_PART * adds
    # without loading (section 6): setup Begin/Mid/End of x, the Call step, the copy-out of y, the
    # host store's Begin/Mid/End and the body; participating on x's tile: the 3 setup steps, every
    # add, the copy-out and the 3 host-store steps; host exchange code on the two Mid steps;
    # codelets: element-wise (the adds) and copy (the copy-out), each on that one tile
    codelets = MK2.codelet_bytes["elementwise"] + MK2.codelet_bytes["copy"]
    plain_code = (TILES * (MK2.control_code_base_bytes + PER_STEP * (2 * adds + 8))
                  + PER_PART * (adds + 7) + 2 * HOST_EX + codelets)
    assert _code_bytes(plain) == plain_code
    # with loading: the body's code leaves the always-live categories; the load's Begin / data /
    # End add a step each on every tile and take part on every tile holding the loaded code (all
    # of them), with host exchange code for the data step
    load_steps_code = TILES * (3 * PER_STEP + 3 * PER_PART + HOST_EX)
    loading_code = (TILES * (MK2.control_code_base_bytes + PER_STEP * 11) + PER_PART * 7 + 2 * HOST_EX
                    + codelets + TILES * (3 * PER_PART + HOST_EX))
    assert _code_bytes(loading) == loading_code == plain_code - loaded_bytes + load_steps_code
    (code,) = loading.loaded_code
    assert code.graph == g.id and code.streaming_memory_bytes == loaded_bytes
    # the code table still sums to the code categories, and lists none of the body's code
    report = loading.report
    assert int(report.code["code_bytes"].sum()) == _code_bytes(loading)
    assert not report.code["name"].astype(str).eq("add").any()
    # codelets and vertex state stay always live
    for cat in ("vertexCode", "vertexInstanceState", "copyDescriptor"):
        assert _category(loading, cat) == _category(plain, cat)
    # the not-always-live peak: x, the last two doublings and the loaded code
    assert int(plain.report.summary()["not_always_live_peak_bytes"]) == 3 * X_BYTES
    assert int(report.summary()["not_always_live_peak_bytes"]) == 3 * X_BYTES + loaded_bytes


def test_loaded_code_is_live_from_the_load_to_the_last_step_of_the_graph() -> None:
    program, compiled, g = _doubling_program(3, load=True)
    executed = _executed(compiled)
    begin = next(i for i, s in enumerate(executed) if s.name == "remote_code_load/Begin")
    last_add = max(i for i, s in enumerate(executed) if s.op and program.ops[s.op].graph == g.id)
    (code,) = compiled.loaded_code
    assert code.intervals == ((begin, last_add),)
    variables = compiled.report.variables
    row = variables[variables["name"] == f"{g.id}/loaded code"].iloc[0]
    assert (int(row["first_step"]), int(row["last_step"])) == (begin, last_add)
    assert not row["always_live"] and row["kind"] == "other" and row["role"] == "other"
    assert int(row["bytes"]) == code.streaming_memory_bytes
    live = compiled.report.liveness["not_always_live_bytes"].to_numpy()
    # dead before the load and at the copy-out after the body: x, the body's output and y
    assert live[begin - 1] == X_BYTES
    assert live[last_add + 1] == 3 * X_BYTES
    assert live[begin] == X_BYTES + code.streaming_memory_bytes


def test_code_load_step_moves_the_code_at_the_remote_load_bandwidth() -> None:
    _, compiled, _ = _doubling_program(3, load=True)
    loaded_bytes = TILES * PER_STEP * 6 + PER_PART * 3
    steps = {s.name: s for s in compiled.steps.static}
    sm = PHASES.index("streaming_memory")
    data = compiled.static_cycles[steps["remote_code_load/code"].index]
    # one replica: one IPU on the gateway; bytes / 15.75 GB/s x 1.33 GHz
    assert data[sm] == data.sum() == math.ceil(loaded_bytes / MK2.gateway_bytes_per_s * MK2.clock_hz) == 5973
    begin = compiled.static_cycles[steps["remote_code_load/Begin"].index]
    assert begin[sm] == begin.sum() == math.ceil(MK2.remote_transfer_seconds * MK2.clock_hz)
    end = compiled.static_cycles[steps["remote_code_load/End"].index]
    assert end.sum() == end[PHASES.index("sync")] == MK2.global_sync_cycles


def test_exchange_code_moves_with_the_loaded_graph() -> None:
    _, plain, _ = _doubling_program(1, load=False, reduce=True)
    _, loading, _ = _doubling_program(1, load=True, reduce=True)
    assert _category(plain, "internalExchangeCode") > 0  # the reduce's exchange, in the body
    assert _category(loading, "internalExchangeCode") == 0
    (code,) = loading.loaded_code
    # code moves, it does not vanish: what leaves the categories is the loaded code
    load_steps_code = TILES * (3 * PER_STEP + 3 * PER_PART + HOST_EX)
    assert _code_bytes(plain) - _code_bytes(loading) + load_steps_code == code.streaming_memory_bytes


def _two_loads_program():
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((8,), np.float32), name="x")
    g = ir.create_graph(lambda a: a + a, x)
    never_called = ir.create_graph(lambda a: a * a, x)
    with ir.main_graph, popxl.in_sequence(True):
        ops.remote_code_load(g, "executable")
        (y1,) = ops.call(g, x)
        z = y1 * y1
        ops.remote_code_load(never_called, "executable")
        ops.remote_code_load(g, "executable")
        (y2,) = ops.call(g, z)
        ops.host_store(popxl.d2h_stream(y2.shape, y2.dtype, "y"), y2)
    program = lower(ir)
    return program, compile_program(program, MK2), g, never_called


def test_each_load_starts_an_interval_and_the_code_is_dead_in_between() -> None:
    program, compiled, g, never_called = _two_loads_program()
    executed = _executed(compiled)
    begins = [i for i, s in enumerate(executed) if s.name.endswith("/Begin") and s.op
              and program.ops[s.op].type == "RemoteCodeLoad"]
    body = [i for i, s in enumerate(executed) if s.op and program.ops[s.op].graph == g.id]
    first_run_end = max(i for i in body if i < begins[1])
    second_run_end = max(body)
    by_graph = {lc.graph: lc for lc in compiled.loaded_code}
    assert by_graph[g.id].intervals == ((begins[0], first_run_end), (begins[2], second_run_end))
    # a graph loaded and never called is live only while its load runs
    assert by_graph[never_called.id].intervals == ((begins[1], begins[1] + 2),)
    assert live_intervals(program, compiled.steps, g.id) == by_graph[g.id].intervals
    # one FunctionBuffer per graph: one storage row, one variables row per load (instance)
    names = set(compiled.report.variables["name"].astype(str))
    assert {f"{g.id}/loaded code@1", f"{g.id}/loaded code@2"} <= names
    live = compiled.report.liveness["not_always_live_bytes"].to_numpy()
    code_bytes = by_graph[g.id].streaming_memory_bytes
    between = [i for i, s in enumerate(executed) if s.op and program.ops[s.op].type == "Mul"
               and program.ops[s.op].graph == program.main_graph]
    assert all(live[i] < code_bytes for i in between)


def test_program_without_code_loading_has_no_loaded_code() -> None:
    _, plain, _ = _doubling_program(2, load=False)
    assert plain.loaded_code == ()
    assert not plain.report.variables["name"].astype(str).str.endswith("/loaded code").any()


def test_loaded_code_report_round_trips_through_the_store(tmp_path, monkeypatch) -> None:
    from profcompare.readers.store import read_report

    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps({"autoReport.all": "true",
                                                            "autoReport.directory": str(tmp_path)}))
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((8,), np.float32), name="x")
    g = ir.create_graph(lambda a: a + a, x)
    with ir.main_graph, popxl.in_sequence(True):
        ops.remote_code_load(g, "executable")
        (y,) = ops.call(g, x)
        s = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(s, y)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_allclose(session.run()[s], np.full(8, 2.0))
    report = read_report(tmp_path / "profile.sqlite")
    row = report.variables[report.variables["name"] == f"{g.id}/loaded code"].iloc[0]
    assert int(row["bytes"]) == TILES * PER_STEP * 2 + PER_PART
    assert int(report.code["code_bytes"].sum()) == int(report.summary()["code_bytes"])
