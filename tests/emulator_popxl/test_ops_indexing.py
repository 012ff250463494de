"""popxl.ops indexing family on the simulator (gather, groupedgather, tied_gather, scatter,
scatter_reduce, dynamic_slice, dynamic_update(_), onehot, topk): values against numpy, popxl's
shape and dtype rules and errors, gradients against finite differences or their definition."""

from __future__ import annotations


import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops

from .run_program import run
from .test_autodiff import grads_via_program, numeric_grads

X = (np.arange(20, dtype=np.float32).reshape(4, 5) - 7) / 3


def const(v: object, dt: popxl.dtype = popxl.int32) -> popxl.Tensor:
    return popxl.constant(np.asarray(v), dt)


def test_gather_is_numpy_take() -> None:
    idx = np.array([[3, 1], [0, 3]], np.int32)
    (y,) = run(lambda t: ops.gather(t, const(idx)), X)
    np.testing.assert_array_equal(y, np.take(X, idx, axis=0))
    (y,) = run(lambda t: ops.gather(t, const([4, 0, 2]), axis=-1), X)
    np.testing.assert_array_equal(y, np.take(X, [4, 0, 2], axis=1))
    (y,) = run(lambda t: ops.tied_gather(t, const([2]), 0), X)
    np.testing.assert_array_equal(y, X[[2]])


def test_gather_out_of_range_is_zero_with_zero_oor_and_an_error_otherwise() -> None:
    (y,) = run(lambda t: ops.gather(t, const([1, 9, -1]), zero_OOR=True), X)
    np.testing.assert_array_equal(y, np.stack([X[1], np.zeros(5), np.zeros(5)]))
    with pytest.raises(ValueError, match="popxl.ops.gather: index 9 is out of range"):
        run(lambda t: ops.gather(t, const([9])), X)


def test_grouped_gather() -> None:
    x = np.arange(16, dtype=np.float32).reshape(2, 2, 4)
    idx = np.array([[0, 1, 0], [1, 0, 1]], np.int32)
    (y,) = run(lambda t: ops.groupedgather(t, const(idx), axis=1, group_size=2), x)
    np.testing.assert_array_equal(y, np.stack([x[0][idx[0]], x[1][idx[1]]]))
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(x)
        with pytest.raises(ValueError, match="axis = 0 indicates the dimension of the group"):
            ops.groupedgather(t, const(idx), axis=0, group_size=2)
        with pytest.raises(TypeError, match="integer dtype"):
            ops.gather(t, popxl.constant(np.zeros(2, np.float32)))
        with pytest.raises(ValueError, match="outside the acceptable range"):
            ops.gather(t, const([0]), axis=3)


def test_gather_gradient_adds_repeated_rows() -> None:
    up = np.arange(15, dtype=np.float32).reshape(3, 5)
    _, (g,) = grads_via_program(lambda t: ops.gather(t, const([2, 0, 2])), [X], up)
    want = np.zeros_like(X)
    np.add.at(want, [2, 0, 2], up)
    np.testing.assert_array_equal(g, want)
    up = np.ones((4, 2, 2), np.float32)
    _, (g,) = grads_via_program(lambda t: ops.gather(t, const([[1, 1], [4, 0]]), axis=1), [X], up)
    want = np.zeros_like(X)
    np.add.at(want, (slice(None), [1, 1, 4, 0]), 1.0)
    np.testing.assert_array_equal(g, want)


def test_scatter_matches_scatter_elements_and_its_gradients() -> None:
    idx = np.array([[1, 0, 3, 2, 0], [3, 2, 1, 0, 1]], np.int32)
    vals = np.arange(10, dtype=np.float32).reshape(2, 5) + 100
    (y,) = run(lambda t, v: ops.scatter(t, const(idx), v), X, vals)
    want = X.copy()
    np.put_along_axis(want, idx.astype(np.int64), vals, axis=0)
    np.testing.assert_array_equal(y, want)
    up = np.linspace(1, 2, 20, dtype=np.float32).reshape(4, 5)
    _, (gt, gv) = grads_via_program(lambda t, v: ops.scatter(t, const(idx), v), [X, vals], up)
    mask = np.ones_like(X)
    np.put_along_axis(mask, idx.astype(np.int64), 0.0, axis=0)
    np.testing.assert_array_equal(gt, up * mask)
    np.testing.assert_array_equal(gv, np.take_along_axis(up, idx.astype(np.int64), axis=0))
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(ValueError, match="same rank"):
            ops.scatter(popxl.variable(X), const([1]), popxl.variable(np.ones(1, np.float32)))


