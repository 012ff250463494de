"""popxl.utils on the simulator: to_numpy's conversions and table_to_string's layout."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl.utils import table_to_string, to_numpy


def test_table_layout() -> None:
    rows = [["num", "foo", "name"], [3, "aaab", "args"], [-1, "barrrr", "kwargs"]]
    assert table_to_string(rows) == (
        "num | foo    | name  \n"
        "----------------------\n"  # as long as the header line with its newline
        "3   | aaab   | args  \n"
        "-1  | barrrr | kwargs\n")
    assert table_to_string(rows, delimiter=",", header=False) == "num,foo   ,name  \n3  ,aaab  ,args  \n-1 ,barrrr,kwargs\n"
    assert table_to_string([["only"]]) == "only\n"


def test_to_numpy_downcasts_and_converts() -> None:
    assert to_numpy([1.5, 2.0]).dtype == np.float32
    assert to_numpy(np.arange(3)).dtype == np.int32
    assert to_numpy(np.arange(3), downcast=False).dtype == np.int64
    np.testing.assert_array_equal(to_numpy([1, 2], popxl.float16), np.array([1, 2], np.float16))
    a = np.ones(3, np.float32)
    assert to_numpy(a, copy=False) is a
    assert to_numpy(a) is not a
    bits = to_numpy(np.array([0.75], np.float32), popxl.float8_143, log2_scale=1)
    assert bits.dtype == popxl.dtypes.np_dtype_float8_143 and bits.view(np.uint8)[0] == 0b01000100  # 1.5
    with pytest.raises(RuntimeError, match="log2scale"):
        to_numpy(a, popxl.float32, log2_scale=1)
    with pytest.raises(TypeError, match="not supported for float8"):
        to_numpy(np.array([1], np.int32), popxl.float8_152)


def test_to_numpy_keeps_a_suitable_memmap(tmp_path) -> None:
    m = np.memmap(tmp_path / "m.bin", dtype=np.float32, mode="w+", shape=(4,))
    assert to_numpy(m, copy=False) is m
    wide = np.memmap(tmp_path / "w.bin", dtype=np.float64, mode="w+", shape=(4,))
    with pytest.raises(ValueError, match="requires downcasting"):
        to_numpy(wide)
    with pytest.raises(ValueError, match="must be None or the same"):
        to_numpy(m, popxl.float16)
