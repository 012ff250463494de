"""Which float16 operations profcompare.emulator.popxl.float16_torch hands to torch and which it
leaves to numpy, tested without torch installed: a small stand-in ``torch`` module, built here
and put into ``sys.modules``, implements with numpy the calls the module makes and records them.

The stand-in computes as torch's CPU kernels do: a float16 ``+ - * /`` converts both operands
to float32, computes one float32 operation and rounds the result once to float16; casts convert
element by element; a NaN coming out of a conversion is quieted (the processor's conversion
instructions set the quiet bit, where numpy keeps a signalling NaN's bits), and it never warns
nor raises through ``np.errstate``. So a result taken from it where numpy's differs shows as
wrong bits or a missing warning. test_float16_torch.py compares real torch's kernels with
numpy's, where torch is installed."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from profcompare.emulator.popxl import float16_torch as ft

F16, F32 = np.dtype(np.float16), np.dtype(np.float32)
UFUNCS = (np.add, np.subtract, np.multiply, np.true_divide)
OP_NAMES: dict[Any, str] = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div"}
N = ft.MIN_ELEMENTS
SNAN = np.uint16(0x7D01).view(np.float16)  # a signalling NaN (quiet bit 0x0200 clear)


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint16 if a.dtype == F16 else np.uint32)


def _raw(a: np.ndarray) -> np.ndarray:
    """The bytes of ``a``, element by element in C order (any dtype, any layout)."""
    return np.ascontiguousarray(a).view(np.uint8)


def _quiet(a: np.ndarray) -> np.ndarray:
    """``a`` with every NaN's quiet bit set, in place: what a hardware conversion does."""
    if a.dtype == F16:
        bits = a.view(np.uint16)
        bits[np.isnan(a)] |= np.uint16(0x0200)
    else:
        bits32 = a.view(np.uint32)
        bits32[np.isnan(a)] |= np.uint32(0x0040_0000)
    return a


def _convert(a: np.ndarray, dtype: np.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):
        return _quiet(a.astype(dtype))


class FakeTensor:
    """A tensor viewing a numpy array's memory (as ``torch.from_numpy`` gives)."""

    def __init__(self, fake: FakeTorch, a: np.ndarray) -> None:
        self._fake, self._a = fake, a

    @property
    def dtype(self) -> np.dtype:
        return self._a.dtype

    def is_contiguous(self) -> bool:
        return bool(self._a.flags.c_contiguous)

    def numpy(self) -> np.ndarray:
        return self._a

    def float(self) -> FakeTensor:
        self._fake.calls.append("float")
        return FakeTensor(self._fake, _convert(self._a, F32))

    def half(self) -> FakeTensor:
        self._fake.calls.append("half")
        return FakeTensor(self._fake, _convert(self._a, F16))

    def copy_(self, src: FakeTensor) -> FakeTensor:
        self._fake.calls.append("copy_")
        self._a[...] = _convert(src._a, self._a.dtype)
        return self


