"""popxl.ops.conv_pow2scaled / conv_transpose_pow2scaled on the simulator: float8 operands
decoded with the host helpers, convolved in float64 by the plain-loop references of
test_ops_nn, scaled by 2**log2_scale and rounded to float16 once; popxl 3.4's signatures and
errors; the lowering's FLOPs and weight kinds."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops

from .signatures import plain_signature
from profcompare.emulator.popxl.fp8_utils import host_pow2scale_cast_from_fp8, host_pow2scale_cast_to_fp8

from .test_ops_nn import ref_conv, ref_conv_transpose

RNG = np.random.default_rng(11)

POPXL_34_SIGNATURES = {
    "conv_pow2scaled": "(t, weight, log2_scale, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, "
                       "pad_type='not_set', available_memory_proportions=None, enable_conv_dithering=None)",
    "conv_transpose_pow2scaled": "(t, weight, log2_scale, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), "
                                 "groups=1, pad_type='not_set', output_padding=(), output_shape=(), "
                                 "available_memory_proportions=None, enable_conv_dithering=None)",
}


def float8(shape: tuple, dt: popxl.dtype) -> np.ndarray:
    """Random float8 bit patterns (structured dtype) of values in [-4, 4)."""
    return host_pow2scale_cast_to_fp8(RNG.uniform(-4, 4, shape).astype(np.float32), dt)


def decoded(bits: np.ndarray) -> np.ndarray:
    return host_pow2scale_cast_from_fp8(bits, popxl.float64)


def run(fn: Callable[..., popxl.Tensor], x: np.ndarray, x_dt: popxl.dtype, w: np.ndarray, w_dt: popxl.dtype,
        log2_scale: int) -> np.ndarray:
    """Build ``fn(x, w, scale)`` over float8 variables and an int32 scale variable, run once, return its output."""
    ir = popxl.Ir()
    with ir.main_graph:
        y = fn(popxl.variable(x, x_dt), popxl.variable(w, w_dt), popxl.variable(np.int32(log2_scale), popxl.int32))
        assert y.dtype == popxl.float16
        stream = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(stream, y)
    with popxl.Session(ir, "ipu_model") as session:
        return session.run()[stream]


def building(fn: Callable[..., object], x: popxl.dtype, w: popxl.dtype, scale: popxl.dtype = popxl.int32,
             x_shape: tuple = (1, 2, 5, 5), w_shape: tuple = (3, 2, 3, 3), scale_shape: tuple = ()) -> object:
    """Call ``fn`` on graph inputs of the given dtypes and shapes in a fresh main graph (build-time errors)."""
    ir = popxl.Ir()
    with ir.main_graph:
        return fn(popxl.graph_input(x_shape, x, "x"), popxl.graph_input(w_shape, w, "w"),
                  popxl.graph_input(scale_shape, scale, "s"))


@pytest.mark.parametrize("name", sorted(POPXL_34_SIGNATURES))
def test_signatures_match_popxl_3_4(name: str) -> None:
    assert plain_signature(getattr(ops, name)) == POPXL_34_SIGNATURES[name]


CONV_CASES = [
    # x shape, w shape, kwargs, (lower pads, upper pads), log2 scale, formats
    ((2, 3, 5, 6), (4, 3, 3, 2), {}, ((0, 0), (0, 0)), 1, (popxl.float8_143, popxl.float8_143)),
    ((1, 4, 7, 7), (6, 2, 3, 3), {"stride": (2, 1), "padding": (1, 0, 2, 1), "groups": 2}, ((1, 0), (2, 1)), -3,
     (popxl.float8_143, popxl.float8_152)),
    ((1, 2, 8, 8), (2, 2, 3, 3), {"dilation": (2, 1), "padding": (2, 1, 2, 1)}, ((2, 1), (2, 1)), 0,
     (popxl.float8_152, popxl.float8_152)),
    ((1, 2, 7, 6), (3, 2, 3, 2), {"stride": (2, 2), "pad_type": "same_upper"}, ((1, 0), (1, 0)), 4,
     (popxl.float8_152, popxl.float8_143)),
    ((2, 2, 9), (3, 2, 4), {"stride": (2,), "padding": (1, 2), "dilation": (1,)}, ((1,), (2,)), -1,
     (popxl.float8_143, popxl.float8_143)),
]


@pytest.mark.parametrize("xs,ws,kwargs,pads,scale,formats", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_conv_pow2scaled_matches_numpy(xs: tuple, ws: tuple, kwargs: dict, pads: tuple, scale: int,
                                       formats: tuple) -> None:
    x, w = float8(xs, formats[0]), float8(ws, formats[1])
    got = run(lambda t, tw, s: ops.conv_pow2scaled(t, tw, s, **kwargs), x, formats[0], w, formats[1], scale)
    nd = len(xs) - 2
    conv = ref_conv(decoded(x), decoded(w), kwargs.get("stride", (1,) * nd), pads[0], pads[1],
                    kwargs.get("dilation", (1,) * nd), kwargs.get("groups", 1))
    assert got.dtype == np.float16 and got.shape == conv.shape
    np.testing.assert_array_equal(got, (conv * 2.0 ** scale).astype(np.float16))


CONVT_CASES = [
    # x shape, w shape, kwargs, pads, output padding, log2 scale
    ((1, 2, 3, 4), (2, 3, 3, 2), {}, (0, 0, 0, 0), (0, 0), 2),
    ((2, 4, 3, 3), (4, 2, 3, 3), {"stride": (2, 2), "padding": (1, 0, 1, 1), "groups": 2}, (1, 0, 1, 1), (0, 0), -2),
    ((1, 2, 4, 3), (2, 1, 2, 3), {"stride": (2, 3), "output_padding": (1, 2)}, (0, 0, 0, 0), (1, 2), 0),
]


@pytest.mark.parametrize("xs,ws,kwargs,pads,out_pad,scale", CONVT_CASES, ids=[str(i) for i in range(len(CONVT_CASES))])
def test_conv_transpose_pow2scaled_matches_numpy(xs: tuple, ws: tuple, kwargs: dict, pads: tuple, out_pad: tuple,
                                                 scale: int) -> None:
    x, w = float8(xs, popxl.float8_152), float8(ws, popxl.float8_143)
    got = run(lambda t, tw, s: ops.conv_transpose_pow2scaled(t, tw, s, **kwargs), x, popxl.float8_152, w,
              popxl.float8_143, scale)
    conv = ref_conv_transpose(decoded(x), decoded(w), kwargs.get("stride", (1, 1)), pads, out_pad,
                              kwargs.get("groups", 1))
    assert got.dtype == np.float16 and got.shape == conv.shape
    np.testing.assert_array_equal(got, (conv * 2.0 ** scale).astype(np.float16))


@pytest.mark.parametrize("op", ["conv", "conv_transpose"])
def test_the_reference_tells_a_wrong_log2_scale_apart(op: str) -> None:
    x, w = float8((1, 2, 4, 4), popxl.float8_143), float8((2, 2, 3, 3), popxl.float8_143)
    fn = ops.conv_pow2scaled if op == "conv" else ops.conv_transpose_pow2scaled
    got = run(fn, x, popxl.float8_143, w, popxl.float8_143, -2)
    conv = (ref_conv(decoded(x), decoded(w), (1, 1), (0, 0), (0, 0), (1, 1), 1) if op == "conv"
            else ref_conv_transpose(decoded(x), decoded(w), (1, 1), (0, 0, 0, 0), (0, 0), 1))
    np.testing.assert_array_equal(got, (conv * 2.0 ** -2).astype(np.float16))
    for wrong in (-3, -1, 2):
        assert not np.array_equal(got, (conv * 2.0 ** wrong).astype(np.float16))


def test_a_log2_scale_outside_minus_32_to_32_fails_at_run_time() -> None:
    x, w = float8((1, 2, 3, 3), popxl.float8_143), float8((1, 2, 3, 3), popxl.float8_143)
    with pytest.raises(RuntimeError, match=r"log2 scale 32 is outside \[-32, 32\)"):
        run(ops.conv_pow2scaled, x, popxl.float8_143, w, popxl.float8_143, 32)
    with pytest.raises(RuntimeError, match=r"conv_transpose_pow2scaled: log2 scale -33"):
        run(ops.conv_transpose_pow2scaled, x, popxl.float8_143, w.reshape(2, 1, 3, 3), popxl.float8_143, -33)


def test_errors_follow_popxl() -> None:
    f8 = popxl.float8_143
    for fn in (ops.conv_pow2scaled, ops.conv_transpose_pow2scaled):
        with pytest.raises(TypeError, match="Scaled conv operands must be of dtype"):
            building(fn, popxl.float16, f8)
        with pytest.raises(TypeError, match="Scaled conv operands must be of dtype"):
            building(fn, f8, popxl.float32, scale=popxl.float32)  # operand dtypes are checked first
        with pytest.raises(ValueError, match="Log2 scale argument must be a scalar tensor"):
            building(fn, f8, f8, scale_shape=(1,))
        with pytest.raises(TypeError, match="Log2 scale tensor must be of type popxl.int32"):
            building(fn, f8, f8, scale=popxl.int8)
        with pytest.raises(ValueError, match="pad type bogus is not valid"):
            building(lambda t, w, s, fn=fn: fn(t, w, s, pad_type="bogus"), f8, f8, w_shape=(2, 2, 3, 3))
    # the float convolutions' shape rules
    with pytest.raises(ValueError, match="does not match the 4 channels"):
        building(ops.conv_pow2scaled, f8, f8, x_shape=(1, 4, 5, 5))
    with pytest.raises(ValueError, match="unexpected number of stride parameters"):
        building(ops.conv_pow2scaled, f8, f8, x_shape=(1, 2, 8), w_shape=(3, 2, 3))
    with pytest.raises(ValueError, match="unexpected number of channels"):
        building(ops.conv_transpose_pow2scaled, f8, f8, x_shape=(1, 3, 5, 5), w_shape=(2, 2, 3, 3))
    with pytest.raises(ValueError, match="non default value for dilations"):
        building(lambda t, w, s: ops.conv_transpose_pow2scaled(t, w, s, dilation=(2, 2)), f8, f8, w_shape=(2, 2, 3, 3))


def test_autodiff_refuses_scaled_convolutions() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        g = ir.create_graph(lambda t, w, s: ops.conv_pow2scaled(t, w, s),
                            popxl.TensorSpec((1, 2, 5, 5), popxl.float8_143),
                            popxl.TensorSpec((3, 2, 3, 3), popxl.float8_143), popxl.TensorSpec((), popxl.int32))
        with pytest.raises(RuntimeError, match="float8 scaled convolution in a backward pass"):
            popxl.transforms.autodiff(g)


def test_lowering_counts_flops_as_the_float_convolutions_and_marks_weights() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        s = popxl.constant(np.int32(0))
        x = popxl.variable(float8((2, 4, 6, 6), popxl.float8_143), popxl.float8_143, name="x")
        w = popxl.variable(float8((8, 2, 3, 3), popxl.float8_143), popxl.float8_143, name="w")
        wt = popxl.variable(float8((4, 3, 2, 2), popxl.float8_152), popxl.float8_152, name="wt")
        y = ops.conv_pow2scaled(x, w, s, padding=(1, 1, 1, 1), groups=2)
        yt = ops.conv_transpose_pow2scaled(x, wt, s, stride=(2, 2))
    assert y.shape == (2, 8, 6, 6) and yt.shape == (2, 3, 12, 12)
    program = lower(ir)
    by_type = {op.type: op for op in program.ops.values()}
    assert by_type["ConvPow2Scaled"].flops == 2 * (2 * 8 * 6 * 6) * (2 * 3 * 3)
    assert by_type["ConvTransposePow2Scaled"].flops == 2 * (2 * 4 * 6 * 6) * (3 * 2 * 2)
    assert program.tensors[w.id].kind == "weight" and program.tensors[wt.id].kind == "weight"
