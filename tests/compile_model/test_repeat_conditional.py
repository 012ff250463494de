"""The compile model of ops.repeat (a Repeat program whose body runs once per iteration),
ops.conditional (an If program running one branch) and ops.remote_code_load (a Streaming
Memory transfer of a graph's code)."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.targets import get_device
from profcompare.model import PHASES


def _repeat_program(count: int):
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        x = popxl.variable(np.ones((32, 32), np.float32), name="x")
        w = popxl.variable(np.full((32, 32), 0.01, np.float32), name="w")
        body = ir.create_graph(lambda a, b: ops.gelu(a @ b), x, w)
        (y,) = ops.repeat(body, count, x, w)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, "y"), y)
    program = lower(ir)
    return program, compile_program(program)


def _executed(compiled) -> list:
    st = compiled.steps
    return [st.static[int(i)] for i in st.exec_static[st.setup_steps:]]


def _device_cycles(compiled) -> int:
    return sum(v for k, v in compiled.phase_cycles.items() if k != "runtime")


def test_repeat_body_runs_once_per_iteration_and_is_compiled_once() -> None:
    runs = {n: _repeat_program(n) for n in (1, 2, 5)}
    for n, (_program, compiled) in runs.items():
        executed = _executed(compiled)
        assert [s.type for s in executed].count("Repeat") == 1
        convolves = [s for s in executed if s.name.endswith("/Convolve")]
        assert len(convolves) == n
        assert len({s.index for s in convolves}) == 1  # the same static step every iteration
        carries = [s for s in executed if "/loop_carry/" in s.name]
        assert len(carries) == n - 1  # one carried value, copied between iterations
        assert [s.type for s in compiled.steps.static].count("Repeat") == 1
    # code is counted on static steps: the same whatever the count
    code = {n: int(c.report.code["code_bytes"].sum()) for n, (_, c) in runs.items()}
    assert code[1] == code[2] == code[5]
    # every further iteration costs the same cycles: the body plus the loop-carried copy
    c1, c2, c5 = (_device_cycles(runs[n][1]) for n in (1, 2, 5))
    per_iteration = c2 - c1
    assert per_iteration > 0
    assert c5 - c1 == 4 * per_iteration


def test_repeat_zero_iterations_executes_no_body() -> None:
    _, compiled = _repeat_program(0)
    executed = _executed(compiled)
    assert "Repeat" in [s.type for s in executed]
    assert not any(s.name.endswith("/Convolve") for s in executed)


def test_loop_carried_inputs_are_copied_not_aliased() -> None:
    program, compiled = _repeat_program(3)
    call = next(op for op in program.ops.values() if op.attrs.get("program") == "Repeat")
    (carried_out, carried_in), = call.attrs["loop_carried"]
    assert carried_in not in compiled.steps.zero_copy
    assert call.attrs["repeat_count"] == 3


def _conditional_program():
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        c = popxl.variable(np.array(False), popxl.bool, name="c")
        x = popxl.variable(np.ones((16,), np.float32), name="x")
        small = ir.create_graph(lambda a: a + 1.0, x)
        large = ir.create_graph(lambda a: ops.tanh(ops.exp(a) * 2.0), x)
        (y,) = ops.conditional(c, small, large, [x], [x])
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, "y"), y)
    program = lower(ir)
    return program, compile_program(program), small, large


def test_conditional_is_an_if_program_running_the_larger_branch() -> None:
    program, compiled, small, large = _conditional_program()
    executed = _executed(compiled)
    assert [s.type for s in executed].count("If") == 1
    static_graphs = {program.ops[s.op].graph for s in compiled.steps.static if s.op}
    assert {small.id, large.id} <= static_graphs  # both branches are compiled
    executed_graphs = {program.ops[s.op].graph for s in executed if s.op}
    assert large.id in executed_graphs and small.id not in executed_graphs


def _code_load_program(body_ops: int):
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((8,), np.float32), name="x")

    def body(a):
        for _ in range(body_ops):
            a = a + 1.0
        return a

    g = ir.create_graph(body, x)
    with ir.main_graph, popxl.in_sequence(True):
        ops.remote_code_load(g, "executable")
        (y,) = ops.call(g, x)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, "y"), y)
    program = lower(ir)
    return program, compile_program(program), g


def test_remote_code_load_is_a_streaming_memory_transfer_of_the_graph_code() -> None:
    program, compiled, g = _code_load_program(3)
    executed = _executed(compiled)
    load = [s for s in executed if s.op and program.ops[s.op].type == "RemoteCodeLoad"]
    assert [s.type for s in load] == ["StreamCopyBegin", "RemoteLoad", "StreamCopyEnd"]
    device = get_device(None)
    (code,) = compiled.loaded_code
    assert code.graph == g.id
    nbytes = code.streaming_memory_bytes
    # 3 adds, each an OnTileExecute and a Sync (code exact figures: test_loaded_code.py)
    assert nbytes > 6 * device.control_code_bytes_per_step * device.tiles_per_ipu
    mid = compiled.static_cycles[load[1].index]
    expected = int(np.ceil(nbytes / device.gateway_bytes_per_s * device.clock_hz))
    assert mid[PHASES.index("streaming_memory")] == expected
    assert mid.sum() == expected
    # a bigger graph takes longer to load
    _, bigger, _ = _code_load_program(12)
    big_mid = next(s for s in _executed(bigger) if s.role == "code_load")
    assert bigger.static_cycles[big_mid.index].sum() > expected


@pytest.mark.parametrize("count", [2, 4])
def test_repeat_profile_runs_through_session(count: int, tmp_path, monkeypatch) -> None:
    import json

    from profcompare.readers.store import read_report

    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps({"autoReport.all": "true",
                                                            "autoReport.directory": str(tmp_path)}))
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(4, np.float32), name="x")
        g = ir.create_graph(lambda a: a * 2.0, x)
        (y,) = ops.repeat(g, count, x)
        s = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(s, y)
    with popxl.Session(ir, "ipu_model") as session:
        np.testing.assert_allclose(session.run()[s], np.full(4, 2.0 ** count))
    report = read_report(tmp_path / "profile.sqlite")
    types = report.liveness["program_type"].astype(str).tolist()
    assert types.count("Repeat") == 1
    assert sum("/loop_carry/" in str(p) for p in report.liveness["program"]) == count - 1
