"""popxl.ops shape family on the simulator (concat(_), slice(_), split, squeeze, subsample,
transpose_, detach_): values against numpy, popxl's argument rules and errors, gradients against
finite differences, in-place aliasing, and the lowering's records."""

from __future__ import annotations


import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops

from .run_program import run
from .test_autodiff import grads_via_program, numeric_grads

A = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
B = np.linspace(-1, 1, 16, dtype=np.float32).reshape(2, 2, 4)


def test_concat_matches_numpy_and_checks_inputs() -> None:
    (y,) = run(lambda a, b: ops.concat([a, b], axis=1), A, B)
    np.testing.assert_array_equal(y, np.concatenate([A, B], axis=1))
    (y,) = run(lambda a: ops.concat([a, a], -1), A)
    np.testing.assert_array_equal(y, np.concatenate([A, A], axis=-1))
    (y,) = run(lambda a, b: ops.concat_((a, b), 1), A, B)
    np.testing.assert_array_equal(y, np.concatenate([A, B], axis=1))
    ir = popxl.Ir()
    with ir.main_graph:
        a, b = popxl.variable(A), popxl.variable(B)
        with pytest.raises(ValueError, match="differ outside axis 0"):
            ops.concat([a, b])
        with pytest.raises(TypeError, match="same dtype"):
            ops.concat([a, popxl.variable(A.astype(np.int32))])
        with pytest.raises(ValueError, match="zero tensors"):
            ops.concat([])


SLICES = [
    (dict(start=1), np.s_[1:]),
    (dict(stop=-1, axis=2), np.s_[:, :, :-1]),
    (dict(start=[0, 1], stop=[1, 3]), np.s_[0:1, 1:3]),
    (dict(step=-1, axis=1), np.s_[:, ::-1]),
    (dict(start=3, stop=0, step=-1, axis=2), np.s_[:, :, 3:0:-1]),
    (dict(start=[None, 10], stop=[None, 2], step=[None, -1], axis=[0, 2]), np.s_[:, :, 10:2:-1]),
    (dict(start=0, stop=4, step=2, axis=-1), np.s_[..., 0:4:2]),
    (dict(start=-100, stop=100, axis=1), np.s_[:, -100:100]),
]


@pytest.mark.parametrize("kwargs,index", SLICES, ids=[str(k) for k, _ in SLICES])
def test_slice_follows_python_slicing(kwargs: dict, index: tuple) -> None:
    y, y_ = run(lambda t: [ops.slice(t, **kwargs), ops.slice_(t, **kwargs)], A)
    np.testing.assert_array_equal(y, A[index])
    np.testing.assert_array_equal(y_, A[index])


def test_slice_without_bounds_returns_its_input_and_checks_arguments() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(A)
        assert ops.slice(t) is t and ops.slice(t, axis=1) is t
        with pytest.raises(ValueError, match="`stop` has length 1 != 2"):
            ops.slice(t, start=[0, 1], stop=[2])
        with pytest.raises(ValueError, match="axis 3 is out of range"):
            ops.slice(t, start=0, axis=3)


def test_slice_inplace_is_an_alias_of_its_input() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(A, name="v")
        part = ops.slice_(v, start=1, stop=3, axis=1)
        ops.var_updates.copy_var_update_(part, ops.negate(part))  # writes through the alias
        t = ops.transpose_(ops.slice_(v, start=0, stop=1, axis=0))
        ops.relu_(t)
    with popxl.Session(ir, "cpu") as session:
        session.run()
        got = session.get_tensor_data(v)
    want = A.copy()
    want[:, 1:3] = -want[:, 1:3]
    want[0:1] = np.maximum(want[0:1], 0)
    np.testing.assert_array_equal(got, want)


def test_concat_inplace_refuses_a_later_in_place_change() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        a, b = popxl.variable(A), popxl.variable(B)
        c = ops.concat_([a, b], 1)
        ops.relu_(a)
        s = popxl.d2h_stream(c.shape, c.dtype, "c")
        ops.host_store(s, c)
    with pytest.raises(NotImplementedError, match=r"popxl.ops.concat_ .* modified in place after it"):
        popxl.Session(ir, "cpu")


