"""transforms.autodiff: structure of the gradient graph and gradients vs finite differences."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl.transforms.autodiff import ExpectedConnectionType


def mlp(x: popxl.Tensor, w1: popxl.Tensor, b1: popxl.Tensor, w2: popxl.Tensor, b2: popxl.Tensor) -> popxl.Tensor:
    h = x.reshape((-1, 6)) @ w1 + b1
    h = ops.gelu(h)
    y = h @ w2 + b2
    return y * 0.5


def attention_like(x: popxl.Tensor, w: popxl.Tensor) -> popxl.Tensor:
    s = ops.softmax(x @ w, axis=-1)
    return ops.sum(s * (x @ w) - x.transpose().T * popxl.constant(0.3), axis=1)


def quotient(x: popxl.Tensor, y: popxl.Tensor) -> popxl.Tensor:
    return (x / (y * y + 1.0)) - ops.sum(x, axis=0, keepdims=True)


def grads_via_program(fn: Callable[..., popxl.Tensor], values: list[np.ndarray], upstream: np.ndarray,
                      ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Run fwd + autodiff grad graph on the simulator; return (output, grads of every input)."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        specs = [popxl.TensorSpec(v.shape, popxl.float32) for v in values]
        fwd = ir.create_graph(fn, *specs)
        info = popxl.transforms.autodiff(fwd)
        variables = [popxl.variable(v) for v in values]
        call = ops.call_with_info(fwd, *variables)
        dy = popxl.constant(upstream)
        grads = ops.call(info.graph, dy, inputs_dict=info.inputs_dict(call))
        out_s = popxl.d2h_stream(call.outputs[0].shape, popxl.float32, "y")
        ops.host_store(out_s, call.outputs[0])
        grad_s = []
        for g in grads:
            s = popxl.d2h_stream(g.shape, g.dtype, "g")
            ops.host_store(s, g)
            grad_s.append(s)
    with popxl.Session(ir, "cpu") as session:
        out = session.run()
    return out[out_s], [out[s] for s in grad_s]


def numeric_grads(fn: Callable[..., popxl.Tensor], values: list[np.ndarray], upstream: np.ndarray,
                  eps: float = 1e-2) -> list[np.ndarray]:
    """Central differences of sum(upstream * fn(values)), evaluated on the simulator."""
    ir = popxl.Ir()
    with ir.main_graph:
        specs = [popxl.TensorSpec(v.shape, popxl.float32) for v in values]
        fwd = ir.create_graph(fn, *specs)
        variables = [popxl.variable(v) for v in values]
        (y,) = ops.call(fwd, *variables)
        s = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(s, y)
    session = popxl.Session(ir, "cpu")
    result = []
    with session:
        for var, base in zip(variables, values):
            grad = np.zeros(base.shape, np.float64)
            for idx in np.ndindex(base.shape):
                vals = []
                for sign in (1, -1):
                    pert = base.copy()
                    pert[idx] += sign * eps
                    session.write_variable_data(var, pert)
                    vals.append(float((session.run()[s].astype(np.float64) * upstream).sum()))
                grad[idx] = (vals[0] - vals[1]) / (2 * eps)
            session.write_variable_data(var, base)
            result.append(grad)
    return result


def test_autodiff_gradient_graph_structure() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x_spec = popxl.TensorSpec((2, 3, 2), popxl.float32)
        fwd = ir.create_graph(mlp, x_spec, popxl.TensorSpec((6, 4), popxl.float32), popxl.TensorSpec((4,), popxl.float32),
                              popxl.TensorSpec((4, 3), popxl.float32), popxl.TensorSpec((3,), popxl.float32))
        n_outputs_before = len(fwd.outputs)
        w1, w2 = fwd.inputs[1], fwd.inputs[3]
        info = popxl.transforms.autodiff(fwd, grads_required=[w2, w1])
    assert info.graph.id == f"{fwd.id}_bwd" and info.forward_graph == fwd
    kinds = [e.connection_type for e in info.expected_inputs]
    assert kinds[0] is ExpectedConnectionType.FwdGrad and info.expected_inputs[0].fwd_tensor == fwd.outputs[0]
    assert all(k is ExpectedConnectionType.Fwd for k in kinds[1:])
    assert [e.fwd_tensor for e in info.expected_outputs] == [w2, w1]
    assert [t.name for t in info.graph.outputs] == ["Gradient___w2", "Gradient___w1"]
    assert info.graph.inputs[0].name == "Gradient___" + fwd.outputs[0].name
    # activations that are not fwd inputs became extra fwd outputs
    assert len(fwd.outputs) > n_outputs_before
    for e in info.expected_inputs[1:]:
        assert e.fwd_tensor in fwd.inputs or e.fwd_tensor in fwd.outputs
    assert info.graph._grad_graph_info is info


def test_inputs_dict_rejects_another_graphs_call_site_and_late_call_sites() -> None:
    ir = popxl.Ir()

    def lin(x: popxl.Tensor, w: popxl.Tensor) -> popxl.Tensor:
        return ops.gelu(x @ w)

    with ir.main_graph:
        spec_x, spec_w = popxl.TensorSpec((2, 3), popxl.float32), popxl.TensorSpec((3, 3), popxl.float32)
        fwd = ir.create_graph(lin, spec_x, spec_w)
        other = ir.create_graph(lin, spec_x, spec_w)
        x = popxl.variable(np.ones((2, 3), np.float32))
        w = popxl.variable(np.ones((3, 3), np.float32))
        early = ops.call_with_info(fwd, x, w)  # created before autodiff: stitched by autodiff
        info = popxl.transforms.autodiff(fwd)
        other_site = ops.call_with_info(other, x, w)
        with pytest.raises(TypeError, match="does not match"):
            info.inputs_dict(other_site)
        # as PopART's AddFwdOutputStitcher: the early call site gained the new activation outputs
        assert len(early.outputs) == len(fwd.outputs)
        stitched = [t.name for t in info.inputs_dict(early).values() if t.name.startswith("autodiff_output__t")]
        assert stitched and len(stitched) == len(fwd.outputs) - 1
        late = ops.call_with_info(fwd, x, w)
        acts = info.inputs_dict(late)
        assert set(acts) == {t for t, e in zip(info.graph.inputs, info.expected_inputs)
                             if e.connection_type is ExpectedConnectionType.Fwd}
        grad_site = ops.call_with_info(info.graph, popxl.constant(np.ones((2, 3), np.float32)), inputs_dict=acts)
        mapping = info.fwd_parent_ins_to_grad_parent_outs(late, grad_site)
        assert list(mapping) == [x, w]
        assert list(info.fwd_graph_ins_to_grad_parent_outs(grad_site)) == list(fwd.inputs[:2])


@pytest.mark.parametrize("fn,shapes", [
    (mlp, [(2, 3, 2), (6, 4), (4,), (4, 3), (3,)]),
    (attention_like, [(3, 3), (3, 3)]),
    (quotient, [(2, 4), (4,)]),
])
def test_gradients_match_finite_differences(fn: Callable[..., popxl.Tensor], shapes: list[tuple[int, ...]]) -> None:
    rng = np.random.default_rng(1)
    values = [rng.normal(scale=0.7, size=s).astype(np.float32) for s in shapes]
    probe_ir = popxl.Ir()
    with probe_ir.main_graph:
        out_shape = probe_ir.create_graph(fn, *[popxl.TensorSpec(s, popxl.float32) for s in shapes]).outputs[0].shape
    upstream = rng.normal(size=out_shape).astype(np.float32)
    _, grads = grads_via_program(fn, values, upstream)
    expected = numeric_grads(fn, values, upstream)
    assert len(grads) == len(values)
    for got, want in zip(grads, expected):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=3e-2, atol=3e-3)


def test_cast_gradient_is_cast_back() -> None:
    def through_half(x: popxl.Tensor) -> popxl.Tensor:
        return ops.cast(ops.cast(x, popxl.float16), popxl.float32) * 3.0

    upstream = np.array([0.5, -1.25, 2.0], np.float32)
    out, (grad,) = grads_via_program(through_half, [np.array([1.0, 2.0, 3.0], np.float32)], upstream)
    np.testing.assert_array_equal(out, [3.0, 6.0, 9.0])
    np.testing.assert_array_equal(grad, 3.0 * upstream)


def test_autodiff_of_unsupported_ops_names_them() -> None:
    ir = popxl.Ir()

    def inplace(x: popxl.Tensor) -> popxl.Tensor:
        y = x * 2.0
        y += x
        return y

    with ir.main_graph:
        g = ir.create_graph(inplace, popxl.TensorSpec((2,), popxl.float32))
        with pytest.raises(RuntimeError, match="AddLhsInplace.*in-place modifying ops"):
            popxl.transforms.autodiff(g)


def test_binary_grad_ops_connect_both_inputs_and_the_output_as_popart() -> None:
    """PopART's ElementWiseBinaryGradOp (the gradient of Mul, Div, Pow, Atan2; Sub's second
    input) connects the forward op's inputs and output, used or not; a constant it needs is an
    input of the gradient graph too (stitched as a new forward output); Add's and Sub's first
    input's gradient ops (ReduceSumOp) connect none, and a gradient op whose gradient nothing
    needs is pruned with what it connects."""
    ir = popxl.Ir()
    with ir.main_graph:
        spec = popxl.TensorSpec((2, 3), popxl.float32)
        fwd = ir.create_graph(lambda x, m: x * 0.125 + (x - m), spec, spec)
        info = popxl.transforms.autodiff(fwd, grads_required=[fwd.inputs[0]])
        names = [(e.connection_type.value, e.fwd_tensor.name, e.fwd_tensor.shape) for e in info.expected_inputs]
        assert names == [("FwdGrad", "add_out", (2, 3)),  # the gradient of the output
                         ("Fwd", "x", (2, 3)), ("Fwd", "t", ()), ("Fwd", "mul_out", (2, 3))]
        # popxl's own attribute, which popxl-addons' tests read
        assert tuple(info._expected_inputs) == info.expected_inputs
        # the constant and the product became outputs of the forward graph: call sites supply them
        assert [t.name for t in fwd.outputs] == ["add_out", "t", "mul_out"]
        # and the gradient is still right: d/dx (x/8 + x - m) = 1 + 1/8
        x = np.arange(6, dtype=np.float32).reshape(2, 3)
        call = ops.call_with_info(fwd, popxl.variable(x), popxl.variable(x + 1))
        (gx,) = ops.call(info.graph, popxl.constant(np.ones((2, 3), np.float32)),
                         inputs_dict=info.inputs_dict(call))
        out = popxl.d2h_stream((2, 3), popxl.float32)
        ops.host_store(out, gx)
    with popxl.Session(ir, "ipu_hw") as session:
        np.testing.assert_allclose(session.run()[out], np.full((2, 3), 1.125, np.float32))


def dense(x: popxl.Tensor, w: popxl.Tensor, b: popxl.Tensor) -> popxl.Tensor:
    return ops.gelu(x @ w + b)


@pytest.mark.parametrize("want_x", [False, True])
def test_unrequired_input_gradient_is_pruned(want_x: bool) -> None:
    """PopART prunes the gradient graph's dead code: with only the weights' gradients required,
    the input's (a matmul by the transposed weight) is not computed, and the weight is not an input
    of the gradient graph any more."""
    ir = popxl.Ir()
    with ir.main_graph:
        fwd = ir.create_graph(dense, popxl.TensorSpec((5, 8), popxl.float32), popxl.TensorSpec((8, 4), popxl.float32),
                              popxl.TensorSpec((4,), popxl.float32))
        x, w, b = fwd.inputs
        info = popxl.transforms.autodiff(fwd, grads_required=[x, w, b] if want_x else [w, b])
    types = [op.type for op in info.graph.ops]
    assert types.count("MatMul") == (2 if want_x else 1)
    assert types.count("Transpose") == (2 if want_x else 1)
    fwd_in = [e.fwd_tensor for e in info.expected_inputs if e.connection_type is ExpectedConnectionType.Fwd]
    assert x in fwd_in and (w in fwd_in) == want_x
    assert len(info.graph.inputs) == len(info.expected_inputs)
    assert set(info.graph.tensors) == ({t for op in info.graph.ops for t in op.outputs} | set(info.graph.inputs)
                                       | {t for t in info.graph.tensors if isinstance(t, popxl.Constant)})
    assert [t.name for t in info.graph.outputs] == (["Gradient___x"] if want_x else []) + ["Gradient___w",
                                                                                          "Gradient___b"]