def test_scatter_reduce_sum_max_none() -> None:
    data = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    idx = np.array([2, 0, 2], np.int32)
    (s, m, n) = run(lambda d: [ops.scatter_reduce(d, const(idx), "sum", axis_size=4),
                               ops.scatter_reduce(d, const(idx), "max", axis_size=4),
                               ops.scatter_reduce(d, const(idx), "none", axis_size=4)], data)
    want = np.zeros((4, 2), np.float32)
    np.add.at(want, idx, data)
    np.testing.assert_array_equal(s, want)
    np.testing.assert_array_equal(m, [[3, 4], [0, 0], [5, 6], [0, 0]])
    np.testing.assert_array_equal(n[[0, 1, 3]], [[3, 4], [0, 0], [0, 0]])
    init = np.full((4, 2), 10.0, np.float32)
    (y,) = run(lambda d, i: ops.scatter_reduce(d, const(idx), "sum", i), data, init)
    np.testing.assert_array_equal(y, want + 10)
    up = np.arange(8, dtype=np.float32).reshape(4, 2)
    _, (gd, gi) = grads_via_program(lambda d, i: ops.scatter_reduce(d, const(idx), "sum", i), [data, init], up)
    np.testing.assert_array_equal(gd, up[idx])
    np.testing.assert_array_equal(gi, up)
    ir = popxl.Ir()
    with ir.main_graph:
        d = popxl.variable(data)
        with pytest.raises(ValueError, match="One of initial_values and axis_size must be specified"):
            ops.scatter_reduce(d, const(idx), "sum")
        with pytest.raises(ValueError, match="The reduction must be one of"):
            ops.scatter_reduce(d, const(idx), "mean", axis_size=3)
        with pytest.raises(NotImplementedError, match="popxl.ops.scatter_reduce with indices"):
            ops.scatter_reduce(d, const([[0], [1], [2]]), "sum", axis_size=3)


def test_dynamic_slice_and_update_with_run_time_offsets() -> None:
    (y,) = run(lambda t: ops.dynamic_slice(t, const([1, 2], popxl.uint32), [0, 1], [2, 3], True), X)
    np.testing.assert_array_equal(y, X[1:3, 2:5])
    upd = np.full((1, 5), -1.0, np.float32)
    (y,) = run(lambda t, u: ops.dynamic_update(t, const([2], popxl.uint32), u, [0], [1], False), X, upd)
    want = X.copy()
    want[2] = -1
    np.testing.assert_array_equal(y, want)
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(X, name="v")
        ops.dynamic_update_(v, const([3], popxl.uint32), popxl.constant(upd), [0], [1], False)
    with popxl.Session(ir, "cpu") as session:
        session.run()
        got = session.get_tensor_data(v)
    want = X.copy()
    want[3] = -1
    np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="outside the tensor"):
        run(lambda t: ops.dynamic_slice(t, const([3]), [0], [2], True), X)


def test_dynamic_offsets_may_differ_per_replica() -> None:
    ir = popxl.Ir()
    ir.replication_factor = 2
    with ir.main_graph:
        v = popxl.variable(X)
        stream = popxl.h2d_stream((1,), popxl.int32, "index")
        index = ops.host_load(stream)
        y = ops.dynamic_slice(v, index, [0], [1], True)
        s = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(s, y)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run({stream: np.array([[0], [3]], np.int32)})[s]
    np.testing.assert_array_equal(out, np.stack([X[0:1], X[3:4]]))


