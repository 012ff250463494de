"""popxl-addons' rotary embedding, scaled sum of squares and dense x constant-sparse matmul on the
simulator, against numpy references and pinned values; their generations."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.compile.programs import classify
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons.ops.grad_reduce_square_add import grad_reduce_square_add
from profcompare.emulator.popxl_addons.ops.rotary_pos_embed import rotary_pos_embed, trig_tables
from profcompare.emulator.popxl_addons.ops.static_sparse_ops import dense_const_sparse_matmul, random_sparse

RNG = np.random.default_rng(11)


def _rope_reference(x: np.ndarray, sin: np.ndarray, cos: np.ndarray, rotary_dim: int,
                    inverse: bool = False) -> np.ndarray:
    """RoPE of ``x`` (batch, seq, heads, hh) with (seq, rotary_dim / 2) tables, in x's dtype."""
    re, im = x[..., 0:rotary_dim:2], x[..., 1:rotary_dim:2]
    s, c = sin[None, :, None, :].astype(x.dtype), cos[None, :, None, :].astype(x.dtype)
    sign = -1 if inverse else 1
    out = x.copy()
    out[..., 0:rotary_dim:2] = re * c - (im * s) * sign
    out[..., 1:rotary_dim:2] = im * c + (re * s) * sign
    return out


def _rope_fwd_and_grad(x: np.ndarray, dy: np.ndarray, sin: np.ndarray, cos: np.ndarray,
                       rotary_dim: int | None) -> tuple[np.ndarray, np.ndarray]:
    dtype = popxl.float16 if x.dtype == np.float16 else popxl.float32
    ir = popxl.Ir()
    with ir.main_graph:
        xv = popxl.variable(x, dtype)
        s, c = popxl.constant(sin, dtype), popxl.constant(cos, dtype)
        graph = ir.create_graph(rotary_pos_embed, xv, s, c, rotary_dim)
        info = popxl.transforms.autodiff(graph, grads_required=graph.inputs[:1])
        call = ops.call_with_info(graph, xv, s, c)
        (dx,) = ops.call(info.graph, popxl.constant(dy, dtype), inputs_dict=info.inputs_dict(call))
        streams = [addons.host_store(call.outputs[0]), addons.host_store(dx)]
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()
    return out[streams[0]], out[streams[1]]


def test_trig_tables_hold_sin_and_cos_of_position_times_theta() -> None:
    sin, cos = trig_tables(2, 4)
    assert sin.shape == cos.shape == (2, 2)
    assert sin.dtype == np.float32
    # theta = 10000 ** (-[0, 2] / 4) = [1, 0.01]
    np.testing.assert_allclose(sin, [[0.0, 0.0], [0.84147098, 0.00999983]], rtol=1e-6)
    np.testing.assert_allclose(cos, [[1.0, 1.0], [0.54030231, 0.99995]], rtol=1e-6)


def test_rotary_pos_embed_rotates_interleaved_pairs_by_position() -> None:
    # one head of 6 elements, 2 positions; the first 4 rotated as pairs (re, im)
    x = np.tile(np.array([1.0, 0.0, 0.0, 1.0, 7.0, 8.0], np.float32), (1, 2, 1, 1))
    sin, cos = trig_tables(2, 4)
    y, dx = _rope_fwd_and_grad(x, x, sin, cos, 4)
    np.testing.assert_allclose(y[0, 0, 0], [1.0, 0.0, 0.0, 1.0, 7.0, 8.0])
    np.testing.assert_allclose(y[0, 1, 0], [0.54030231, 0.84147098, -0.00999983, 0.99995, 7.0, 8.0], rtol=1e-6)
    # the gradient rotates by the opposite angle; the unrotated tail passes
    np.testing.assert_allclose(dx[0, 1, 0], [0.54030231, -0.84147098, 0.00999983, 0.99995, 7.0, 8.0], rtol=1e-6)


