"""popxl.ops neural-network family on the simulator: group_norm / layer_norm /
batch_norm_inference, conv / conv_transpose, average_pool / max_pool. Values against plain numpy
loops, popxl 3.4's signatures and errors, gradients against finite differences, and the
lowering's FLOPs (convolutions: 2 x multiply-accumulates)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops

from .signatures import plain_signature

from .test_autodiff import grads_via_program, numeric_grads

RNG = np.random.default_rng(7)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def run(fn: Callable[..., popxl.Tensor], *values: np.ndarray) -> np.ndarray:
    """Build ``fn`` over variables holding ``values`` in the main graph, run once, return its output."""
    ir = popxl.Ir()
    with ir.main_graph:
        y = fn(*[popxl.variable(v) for v in values])
        stream = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(stream, y)
    with popxl.Session(ir, "cpu") as session:
        return session.run()[stream]


def building(fn: Callable[..., object], *values: np.ndarray) -> object:
    """Call ``fn`` on variables holding ``values`` inside a fresh main graph (for build-time errors)."""
    ir = popxl.Ir()
    with ir.main_graph:
        return fn(*[popxl.variable(v) for v in values])


# --- numpy references (plain loops, independent of the kernels) --------------------------------
def ref_group_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, groups: int, eps: float) -> np.ndarray:
    x64 = x.astype(np.float64)
    n, c = x.shape[:2]
    y = np.empty_like(x64)
    per = c // groups
    for i in range(n):
        for g in range(groups):
            block = x64[i, g * per:(g + 1) * per]
            y[i, g * per:(g + 1) * per] = (block - block.mean()) / np.sqrt(block.var() + eps)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * w.reshape(shape) + b.reshape(shape)


def ref_conv(x: np.ndarray, w: np.ndarray, stride: tuple, lower: tuple, upper: tuple, dil: tuple,
             groups: int) -> np.ndarray:
    x64 = x.astype(np.float64)
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    k = w.shape[2:]
    xp = np.pad(x64, [(0, 0), (0, 0)] + list(zip(lower, upper)))
    osp = [(xp.shape[2 + i] - dil[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(len(k))]
    y = np.zeros((n, m, *osp))
    mg = m // groups
    for b_, o in itertools.product(range(n), range(m)):
        g = o // mg
        for pos in itertools.product(*(range(s) for s in osp)):
            acc = 0.0
            for ci in range(cg):
                for kp in itertools.product(*(range(s) for s in k)):
                    idx = tuple(p * s + q * d for p, s, q, d in zip(pos, stride, kp, dil))
                    acc += xp[(b_, g * cg + ci, *idx)] * w[(o, ci, *kp)]
            y[(b_, o, *pos)] = acc
    return y


def ref_conv_transpose(x: np.ndarray, w: np.ndarray, stride: tuple, pads: tuple, out_pad: tuple,
                       groups: int) -> np.ndarray:
    """Scatter form: every input element adds weight x value at stride * i + k, then the pads are cut."""
    n, c = x.shape[:2]
    mg = w.shape[1]
    k = w.shape[2:]
    nd = len(k)
    full = [stride[i] * (x.shape[2 + i] - 1) + k[i] + out_pad[i] for i in range(nd)]
    y = np.zeros((n, mg * groups, *full))
    cpg = c // groups
    for b_, ci in itertools.product(range(n), range(c)):
        g = ci // cpg
        for pos in itertools.product(*(range(s) for s in x.shape[2:])):
            for mo in range(mg):
                for kp in itertools.product(*(range(s) for s in k)):
                    idx = tuple(p * s + q for p, s, q in zip(pos, stride, kp))
                    y[(b_, g * mg + mo, *idx)] += x[(b_, ci, *pos)] * w[(ci, mo, *kp)]
    return y[(Ellipsis, *(slice(pads[i], full[i] - pads[nd + i]) for i in range(nd)))]


def ref_pool(x: np.ndarray, kernel: tuple, stride: tuple, lower: tuple, upper: tuple, kind: str) -> np.ndarray:
    x64 = x.astype(np.float64)
    osp = [(x.shape[2 + i] + lower[i] + upper[i] - kernel[i]) // stride[i] + 1 for i in range(len(kernel))]
    y = np.zeros((*x.shape[:2], *osp))
    for b_, c in itertools.product(*(range(s) for s in x.shape[:2])):
        for pos in itertools.product(*(range(s) for s in osp)):
            vals = []
            for kp in itertools.product(*(range(s) for s in kernel)):
                idx = tuple(p * s + q - lo for p, s, q, lo in zip(pos, stride, kp, lower))
                if all(0 <= i < d for i, d in zip(idx, x.shape[2:])):
                    vals.append(x64[(b_, c, *idx)])
            y[(b_, c, *pos)] = max(vals) if kind == "max" else sum(vals) / len(vals)
    return y


# --- signatures ----------------------------------------------------------------------------
POPXL_34_SIGNATURES = {
    "group_norm": "(t, weight, bias, num_groups, eps=1e-05)",
    "layer_norm": "(t, weight, bias, eps=1e-05)",
    "batch_norm_inference": "(t, scale, bias, mean, var, epsilon=1e-05, momentum=0.9)",
    "conv": "(t, weight, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, pad_type='not_set', "
            "available_memory_proportions=None, partials_types=None, enable_conv_dithering=None)",
    "conv_transpose": "(t, weight, stride=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), groups=1, "
                      "pad_type='not_set', output_padding=(), output_shape=(), available_memory_proportions=None, "
                      "partials_types=None, enable_conv_dithering=None)",
    "average_pool": "(t, kernel_size, stride=None, padding=None, out_pads=None, dilation=None, in_dilations=None, "
                    "auto_pad='not_set', ceil_mode=False)",
    "max_pool": "(t, kernel_size, stride=None, padding=None, out_pads=None, dilation=None, in_dilations=None, "
                "auto_pad='not_set', ceil_mode=False, storage_order='row')",
}


@pytest.mark.parametrize("name", sorted(POPXL_34_SIGNATURES))
def test_signatures_match_popxl_3_4(name: str) -> None:
    assert plain_signature(getattr(ops, name)) == POPXL_34_SIGNATURES[name]


# --- normalisation -------------------------------------------------------------------------
@pytest.mark.parametrize("shape,groups", [((2, 6), 3), ((3, 4, 5), 2), ((2, 6, 2, 3), 6), ((2, 4, 3), 1)])
def test_group_norm_matches_numpy(shape: tuple, groups: int) -> None:
    x, w, b = rand(*shape), rand(shape[1]), rand(shape[1])
    got = run(lambda t, tw, tb: ops.group_norm(t, tw, tb, groups), x, w, b)
    assert got.dtype == np.float32 and got.shape == shape
    np.testing.assert_allclose(got, ref_group_norm(x, w, b, groups, 1e-5), rtol=1e-4, atol=1e-5)


def test_group_norm_outputs_mean_and_inverse_std_per_sample_and_group() -> None:
    x, w, b = rand(2, 4, 3), np.ones(4, np.float32), np.zeros(4, np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        y = ops.group_norm(popxl.variable(x), popxl.variable(w), popxl.variable(b), 2, eps=0.1)
        _, mean, inv = y._producer.outputs
        assert mean.shape == inv.shape == (4,)
        streams = []
        for t in (mean, inv):
            s = popxl.d2h_stream(t.shape, t.dtype)
            ops.host_store(s, t)
            streams.append(s)
    with popxl.Session(ir, "cpu") as session:
        out = session.run()
    xg = x.astype(np.float64).reshape(2, 2, -1)
    np.testing.assert_allclose(out[streams[0]], xg.mean(-1).ravel(), rtol=1e-5)
    np.testing.assert_allclose(out[streams[1]], 1 / np.sqrt(xg.var(-1).ravel() + 0.1), rtol=1e-5)


def test_layer_norm_is_one_group_and_float16_is_computed_in_float32() -> None:
    x, w, b = rand(3, 8), rand(8), rand(8)
    got = run(lambda t, tw, tb: ops.layer_norm(t, tw, tb), x, w, b)
    np.testing.assert_allclose(got, ref_group_norm(x, w, b, 1, 1e-5), rtol=1e-4, atol=1e-5)
    half = run(lambda t, tw, tb: ops.layer_norm(t, tw, tb, eps=1e-3), x.astype(np.float16), w.astype(np.float16),
               b.astype(np.float16))
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, ref_group_norm(x.astype(np.float16), w.astype(np.float16),
                                                    b.astype(np.float16), 1, 1e-3), rtol=2e-2, atol=2e-2)


def test_normalisation_errors() -> None:
    x = rand(2, 6)
    with pytest.raises(ValueError, match="cannot be split into num_groups=4"):
        building(lambda t, w, b: ops.group_norm(t, w, b, 4), x, rand(6), rand(6))
    with pytest.raises(ValueError, match=r"weight .* expected \(6,\)"):
        building(lambda t, w, b: ops.layer_norm(t, w, b), x, rand(5), rand(6))
    with pytest.raises(TypeError, match="float16 or float32"):
        building(lambda t, w, b: ops.layer_norm(t, w, b), np.ones((2, 3), np.int32), np.ones(3, np.int32),
                 np.ones(3, np.int32))
    with pytest.raises(ValueError, match="rank >= 3"):
        building(lambda t, a, b_, c, d: ops.batch_norm_inference(t, a, b_, c, d), x, *[rand(6)] * 4)
    with pytest.raises(ValueError, match=r"var .* expected \(6,\)"):
        building(lambda t, a, b_, c, d: ops.batch_norm_inference(t, a, b_, c, d), rand(2, 6, 3), rand(6), rand(6),
                 rand(6), rand(3))


def test_batch_norm_inference_matches_numpy_and_has_no_gradient() -> None:
    x, scale, bias, mean = rand(2, 3, 4, 2), rand(3), rand(3), rand(3)
    var = np.abs(rand(3)) + 0.5
    got = run(lambda *ts: ops.batch_norm_inference(*ts), x, scale, bias, mean, var)
    v = (1, 3, 1, 1)
    expected = (x - mean.reshape(v)) / np.sqrt(var.reshape(v) + 1e-5) * scale.reshape(v) + bias.reshape(v)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    ir = popxl.Ir()
    with ir.main_graph:
        g = ir.create_graph(lambda *ts: ops.batch_norm_inference(*ts, epsilon=0.1),
                            *(popxl.TensorSpec(s, popxl.float32) for s in [(2, 3, 4), (3,), (3,), (3,), (3,)]))
        with pytest.raises(RuntimeError, match="autodiff of batch_norm_inference .* no gradient"):
            popxl.transforms.autodiff(g)


# --- convolution ---------------------------------------------------------------------------
CONV_CASES = [
    # x shape, w shape, kwargs, (lower, upper pads applied)
    ((2, 3, 5, 6), (4, 3, 3, 2), {}, ((0, 0), (0, 0))),
    ((1, 4, 7, 7), (6, 2, 3, 3), {"stride": (2, 1), "padding": (1, 0, 2, 1), "groups": 2}, ((1, 0), (2, 1))),
    ((1, 2, 8, 8), (2, 2, 3, 3), {"dilation": (2, 1), "padding": (2, 1, 2, 1)}, ((2, 1), (2, 1))),
    ((1, 2, 7, 6), (3, 2, 3, 2), {"stride": (2, 2), "pad_type": "same_upper"}, ((1, 0), (1, 0))),
    ((1, 2, 7, 6), (3, 2, 2, 3), {"stride": (2, 2), "pad_type": "same_lower"}, ((1, 1), (0, 0))),
    ((1, 2, 7, 6), (3, 2, 3, 3), {"stride": (2, 2), "pad_type": "valid"}, ((0, 0), (0, 0))),
    ((2, 2, 9), (3, 2, 4), {"stride": (2,), "padding": (1, 2), "dilation": (1,)}, ((1,), (2,))),
    ((1, 2, 3, 4, 4), (2, 1, 2, 2, 3), {"stride": (1, 2, 1), "padding": (0, 1, 1, 1, 0, 1), "dilation": (1, 1, 1),
                                         "groups": 2}, ((0, 1, 1), (1, 0, 1))),
]


@pytest.mark.parametrize("xs,ws,kwargs,pads", CONV_CASES, ids=[str(i) for i in range(len(CONV_CASES))])
def test_conv_matches_numpy(xs: tuple, ws: tuple, kwargs: dict, pads: tuple) -> None:
    x, w = rand(*xs), rand(*ws)
    got = run(lambda t, tw: ops.conv(t, tw, **kwargs), x, w)
    nd = len(xs) - 2
    expected = ref_conv(x, w, kwargs.get("stride", (1,) * nd), pads[0], pads[1], kwargs.get("dilation", (1,) * nd),
                        kwargs.get("groups", 1))
    assert got.shape == expected.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_conv_same_padding_gives_ceil_of_input_over_stride() -> None:
    y = building(lambda t, w: ops.conv(t, w, stride=(2, 3), pad_type="same_upper"), rand(1, 2, 9, 10), rand(4, 2, 3, 3))
    assert y.shape == (1, 4, 5, 4)


def test_conv_errors_follow_popart() -> None:
    with pytest.raises(ValueError, match="unexpected number of stride parameters"):
        building(lambda t, w: ops.conv(t, w), rand(1, 2, 8), rand(3, 2, 3))  # popxl's 2-D defaults on 1-D input
    with pytest.raises(ValueError, match="does not match the 4 channels"):
        building(lambda t, w: ops.conv(t, w), rand(1, 4, 5, 5), rand(3, 3, 3, 3))
    with pytest.raises(ValueError, match="pad type bogus is not valid"):
        building(lambda t, w: ops.conv(t, w, pad_type="bogus"), rand(1, 2, 5, 5), rand(3, 2, 3, 3))
    with pytest.raises(TypeError, match="inputs must have the same dtype"):
        building(lambda t, w: ops.conv(t, w), rand(1, 2, 5, 5), rand(3, 2, 3, 3).astype(np.float16))
    with pytest.raises(NotImplementedError, match=r"popxl.ops.conv\(pad_type/auto_pad='same_upper'\) with dilation"):
        building(lambda t, w: ops.conv(t, w, dilation=(2, 2), pad_type="same_upper"), rand(1, 2, 8, 8),
                 rand(3, 2, 3, 3))


CONVT_CASES = [
    ((1, 2, 3, 4), (2, 3, 3, 2), {}, (0, 0, 0, 0), (0, 0)),
    ((2, 4, 3, 3), (4, 2, 3, 3), {"stride": (2, 2), "padding": (1, 0, 1, 1), "groups": 2}, (1, 0, 1, 1), (0, 0)),
    ((1, 2, 4, 3), (2, 1, 2, 3), {"stride": (2, 3), "output_padding": (1, 2)}, (0, 0, 0, 0), (1, 2)),
]


@pytest.mark.parametrize("xs,ws,kwargs,pads,out_pad", CONVT_CASES, ids=[str(i) for i in range(len(CONVT_CASES))])
def test_conv_transpose_matches_numpy(xs: tuple, ws: tuple, kwargs: dict, pads: tuple, out_pad: tuple) -> None:
    x, w = rand(*xs), rand(*ws)
    got = run(lambda t, tw: ops.conv_transpose(t, tw, **kwargs), x, w)
    expected = ref_conv_transpose(x, w, kwargs.get("stride", (1, 1)), pads, out_pad, kwargs.get("groups", 1))
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_conv_transpose_output_shape_derives_the_pads() -> None:
    x, w = rand(1, 2, 3, 3), rand(2, 2, 3, 3)
    full = ref_conv_transpose(x, w, (2, 2), (0, 0, 0, 0), (0, 0), 1)  # 7 x 7
    got = run(lambda t, tw: ops.conv_transpose(t, tw, stride=(2, 2), output_shape=(6, 5)), x, w)
    # total padding 1 and 2: PopART's default puts the odd remainder at the end
    np.testing.assert_allclose(got, full[:, :, 0:6, 1:6], rtol=1e-4, atol=1e-4)
    got = run(lambda t, tw: ops.conv_transpose(t, tw, stride=(2, 2), output_shape=(6, 5), pad_type="same_upper"), x, w)
    np.testing.assert_allclose(got, full[:, :, 1:7, 1:6], rtol=1e-4, atol=1e-4)
    with pytest.raises(ValueError, match="non default value for dilations"):
        building(lambda t, tw: ops.conv_transpose(t, tw, dilation=(2, 2)), x, w)
    with pytest.raises(ValueError, match="unexpected number of channels"):
        building(lambda t, tw: ops.conv_transpose(t, tw), rand(1, 3, 3, 3), w)


# --- pooling -------------------------------------------------------------------------------
POOL_CASES = [
    ((2, 3, 6, 6), {"kernel_size": (2, 2), "stride": (2, 2)}, ((0, 0), (0, 0))),
    ((1, 2, 5, 7), {"kernel_size": (3, 2), "stride": (2, 3), "padding": (1, 0, 1, 1)}, ((1, 0), (1, 1))),
    ((1, 2, 5, 5), {"kernel_size": (3, 3), "auto_pad": "same_upper"}, ((1, 1), (1, 1))),
    ((1, 1, 5, 6), {"kernel_size": (2, 2), "stride": (2, 2), "ceil_mode": True}, ((0, 0), (1, 0))),
    ((2, 2, 7), {"kernel_size": (3,), "stride": (2,), "padding": (1, 1)}, ((1,), (1,))),
]


@pytest.mark.parametrize("kind", ["max", "average"])
@pytest.mark.parametrize("xs,kwargs,pads", POOL_CASES, ids=[str(i) for i in range(len(POOL_CASES))])
def test_pools_match_numpy(kind: str, xs: tuple, kwargs: dict, pads: tuple) -> None:
    x = rand(*xs)
    fn = ops.max_pool if kind == "max" else ops.average_pool
    got = run(lambda t: fn(t, **kwargs), x)
    nd = len(xs) - 2
    expected = ref_pool(x, kwargs["kernel_size"], kwargs.get("stride", (1,) * nd), pads[0], pads[1], kind)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_pool_refusals_and_errors() -> None:
    with pytest.raises(NotImplementedError, match=r"popxl.ops.max_pool\(dilation=...\)"):
        building(lambda t: ops.max_pool(t, (2, 2), dilation=(2, 2)), rand(1, 1, 5, 5))
    with pytest.raises(ValueError, match="invalid kernel_size"):
        building(lambda t: ops.average_pool(t, (2,)), rand(1, 1, 5, 5))


# --- gradients -----------------------------------------------------------------------------
GRAD_CASES = [
    ("group_norm", lambda t, w, b: ops.group_norm(t, w, b, 2, eps=0.1), [(2, 4, 3), (4,), (4,)]),
    ("layer_norm", lambda t, w, b: ops.layer_norm(t, w, b), [(3, 5), (5,), (5,)]),
    ("conv", lambda t, w: ops.conv(t, w, stride=(2, 1), padding=(1, 0, 0, 1), groups=2), [(2, 4, 5, 4), (4, 2, 3, 2)]),
    ("conv_dilated_1d", lambda t, w: ops.conv(t, w, stride=(1,), padding=(2, 1), dilation=(2,)), [(1, 2, 6), (3, 2, 2)]),
    ("conv_transpose", lambda t, w: ops.conv_transpose(t, w, stride=(2, 1), padding=(1, 0, 0, 1), groups=2),
     [(1, 4, 3, 3), (4, 1, 2, 3)]),
    ("conv_transpose_shape", lambda t, w: ops.conv_transpose(t, w, stride=(2, 2), output_shape=(6, 5)),
     [(1, 2, 3, 3), (2, 2, 3, 3)]),
    ("max_pool", lambda t: ops.max_pool(t, (2, 2), stride=(1, 2), padding=(1, 0, 0, 1)), [(1, 2, 4, 5)]),
    ("average_pool", lambda t: ops.average_pool(t, (3, 2), stride=(2, 1), padding=(1, 1, 1, 0), ceil_mode=True),
     [(1, 2, 5, 4)]),
]


@pytest.mark.parametrize("name,fn,shapes", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_gradients_match_finite_differences(name: str, fn: Callable, shapes: list) -> None:
    values = [rand(*s) for s in shapes]
    ir_out = run(fn, *values)
    upstream = rand(*ir_out.shape)
    _, grads = grads_via_program(fn, values, upstream)
    expected = numeric_grads(fn, values, upstream, eps=1e-2)
    for got, want, v in zip(grads, expected, values):
        assert got.shape == v.shape
        np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)


def test_max_pool_gradient_goes_to_the_maximum() -> None:
    x = np.array([[[[1.0, 5.0], [2.0, 3.0]]]], np.float32)
    _, (g,) = grads_via_program(lambda t: ops.max_pool(t, (2, 2)), [x], np.array([[[[2.0]]]], np.float32))
    np.testing.assert_array_equal(g, [[[[0.0, 2.0], [0.0, 0.0]]]])


# --- lowering ------------------------------------------------------------------------------
def test_lowering_counts_conv_flops_as_twice_the_macs_and_marks_weights() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(rand(2, 4, 6, 6), name="x")
        w = popxl.variable(rand(8, 2, 3, 3), name="w")
        y = ops.conv(x, w, padding=(1, 1, 1, 1), groups=2)
        p = ops.max_pool(y, (2, 2), stride=(2, 2))
        n = ops.layer_norm(ops.reshape(p, (2, -1)), popxl.variable(np.ones(72, np.float32), name="gamma"),
                           popxl.variable(np.zeros(72, np.float32), name="beta"))
    program = lower(ir)
    by_type = {op.type: op for op in program.ops.values()}
    macs = 2 * 8 * 6 * 6 * 2 * 3 * 3  # outputs x (in channels per group x kernel)
    assert by_type["Conv"].flops == 2 * macs
    assert by_type["MaxPool"].flops == p.nelms * 4
    assert by_type["GroupNormalization"].flops == 8 * n.nelms
    assert program.tensors[w.id].kind == "weight"
    assert program.tensors["gamma"].kind == "weight"


def test_conv_gradient_ops_lower_with_the_forward_flops() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        g = ir.create_graph(lambda t, w: ops.conv(t, w, stride=(2, 2)), popxl.TensorSpec((1, 2, 5, 5), popxl.float32),
                            popxl.TensorSpec((3, 2, 3, 3), popxl.float32))
        popxl.transforms.autodiff(g)
    program = lower(ir)
    flops = {op.type: op.flops for op in program.ops.values()}
    fwd = 2 * (3 * 2 * 2) * (2 * 3 * 3)
    assert flops["Conv"] == flops["ConvDataGrad"] == flops["ConvWeightsGrad"] == fwd