class FakeTorch(types.ModuleType):
    """The calls float16_torch makes, computed with numpy as torch's CPU kernels compute them."""

    float16, float32 = F16, F32

    def __init__(self, threads: int = 4) -> None:
        super().__init__("torch")
        self.calls: list[str] = []
        self.threads = threads
        for name, op in (("add", np.add), ("sub", np.subtract), ("mul", np.multiply), ("div", np.true_divide)):
            setattr(self, name, self._arith(name, op))

    def from_numpy(self, a: np.ndarray) -> FakeTensor:
        self.calls.append("from_numpy")
        if not isinstance(a, np.ndarray):
            raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
        if not a.flags.writeable:
            raise AssertionError("torch warns viewing a read-only array: float16_torch must not ask")
        return FakeTensor(self, a)

    def aminmax(self, t: FakeTensor) -> tuple[np.floating[Any], np.floating[Any]]:
        self.calls.append("aminmax")
        a = t.numpy()
        if a.size == 0:
            raise RuntimeError("aminmax(): cannot compute on an empty tensor")  # as torch does
        return a.min(), a.max()  # NaN when any element is NaN, as torch's

    def _arith(self, name: str, op: np.ufunc) -> Callable[[FakeTensor, FakeTensor], FakeTensor]:
        def kernel(x: FakeTensor, y: FakeTensor) -> FakeTensor:
            self.calls.append(name)
            assert x.dtype == y.dtype == F16
            with np.errstate(all="ignore"):  # one float32 operation, rounded once to float16
                z = op(x.numpy().astype(F32), y.numpy().astype(F32))
            return FakeTensor(self, _convert(z, F16))
        return kernel

    def get_num_threads(self) -> int:
        self.calls.append("get_num_threads")
        return self.threads

    def set_num_threads(self, n: int) -> None:
        self.calls.append(f"set_num_threads({n})")
        self.threads = n


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeTorch:
    torch = FakeTorch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.delenv(ft.ENV_VAR, raising=False)
    return torch


