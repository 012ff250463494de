"""popxl-addons utilities on the simulator: the FLOPs estimate, fp8_amax_scale, print_tensor /
print_text, available memory proportions, the fully-connected pass switch and write_variables_pb,
each with the values a user reads, and their absence under popxl-addons 3.0."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons import debugging
from profcompare.emulator.popxl_addons._compat import AddonsNotImplementedError


def _ones(*shape: int) -> popxl.Tensor:
    return popxl.constant(np.ones(shape, np.float32))


# --- FLOPs -------------------------------------------------------------------------------------
def test_matmul_flops_follow_two_k_times_output_elements() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        y = _ones(4) @ _ones(4, 8)  # matrix-vector: 2 * 4 * 8
        s = _ones(4) @ _ones(4)  # dot product: scalar output, prod(()) = 1.0
        c = _ones(10, 9) @ _ones(9, 5)
        d = ops.matmul(_ones(3, 5, 10, 9), _ones(3, 5, 9, 3))
    matmuls = addons.evaluate_FLOPs(ir.main_graph)["MatMul"]
    ids = [int(t._producer.id) for t in (y, s, c, d)]
    assert [matmuls[i] for i in ids] == [2 * 4 * 8, 2 * 4, 2 * 9 * 10 * 5, 2 * 9 * 3 * 10 * 3 * 5]
    assert isinstance(matmuls[ids[1]], float)


def test_elementwise_and_group_norm_counts_and_the_total() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = _ones(2, 6, 5)
        a = x + x  # 60
        b = a - 1.0  # 60 (a constant is no op)
        c = b * b / 2.0  # 60 + 60
        ops.relu(c)  # not counted
        g = ops.group_norm(c, popxl.constant(np.ones(6, np.float32)), popxl.constant(np.zeros(6, np.float32)), 3)
    bd = addons.evaluate_FLOPs(ir.main_graph)
    # group norm: groups = (2*3)/2 = 3; averaged = 5*6/3 = 10; 10 + (2*10 + 2*6) + 4 * 60
    assert bd["GroupNormalization"] == {int(g._producer.id): 10 + 32 + 240}
    assert sum(bd["Add"].values()) == 60 and sum(bd["Sub"].values()) == 60
    assert sum(bd["Mul"].values()) == 60 and sum(bd["Div"].values()) == 60
    assert bd["TOT"] == 240 + 282
    assert "Relu" not in bd


def _mm(x: popxl.Tensor) -> popxl.Tensor:
    return x @ popxl.constant(np.ones((4, 3), np.float32))


def _double(x: popxl.Tensor) -> popxl.Tensor:
    return x * 2.0


def test_called_and_repeated_graphs_nest_under_their_call_sites_and_replicas_multiply() -> None:
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        g = ir.create_graph(_mm, popxl.TensorSpec((2, 4), popxl.float32))
        body = ir.create_graph(_double, popxl.TensorSpec((2, 4), popxl.float32))
        x = _ones(2, 4)
        (y,) = ops.call(g, x)
        (z,) = ops.repeat(body, 5, x)
    call_op, loop_op = y._producer, z._producer
    bd = addons.evaluate_FLOPs(ir.main_graph)
    mm_id = int(g.ops[-1].id)
    assert bd["MatMul"] == {f"Call_{call_op.id}(_mm)": {mm_id: 2 * 4 * 6}}
    loop_key = f"Loop_{loop_op.id}(_double__loop_wrapper)"
    mul_id = int(body.ops[-1].id)
    assert bd["Mul"] == {loop_key: {f"Call_{loop_op.id}(_double)": {mul_id: 5 * 8}}}
    assert bd["TOT"] == 48 + 40
    assert addons.total_FLOPs(ir) == 2 * 88
    assert addons.evaluate_ir_FLOPs(ir)["MatMul"][f"Call_{call_op.id}(_mm)"][mm_id] == 96


@pytest.mark.parametrize(("value", "fmt", "text"), [
    (9072, "nearest3", "9.072E+03"), (64, "nearest3", "64.000E+00"), (123456, "nearest3", "0.123E+06"),
    (0.5, "nearest3", "0.500E+00"), (0, "nearest3", "0.000E+00"), (12345678, "M", "12.346E+06"),
    (5, "K", "0.005E+03"), (2.5e12, "T", "2.500E+12"),
])
def test_format_flops_scientific(value, fmt, text) -> None:
    assert addons.format_flops_scientific(value, fmt) == text


def test_print_flops_tables(capsys) -> None:
    bd = {"MatMul": {100: 8100, 101: 900}, "Add": {102: 72}, "TOT": 9072}
    addons.print_FLOPs(bd)
    assert capsys.readouterr().out == (
        "Op Type | FLOPs      | %    \n"
        + "-" * 29 + "\n"  # as long as the header line with its newline
        "TOT     | 9.072E+03  | 100.0\n"
        "MatMul  | 9.000E+03  | 99.2 \n"
        "Add     | 72.000E+00 | 0.8  \n"
        "\n")
    addons.print_FLOPs(bd, mode="flat", numerical_format="K")
    lines = capsys.readouterr().out.splitlines()
    assert lines[2:] == ["TOT     | 9.072E+03 | TOT       ", "MatMul  | 8.100E+03 | MatMul.100",
                         "MatMul  | 0.900E+03 | MatMul.101", "Add     | 0.072E+03 | Add.102   ",
                         "TOT     | 9.072E+03 |           ", ""]
    with pytest.raises(ValueError, match="Unknown mode"):
        addons.print_FLOPs(bd, mode="tree")


# --- fp8_amax_scale ----------------------------------------------------------------------------
def _amax_scales(arrays: list[np.ndarray], dtypes: list) -> list[int]:
    ir = popxl.Ir()
    with ir.main_graph:
        outs = [addons.fp8_amax_scale(popxl.variable(a), d) for a, d in zip(arrays, dtypes)]
        streams = []
        for t in outs:
            s = popxl.d2h_stream(t.shape, t.dtype, "scale")
            ops.host_store(s, t)
            streams.append(s)
    assert all(t.dtype == popxl.int32 and t.shape == () for t in outs)
    with popxl.Session(ir, "cpu") as session:
        out = session.run()
    return [int(out[s]) for s in streams]


def _amax_reference(x: np.ndarray, max_value: float) -> int:
    return int(np.clip(np.floor(np.log2(np.float64(max_value) / np.abs(x).max())), -31, 31))


@pytest.mark.parametrize("np_dtype", [np.float32, np.float16])
def test_fp8_amax_scale_values(np_dtype) -> None:
    data = np.array([[0.5, -3.0], [1e-3, 2.0]], np_dtype)
    small = np.array([-0.01, 0.004], np_dtype)
    got = _amax_scales([data, data, small], [popxl.float8_143, popxl.float8_152, popxl.float8_143])
    assert got == [_amax_reference(data, 240), _amax_reference(data, 57344), _amax_reference(small, 240)]
    assert got == [6, 14, 14]  # log2(80) = 6.3, log2(19114.7) = 14.2, log2(24000) = 14.6


def test_fp8_amax_scale_clamps_to_the_bias_range() -> None:
    got = _amax_scales([np.array([1e-7], np.float32), np.array([1e12], np.float32)], [popxl.float8_143] * 2)
    assert got == [31, -31]  # log2(2.4e9) = 31.2; log2(2.4e-10) = -32.0 -> -33


def test_fp8_amax_scale_refuses_integer_sources() -> None:
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(RuntimeError, match="int32 not currently supported"):
        addons.fp8_amax_scale(popxl.variable(np.ones(2, np.int32)))


# --- print_tensor / print_text -----------------------------------------------------------------
def test_print_tensor_is_gated_by_the_model_log_level(monkeypatch) -> None:
    monkeypatch.setattr(debugging, "MODEL_LOG_LEVEL", "INFO")
    ir = popxl.Ir()
    with ir.main_graph:
        x = _ones(2)
        assert addons.print_tensor(x) is x  # DEBUG < INFO: nothing added
        assert addons.print_text("hello") is None
        assert [op.type for op in ir.main_graph.ops] == []
        monkeypatch.setattr(debugging, "MODEL_LOG_LEVEL", "DEBUG")
        y = addons.print_tensor(x, "x is")
        addons.print_text("step", level="WARN")
        kinds = [op.type for op in ir.main_graph.ops]
    assert y is not x and y.shape == x.shape and len(kinds) == 2


# --- available memory proportion and the fully-connected pass ------------------------------------
def _amp_program() -> tuple[popxl.Ir, list]:
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.ones((4, 4), np.float32))
        with popxl.ipu(1):
            a = _ones(2, 4) @ w
        g = ir.create_graph(lambda x: x @ popxl.constant(np.ones((4, 4), np.float32)), popxl.TensorSpec((2, 4),
                                                                                                         popxl.float32))
        (b,) = ops.call(g, a)
        c = ops.gather(w, popxl.constant(np.array([0, 2], np.int32)))
        img = ops.conv(_ones(1, 2, 4, 4), _ones(3, 2, 1, 1))
    return ir, [a._producer, g.ops[-1], c._producer, img._producer]


def test_memory_proportions_by_ipu(monkeypatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.4")
    ir, (mm_ipu1, mm_sub, gather, conv) = _amp_program()
    addons.set_available_memory_proportion_by_ipu(ir, [0.3, 0.7])
    assert mm_ipu1.attrs["available_memory_proportion"] == 0.7
    assert mm_sub.attrs["available_memory_proportion"] == 0.3
    assert gather.attrs["available_memory_proportion"] == 0.3
    assert conv.attrs["available_memory_proportions"] == (0.3,)
    addons.set_graph_available_memory_proportion_by_ipu(ir.main_graph, [0.5])  # IPU 1 falls back to IPU 0's
    assert [op.attrs.get("available_memory_proportion") for op in (mm_ipu1, mm_sub, gather)] == [0.5] * 3
    with pytest.raises(KeyError):
        addons.transforms.set_available_memory_proportion_by_ipu(ir, [])


def test_memory_proportions_leave_convolutions_alone_under_3_0(monkeypatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    ir, (mm, _, _, conv) = _amp_program()
    addons.set_available_memory_proportion_by_ipu(ir, [0.25])
    assert mm.attrs["available_memory_proportion"] == 0.25
    assert conv.attrs["available_memory_proportions"] == ()


def test_fc_pass_switch_marks_every_matmul(monkeypatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.4")
    ir, (mm, mm_sub, gather, _) = _amp_program()
    addons.disable_fc_pass(ir)
    assert mm.attrs["fully_connected_pass"] is False and mm_sub.attrs["fully_connected_pass"] is False
    assert "fully_connected_pass" not in gather.attrs
    addons.transforms.enable_fc_pass(ir)
    assert mm.attrs["fully_connected_pass"] is True


# --- write_variables_pb ------------------------------------------------------------------------
def test_write_variables_pb_writes_host_and_device() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.zeros(3, np.float32))
        c = popxl.constant(np.zeros(3, np.float32))
        s = popxl.d2h_stream((3,), popxl.float32, "v")
        ops.host_store(s, v + 1.0)
    session = popxl.Session(ir, "cpu")
    addons.write_variables_pb(session, {v: np.array([1, 2, 3], np.float32), c: np.ones(3, np.float32)})
    np.testing.assert_array_equal(session.get_tensor_data(v), [1, 2, 3])
    with session:
        np.testing.assert_array_equal(session.run()[s], [2, 3, 4])
        addons.write_variables_pb(session, {v: np.array([5, 5, 5], np.float32)})  # attached: also the device
        np.testing.assert_array_equal(session.run()[s], [6, 6, 6])


def test_write_variables_pb_refuses_grouped_variables() -> None:
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        v = popxl.variable(np.zeros((2, 3), np.float32), replica_grouping=ir.replica_grouping(group_size=1))
    session = popxl.Session(ir, "ipu_model")
    with pytest.raises(AddonsNotImplementedError, match="write_variables_pb.*2 replica groups"):
        addons.write_variables_pb(session, {v: np.zeros((2, 3), np.float32)})


# --- generations -------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["fp8_amax_scale", "print_tensor", "print_text", "disable_fc_pass", "enable_fc_pass"])
def test_names_new_in_3_4_are_absent_under_3_0(monkeypatch, name) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    assert not hasattr(addons, name)
    assert not hasattr(addons.ops, "fp8_amax_scale") and not hasattr(addons.transforms, "disable_fc_pass")
    assert callable(addons.total_FLOPs) and callable(addons.set_available_memory_proportion_by_ipu)
    assert callable(addons.write_variables_pb)


def test_write_variables_pb_while_attached_sends_every_host_copy() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.zeros(2, np.float32))
        counter = popxl.variable(np.zeros(2, np.float32))
        ops.var_updates.accumulate_(counter, popxl.constant(np.ones(2, np.float32)))
        s = popxl.d2h_stream((2,), popxl.float32, "c")
        ops.host_store(s, counter + v)
    with popxl.Session(ir, "cpu") as session:
        session.run()
        session.run()  # counter is 2 on the device, 0 on the host
        addons.write_variables_pb(session, {v: np.array([10, 20], np.float32)})
        # PopART sends the host's counter (0) back with v: the next run counts from 0
        np.testing.assert_array_equal(session.run()[s], [11, 21])
