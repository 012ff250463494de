"""Control-flow ops against numpy references: ops.repeat / repeat_with_info (loop-carried
inputs, implicit and by-ref inputs, host transfers per iteration), ops.conditional /
conditional_with_info, ops.remote_code_load, and autodiff through them."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl.errors import SimulatorNotImplementedError


def _fetch(ir: popxl.Ir, tensors: dict[str, popxl.Tensor], feeds: dict | None = None) -> dict[str, np.ndarray]:
    with ir.main_graph:
        streams = {}
        for name, t in tensors.items():
            s = popxl.d2h_stream(t.shape, t.dtype, name)
            ops.host_store(s, t)
            streams[name] = s
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run(feeds or {})
    return {name: out[s] for name, s in streams.items()}


def _mlp_step_ref(h: np.ndarray, w: np.ndarray, c: np.ndarray, count: int) -> np.ndarray:
    for _ in range(count):
        h = np.tanh(h @ w) + c
    return h


# --- repeat --------------------------------------------------------------------------------------
@pytest.mark.parametrize("count", [0, 1, 2, 5])
def test_repeat_carries_outputs_into_first_inputs(count: int) -> None:
    rng = np.random.default_rng(count)
    h0 = rng.normal(size=(3, 4)).astype(np.float32)
    w0 = rng.normal(size=(4, 4)).astype(np.float32) * 0.5
    c0 = rng.normal(size=(4,)).astype(np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        h = popxl.variable(h0, name="h")
        w = popxl.variable(w0, name="w")
        c = popxl.variable(c0, name="c")
        body = ir.create_graph(lambda a, b, d: ops.tanh(a @ b) + d, h, w, c)
        (out,) = ops.repeat(body, count, h, w, c)
    got = _fetch(ir, {"out": out, "h": h})
    np.testing.assert_allclose(got["out"], _mlp_step_ref(h0, w0, c0, count), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["h"], h0)  # not by-ref: the parent input is unchanged


def test_repeat_result_is_exactly_the_requested_iteration_count() -> None:
    # a wrong iteration count (one too few or too many) must not match the reference
    h0 = np.full((2, 2), 0.3, np.float32)
    w0 = np.array([[0.9, -0.2], [0.4, 1.1]], np.float32)
    c0 = np.array([0.1, -0.3], np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        h, w, c = popxl.variable(h0), popxl.variable(w0), popxl.variable(c0)
        body = ir.create_graph(lambda a, b, d: ops.tanh(a @ b) + d, h, w, c)
        (out,) = ops.repeat(body, 3, h, w, c)
    got = _fetch(ir, {"out": out})["out"]
    np.testing.assert_allclose(got, _mlp_step_ref(h0, w0, c0, 3), rtol=1e-6)
    for wrong in (2, 4):
        assert not np.allclose(got, _mlp_step_ref(h0, w0, c0, wrong), rtol=1e-4)


class _Affine(popxl.Module):
    """y = x @ W + b with W and b as graph inputs made inside build."""

    def __init__(self) -> None:
        self.W: popxl.Tensor | None = None
        self.b: popxl.Tensor | None = None

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        self.W = popxl.graph_input((x.shape[-1], x.shape[-1]), popxl.float32, "W")
        self.b = popxl.graph_input((x.shape[-1],), popxl.float32, "b")
        return x @ self.W + self.b


def test_repeat_with_inputs_dict_and_info() -> None:
    x0 = np.array([[1.0, 2.0, 0.5]], np.float32)
    W0 = np.array([[0.5, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 0.0, -0.5]], np.float32)
    b0 = np.array([1.0, -1.0, 0.0], np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(x0, name="x")
        W = popxl.variable(W0, name="W")
        b = popxl.variable(b0, name="b")
        affine = _Affine()
        g = ir.create_graph(affine, x)
        info = ops.repeat_with_info(g, 4, x, inputs_dict={affine.W: W, affine.b: b})
    assert isinstance(info, ops.CallSiteInfo)
    assert info.called_graph is g and info.inputs == (x, W, b) and len(info.outputs) == 1
    assert info.parent_to_graph(W) is affine.W
    ref = x0
    for _ in range(4):
        ref = ref @ W0 + b0
    np.testing.assert_allclose(_fetch(ir, {"o": info.outputs[0]})["o"], ref, rtol=1e-6)


def test_repeat_with_several_carried_values_and_a_passthrough_output() -> None:
    # outputs (a+b, a*b, k): both a and b are carried, k (third input) is carried unchanged
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.array([1.0, 2.0], np.float32))
        b = popxl.variable(np.array([0.5, -1.0], np.float32))
        k = popxl.variable(np.array([3.0, 4.0], np.float32))
        extra = popxl.variable(np.array([10.0, 20.0], np.float32))

        def body(p, q, r, e):
            return p + q, p * q + e * 0.0, r

        g = ir.create_graph(body, a, b, k, extra)
        s, p, kk = ops.repeat(g, 3, a, b, k, extra)
    ra, rb = np.array([1.0, 2.0]), np.array([0.5, -1.0])
    for _ in range(3):
        ra, rb = ra + rb, ra * rb
    got = _fetch(ir, {"s": s, "p": p, "k": kk})
    np.testing.assert_allclose(got["s"], ra, rtol=1e-6)
    np.testing.assert_allclose(got["p"], rb, rtol=1e-6)
    np.testing.assert_array_equal(got["k"], [3.0, 4.0])


def test_repeat_host_transfers_once_per_iteration() -> None:
    count = 5
    rng = np.random.default_rng(1)
    xs = rng.normal(size=(count, 2, 3)).astype(np.float32)
    W0 = rng.normal(size=(3, 3)).astype(np.float32)
    ir = popxl.Ir()
    ir.num_host_transfers = count
    with ir.main_graph:
        x_in = popxl.h2d_stream((2, 3), popxl.float32, "x_in")
        y_out = popxl.d2h_stream((2, 3), popxl.float32, "y_out")
        W = popxl.variable(W0, name="W")
        acc = ops.init((2, 3), popxl.float32, "acc", "zero")

        def body(total, w):
            y = ops.host_load(x_in, "x") @ w
            ops.host_store(y_out, y)
            return total + y

        g = ir.create_graph(body, acc, W)
        (total,) = ops.repeat(g, count, acc, W)
        t_out = popxl.d2h_stream(total.shape, total.dtype, "total")
        ops.host_store(t_out, total)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run({x_in: xs})
    ys = xs @ W0
    np.testing.assert_allclose(out[y_out], ys, rtol=1e-5)
    # host_store outside the loop runs once: its host array has the num_host_transfers axis,
    # filled for the first transfer only
    np.testing.assert_allclose(out[t_out][0], ys.sum(axis=0), rtol=1e-5)


def test_repeat_by_ref_inputs() -> None:
    # acc (not carried, by ref) accumulates over every iteration; x (carried, by ref) ends with
    # the body input's value of the last iteration, after the body's in-place change
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([1.0, 2.0], np.float32), name="x")
        acc = popxl.variable(np.zeros(2, np.float32), name="acc")

        def body(a: popxl.TensorByRef, s: popxl.TensorByRef):
            ops.var_updates.accumulate_(s, a)
            ops.var_updates.accumulate_(a, popxl.constant(np.array([1.0, 1.0], np.float32)))
            return a * 2.0

        g = ir.create_graph(body, x, acc)
        (y,) = ops.repeat(g, 3, x, acc)
    a, s = np.array([1.0, 2.0]), np.zeros(2)
    for _ in range(3):
        s = s + a
        a = a + 1.0
        out = a * 2.0
        last_input = a
        a = out
    got = _fetch(ir, {"y": y, "x": x, "acc": acc})
    np.testing.assert_allclose(got["y"], out)
    np.testing.assert_allclose(got["acc"], s)
    np.testing.assert_allclose(got["x"], last_input)


def test_repeat_validation() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        g = ir.create_graph(lambda a: a + 1.0, x)
        with pytest.raises(ValueError, match="Repeat count must be >= 0"):
            ops.repeat(g, -1, x)
        two_out = ir.create_graph(lambda a: (a + 1.0, a * 2.0), x)
        with pytest.raises(ValueError, match="number of inputs must be greater than or equal"):
            ops.repeat(two_out, 2, x)
        shrink = ir.create_graph(lambda a: ops.sum(a), x)
        with pytest.raises(ValueError, match="carried"):
            ops.repeat(shrink, 2, x)
        with pytest.raises(ValueError, match="Not enough inputs"):
            ops.repeat(g, 2)


def test_autodiff_through_repeat_is_refused_clearly() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
    inner = ir.create_graph(lambda a: a * 2.0, x)

    def outer(a):
        (y,) = ops.repeat(inner, 2, a)
        return y

    fwd = ir.create_graph(outer, x)
    with pytest.raises(SimulatorNotImplementedError, match=r"popxl.ops.repeat"):
        popxl.transforms.autodiff(fwd)


# --- conditional ---------------------------------------------------------------------------------
@pytest.mark.parametrize("flag", [True, False])
def test_conditional_runs_one_branch(flag: bool) -> None:
    x0 = np.array([1.0, -2.0, 3.0], np.float32)
    y0 = np.array([0.5, 0.5, 0.5], np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        cond = popxl.variable(np.array(flag), popxl.bool, name="cond")
        x = popxl.variable(x0, name="x")
        y = popxl.variable(y0, name="y")
        then_g = ir.create_graph(lambda a, b: (a * b, a + 1.0), x, y)
        else_g = ir.create_graph(lambda a: (ops.relu(a), a - 1.0), x)
        info = ops.conditional_with_info(cond, then_g, else_g, then_inputs=[x, y], else_inputs_dict={else_g.inputs[0]: x})
        o1, o2 = info.outputs
    assert "_or_" in o1.name
    assert info.called_graph == (then_g, else_g)
    assert info.graph_to_parent_input_index(0, then_branch=False) == 3
    assert info.is_parent_index_in_then_branch(2) and not info.is_parent_index_in_then_branch(3)
    assert info.parent_to_graph(y) is then_g.inputs[1]
    got = _fetch(ir, {"o1": o1, "o2": o2})
    if flag:
        np.testing.assert_allclose(got["o1"], x0 * y0)
        np.testing.assert_allclose(got["o2"], x0 + 1.0)
    else:
        np.testing.assert_allclose(got["o1"], np.maximum(x0, 0))
        np.testing.assert_allclose(got["o2"], x0 - 1.0)


def test_conditional_on_a_computed_condition_inside_a_repeat() -> None:
    # count up; add 10 only on iterations where the counter is above 2
    ir = popxl.Ir()
    with ir.main_graph:
        n = popxl.variable(np.array(0.0, np.float32), name="n")
        v = popxl.variable(np.array(0.0, np.float32), name="v")
        big = ir.create_graph(lambda a: a + 10.0, v)
        small = ir.create_graph(lambda a: a + 1.0, v)

        def body(i, acc):
            i2 = i + 1.0
            (acc2,) = ops.conditional(ops.greater(i2, popxl.constant(2.0)), big, small, [acc], [acc])
            return i2, acc2

        g = ir.create_graph(body, n, v)
        i_end, v_end = ops.repeat(g, 5, n, v)
    got = _fetch(ir, {"i": i_end, "v": v_end})
    assert float(got["i"]) == 5.0
    assert float(got["v"]) == 1 + 1 + 10 + 10 + 10


def test_conditional_validation_and_by_ref_refusal() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        c = popxl.variable(np.array(True), popxl.bool)
        x = popxl.variable(np.ones(2, np.float32))
        one = ir.create_graph(lambda a: a + 1.0, x)
        two = ir.create_graph(lambda a: (a + 1.0, a), x)
        with pytest.raises(ValueError, match="same number of outputs"):
            ops.conditional(c, one, two, [x], [x])
        other_shape = ir.create_graph(lambda a: ops.sum(a), x)
        with pytest.raises(ValueError, match="differs between the branches"):
            ops.conditional(c, one, other_shape, [x], [x])
        by_ref = ir.create_graph(lambda a: ops.var_updates.accumulate_(a, a), popxl.TensorSpec((2,), popxl.float32))
        by_ref._by_ref_inputs[by_ref.inputs[0]] = None
        with pytest.raises(NotImplementedError, match="TensorByRef is not implemented for the conditional op"):
            ops.conditional(c, by_ref, one, [x], [x])
        with pytest.raises(ValueError, match="one value"):
            ops.conditional(x, one, one, [x], [x])


def test_conditional_replicas_must_agree() -> None:
    ir = popxl.Ir()
    ir.replication_factor = 2
    with ir.main_graph:
        s = popxl.h2d_stream((), popxl.bool, "c")
        c = ops.host_load(s, "c")
        x = popxl.variable(np.ones(2, np.float32))
        t = ir.create_graph(lambda a: a + 1.0, x)
        e = ir.create_graph(lambda a: a - 1.0, x)
        (y,) = ops.conditional(c, t, e, [x], [x])
        out = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(out, y)
    with popxl.Session(ir, "ipu_model") as session:
        same = session.run({s: np.array([False, False])})
        np.testing.assert_allclose(same[out], np.zeros((2, 2)))
        with pytest.raises(SimulatorNotImplementedError, match="differs between replicas"):
            session.run({s: np.array([True, False])})


def test_autodiff_through_conditional_builds_if_grad() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
        c = popxl.variable(np.array(True), popxl.bool)
    t = ir.create_graph(lambda a: a * 2.0, x)

    def outer(flag, a):
        (y,) = ops.conditional(flag, t, t, [a], [a])
        return y

    fwd = ir.create_graph(outer, c, x)
    info = popxl.transforms.autodiff(fwd, grads_required=[fwd.inputs[1]])
    assert "If" in {op.type for op in info.graph._ops}  # PopART IfGradOp (tests/emulator_popxl/test_autodiff_control.py)


# --- code loading --------------------------------------------------------------------------------
def test_remote_code_load_changes_no_value_and_nests() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
    g1 = ir.create_graph(lambda a: a.T.T * 3.0, x)
    g2 = ir.create_graph(lambda: ops.remote_code_load(g1, "executable"))
    with ir.main_graph, popxl.in_sequence():
        ops.remote_code_load(g1, destination="executable")
        ops.call(g2)
        (y,) = ops.call(g1, x)
    np.testing.assert_allclose(_fetch(ir, {"y": y})["y"], [[3.0, 6.0], [9.0, 12.0]])
    assert [op.type for op in g2.ops] == ["RemoteCodeLoad"]


def test_remote_code_load_validation() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(2, np.float32))
    g = ir.create_graph(lambda a: a + 1.0, x)
    with ir.main_graph:
        with pytest.raises(ValueError, match="Not a valid location"):
            ops.remote_code_load(g, "tiles")
        with pytest.raises(NotImplementedError, match="compute_buffer"):
            ops.remote_code_load(g, "compute_buffer")
        with pytest.raises(NotImplementedError):
            ops.code_copy(g, "executable", "executable")
    with g, pytest.raises(ValueError, match="cannot load the code for the graph it resides in"):
        ops.remote_code_load(g, "executable")
