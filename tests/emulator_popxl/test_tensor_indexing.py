"""popxl.Tensor indexing on the simulator: integers and slices slice (an integer squeezes its
axis, |step| > 1 subsamples), integer tensors gather along axis 0, boolean tensors zero where
False (the shape stays, unlike NumPy)."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl

from .run_program import run

X = np.arange(24, dtype=np.float32).reshape(4, 6)
MASK = np.array([True, False, True, False]).reshape(4, 1)


def _run(index) -> np.ndarray:
    return run(lambda x: x[index], X)[0]


@pytest.mark.parametrize("index", [
    0, 3, -2, (1, 2), slice(0, 2), (slice(None, 2), slice(3, None)), (slice(None), slice(None, None, -1)),
    (slice(None, None, 2), slice(1, None, 3)), (slice(None, None, -2),), (2, slice(1, 5, 2)),
], ids=str)
def test_basic_indexing_is_numpy_slicing(index) -> None:
    expected = X[index]
    got = _run(index)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


def test_integer_tensor_gathers_rows() -> None:
    np.testing.assert_array_equal(_run(np.array([0, 2, 2], dtype=np.int32)), X[[0, 2, 2]])


def test_boolean_tensor_zeroes_where_false() -> None:
    np.testing.assert_array_equal(_run(MASK), np.where(MASK, X, 0))


@pytest.mark.parametrize("index", ["a", True, 1.5])
def test_other_keys_are_a_type_error(index) -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(X)
        with pytest.raises(TypeError, match="valid indices"):
            x[index]
