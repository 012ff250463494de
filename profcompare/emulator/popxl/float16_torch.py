"""float16 ``+ - * /`` and float16 <-> float32 casts through torch's vectorised CPU kernels,
bit for bit numpy's, when the profiled program has imported torch.

numpy 1.26 computes a float16 ``+`` element by element: both operands converted to float32 in
software, added, the sum rounded back to float16 in software, about 11 ns an element on x86-64;
its casts between float16 and float32 take 3 to 6 ns an element. A numpy-only rewrite (a
65,536-entry table for float16 -> float32, integer operations on the float32 bits for the way
back: :mod:`.float16_math`) is no faster for ``+ - * /``: its passes over the array cost as much as
numpy's loop (``python benchmarks/bench_float16_kernels.py``). torch's CPU kernels do the same
arithmetic with the processor's conversion instructions, 16 elements at a time, about 0.5 ns an
element:

* a float16 ``+ - * /`` of torch converts both operands to float32 exactly, computes one float32
  operation (an addition is ``a + 1.0 * b``, a fused multiply-add rounded once: the same sum) and
  rounds it to float16, nearest with ties to even -- numpy's operation (float32 has 24 >= 2 * 11 + 2
  significand bits, so rounding a float32 result of float16 operands again to float16 gives the
  correctly rounded float16 result either way, which is unique);
* float16 -> float32 is exact in both; float32 -> float16 rounds to nearest, ties to even, and
  overflows to inf in both.

They differ in NaN payloads (the conversion instructions quiet a signalling NaN, numpy keeps its
bits) and in what numpy reports through ``np.errstate`` (overflow to inf, division by zero,
invalid operations, underflow). So a result is taken from torch only when every element is finite
and numpy ignores underflow (its default): operands holding a NaN or an inf go to numpy before
torch computes anything (one pass of ``torch.aminmax`` over each, about 0.2 ns an element; a
program whose values are NaN, as the simulated T5 training's are from its first op, computes as
fast as with numpy alone); otherwise, and for anything but large C-ordered
float16 (float32) arrays (C-ordered operands give a C-ordered result in both, so a later sum or
matmul reads the same layout), the operation is numpy's own. tests/emulator_popxl/test_float16_torch.py
compares every float16 value as operand, ties, subnormals, overflow, NaNs and broadcasting with
numpy's operations, bit for bit.

torch is never imported here: it is used when the program under the profiler has imported it
(``sys.modules``), so a program without torch runs as before. ``PROFCOMPARE_SIM_TORCH=0`` turns
it off. The executor runs a program with torch's kernels in one thread (:func:`one_thread`).
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

ENV_VAR = "PROFCOMPARE_SIM_TORCH"
#: arrays with fewer elements go through numpy: a torch call costs some microseconds before its
#: loop starts, the time numpy takes for a few hundred float16 elements (an assumption, not a
#: measurement; the T5 kernels that gain hold 10**5 elements and more)
MIN_ELEMENTS = 4096

_F16 = np.dtype(np.float16)
_F32 = np.dtype(np.float32)


def _torch() -> Any:
    """torch when the program has imported it and ``PROFCOMPARE_SIM_TORCH`` is not ``0``."""
    torch = sys.modules.get("torch")
    if torch is None or os.environ.get(ENV_VAR, "").strip() == "0":
        return None
    return torch


def _shareable(a: Any, dtype: np.dtype) -> bool:
    """Whether ``a`` is a C-ordered ndarray of ``dtype`` torch can view without a copy or a
    warning. numpy's result of C-ordered operands is C-ordered, and so is torch's: the layout,
    which decides the order of a later reduction's or matmul's sums, is the same too."""
    return isinstance(a, np.ndarray) and a.dtype == dtype and a.flags.writeable and a.flags.c_contiguous


def _underflow_ignored() -> bool:
    return np.geterr()["under"] == "ignore"


def _finite(torch: Any, t: Any) -> bool:
    """Whether every element of floating tensor ``t`` is finite: its least and greatest values,
    which are NaN when any element is (one pass; ``isfinite`` is several on float16)."""
    low, high = torch.aminmax(t)
    return math.isfinite(float(low)) and math.isfinite(float(high))


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch's CPU kernels in the calling thread while the block runs (the numeric executor's
    run of a program): torch's thread pool, sized for every core, spins waiting for work
    between the executor's kernels and costs more CPU time than it saves on a shared machine
    (an elementwise float16 ``+`` of 2**21 elements: 0.8 ms of CPU in one thread, 7 ms in two
    on the 2-core machine of the T5 measurement, while other work ran). The program's own
    setting is restored after: its code does not run meanwhile, and its results do not depend
    on the executor's thread count."""
    torch = _torch()
    threads = torch.get_num_threads() if torch is not None else 1
    if threads == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


