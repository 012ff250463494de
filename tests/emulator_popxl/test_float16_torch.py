"""float16 ``+ - * /`` and casts through torch (profcompare.emulator.popxl.float16_torch) are numpy's,
bit for bit: torch's arithmetic on every finite float16 value as an operand (subnormals, rounding
ties, results that overflow), its casts of every float16 value and of float32 values at every
float16 rounding tie; and what the executor takes from it: numpy's own result wherever torch's
could differ (NaN, inf, numpy's floating-point error handling), broadcasting and layouts.

The tests need torch (the Python environment of the programs that import it); without torch
they are skipped and the executor uses numpy alone."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import execution, ops
from profcompare.emulator.popxl import float16_torch as ft

from .run_program import run

torch = pytest.importorskip("torch")

F16 = np.float16
UFUNCS = (np.add, np.subtract, np.multiply, np.true_divide)
#: every finite float16 value (sign, subnormals, normals up to 65504)
_ALL = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(F16)
FINITE = _ALL[np.isfinite(_ALL)]
#: float32 low half-words on, just below and just above a float16 rounding tie, and the extremes
LOW_WORDS = (0x0000, 0x0FFF, 0x1000, 0x1001, 0x1FFF, 0x2000, 0x3000, 0x7FFF, 0x8000, 0xF000, 0xFFFF)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint16 if a.dtype == F16 else np.uint32)


def _same_where_finite(got: np.ndarray, expected: np.ndarray) -> int:
    """Assert equal bits wherever numpy's result is finite; return how many elements that is."""
    assert got.shape == expected.shape and got.dtype == expected.dtype
    keep = np.isfinite(expected)
    np.testing.assert_array_equal(_bits(got)[keep], _bits(expected)[keep])
    return int(keep.sum())


def _partners() -> list[tuple[str, np.ndarray]]:
    """Second operands for every finite float16 value: itself, its neighbour, shuffles of every
    value, scaled copies (operands of close exponents: sums and products at rounding ties),
    subnormals, and constants the kernels use."""
    rng = np.random.default_rng(5)
    out = [("itself", FINITE), ("neighbour", np.roll(FINITE, 1))]
    out += [(f"shuffle {i}", rng.permutation(FINITE)) for i in range(4)]
    with np.errstate(over="ignore"):
        out += [(f"x * {s}", (FINITE * F16(s))) for s in (0.75, 1.5, 3.0, -0.5)]
    sub = FINITE[(np.abs(FINITE) < F16(2.0**-14)) & (FINITE != 0)]
    out.append(("subnormals", np.resize(rng.permutation(sub), FINITE.size)))
    for c in (1.0, -1.0, 0.5, 3.0, 2.0**-24, 65504.0, 0.7978845608, 0.044715):
        out.append((f"constant {c}", np.full(FINITE.size, c, F16)))
    return out


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
def test_torch_arithmetic_is_numpys_for_every_finite_float16_operand(ufunc: np.ufunc) -> None:
    checked = 0
    for name, other in _partners():
        for x, y in ((FINITE, other), (other, FINITE)):
            with np.errstate(all="ignore"):
                expected = ufunc(x, y)
            got = ft.torch_binary(torch, ufunc, x, y).numpy()
            try:
                checked += _same_where_finite(got, expected)
            except AssertionError as err:
                raise AssertionError(f"{ufunc.__name__} with {name}") from err
    assert checked > 30 * FINITE.size


def test_torch_arithmetic_rounds_ties_to_even_like_numpy() -> None:
    one, eps = F16(1.0), F16(2.0**-11)  # 1 + 2**-11 lies halfway between 1 and the next float16
    x = np.full(8192, one)
    y = np.full(8192, eps)
    y[1::2] = F16(3 * 2.0**-11)  # 1 + 3 * 2**-11: halfway between odd and even: to even, 1 + 2**-9
    got = ft.add(x, y)
    assert got[:2].tolist() == [1.0, 1 + 2.0**-9]
    np.testing.assert_array_equal(_bits(got), _bits(x + y))


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
def test_binary_broadcasts_and_keeps_numpys_shape(ufunc: np.ufunc) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 64, 64)).astype(F16)
    b = (np.abs(rng.standard_normal((3, 1, 64))) + 1).astype(F16)  # finite quotients: torch's result is taken
    col, row = a[0, 0, :, :1].copy(), a[0, 0, :1, :].copy()
    cases = [(a, b), (b, a), (a, F16(0.5)), (F16(3.0), a), (a, np.asarray(F16(-2.0))), (col, row),
             (a.transpose(0, 1, 3, 2), b), (a[:, :, ::2], b[..., :1]), (a[None, :, :1], a[:, :, :, :1])]
    for x, y in cases:
        with np.errstate(over="ignore"):  # b / a: some quotients overflow (numpy computes those)
            got = ft.binary(ufunc, x, y)
            expected = ufunc(x, y)
        assert got.shape == expected.shape and got.dtype == F16
        assert got.strides == expected.strides  # the layout a later sum or matmul reads
        np.testing.assert_array_equal(_bits(got), _bits(expected))


