"""autodiff through conditionals (PopART IfGradOp), the reductions PopART differentiates, and the
ops PopART gives no gradient (ipu_copy, io_tile_copy, matmul_pow2scaled, float8 casts): gradients
against finite differences and numpy references, refusals by name."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops
from .test_autodiff import grads_via_program, numeric_grads

RNG = np.random.default_rng(7)


def _conditional_grads(flag: bool, x0: np.ndarray, w0: np.ndarray, up: np.ndarray) -> list[np.ndarray]:
    """Run d(sum(up * f))/d(x, w) of f = conditional(flag, then: exp(x*w) * x, else: tanh(x) + w)."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        spec = popxl.TensorSpec(x0.shape, popxl.float32)
        then_g = ir.create_graph(lambda a, b: ops.exp(a * b) * a, spec, spec)
        else_g = ir.create_graph(lambda a, b: ops.tanh(a) + b, spec, spec)

        def outer(c, a, b):
            (y,) = ops.conditional(c, then_g, else_g, [a, b], [a, b])
            return y

        fwd = ir.create_graph(outer, popxl.TensorSpec((), popxl.bool), spec, spec)
        info = popxl.transforms.autodiff(fwd, grads_required=fwd.inputs[1:])
        c = popxl.variable(np.array(flag), popxl.bool)
        x, w = popxl.variable(x0), popxl.variable(w0)
        call = ops.call_with_info(fwd, c, x, w)
        grads = ops.call(info.graph, popxl.constant(up), inputs_dict=info.inputs_dict(call))
        streams = []
        for g in grads:
            s = popxl.d2h_stream(g.shape, g.dtype, "g")
            ops.host_store(s, g)
            streams.append(s)
    with popxl.Session(ir, "cpu") as session:
        out = session.run()
    return [out[s] for s in streams]


@pytest.mark.parametrize("flag", [True, False])
def test_conditional_gradient_is_the_taken_branchs(flag: bool) -> None:
    x0 = RNG.normal(size=(2, 3)).astype(np.float32)
    w0 = RNG.normal(size=(2, 3)).astype(np.float32)
    up = RNG.normal(size=(2, 3)).astype(np.float32)
    gx, gw = _conditional_grads(flag, x0, w0, up)
    x, w, u = x0.astype(np.float64), w0.astype(np.float64), up.astype(np.float64)
    if flag:  # d/dx exp(xw) x = exp(xw)(wx + 1); d/dw = exp(xw) x^2
        ex = np.exp(x * w)
        ref_x, ref_w = u * ex * (w * x + 1.0), u * ex * x * x
    else:
        ref_x, ref_w = u * (1.0 - np.tanh(x) ** 2), u
    np.testing.assert_allclose(gx, ref_x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gw, ref_w, rtol=1e-5, atol=1e-6)


def test_conditional_branch_activations_are_recomputed_not_stitched() -> None:
    """A branch's call site is an If, so (SafeAddFwdOutputs) its activations are recomputed in the
    gradient graph: the branch keeps its outputs and the conditional stays valid."""
    ir = popxl.Ir()
    with ir.main_graph:
        spec = popxl.TensorSpec((3,), popxl.float32)
        then_g = ir.create_graph(lambda a: ops.exp(a) * a, spec)
        else_g = ir.create_graph(lambda a: a * 2.0, spec)

        def outer(c, a):
            (y,) = ops.conditional(c, then_g, else_g, [a], [a])
            return y

        fwd = ir.create_graph(outer, popxl.TensorSpec((), popxl.bool), spec)
        info = popxl.transforms.autodiff(fwd, grads_required=[fwd.inputs[1]], return_all_grad_graphs=True)
    assert len(then_g.outputs) == 1 and len(else_g.outputs) == 1
    then_bwd = info[then_g]
    # the product's gradient ops connect both factors and the product (PopART's
    # ElementWiseBinaryGradOp); the product is the branch's output, which the RecomputeStitcher
    # (Minimal) leaves an input, and exp(a) is neither an input nor an output: recomputed
    assert [e.fwd_tensor for e in then_bwd.expected_inputs][1:] == [then_g.inputs[0], then_g.outputs[0]]
    assert "Exp" in {op.type for op in then_bwd.graph._ops}  # exp(a) recomputed from the input


def test_conditional_gradient_reaches_each_branchs_own_inputs() -> None:
    x0 = np.array([0.5, -1.0], np.float32)
    up = np.array([1.0, 2.0], np.float32)

    def grads(flag: bool) -> list[np.ndarray]:
        ir = popxl.Ir()
        with ir.main_graph:
            spec = popxl.TensorSpec((2,), popxl.float32)
            then_g = ir.create_graph(lambda a: a * a, spec)
            else_g = ir.create_graph(lambda a: a * 3.0, spec)

            def outer(c, a, b):
                (y,) = ops.conditional(c, then_g, else_g, [a], [b])
                return y

            fwd = ir.create_graph(outer, popxl.TensorSpec((), popxl.bool), spec, spec)
            info = popxl.transforms.autodiff(fwd, grads_required=fwd.inputs[1:])
            call = ops.call_with_info(fwd, popxl.variable(np.array(flag), popxl.bool), popxl.variable(x0),
                                      popxl.variable(x0 + 1.0))
            gs = ops.call(info.graph, popxl.constant(up), inputs_dict=info.inputs_dict(call))
            streams = [popxl.d2h_stream(g.shape, g.dtype, "g") for g in gs]
            for s, g in zip(streams, gs):
                ops.host_store(s, g)
        with popxl.Session(ir, "cpu") as session:
            out = session.run()
        return [out[s] for s in streams]

    ga, gb = grads(True)
    np.testing.assert_allclose(ga, up * 2 * x0)
    np.testing.assert_array_equal(gb, np.zeros(2, np.float32))  # IfOpx zeroes the other branch's outputs
    ga, gb = grads(False)
    np.testing.assert_array_equal(ga, np.zeros(2, np.float32))
    np.testing.assert_allclose(gb, up * 3.0)