_OPS: dict[Any, str] = {np.add: "add", np.subtract: "sub", np.multiply: "mul", np.true_divide: "div"}


def binary(ufunc: Any, x: Any, y: Any) -> np.ndarray:
    """``ufunc(x, y)`` for numpy's ``add``, ``subtract``, ``multiply`` or ``true_divide``: the same
    bits and the same shape as numpy's, computed by torch when both operands are float16 arrays
    (numpy float16 scalars too), one of them of at least :data:`MIN_ELEMENTS` elements."""
    torch = _torch()
    if torch is not None:
        xa = np.asarray(x) if isinstance(x, np.float16) else x
        ya = np.asarray(y) if isinstance(y, np.float16) else y
        if (_shareable(xa, _F16) and _shareable(ya, _F16) and max(xa.size, ya.size) >= MIN_ELEMENTS
                and min(xa.size, ya.size) > 0 and _underflow_ignored()
                and _finite(torch, torch.from_numpy(xa)) and _finite(torch, torch.from_numpy(ya))):
            z = torch_binary(torch, ufunc, xa, ya)
            if z.is_contiguous() and _finite(torch, z):
                return z.numpy()
    return ufunc(x, y)


def torch_binary(torch: Any, ufunc: Any, x: np.ndarray, y: np.ndarray) -> Any:
    """torch's float16 ``ufunc`` of float16 arrays ``x`` and ``y``, a tensor (no check: the
    caller takes it only where it is numpy's; tests compare every element)."""
    return getattr(torch, _OPS[ufunc])(torch.from_numpy(x), torch.from_numpy(y))


def add(x: Any, y: Any) -> np.ndarray:
    """``x + y`` (see :func:`binary`)."""
    return binary(np.add, x, y)


def subtract(x: Any, y: Any) -> np.ndarray:
    """``x - y`` (see :func:`binary`)."""
    return binary(np.subtract, x, y)


def multiply(x: Any, y: Any) -> np.ndarray:
    """``x * y`` (see :func:`binary`)."""
    return binary(np.multiply, x, y)


def astype(a: np.ndarray, dtype: Any) -> np.ndarray:
    """``a.astype(dtype)`` (a new array, same bits), by torch for float16 -> float32 and float32 ->
    float16 casts of at least :data:`MIN_ELEMENTS` elements."""
    dtype = np.dtype(dtype)
    torch = _torch()
    if (torch is not None and a.size >= MIN_ELEMENTS and a.dtype in (_F16, _F32) and dtype in (_F16, _F32)
            and a.dtype != dtype and _shareable(a, a.dtype) and _underflow_ignored()
            and _finite(torch, torch.from_numpy(a))):
        z = torch_cast(torch, a, dtype)
        if z.is_contiguous() and _finite(torch, z):
            return z.numpy()
    return a.astype(dtype)


def copyto(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for a float16 (float32) array into a float32 (float16) one of the same
    shape: numpy's bits, by torch's conversion into ``dst``'s memory for large C-ordered arrays."""
    torch = _torch()
    if (torch is not None and src.size >= MIN_ELEMENTS and src.shape == dst.shape and {src.dtype, dst.dtype} == {_F16, _F32}
            and _shareable(src, src.dtype) and _shareable(dst, dst.dtype) and _underflow_ignored()
            and _finite(torch, torch.from_numpy(src))):
        t = torch.from_numpy(dst)
        t.copy_(torch.from_numpy(src))
        if _finite(torch, t):
            return
    dst[...] = src


def torch_cast(torch: Any, a: np.ndarray, dtype: np.dtype) -> Any:
    """torch's cast of float16 (float32) array ``a`` to float32 (float16), a tensor (no check)."""
    t = torch.from_numpy(a)
    return t.float() if dtype == _F32 else t.half()


__all__ = ["ENV_VAR", "MIN_ELEMENTS", "add", "astype", "binary", "copyto", "multiply", "one_thread", "subtract"]