def test_torch_computes_large_float16_operations_and_numpy_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = ft.torch_binary

    def counting(*args: object) -> object:
        calls.append("torch")
        return real(*args)  # type: ignore[arg-type]
    monkeypatch.setattr(ft, "torch_binary", counting)
    big = np.ones(ft.MIN_ELEMENTS, F16)
    ft.add(big, big)
    assert calls == ["torch"]
    ft.add(big[:-1], big[:-1])  # small
    ft.add(big.astype(np.float32), big.astype(np.float32))  # not float16
    frozen = big.copy()
    frozen.flags.writeable = False  # torch would warn viewing it
    ft.add(frozen, big)
    ft.add(big[::-1], big)  # not C-ordered: numpy's result may be laid out otherwise
    with_nan = big.copy()
    with_nan[3] = np.nan
    ft.add(with_nan, big)  # a NaN operand: numpy's, torch not even asked
    monkeypatch.setenv(ft.ENV_VAR, "0")
    ft.add(big, big)
    assert calls == ["torch"]
    for bad in (big[::-1], frozen):
        np.testing.assert_array_equal(ft.add(bad, big), bad + big)


def test_non_finite_results_and_numpys_error_handling_are_numpys() -> None:
    # a signalling NaN payload torch's conversion instructions would quiet, overflow to inf,
    # division by zero, inf - inf: numpy computes the whole array
    x = np.ones(8192, F16)
    x[0] = np.uint16(0x7D01).view(F16)  # signalling NaN
    with np.errstate(all="ignore"):
        for ufunc in UFUNCS:
            np.testing.assert_array_equal(_bits(ft.binary(ufunc, x, x)), _bits(ufunc(x, x)))
    big = np.full(8192, 60000.0, F16)
    with pytest.warns(RuntimeWarning, match="overflow"):
        assert np.isinf(ft.add(big, big)).all()
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        ft.multiply(big, big)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        ft.binary(np.true_divide, big, np.zeros(8192, F16))
    tiny = np.full(8192, 2.0**-20, F16)  # the product underflows to 0 (inexact)
    with np.errstate(under="raise"), pytest.raises(FloatingPointError):
        ft.multiply(tiny, tiny)
    with np.errstate(under="ignore"):
        assert not ft.multiply(tiny, tiny).any()


