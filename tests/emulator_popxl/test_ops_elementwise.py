"""popxl.ops element-wise and reduction families on the simulator: values against numpy, dtype
rules of popxl, gradients against the analytic derivatives, and the lowering's records."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops

from .test_autodiff import grads_via_program

X = np.array([[-1.5, 0.25, 2.0], [3.0, -0.5, 0.75]], np.float32)
POS = np.array([[0.5, 1.25, 2.0], [3.0, 4.5, 0.75]], np.float32)
ERF = np.vectorize(math.erf)


def run(fn: Callable[..., popxl.Tensor], *values: np.ndarray) -> np.ndarray:
    """Build ``fn`` over variables holding ``values`` in the main graph, run once, return its output."""
    ir = popxl.Ir()
    with ir.main_graph:
        tensors = [popxl.variable(v) for v in values]
        y = fn(*tensors)
        stream = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(stream, y)
    with popxl.Session(ir, "cpu") as session:
        return session.run()[stream]


UNARY_CASES = [
    ("relu", ops.relu, X, np.maximum(X, 0)),
    ("exp", ops.exp, X, np.exp(X)),
    ("log", ops.log, POS, np.log(POS)),
    ("log2", ops.log2, POS, np.log2(POS)),
    ("sqrt", ops.sqrt, POS, np.sqrt(POS)),
    ("tanh", ops.tanh, X, np.tanh(X)),
    ("sin", ops.sin, X, np.sin(X)),
    ("cos", ops.cos, X, np.cos(X)),
    ("abs", ops.abs, X, np.abs(X)),
    ("floor", ops.floor, X, np.floor(X)),
    ("ceil", ops.ceil, X, np.ceil(X)),
    ("sign", ops.sign, X, np.sign(X)),
    ("swish", ops.swish, X, X / (1 + np.exp(-X))),
    ("geluerf", ops.geluerf, X, 0.5 * X * (1 + ERF(X / math.sqrt(2)))),
    ("negate", ops.negate, X, -X),
]


@pytest.mark.parametrize("name,fn,x,expected", UNARY_CASES, ids=[c[0] for c in UNARY_CASES])
def test_unary_ops_match_numpy(name: str, fn: Callable, x: np.ndarray, expected: np.ndarray) -> None:
    got = run(fn, x)
    assert got.dtype == np.float32 and got.shape == x.shape
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name,fn", [("relu_", ops.relu_), ("exp_", ops.exp_), ("swish_", ops.swish_),
                                     ("geluerf_", ops.geluerf_)])
def test_inplace_variants_modify_their_input(name: str, fn: Callable) -> None:
    plain = run(getattr(ops, name[:-1]), X)
    # the in-place op changes the variable itself: read it back through the variable
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(X, name="v")
        fn(v)
    with popxl.Session(ir, "cpu") as session:
        session.run()
    np.testing.assert_allclose(session.get_tensor_data(v), plain, rtol=1e-6)


def test_float_ops_refuse_integers_like_popart() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        i = popxl.variable(np.arange(3, dtype=np.int32))
        with pytest.raises(TypeError, match="popxl.ops.exp: .* needs a floating-point tensor"):
            ops.exp(i)
        assert ops.abs(i).dtype == popxl.int32  # abs and sign take integers


def test_binary_comparison_and_logical_ops() -> None:
    a = np.array([[1.0, 2.0, 3.0]], np.float32)
    b = np.array([[2.0], [1.0]], np.float32)
    got = run(lambda x, y: ops.pow(x, y), a, b)
    np.testing.assert_allclose(got, np.power(a, b))
    assert run(lambda x: ops.pow(x, 2), a).tolist() == [[1.0, 4.0, 9.0]]
    eq = run(lambda x, y: ops.equal(x, y), a, b)
    assert eq.dtype == np.bool_ and eq.tolist() == [[False, True, False], [True, False, False]]
    assert run(lambda x, y: ops.greater(x, y), a, b).tolist() == [[False, False, True], [False, True, True]]
    # logical ops cast their inputs to bool
    c = np.array([0.0, 2.0, 0.0, -1.0], np.float32)
    d = np.array([0.0, 0.0, 5.0, 1.0], np.float32)
    assert run(ops.logical_and, c, d).tolist() == [False, False, False, True]
    assert run(ops.logical_or, c, d).tolist() == [False, True, True, True]
    assert run(ops.logical_not, c).tolist() == [True, False, True, False]
    np.testing.assert_allclose(run(ops.fmod, np.array([5.5, -5.5], np.float32), np.array([2.0, 2.0], np.float32)),
                               [1.5, -1.5])
    assert run(lambda x: ops.maximum(x, popxl.constant(np.float32(0.5)), ops.negate(x)), X).tolist() == \
        np.maximum(np.maximum(X, 0.5), -X).tolist()
    np.testing.assert_allclose(run(lambda x: ops.clip(x, -1.0, 1.0), X), np.clip(X, -1, 1))


def test_where_broadcasts_and_casts_the_condition() -> None:
    cond = np.array([1, 0, 1], np.int32)  # cast to bool, as popxl does
    got = run(lambda c, x: ops.where(c, x, ops.negate(x)), cond, X)
    np.testing.assert_array_equal(got, np.where(cond.astype(bool), X, -X))


def test_predicates() -> None:
    v = np.array([1.0, np.nan, np.inf, -np.inf], np.float32)
    assert run(ops.isnan, v).tolist() == [False, True, False, False]
    assert run(ops.isinf, v).tolist() == [False, False, True, True]
    assert run(ops.isfinite, v).tolist() == [True, False, False, False]


REDUCTIONS = [
    ("mean", ops.mean, np.mean), ("max", ops.max, np.max), ("min", ops.min, np.min), ("prod", ops.prod, np.prod),
    ("sumsquare", ops.sumsquare, lambda x, axis=None, keepdims=False: np.sum(x * x, axis=axis, keepdims=keepdims)),
    ("logsumexp", ops.logsumexp,
     lambda x, axis=None, keepdims=False: np.log(np.sum(np.exp(x), axis=axis, keepdims=keepdims))),
    ("l1", ops.l1, lambda x, axis=None, keepdims=False: np.sum(np.abs(x), axis=axis, keepdims=keepdims)),
    ("l2", ops.l2, lambda x, axis=None, keepdims=False: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))),
]


@pytest.mark.parametrize("name,fn,ref", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, False), (0, True), ((0, 1), True), (-1, True)])
def test_reductions_match_numpy(name: str, fn: Callable, ref: Callable, axis, keepdims: bool) -> None:
    got = run(lambda t: fn(t, axis, keepdims), X)
    expected = ref(X.astype(np.float64), axis=axis, keepdims=keepdims)
    assert got.shape == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_argmax_argmin_cumsum() -> None:
    assert run(lambda t: ops.argmax(t, 1), X).tolist() == [2, 0]
    assert run(lambda t: ops.argmin(t, 0, keepdim=True), X).tolist() == [[0, 1, 1]]
    assert run(lambda t: ops.argmax(t), X).dtype == np.int32
    np.testing.assert_allclose(run(lambda t: ops.cumsum(t, 1), X), np.cumsum(X, axis=1), rtol=1e-6)


def test_reduction_axis_out_of_range_is_refused() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(X)
        with pytest.raises(ValueError, match="axis 2 is out of range"):
            ops.mean(t, 2)


GRAD_CASES = [
    ("relu", ops.relu, X, lambda x: (x > 0).astype(np.float32)),
    ("exp", ops.exp, X, np.exp),
    ("log", ops.log, POS, lambda x: 1 / x),
    ("log2", ops.log2, POS, lambda x: 1 / (x * np.log(2))),
    ("sqrt", ops.sqrt, POS, lambda x: 0.5 / np.sqrt(x)),
    ("tanh", ops.tanh, X, lambda x: 1 - np.tanh(x) ** 2),
    ("sin", ops.sin, X, np.cos),
    ("cos", ops.cos, X, lambda x: -np.sin(x)),
    ("abs", ops.abs, X, np.sign),
    ("swish", ops.swish, X, lambda x: (s := 1 / (1 + np.exp(-x))) + x * s * (1 - s)),
    ("geluerf", ops.geluerf, X,
     lambda x: 0.5 * (1 + ERF(x / math.sqrt(2))) + x * np.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)),
    ("pow3", lambda t: ops.pow(t, 3.0), X, lambda x: 3 * x * x),
]


@pytest.mark.parametrize("name,fn,x,derivative", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_of_unary_ops(name: str, fn: Callable, x: np.ndarray, derivative: Callable) -> None:
    upstream = np.linspace(0.5, 1.5, x.size, dtype=np.float32).reshape(x.shape)
    _, (grad,) = grads_via_program(fn, [x], upstream)
    np.testing.assert_allclose(grad, upstream * derivative(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_gradients_of_pow_where_and_reductions() -> None:
    e = np.array([[2.0, 1.5, 0.5]], np.float32)
    up = np.ones_like(POS)
    _, (dx, de) = grads_via_program(lambda a, b: ops.pow(a, b), [POS, e], up)
    np.testing.assert_allclose(dx, e * POS ** (e - 1), rtol=1e-5)
    np.testing.assert_allclose(de, (POS ** e * np.log(POS)).sum(axis=0, keepdims=True), rtol=1e-5)

    upstream = np.array([1.0, 2.0], np.float32)
    _, (g,) = grads_via_program(lambda t: ops.mean(t, 1), [X], upstream)
    np.testing.assert_allclose(g, np.repeat(upstream[:, None] / 3, 3, axis=1), rtol=1e-6)
    _, (g,) = grads_via_program(lambda t: ops.sumsquare(t, 0), [X], np.ones(3, np.float32))
    np.testing.assert_allclose(g, 2 * X, rtol=1e-6)
    _, (g,) = grads_via_program(lambda t: ops.logsumexp(t, 1), [X], upstream)
    soft = np.exp(X) / np.exp(X).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(g, upstream[:, None] * soft, rtol=1e-5)

    up = np.arange(6, dtype=np.float32).reshape(2, 3)
    _, (ga, gb) = grads_via_program(lambda a, b: ops.where(ops.greater(a, b), a, b), [X, POS], up)
    mask = X > POS
    np.testing.assert_array_equal(ga, np.where(mask, up, 0))
    np.testing.assert_array_equal(gb, np.where(mask, 0, up))


def test_ops_without_a_gradient_rule_are_refused_by_autodiff() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        g = ir.create_graph(lambda t: ops.var_updates.adam_updater(t, t), popxl.TensorSpec((2, 3), popxl.float32))
        with pytest.raises(NotImplementedError, match="autodiff of op AdamUpdater"):
            popxl.transforms.autodiff(g)


def test_new_ops_lower_with_flops_and_in_place_aliases() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(X, name="v")
        e = ops.exp(v)
        r = ops.relu_(e)
        m = ops.mean(r, 1)
    program = lower(ir)
    by_type = {op.type: op for op in program.ops.values()}
    assert by_type["Exp"].flops == 4 * 6
    assert by_type["ReluInplace"].flops == 6
    assert by_type["ReduceMean"].flops == 6  # per input element
    assert by_type["ReluInplace"].modified == (e.id,)
    assert by_type["ReluInplace"].attrs["aliases"] == {r.id: e.id}
    assert by_type["ReduceMean"].outputs == (m.id,)