def test_split_equal_and_by_lengths() -> None:
    parts = run(lambda t: ops.split(t, 2, axis=2), A)
    for got, want in zip(parts, np.split(A, 2, axis=2)):
        np.testing.assert_array_equal(got, want)
    parts = run(lambda t: ops.split(t, [1, 2], axis=1), A)
    np.testing.assert_array_equal(parts[0], A[:, :1])
    np.testing.assert_array_equal(parts[1], A[:, 1:])
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(A)
        assert [p.name for p in ops.split(t, 3, 1)] == [f"{t.name}_split_{i}" for i in range(3)]
        with pytest.raises(ValueError, match="Split 2 does not equally divide tensor axis 1 of length 3"):
            ops.split(t, 2, 1)
        with pytest.raises(ValueError, match="do not add up"):
            ops.split(t, [1, 1], 1)


def test_squeeze_subsample_detach_inplace() -> None:
    x = A.reshape(1, 2, 1, 12)
    sq_all, sq_one = run(lambda t: [ops.squeeze(t), ops.squeeze(t, [-2])], x)
    assert sq_all.shape == (2, 12) and sq_one.shape == (1, 2, 12)
    ir = popxl.Ir()
    with ir.main_graph:
        t = popxl.variable(x)
        with pytest.raises(ValueError, match="length of axis is >1"):
            ops.squeeze(t, [1])
        with pytest.raises(ValueError, match="duplicates"):
            ops.squeeze(t, [0, -4])
        with pytest.raises(ValueError, match="must not be greater than the rank"):
            ops.subsample(t, [1, 1, 1, 1, 1])
    (y,) = run(lambda t: ops.subsample(t, [2, 2]), A)
    np.testing.assert_array_equal(y, A[::2, ::2])
    (y,) = run(lambda t: ops.subsample(t, 3), A)
    np.testing.assert_array_equal(y, A[::3])
    (y,) = run(lambda t: ops.detach_(t), A)
    np.testing.assert_array_equal(y, A)


def test_gradients_against_finite_differences() -> None:
    up = np.linspace(0.5, 1.5, 2 * 2 * 7, dtype=np.float32).reshape(2, 2, 7)

    def f(a: popxl.Tensor, b: popxl.Tensor) -> popxl.Tensor:
        joined = ops.concat([ops.slice(a, start=1, stop=3, axis=1), b], axis=2)  # (2, 2, 8)
        first, second = ops.split(joined, [3, 5], axis=2)
        return ops.concat([ops.mul(first, first), ops.slice(second, stop=4, step=1, axis=2)], axis=2)

    y, (ga, gb) = grads_via_program(f, [A, B], up)
    na, nb = numeric_grads(f, [A, B], up)
    np.testing.assert_allclose(ga, na, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(gb, nb, rtol=1e-2, atol=1e-2)


def test_split_gradient_when_only_a_later_part_is_used() -> None:
    up = np.ones((2, 3, 2), np.float32)
    _, (g,) = grads_via_program(lambda t: ops.split(t, 2, axis=2)[1], [A], up)
    want = np.zeros_like(A)
    want[:, :, 2:] = 1
    np.testing.assert_array_equal(g, want)


def test_subsample_and_reversed_slice_gradients() -> None:
    up = np.arange(2 * 2 * 2, dtype=np.float32).reshape(2, 2, 2)
    _, (g,) = grads_via_program(lambda t: ops.subsample(t, [1, 2, 2]), [A], up)
    want = np.zeros_like(A)
    want[:, ::2, ::2] = up
    np.testing.assert_array_equal(g, want)
    up = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    _, (g,) = grads_via_program(lambda t: ops.slice(t, step=-1, axis=2), [A], up)
    np.testing.assert_array_equal(g, up[:, :, ::-1])


def test_in_place_aliases_have_no_gradient_rule() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        g = ir.create_graph(lambda t: ops.slice_(t, start=1), popxl.TensorSpec((2, 3), popxl.float32))
        with pytest.raises(NotImplementedError, match="autodiff of op SliceInplace"):
            popxl.transforms.autodiff(g)


def test_lowering_records_aliases_of_in_place_views() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(A, name="v")
        s = ops.slice_(v, start=1, axis=0)
        t = ops.transpose_(s)
        c = ops.concat([v, v], 0)
    program = lower(ir)
    by_type = {op.type: op for op in program.ops.values()}
    assert by_type["SliceInplace"].attrs["aliases"] == {s.id: v.id}
    assert by_type["TransposeInplace"].attrs["aliases"] == {t.id: s.id}
    assert by_type["Concat"].flops == 0 and "aliases" not in by_type["Concat"].attrs
    assert program.tensors[c.id].shape == (4, 3, 4)
