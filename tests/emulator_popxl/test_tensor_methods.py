"""Tensor methods popxl 3.4 has beside the ops: diag, strides, detach_."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from .run_program import run


def test_diag_is_the_diagonal_of_a_2d_tensor() -> None:
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    (d,) = run(lambda t: t.diag(), x)
    np.testing.assert_array_equal(d, [0.0, 5.0, 10.0])  # flat indices 0, 5, 10


def test_diag_of_another_rank_is_a_value_error() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.zeros(4, np.float32))
        with pytest.raises(ValueError, match="Diag expected a 2d tensor"):
            v.diag()


@pytest.mark.parametrize(("dtype", "shape", "strides"), [
    (popxl.float32, (2, 3, 4), (48, 16, 4)),
    (popxl.float16, (5, 2), (4, 2)),
    (popxl.int32, (7,), (4,)),
])
def test_strides_are_numpys_for_a_row_major_array(dtype, shape, strides) -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.zeros(shape, dtype.as_numpy()), dtype)
        assert v.strides() == strides == np.zeros(shape, dtype.as_numpy()).strides
        assert v.strides((3, 2)) == (2 * dtype.itemsize, dtype.itemsize)


def test_detach_in_place_keeps_the_values() -> None:
    x = np.array([1.5, -2.0], np.float32)
    (y,) = run(lambda t: (t * 2).detach_() + 1, x)
    np.testing.assert_array_equal(y, [4.0, -3.0])
