"""popxl-addons 3.4's quantisation custom ops on the simulator: 4-bit group decompression (and
its numpy helpers), the on-device float8 MSE scale search and the layers built on them."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl.fp8_utils import host_fp8_mse_scale
from profcompare.emulator.popxl_addons.layers.linear_gq import LinearGQ
from profcompare.emulator.popxl_addons.ops import group_quantize_decompress as gq
from profcompare.emulator.popxl_addons.ops.fp8_mse_scale import fp8_mse_scale


def _run(build: object, *arrays: tuple[np.ndarray, object]) -> np.ndarray:
    ir = popxl.Ir()
    with ir.main_graph:
        ts = [popxl.variable(a, dt) for a, dt in arrays]
        stream = addons.host_store(build(*ts))  # type: ignore[operator]
    with popxl.Session(ir, "ipu_model") as session:
        return session.run()[stream]


def test_decompress_unpacks_the_top_nibble_first() -> None:
    packed = np.array([[[0x1234, 0xF00A]]], np.uint16)  # 1 row, 1 group, 2 ids -> 8 values
    scale = np.array([[[0.5]]], np.float16)
    bias = np.array([[[1.0]]], np.float16)
    out = _run(gq.group_quantize_decompress, (packed, popxl.uint16), (scale, popxl.float16), (bias, popxl.float16))
    np.testing.assert_array_equal(out, [[1.5, 2.0, 2.5, 3.0, 8.5, 1.0, 1.0, 6.0]])
    np.testing.assert_array_equal(gq.group_quantize_decompress_numpy(packed, scale, bias, dim=-1), out)


def test_decompress_dim_0_moves_the_decompressed_axis_first() -> None:
    packed = np.array([[[0x0123]], [[0x4567]]], np.uint16)  # 2 rows, 1 group of 4
    ones = np.ones((2, 1, 1), np.float16)
    zeros = np.zeros((2, 1, 1), np.float16)
    out = _run(lambda t, s, b: gq.group_quantize_decompress(t, s, b, dim=0),
               (packed, popxl.uint16), (ones, popxl.float16), (zeros, popxl.float16))
    np.testing.assert_array_equal(out, [[0, 4], [1, 5], [2, 6], [3, 7]])


def test_compress_then_decompress_is_exact_for_values_on_the_grid() -> None:
    ids = np.array([[0, 15, 3, 7, 1, 2, 4, 8]], np.float16)
    weights = ids * np.float16(0.25) - np.float16(1)
    packed, scale, bias = gq.group_quantize_compress_numpy(weights, 8, dim=-1)
    assert packed.shape == (1, 1, 2) and packed.dtype == np.uint16
    np.testing.assert_array_equal(packed, [[[0x0F37, 0x1248]]])
    np.testing.assert_array_equal(gq.group_quantize_decompress_numpy(packed, scale, bias, -1), weights)


def test_compress_refuses_non_finite_values() -> None:
    with pytest.raises(ValueError, match="non-finite"):
        gq.group_quantize_compress_numpy(np.array([[np.nan, 1, 2, 3]], np.float16), 4, dim=-1)


def test_linear_gq_multiplies_by_the_decompressed_weight() -> None:
    x = np.array([[1.0, 2.0]], np.float16)
    w = np.array([[0.0, 1.0, 2.0, 3.0], [3.0, 2.0, 1.0, 0.0]], np.float16)  # (in 2, out 4)
    packed, scale, bias = gq.group_quantize_compress_numpy(w, 4, dim=-1)
    ir = popxl.Ir()
    with ir.main_graph:
        xt = popxl.variable(x, popxl.float16)
        facts, graph = LinearGQ(4, bias=False, group_size=4).create_graph(xt)
        variables = facts.init()
        (y,) = graph.bind(variables).call(xt)
        stream = addons.host_store(y)
    session = popxl.Session(ir, "ipu_model")
    session.write_variables_data({variables.weight_compressed: packed, variables.weight_decompression_scale: scale,
                                  variables.weight_decompression_bias: bias})
    with session:
        out = session.run()[stream]
    np.testing.assert_array_equal(out, [[6.0, 5.0, 4.0, 3.0]])


@pytest.mark.parametrize("dtype", [popxl.float8_143, popxl.float8_152])
@pytest.mark.parametrize("np_dtype", [np.float16, np.float32])
def test_fp8_mse_scale_agrees_with_popxls_host_search(dtype: object, np_dtype: type) -> None:
    data = np.random.default_rng(3).uniform(-40, 70, 50).astype(np_dtype)
    got = _run(lambda t: fp8_mse_scale(t, dtype), (data, popxl.float16 if np_dtype == np.float16 else popxl.float32))
    assert got.dtype == np.int32 and got.shape == ()
    assert int(got) == host_fp8_mse_scale(data, dtype)[1]


def test_fp8_mse_scale_of_ones() -> None:
    # |x| = 1 sits in the bin [1, 2); every bias whose float8_143 window covers that bin has the
    # same (quantisation-only) error, and the middle of those ties wins (popxl's host search agrees)
    got = _run(lambda t: fp8_mse_scale(t, popxl.float8_143), (np.ones(8, np.float32), popxl.float32))
    assert int(got) == -2