@pytest.mark.parametrize("rotary_dim", [0, 4, 16, 32])
def test_rotary_pos_embed_matches_numpy_in_float32(rotary_dim: int) -> None:
    x = RNG.random((3, 8, 2, 32)).astype(np.float32)
    dy = RNG.random((3, 8, 2, 32)).astype(np.float32)
    rd = rotary_dim or 32
    sin, cos = trig_tables(8, rd)
    y, dx = _rope_fwd_and_grad(x, dy, sin, cos, rotary_dim)
    np.testing.assert_allclose(y, _rope_reference(x, sin, cos, rd), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(dx, _rope_reference(dy, sin, cos, rd, inverse=True), rtol=1e-6, atol=1e-7)
    # a rotation is orthogonal: the gradient of the rotated input brings it back
    _, back = _rope_fwd_and_grad(x, y, sin, cos, rotary_dim)
    np.testing.assert_allclose(back, x, atol=1e-6)


def test_rotary_pos_embed_rounds_each_product_in_float16() -> None:
    x = RNG.normal(size=(2, 4, 3, 8)).astype(np.float16)
    sin, cos = trig_tables(4, 8, np_dtype="float16")
    y, dx = _rope_fwd_and_grad(x, x, sin, cos, None)
    assert y.dtype == dx.dtype == np.float16
    np.testing.assert_array_equal(y, _rope_reference(x, sin, cos, 8))
    np.testing.assert_array_equal(dx, _rope_reference(x, sin, cos, 8, inverse=True))


def test_rotary_pos_embed_takes_per_batch_tables_under_3_4() -> None:
    x = RNG.random((2, 3, 1, 4)).astype(np.float32)
    sin0, cos0 = trig_tables(3, 4)
    sin = np.stack([sin0, np.zeros_like(sin0)])  # batch 1 is not rotated
    cos = np.stack([cos0, np.ones_like(cos0)])
    y, _ = _rope_fwd_and_grad(x, x, sin, cos, None)
    np.testing.assert_allclose(y[0], _rope_reference(x[:1], sin0, cos0, 4)[0], rtol=1e-6)
    np.testing.assert_array_equal(y[1], x[1])


def test_rotary_pos_embed_under_3_0_takes_rank_2_tables_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    x = RNG.random((1, 3, 2, 4)).astype(np.float32)
    sin, cos = trig_tables(3, 4)
    y, dx = _rope_fwd_and_grad(x, x, sin, cos, 4)
    np.testing.assert_allclose(y, _rope_reference(x, sin, cos, 4), rtol=1e-6)
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(RuntimeError, match="should have rank 2"):
        rotary_pos_embed(popxl.variable(x), popxl.constant(sin[None]), popxl.constant(cos[None]))


def test_rotary_pos_embed_refuses_odd_rotary_dim() -> None:
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(RuntimeError, match="multiple of 2"):
        sin, cos = trig_tables(2, 3)
        rotary_pos_embed(popxl.variable(np.zeros((1, 2, 1, 4), np.float32)), popxl.constant(sin),
                         popxl.constant(cos), 3)


def _run(build: object) -> np.ndarray:
    ir = popxl.Ir()
    with ir.main_graph:
        stream = addons.host_store(build())  # type: ignore[operator]
    with popxl.Session(ir, "ipu_model") as session:
        return session.run()[stream]


def test_grad_reduce_square_add_divides_by_the_squared_loss_scaling() -> None:
    out = _run(lambda: grad_reduce_square_add(popxl.variable(np.array([[3.0, 4.0]], np.float16)), 5))
    assert out.dtype == np.float32 and out.shape == ()
    assert out == np.float32(1.0)
    scale = _run(lambda: grad_reduce_square_add(popxl.variable(np.array([3.0, 4.0], np.float32)),
                                                popxl.variable(np.float16(2.0))))
    assert scale == np.float32(6.25)


def test_grad_reduce_square_add_accumulates_float16_in_float32() -> None:
    # 4096 squares of 300 overflow float16 (65504) but not the float32 result
    out = _run(lambda: grad_reduce_square_add(popxl.variable(np.full(4096, 300.0, np.float16)), 1.0))
    assert out == np.float32(4096 * 300.0 ** 2)


def test_grad_reduce_square_add_is_one_pass_through_of_its_type() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        addons.host_store(grad_reduce_square_add(popxl.variable(np.ones((4, 4), np.float16)), 2.0))
    program = lower(ir)
    custom = [op for op in program.ops.values() if op.attrs.get("custom_op") == "GradReduceSquareAdd"]
    assert len(custom) == 1
    assert classify(custom[0], program) == "view"
    assert {op.type for op in program.ops.values()} >= {"Cast", "ReduceSumSquare", "Mul"}


def _csr(dense: np.ndarray) -> SimpleNamespace:
    rows, cols = np.nonzero(dense)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
    return SimpleNamespace(data=dense[rows, cols].astype(np.float32), indices=cols, indptr=indptr)


def test_random_sparse_draws_bernoulli_masks_from_numpy_global_state() -> None:
    np.random.seed(42)
    dense = random_sparse(np.ones((3, 4), np.float32), density=0.5)
    np.random.seed(42)
    mask = np.random.binomial(1, 0.5, size=(3, 4)).astype(bool)
    np.testing.assert_array_equal(dense, np.where(mask, 0.0, 1.0))
    # a mask over everything keeps the first entry
    np.testing.assert_array_equal(random_sparse(np.ones((2, 2), np.float32), density=0.0), [[1, 0], [0, 0]])


@pytest.mark.parametrize(("shape", "dtype"), [((2, 3), np.float16), ((1, 2, 3), np.float32)])
def test_dense_const_sparse_matmul_matches_dense_product(shape: tuple[int, ...], dtype: type) -> None:
    lhs = RNG.normal(size=shape).astype(dtype)
    rhs = RNG.normal(size=(3, 4)).astype(dtype)
    rhs[[0, 1, 2, 2], [1, 0, 2, 3]] = 0
    popxl_dtype = popxl.float16 if dtype == np.float16 else popxl.float32
    out = _run(lambda: dense_const_sparse_matmul(popxl.variable(lhs, popxl_dtype), _csr(rhs), 4))
    assert out.shape == (*shape[:-1], 4) and out.dtype == dtype
    expected = (lhs.astype(np.float32) @ rhs.astype(np.float32)).astype(dtype)
    np.testing.assert_array_equal(out, expected)


def test_dense_const_sparse_matmul_pinned_values_and_lowering() -> None:
    lhs = np.array([[1.0, 2.0, 3.0]], np.float32)
    rhs = np.array([[0.0, 2.0], [0.5, 0.0], [0.0, -1.0]], np.float32)
    assert _run(lambda: dense_const_sparse_matmul(popxl.variable(lhs), _csr(rhs), 2)).tolist() == [[1.0, -1.0]]
    ir = popxl.Ir()
    with ir.main_graph:
        addons.host_store(dense_const_sparse_matmul(popxl.variable(np.zeros((5, 3), np.float16), popxl.float16),
                                                    _csr(rhs), 2))
    program = lower(ir)
    (op,) = [o for o in program.ops.values() if o.type == "SparseMatmul"]
    assert op.flops == 2 * 5 * 3
    assert classify(op, program) == "elementwise"
    nz = program.tensors[op.inputs[1]]
    assert (nz.kind, nz.shape, nz.dtype) == ("constant", (3,), "float16")
    assert op.attrs["pattern"] == "SparsityPattern(3x2, nnz=3)"


def test_dense_const_sparse_matmul_refuses_other_dtypes_and_gradients() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(RuntimeError, match="not currently supported"):
            dense_const_sparse_matmul(popxl.variable(np.zeros((2, 2), np.int32)), _csr(np.eye(2)), 2)
        x = popxl.variable(np.zeros((2, 2), np.float32))
        graph = ir.create_graph(lambda t: dense_const_sparse_matmul(t, _csr(np.eye(2)), 2), x)
        with pytest.raises(NotImplementedError, match="SparseMatmul"):
            popxl.transforms.autodiff(graph, grads_required=graph.inputs[:1])
