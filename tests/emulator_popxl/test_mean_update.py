"""The running-mean accumulation done piece by piece gives the bits of the whole-tensor
operations (``t * keep + x * new``, each step rounded to the accumulator's type)."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator.popxl import execution


def _whole(t: np.ndarray, x: np.ndarray, keep, new) -> np.ndarray:
    scaled = np.multiply(x, new) if x.dtype == t.dtype else x.astype(t.dtype) * new
    return t * keep + scaled


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("size", [7, execution._PIECE, 3 * execution._PIECE + 123])
@pytest.mark.parametrize("step", [0.0, 1.0, 6.0])
# at step 0 the kept share is 0, and 0 x infinity is NaN in both paths, as numpy warns
@pytest.mark.filterwarnings("ignore:invalid value encountered in multiply:RuntimeWarning")
def test_pieces_give_the_bits_of_the_whole_tensor_update(dtype, size, step) -> None:
    rng = np.random.default_rng(size + int(step))
    t = (rng.standard_normal((4, size)) * 1e3).astype(dtype)
    t[0, :5] = [np.inf, -np.inf, np.nan, -0.0, 0.0]
    x = (rng.standard_normal((4, size)) * 1e-3).astype(dtype)
    x[1, :3] = [-0.0, np.nan, 1e-45]
    keep, new = np.dtype(dtype).type(step / (step + 1.0)), np.dtype(dtype).type(1.0 / (step + 1.0))
    expected = _whole(t, x, keep, new)
    execution._mean_update(t, x, keep, new)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.view(np.uint16 if dtype == np.float16 else np.uint32),
                                  expected.view(np.uint16 if dtype == np.float16 else np.uint32))


def test_per_replica_factors_other_types_and_the_same_array_take_the_whole_tensor_path() -> None:
    rng = np.random.default_rng(1)
    size = 2 * execution._PIECE + 5
    t = rng.standard_normal((4, size)).astype(np.float32)
    x = rng.standard_normal((4, size)).astype(np.float16)
    keep = np.array([0.5, 0.75, 0.5, 0.0], np.float32).reshape(4, 1)
    new = np.array([0.5, 0.25, 0.5, 1.0], np.float32).reshape(4, 1)
    expected = _whole(t, x, keep, new)
    execution._mean_update(t, x, keep, new)
    np.testing.assert_array_equal(t.view(np.uint32), expected.view(np.uint32))
    same = rng.standard_normal((2, size)).astype(np.float32)
    expected = _whole(same, same, np.float32(0.5), np.float32(0.5))
    execution._mean_update(same, same, np.float32(0.5), np.float32(0.5))  # x is t: products first, whole
    np.testing.assert_array_equal(same.view(np.uint32), expected.view(np.uint32))


def test_an_elementwise_update_in_pieces_gives_the_bits_of_the_whole_update() -> None:
    from profcompare.emulator.popxl import float16_math as f16

    def update(t: np.ndarray, x: np.ndarray, f: float) -> None:  # the float16 first moment's steps
        fa, fb = np.float32(np.float16(f)), np.float32(np.float16(1.0 - f))
        t[...] = f16.to_half(f16.round_to_half(f16.to_float32(t) * fa) + f16.round_to_half(f16.round_to_half(x) * fb))

    rng = np.random.default_rng(2)
    size = 2 * execution._PIECE + 77
    t = (rng.standard_normal((1, size)) * 3e-5).astype(np.float16)
    t[0, :3] = [np.float16(60000.0), np.float16(-0.0), np.float16(np.nan)]
    x = (rng.standard_normal((1, size)) * 1e-4).astype(np.float32)
    x[0, 3:5] = [np.inf, 1e6]
    whole = t.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        update(whole, x, 0.9)
        execution._in_pieces(update, t, x, 0.9)
    np.testing.assert_array_equal(t.view(np.uint16), whole.view(np.uint16))
    calls = []
    execution._in_pieces(lambda *a: calls.append(a[0].shape), t, x, np.ones((1, 1)))  # an array factor: whole
    assert calls == [t.shape]