X = np.array([[0.3, -1.2, 2.0, 0.7], [1.5, 0.4, -0.6, -2.1], [0.9, 1.1, -0.2, 0.05]], np.float32)
UP1 = np.array([0.7, -1.3, 0.4], np.float32)
UP2 = RNG.normal(size=X.shape).astype(np.float32)

REDUCE_CASES = [
    ("max", lambda t: ops.max(t, 1), UP1),
    ("min", lambda t: ops.min(t, 1), UP1),
    ("prod", lambda t: ops.prod(t, 1), UP1),
    ("l1", lambda t: ops.l1(t, 1), UP1),
    ("l2", lambda t: ops.l2(t, 1), UP1),
    ("logsum", lambda t: ops.logsum(ops.abs(t) + 0.5, 1), UP1),
    ("clip", lambda t: ops.clip(t, -1.0, 1.0), UP2),
    ("cumsum", lambda t: ops.cumsum(t, 1), UP2),
    ("maximum", lambda t: ops.maximum(t, t * 0.5 + 0.25), UP2),
    ("fmod", lambda t: ops.fmod(t, popxl.constant(np.float32(0.8))), UP2),
]


@pytest.mark.parametrize("name,fn,up", REDUCE_CASES, ids=[c[0] for c in REDUCE_CASES])
def test_reduction_and_elementwise_gradients_match_finite_differences(name: str, fn, up: np.ndarray) -> None:
    _, (g,) = grads_via_program(fn, [X], up)
    np.testing.assert_allclose(g, numeric_grads(fn, [X], up, eps=1e-3)[0], rtol=2e-2, atol=2e-3)


def test_prod_gradient_with_a_zero_is_the_product_of_the_others() -> None:
    x = np.array([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0]], np.float32)
    _, (g,) = grads_via_program(lambda t: ops.prod(t, 1), [x], np.ones(2, np.float32))
    np.testing.assert_allclose(g, [[0.0, 6.0, 0.0], [0.0, 0.0, 0.0]])


def test_max_gradient_goes_to_every_tied_element_as_popart() -> None:
    x = np.array([[1.0, 3.0, 3.0]], np.float32)
    _, (g,) = grads_via_program(lambda t: ops.max(t, 1), [x], np.array([2.0], np.float32))
    np.testing.assert_allclose(g, [[0.0, 2.0, 2.0]])  # sign(x - y) + 1 per element (ReduceMaxGradOpx)


def _refused(build) -> str:
    ir = popxl.Ir()
    with ir.main_graph:
        g = ir.create_graph(build, popxl.TensorSpec((2, 2), popxl.float32))
        with pytest.raises(RuntimeError) as err:
            popxl.transforms.autodiff(g)
    return str(err.value)


def test_autodiff_refuses_ipu_copy_as_popart_has_no_gradient_for_it() -> None:
    def build(t):
        with popxl.ipu(0):
            u = t * 2.0
        return ops.ipu_copy(u, 1)
    msg = _refused(build)
    assert "IpuCopyOp" in msg and "popxl.ops.ipu_copy" in msg and "no gradient" in msg


def test_autodiff_refuses_copy_to_ipu_and_io_tile_copy() -> None:
    def via_tensor(t):
        with popxl.ipu(0):
            u = t * 2.0
        return u.copy_to_ipu(1)
    assert "IpuCopyOp" in _refused(via_tensor)
    assert "io_tile_copy" in _refused(lambda t: ops.io_tile_copy(t * 2.0))


def test_autodiff_refuses_matmul_pow2scaled_and_float8_casts() -> None:
    def scaled(t):
        a = ops.pow2scale_cast_to_fp8(t, popxl.constant(0, popxl.int32), popxl.float8_143)
        return ops.matmul_pow2scaled(a, a, popxl.constant(0, popxl.int32))
    ir = popxl.Ir()
    with ir.main_graph:
        g = ir.create_graph(scaled, popxl.TensorSpec((2, 2), popxl.float32))
        with pytest.raises(RuntimeError, match=r"popxl.ops.matmul_pow2scaled has no gradient"):
            popxl.transforms.autodiff(g)
        g2 = ir.create_graph(lambda t: ops.pow2scale_cast_from_fp8(
            ops.pow2scale_cast_to_fp8(t, popxl.constant(0, popxl.int32), popxl.float8_143),
            popxl.constant(0, popxl.int32), popxl.float32), popxl.TensorSpec((2, 2), popxl.float32))
        with pytest.raises(RuntimeError, match="float8 for training"):
            popxl.transforms.autodiff(g2)