def _operands() -> tuple[np.ndarray, np.ndarray]:
    """float16 operands whose sums, differences, products and quotients are all finite and
    normal (no underflow), many of them rounded."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(N) * 8).astype(np.float16)
    y = (np.abs(rng.standard_normal(N)) + 0.25).astype(np.float16) * np.where(rng.random(N) < 0.5, -1, 1).astype(np.float16)
    return x, y


def test_the_stand_in_computes_numpys_bits_and_quiets_nans() -> None:
    # the stand-in itself: numpy's float16 bits for finite results, a quieted NaN where numpy
    # keeps a signalling one (so a NaN taken from it instead of numpy's shows)
    torch = FakeTorch()
    x, y = _operands()
    for ufunc in UFUNCS:
        got = getattr(torch, OP_NAMES[ufunc])(torch.from_numpy(x), torch.from_numpy(y)).numpy()
        np.testing.assert_array_equal(_bits(got), _bits(ufunc(x, y)))
    s = np.array([SNAN], np.float16)
    assert _bits(torch.from_numpy(s).float().half().numpy())[0] == 0x7F01
    assert _bits(s.astype(np.float32).astype(np.float16))[0] == 0x7D01


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
def test_large_c_ordered_float16_operations_are_torchs_with_numpys_bits(fake: FakeTorch, ufunc: np.ufunc) -> None:
    x, y = _operands()
    op = OP_NAMES[ufunc]
    grid = x.reshape(64, 64)
    cases = [
        (x, y),  # exactly MIN_ELEMENTS elements
        (y, x),
        (grid, y[:64]),  # the larger operand decides: 64 elements broadcast against 4,096
        (y[:64].reshape(64, 1), grid),
        (grid, np.float16(-1.5)),  # a numpy float16 scalar is an operand too
        (np.float16(3.0), grid),
        (x, np.asarray(np.float16(0.75))),
    ]
    for a, b in cases:
        fake.calls.clear()
        got = ft.binary(ufunc, a, b)
        expected = ufunc(a, b)
        assert fake.calls.count(op) == 1, (np.shape(a), np.shape(b))
        assert fake.calls.count("aminmax") == 3  # both operands, then the result
        assert got.shape == expected.shape and got.dtype == F16 and got.flags.c_contiguous
        np.testing.assert_array_equal(_bits(got), _bits(expected))
    fake.calls.clear()
    for public, ufunc_ in ((ft.add, np.add), (ft.subtract, np.subtract), (ft.multiply, np.multiply)):
        np.testing.assert_array_equal(_bits(public(x, y)), _bits(ufunc_(x, y)))
    assert [c for c in fake.calls if c in OP_NAMES.values()] == ["add", "sub", "mul"]


def _numpy_cases() -> list[tuple[str, Any, Any]]:
    x, y = _operands()
    frozen = x.copy()
    frozen.flags.writeable = False
    grid = x.reshape(64, 64)
    return [
        ("one element short", x[:-1], y[:-1]),
        ("both small, broadcast to 4,096", x[:64].reshape(64, 1), y[:64]),
        ("float32", x.astype(np.float32), y.astype(np.float32)),
        ("float16 with float32", x, y.astype(np.float32)),
        ("a python float", x, 1.5),
        ("float64 scalar", x, np.float64(1.5)),
        ("a list", x, y.tolist()),
        ("Fortran-ordered", np.asfortranarray(grid), grid),
        ("transposed", grid.T, grid),
        ("reversed", x[::-1], y),
        ("every other", np.concatenate([x, x])[::2], y),
        ("read-only", frozen, y),
        ("big-endian", x.astype(">f2"), y),
        ("empty", np.ones((N, 1), np.float16), np.ones(0, np.float16)),
    ]


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
@pytest.mark.parametrize(("why", "a", "b"), _numpy_cases(), ids=[c[0] for c in _numpy_cases()])
def test_other_operands_are_numpys_and_torch_is_not_called(fake: FakeTorch, ufunc: np.ufunc, why: str, a: Any, b: Any) -> None:
    with np.errstate(all="ignore"):  # a transposed divisor holds values near 0
        got = ft.binary(ufunc, a, b)
        expected = ufunc(a, b)
    assert fake.calls == [], why
    assert type(got) is type(expected) and got.dtype == expected.dtype and got.shape == expected.shape
    assert got.strides == expected.strides
    np.testing.assert_array_equal(_raw(got), _raw(expected))


@pytest.mark.parametrize("ufunc", UFUNCS, ids=lambda u: u.__name__)
@pytest.mark.parametrize("bad", [SNAN, np.float16(np.nan), np.float16(np.inf), np.float16(-np.inf)], ids=["snan", "nan", "inf", "-inf"])
@pytest.mark.parametrize("where", [0, 1000, N - 1])
def test_a_nan_or_inf_in_an_operand_leaves_the_operation_to_numpy(fake: FakeTorch, ufunc: np.ufunc, bad: np.float16, where: int) -> None:
    x, y = _operands()
    for first in (True, False):
        a, b = x.copy(), y.copy()
        (a if first else b)[where] = bad
        fake.calls.clear()
        with np.errstate(invalid="ignore"):
            got = ft.binary(ufunc, a, b)
            expected = ufunc(a, b)
        assert OP_NAMES[ufunc] not in fake.calls  # decided before torch computes anything
        np.testing.assert_array_equal(_bits(got), _bits(expected))  # a signalling NaN keeps its bits


def test_a_non_finite_result_is_recomputed_by_numpy(fake: FakeTorch) -> None:
    big = np.full(N, 60000.0, np.float16)
    zero = np.zeros(N, np.float16)
    with pytest.warns(RuntimeWarning, match="overflow"):  # numpy's warning: its result was taken
        got = ft.add(big, big)
    assert fake.calls.count("add") == 1 and np.isinf(got).all()
    with np.errstate(over="raise"), pytest.raises(FloatingPointError):
        ft.multiply(big, big)
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        ft.binary(np.true_divide, big, zero)
    with np.errstate(invalid="raise"), pytest.raises(FloatingPointError):
        ft.binary(np.true_divide, zero, zero)
    # one overflowing element anywhere makes the whole result numpy's
    for where in (0, 2047, N - 1):
        x = np.ones(N, np.float16)
        x[where] = 60000.0
        with np.errstate(over="raise"), pytest.raises(FloatingPointError):
            ft.add(x, x)
    # a NaN result (0 / 0): numpy's bits, the default NaN of its float32 division rounded
    fake.calls.clear()
    with np.errstate(all="ignore"):
        q = ft.binary(np.true_divide, zero, zero)
        np.testing.assert_array_equal(_bits(q), _bits(zero / zero))
    assert fake.calls.count("div") == 1


@pytest.mark.parametrize("under", ["warn", "raise", "call", "print", "log"])
def test_numpys_underflow_reporting_keeps_the_operation_numpys(fake: FakeTorch, under: str) -> None:
    x, y = _operands()
    log: list[str] = []
    with np.errstate(under=under, call=lambda kind, flag: log.append(kind)):  # type: ignore[arg-type]
        got = ft.multiply(x, y)
        astyped = ft.astype(x, np.float32)
        dst = np.empty(N, np.float32)
        ft.copyto(dst, x)
    assert fake.calls == []
    np.testing.assert_array_equal(_bits(got), _bits(x * y))
    np.testing.assert_array_equal(_bits(astyped), _bits(x.astype(np.float32)))
    np.testing.assert_array_equal(_bits(dst), _bits(x.astype(np.float32)))
    tiny = np.full(N, 2.0**-20, np.float16)  # the product underflows to 0
    if under == "raise":
        with np.errstate(under="raise"), pytest.raises(FloatingPointError, match="underflow"):
            ft.multiply(tiny, tiny)


def test_other_error_settings_still_use_torch_for_finite_results(fake: FakeTorch) -> None:
    x, y = _operands()
    with np.errstate(over="raise", divide="raise", invalid="raise", under="ignore"):
        got = ft.binary(np.true_divide, x, y)
    assert fake.calls.count("div") == 1
    np.testing.assert_array_equal(_bits(got), _bits(x / y))


def test_astype_casts_large_float16_float32_arrays_through_torch(fake: FakeTorch) -> None:
    x, _ = _operands()
    wide = np.linspace(-65000, 65000, N, dtype=np.float32)  # every result a finite float16, many rounded
    for a, dtype, call in ((x, F32, "float"), (wide, F16, "half"), (x.reshape(64, 64), np.float32, "float")):
        fake.calls.clear()
        got = ft.astype(a, dtype)
        assert fake.calls.count(call) == 1
        expected = a.astype(dtype)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(_bits(got), _bits(expected))
    frozen = x.copy()
    frozen.flags.writeable = False
    for a, dtype in ((x[:-1], F32), (x, F16), (x, np.float64), (x.astype(np.float64), F16), (x.reshape(64, 64).T, F32),
                     (x[::-1], F32), (frozen, F32), (x.astype(np.int32), F16)):
        fake.calls.clear()
        got = ft.astype(a, dtype)
        assert fake.calls == [], (a.dtype, a.strides, dtype)
        expected = a.astype(dtype)
        assert got.strides == expected.strides
        np.testing.assert_array_equal(_raw(got), _raw(expected))
        assert got is not a  # a new array, as astype gives


def test_astype_leaves_nans_infs_and_overflow_to_numpy(fake: FakeTorch) -> None:
    x, _ = _operands()
    x[17] = SNAN
    fake.calls.clear()
    np.testing.assert_array_equal(_bits(ft.astype(x, np.float32)), _bits(x.astype(np.float32)))  # payload kept
    assert "float" not in fake.calls
    wide = np.linspace(-70000, 70000, N, dtype=np.float32)  # beyond float16's range at both ends
    fake.calls.clear()
    with pytest.warns(RuntimeWarning, match="overflow"):
        got = ft.astype(wide, np.float16)
    assert fake.calls.count("half") == 1  # torch computed, its infs sent the cast back to numpy
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(_bits(got), _bits(wide.astype(np.float16)))


def test_copyto_converts_large_arrays_in_place_through_torch(fake: FakeTorch) -> None:
    x, _ = _operands()
    dst = np.full((64, 64), -1.0, np.float32)
    ft.copyto(dst, x.reshape(64, 64))
    assert fake.calls.count("copy_") == 1
    np.testing.assert_array_equal(_bits(dst), _bits(x.reshape(64, 64).astype(np.float32)))
    wide = np.linspace(-65000, 65000, N, dtype=np.float32)
    back = np.zeros(N, np.float16)
    fake.calls.clear()
    ft.copyto(back, wide)
    assert fake.calls.count("copy_") == 1
    np.testing.assert_array_equal(_bits(back), _bits(wide.astype(np.float16)))


def test_copyto_leaves_other_arrays_and_overflow_to_numpy(fake: FakeTorch) -> None:
    x, _ = _operands()
    grid = x.reshape(64, 64)
    cases: list[tuple[np.ndarray, np.ndarray]] = [
        (np.empty(N - 1, np.float32), x[:-1]),  # small
        (np.empty((64, 64), np.float32), grid[:1]),  # broadcast source
        (np.empty((2, 64, 64), np.float32), grid),  # a large broadcast source
        (np.empty(N, np.float16), x),  # same dtype
        (np.empty(N, np.float64), x),  # not float32
        (np.empty((64, 64), np.float32).T, grid),  # destination not C-ordered
        (np.empty((64, 64), np.float32), grid.T),  # source not C-ordered
    ]
    with_nan = x.copy()
    with_nan[5] = SNAN
    cases.append((np.empty(N, np.float32), with_nan))
    for dst, src in cases:
        fake.calls.clear()
        ft.copyto(dst, src)
        assert "copy_" not in fake.calls, (dst.dtype, dst.strides, src.shape, src.strides)
        expected = np.empty_like(dst)
        expected[...] = src
        np.testing.assert_array_equal(_raw(dst), _raw(expected))
    wide = np.linspace(-70000, 70000, N, dtype=np.float32)
    back = np.zeros(N, np.float16)
    fake.calls.clear()
    with pytest.warns(RuntimeWarning, match="overflow"):
        ft.copyto(back, wide)
    assert fake.calls.count("copy_") == 1
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(_bits(back), _bits(wide.astype(np.float16)))


def test_one_thread_sets_one_and_restores_the_programs_count(fake: FakeTorch) -> None:
    with ft.one_thread():
        assert fake.threads == 1
    assert fake.threads == 4
    assert fake.calls == ["get_num_threads", "set_num_threads(1)", "set_num_threads(4)"]
    fake.calls.clear()
    with pytest.raises(KeyError), ft.one_thread():
        assert fake.threads == 1
        raise KeyError("the program failed")
    assert fake.threads == 4
    assert fake.calls == ["get_num_threads", "set_num_threads(1)", "set_num_threads(4)"]
    fake.threads = 1
    fake.calls.clear()
    with ft.one_thread():
        assert fake.threads == 1
    assert fake.calls == ["get_num_threads"]  # already one: nothing set


def test_without_torch_in_sys_modules_nothing_is_called(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = FakeTorch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    x, y = _operands()
    ft.add(x, y)
    assert torch.calls  # installed, it is used
    monkeypatch.delitem(sys.modules, "torch")
    torch.calls.clear()
    _everything(x, y)
    assert torch.calls == [] and torch.threads == 4


@pytest.mark.parametrize("value", ["0", " 0\n"])
def test_the_environment_variable_turns_torch_off(fake: FakeTorch, monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ft.ENV_VAR, value)
    x, y = _operands()
    _everything(x, y)
    assert fake.calls == [] and fake.threads == 4
    monkeypatch.setenv(ft.ENV_VAR, "1")  # anything else leaves it on
    ft.add(x, y)
    assert "add" in fake.calls


def _everything(x: np.ndarray, y: np.ndarray) -> None:
    """Each public entry point once, on operands torch would be given; numpy's bits from each."""
    with ft.one_thread():
        for ufunc in UFUNCS:
            np.testing.assert_array_equal(_bits(ft.binary(ufunc, x, y)), _bits(ufunc(x, y)))
        np.testing.assert_array_equal(_bits(ft.astype(x, np.float32)), _bits(x.astype(np.float32)))
        dst = np.empty(N, np.float32)
        ft.copyto(dst, x)
        np.testing.assert_array_equal(_bits(dst), _bits(x.astype(np.float32)))