def test_torch_casts_are_numpys() -> None:
    got = ft.torch_cast(torch, _ALL, np.dtype(np.float32)).numpy()
    keep = ~np.isnan(_ALL)
    np.testing.assert_array_equal(_bits(got)[keep], _bits(_ALL.astype(np.float32))[keep])
    high = np.arange(65536, dtype=np.uint32) << 16
    for low in LOW_WORDS:
        x = (high | np.uint32(low)).view(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            expected = x.astype(F16)
        try:
            _same_where_finite(ft.torch_cast(torch, x, np.dtype(F16)).numpy(), expected)
        except AssertionError as err:
            raise AssertionError(f"low word {low:#06x}") from err
    x = np.random.default_rng(7).integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = x.astype(F16)
    assert _same_where_finite(ft.torch_cast(torch, x, np.dtype(F16)).numpy(), expected) > 400_000


def test_astype_is_numpys_with_nans_and_overflow() -> None:
    x = np.linspace(-70000, 70000, 10_000, dtype=np.float32)  # beyond the float16 range at both ends
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(_bits(ft.astype(x, F16)), _bits(x.astype(F16)))
    h = np.linspace(-1000, 1000, 10_000).astype(F16)
    np.testing.assert_array_equal(_bits(ft.astype(h, np.float32)), _bits(h.astype(np.float32)))
    np.testing.assert_array_equal(_bits(ft.astype(h.astype(np.float32), F16)), _bits(h))
    h[5] = np.uint16(0x7D01).view(F16)  # signalling NaN: numpy keeps its bits
    np.testing.assert_array_equal(_bits(ft.astype(h, np.float32)), _bits(h.astype(np.float32)))
    assert ft.astype(h, np.float64).dtype == np.float64
    square = np.arange(8192, dtype=np.float32).reshape(1, 64, 128, 1)
    for a in (square, square.transpose(0, 2, 1, 3), square[:, ::2]):
        got, expected = ft.astype(a, F16), a.astype(F16)
        assert got.strides == expected.strides  # the layout a matmul reads
        np.testing.assert_array_equal(_bits(got), _bits(expected))


def test_copyto_converts_into_the_destination_like_numpy() -> None:
    h = np.linspace(-1000, 1000, 10_000).astype(F16).reshape(100, 100)
    dst = np.empty((100, 100), np.float32)
    ft.copyto(dst, h)
    np.testing.assert_array_equal(_bits(dst), _bits(h.astype(np.float32)))
    x = np.linspace(-70000, 70000, 10_000, dtype=np.float32).reshape(100, 100)  # overflows: numpy's cast
    back = np.empty((100, 100), F16)
    with pytest.warns(RuntimeWarning, match="overflow"):
        ft.copyto(back, x)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(_bits(back), _bits(x.astype(F16)))



def _float16_program(x: popxl.Tensor, w: popxl.Tensor) -> list[popxl.Tensor]:
    """A matmul, GELU, softmax, casts and + - * / with broadcasting, in float16."""
    y = x @ w
    g = ops.gelu(y)
    s = ops.softmax(g * y - y, axis=-1)
    z = ops.add_(ops.cast(ops.cast(s, popxl.float32), popxl.float16), y / (g + 4.0))
    return [y, g, s, z]


def test_the_executors_float16_kernels_give_numpys_bits_with_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 64, 128)).astype(F16)
    w = (rng.standard_normal((128, 128)) / 8).astype(F16)
    calls: list[int] = []
    real = ft.torch_binary

    def counting(*args: object) -> object:
        calls.append(1)
        return real(*args)  # type: ignore[arg-type]
    monkeypatch.setattr(ft, "torch_binary", counting)
    with_torch = run(_float16_program, x, w, replicas=2)
    grad = execution.gelu_tanh_grad(x)
    assert len(calls) > 10  # the program's float16 arithmetic went through torch
    monkeypatch.setenv(ft.ENV_VAR, "0")
    count = len(calls)
    numpy_only = run(_float16_program, x, w, replicas=2)
    np.testing.assert_array_equal(_bits(grad), _bits(execution.gelu_tanh_grad(x)))
    assert len(calls) == count
    for got, expected in zip(with_torch, numpy_only, strict=True):
        assert got.dtype == F16
        np.testing.assert_array_equal(_bits(got), _bits(expected))


def test_float16_gelu_is_numpys_float16_expression() -> None:
    from profcompare.emulator.popxl.ops.core import GELU_A, GELU_B
    x = np.random.default_rng(4).standard_normal((4, 4096)).astype(F16) * F16(4)
    a, b, h, one = F16(GELU_A), F16(GELU_B), F16(0.5), F16(1.0)
    u = np.tanh(x * x * x * b + a * x)  # numpy's float16 operations, each rounded
    expected = (u + one) * x * h
    np.testing.assert_array_equal(_bits(execution.gelu_tanh(x)), _bits(expected))
    x2 = x * x
    th = np.tanh(x * (a + b * x2))
    expected_grad = h * (one + th) + h * x * (one - th * th) * (a + F16(3.0 * GELU_B) * x2)
    np.testing.assert_array_equal(_bits(execution.gelu_tanh_grad(x)), _bits(expected_grad))


@pytest.mark.parametrize("where", [0, 7, 15, 4096, 8191])
def test_a_nan_anywhere_in_a_result_makes_it_numpys(where: int) -> None:
    x = np.ones(8192, F16)
    x[where] = np.uint16(0x7D01).view(F16)  # a signalling NaN in any lane of torch's vector loops
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(_bits(ft.multiply(x, x)), _bits(x * x))
    np.testing.assert_array_equal(_bits(ft.astype(x, np.float32)), _bits(x.astype(np.float32)))


def test_one_thread_restores_the_programs_torch_threads() -> None:
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with ft.one_thread():
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