def test_dynamic_gradients() -> None:
    up = np.arange(6, dtype=np.float32).reshape(2, 3)
    _, (g,) = grads_via_program(lambda t: ops.dynamic_slice(t, const([1, 1]), [0, 1], [2, 3], True), [X], up)
    want = np.zeros_like(X)
    want[1:3, 1:4] = up
    np.testing.assert_array_equal(g, want)
    upd = np.ones((4, 2), np.float32)
    f = lambda t, u: ops.dynamic_update(t, const([2]), u, [1], [2], True)  # noqa: E731
    upstream = np.linspace(0.5, 1.5, 20, dtype=np.float32).reshape(4, 5)
    _, (gt, gu) = grads_via_program(f, [X, upd], upstream)
    nt, nu = numeric_grads(f, [X, upd], upstream)
    np.testing.assert_allclose(gt, nt, atol=1e-3)
    np.testing.assert_allclose(gu, nu, atol=1e-3)


def test_onehot() -> None:
    labels = np.array([[0, 2], [-1, 7]], np.int32)
    vals = np.array([0.5, 3.0], np.float32)
    (y,) = run(lambda t, v: ops.onehot(t, const(3), v, -1), labels, vals)
    want = np.full((2, 2, 3), 0.5, np.float32)
    want[0, 0, 0] = want[0, 1, 2] = want[1, 0, 2] = 3.0  # -1 is the last class; 7 hits none
    np.testing.assert_array_equal(y, want)
    (y,) = run(lambda t, v: ops.onehot(t, const(3), v, 0), labels, vals)
    np.testing.assert_array_equal(y, np.moveaxis(want, -1, 0))
    up = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(labels)
        with pytest.raises(ValueError, match="does not have data"):
            ops.onehot(t, popxl.variable(np.int32(3)), popxl.constant(vals), -1)
        g = ir.create_graph(lambda v: ops.onehot(const(labels), const(3), v, -1), popxl.TensorSpec((2,), popxl.float32))
        info = popxl.transforms.autodiff(g)
        dy = popxl.constant(up)
        call = ops.call_with_info(g, popxl.variable(vals))
        (gv,) = ops.call(info.graph, dy, inputs_dict=info.inputs_dict(call))
        s = popxl.d2h_stream(gv.shape, gv.dtype, "g")
        ops.host_store(s, gv)
    with popxl.Session(ir, "cpu") as session:
        got = session.run()[s]
    on = up[want == 3.0].sum()
    np.testing.assert_allclose(got, [up.sum() - on, on])


def test_topk_values_indices_and_gradient() -> None:
    x = np.array([[1.0, 5.0, 3.0, 5.0], [0.0, -2.0, 7.0, 1.0]], np.float32)
    v, i = run(lambda t: ops.topk(t, 2, -1, True, True), x)
    np.testing.assert_array_equal(v, [[5, 5], [7, 1]])
    np.testing.assert_array_equal(i, [[1, 3], [2, 3]])
    assert i.dtype == np.int32
    v, i = run(lambda t: ops.topk(t, 1, 0, False, True), x)
    np.testing.assert_array_equal(v, [[0, -2, 3, 1]])
    up = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    _, (g,) = grads_via_program(lambda t: ops.topk(t, 2, 1, True, True)[0], [x], up)
    np.testing.assert_array_equal(g, [[0, 1, 0, 2], [0, 0, 3, 4]])
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(ValueError, match="Cannot take top-5 on dim of size 4"):
            ops.topk(popxl.variable(x), 5, 1, True, True)


def test_lowering_of_indexing_ops() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(X, name="v")
        y = ops.dynamic_update_(v, const([0]), popxl.constant(np.zeros((1, 5), np.float32)), [0], [1], False)
        ops.topk(v, 2, 1, True, True)
    program = lower(ir)
    by_type = {op.type: op for op in program.ops.values()}
    assert by_type["DynamicUpdateInplace"].attrs["aliases"] == {y.id: v.id}
    assert by_type["DynamicUpdateInplace"].modified == (v.id,)
    assert by_type["TopK"].flops == 20
