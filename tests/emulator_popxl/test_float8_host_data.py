"""Host data given a float8 dtype, through popxl.utils.to_numpy and through popxl.variable: one
conversion (dtypes.as_float8_host_array) behind both, with popxl's error message word for word."""

from __future__ import annotations

import re

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl.utils import to_numpy

#: popxl 3.4's message (popxl/utils.py), without a space after the first sentence
INT_DATA_MESSAGE = "Type int32 is not supported for float8 tensors.Please use float16, float32 or float64 types."


def _variable_data(data: np.ndarray, dtype: popxl.dtype, **kwargs: object) -> np.ndarray:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(data, dtype, **kwargs)
    with popxl.Session(ir, "cpu") as session:
        return session.get_tensor_data(v)


@pytest.mark.parametrize("dtype", [popxl.float8_143, popxl.float8_152])
def test_integer_data_is_refused_with_popxls_message(dtype: popxl.dtype) -> None:
    with pytest.raises(TypeError, match=f"^{re.escape(INT_DATA_MESSAGE)}$"):
        to_numpy(np.array([1, 2], np.int32), dtype)
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(TypeError, match=f"^{re.escape(INT_DATA_MESSAGE)}$"):
        popxl.variable(np.array([1, 2], np.int32), dtype)


def test_both_paths_give_the_same_bits() -> None:
    # 0.75 * 2**1 = 1.5 is 0 1000 100 in float8_143 (bias 8); 3.0 * 2 = 6 is 0 1010 100
    data = np.array([0.75, 3.0], np.float32)
    via_utils = to_numpy(data, popxl.float8_143, log2_scale=1)
    via_variable = _variable_data(data, popxl.float8_143, log2_scale=1)
    assert via_utils.view(np.uint8).tolist() == via_variable.view(np.uint8).tolist() == [0b01000100, 0b01010100]
    # float8 data is kept as it is
    assert to_numpy(via_utils, popxl.float8_143, copy=False) is via_utils
