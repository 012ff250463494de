"""popxl.ops.interpolate and roi_align, and the var_updates adam_var_update, adamax_updater,
lamb_updater and sparse_accumulate_ on the simulator: values against numpy written here from
PopART's / popnn's definitions, popxl 3.4's signatures, gradients, pinned numbers and the
lowering (aliases, FLOPs)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops

from .signatures import plain_signature
from profcompare.emulator.popxl.errors import SimulatorNotImplementedError

from .run_program import run
from .test_autodiff import grads_via_program, numeric_grads

POPXL_34_SIGNATURES = {
    "interpolate": "(t, scale_factor=(1.0, 1.0, 1.0, 1.0), mode='nearest', nearest_mode='round_prefer_floor', "
                   "coordinate_transformation_mode='half_pixel')",
    "roi_align": "(t, rois, batch_index, output_size, spatial_scale, sampling_ratio)",
    "var_updates.adam_var_update": "(t, x, r1, r2, learning_rate=None, max_weight_norm=None)",
    "var_updates.adamax_updater": "(acc_first_order, acc_second_order, weight=None, time_step=None, "
                                  "weight_decay=None, beta1=0.9, epsilon=1e-07)",
    "var_updates.lamb_updater": "(acc_first_order, acc_second_order, weight=None, time_step=None, weight_decay=None, "
                                "beta1=None, beta2=None, epsilon=1e-07)",
    "var_updates.sparse_accumulate_": "(t, X, indices, axis=0, f=None, W=None)",
}


@pytest.mark.parametrize("name", sorted(POPXL_34_SIGNATURES))
def test_signatures_match_popxl_3_4(name: str) -> None:
    obj = ops
    for part in name.split("."):
        obj = getattr(obj, part)
    assert plain_signature(obj) == POPXL_34_SIGNATURES[name]


# --- interpolate -----------------------------------------------------------------------------
IMAGE = np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3)


def coordinate(i: float, mode: str, scale: float, size: int) -> float:
    if mode == "half_pixel":
        return (i + 0.5) / scale - 0.5
    if mode == "asymmetric":
        return i / scale
    if mode == "align_corners":
        return 0.0 if size * scale == 1 else i * (size - 1) / (size * scale - 1)
    return (i + 0.5) / scale - 0.5 if size * scale > 1 else 0.0  # pytorch_half_pixel


def ref_nearest_1d(x: np.ndarray, axis: int, scale: float, rounding: str, mode: str) -> np.ndarray:
    size = x.shape[axis]
    idx = []
    for i in range(int(math.floor(size * scale))):
        c = coordinate(i, mode, scale, size)
        r = {"floor": math.floor(c), "ceil": math.ceil(c),
             "round_prefer_floor": math.floor(c) if c - math.floor(c) <= 0.5 else math.ceil(c),
             "round_prefer_ceil": math.floor(c + 0.5) if c >= 0 else -math.floor(-c + 0.5)}[rounding]
        idx.append(min(max(r, 0), size - 1))
    return np.take(x, idx, axis=axis)


@pytest.mark.parametrize("rounding", ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"])
@pytest.mark.parametrize("mode", ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"])
def test_interpolate_nearest_matches_numpy(rounding: str, mode: str) -> None:
    scales = (1.0, 1.0, 2.5, 0.7)
    (got,) = run(lambda t: ops.interpolate(t, scales, "nearest", rounding, mode), IMAGE)
    want = IMAGE
    for axis, s in enumerate(scales):
        if s != 1.0:
            want = ref_nearest_1d(want, axis, s, rounding, mode)
    assert got.shape == (1, 1, 5, 2)
    np.testing.assert_array_equal(got, want)


def ref_linear_1d(x: np.ndarray, axis: int, scale: float, mode: str) -> np.ndarray:
    size = x.shape[axis]
    rows = []
    for i in range(int(math.floor(size * scale))):
        c = coordinate(i, mode, scale, size)
        lo, hi = min(max(math.floor(c), 0), size - 1), min(max(math.ceil(c), 0), size - 1)
        frac = max(c, 0.0) - math.floor(max(c, 0.0))
        rows.append(np.take(x, lo, axis=axis) * (1 - frac) + np.take(x, hi, axis=axis) * frac)
    return np.stack(rows, axis=axis)


@pytest.mark.parametrize("mode", ["half_pixel", "align_corners", "asymmetric"])
def test_interpolate_linear_matches_numpy(mode: str) -> None:
    scales = (1.0, 1.0, 2.0, 1.5)
    (got,) = run(lambda t: ops.interpolate(t, scales, "linear", coordinate_transformation_mode=mode), IMAGE)
    want = ref_linear_1d(ref_linear_1d(IMAGE, 2, 2.0, mode), 3, 1.5, mode)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def keys_cubic(d: float, a: float = -0.75) -> float:
    d = abs(d)
    if d <= 1:
        return (a + 2) * d ** 3 - (a + 3) * d ** 2 + 1
    if d < 2:
        return a * d ** 3 - 5 * a * d ** 2 + 8 * a * d - 4 * a
    return 0.0


def cubic_matrix(size: int, scale: float, mode: str) -> np.ndarray:
    out = int(math.floor(size * scale))
    m = np.zeros((out, size))
    for i in range(out):
        c = coordinate(i, mode, scale, size)
        base = math.floor(c)
        for k in (-1, 0, 1, 2):
            m[i, min(max(base + k, 0), size - 1)] += keys_cubic(c - (base + k))
    return m


def test_interpolate_cubic_matches_keys_convolution_and_a_pinned_corner() -> None:
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    (got,) = run(lambda t: ops.interpolate(t, (1, 1, 2, 2), "cubic"), x)
    m = cubic_matrix(2, 2.0, "half_pixel")
    np.testing.assert_allclose(got[0, 0], m @ x[0, 0] @ m.T, rtol=1e-5, atol=1e-6)
    assert float(got[0, 0, 0, 0]) == pytest.approx(-0.31640625, abs=1e-6)


def test_interpolate_nearest_gradient_sums_into_floor_of_i_over_scale() -> None:
    x = np.ones((1, 1, 2, 3), np.float32)
    up = np.arange(12, dtype=np.float32).reshape(1, 1, 4, 3)
    _, (g,) = grads_via_program(lambda t: ops.interpolate(t, (1, 1, 2, 1)), [x], up)
    np.testing.assert_array_equal(g[0, 0], [[3, 5, 7], [15, 17, 19]])


def test_interpolate_cubic_gradient_is_the_transpose_with_half_pixel() -> None:
    x = np.random.default_rng(1).normal(size=(1, 1, 3, 2)).astype(np.float32)
    up = np.random.default_rng(2).normal(size=(1, 1, 6, 3)).astype(np.float32)
    _, (g,) = grads_via_program(lambda t: ops.interpolate(t, (1, 1, 2, 1.5), "cubic"), [x], up)
    my, mx = cubic_matrix(3, 2.0, "half_pixel"), cubic_matrix(2, 1.5, "half_pixel")
    np.testing.assert_allclose(g[0, 0], my.T @ up[0, 0] @ mx, rtol=1e-5, atol=1e-5)


def test_interpolate_linear_cannot_be_trained_and_tf_crop_and_resize_is_refused() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        fwd = ir.create_graph(lambda t: ops.interpolate(t, (1, 1, 2, 2), "linear"),
                              popxl.TensorSpec((1, 1, 2, 2), popxl.float32))
        info = popxl.transforms.autodiff(fwd)
        ops.call(info.graph, popxl.variable(np.ones((1, 1, 4, 4), np.float32)))
        with pytest.raises(ValueError, match="tf_crop_and_resize"):
            ops.interpolate(popxl.variable(IMAGE), (1, 1, 2, 2), coordinate_transformation_mode="tf_crop_and_resize")
        with pytest.raises(ValueError, match="must match the number of dimensions"):
            ops.interpolate(popxl.variable(IMAGE), (2.0, 2.0))
        with pytest.raises(SimulatorNotImplementedError, match="interpolate"):
            ops.interpolate(popxl.variable(np.zeros((1, 1, 2, 2), np.int32)), (1, 1, 2, 2), "linear")
    with pytest.raises(RuntimeError, match="'linear' is not supported when training"):
        popxl.Session(ir, "cpu")


# --- roi_align -------------------------------------------------------------------------------
def ref_roi_align(x: np.ndarray, rois: np.ndarray, batch: np.ndarray, out_hw: tuple[int, int], scale: float,
                  ratio: int) -> np.ndarray:
    n_rois, (c, h, w) = len(rois), x.shape[1:]
    result = np.zeros((n_rois, c, *out_hw))

    def sample(img: np.ndarray, y: float, xx: float) -> np.ndarray:
        if y > h or xx > w:
            return np.zeros(c)
        y, xx = max(y, 0.0), max(xx, 0.0)
        y0, x0 = min(int(math.floor(y)), h - 1), min(int(math.floor(xx)), w - 1)
        y1, x1 = (y0 if y0 >= h - 1 else y0 + 1), (x0 if x0 >= w - 1 else x0 + 1)
        ly, lx = y - y0, xx - x0
        return (img[:, y0, x0] * (1 - ly) * (1 - lx) + img[:, y0, x1] * (1 - ly) * lx
                + img[:, y1, x0] * ly * (1 - lx) + img[:, y1, x1] * ly * lx)

    for n, (x1, y1, x2, y2) in enumerate(rois * scale):
        rh, rw = max(y2 - y1, 1.0), max(x2 - x1, 1.0)
        bh, bw = rh / out_hw[0], rw / out_hw[1]
        for ph in range(out_hw[0]):
            for pw in range(out_hw[1]):
                acc = np.zeros(c)
                for iy in range(ratio):
                    for ix in range(ratio):
                        acc += sample(x[batch[n]], y1 + ph * bh + (iy + 0.5) * bh / ratio,
                                      x1 + pw * bw + (ix + 0.5) * bw / ratio)
                result[n, :, ph, pw] = acc / (ratio * ratio)
    return result


FEATURES = np.random.default_rng(4).normal(size=(2, 3, 5, 6)).astype(np.float32)
ROIS = np.array([[0.0, 0.0, 4.0, 3.0], [2.0, 1.0, 9.0, 11.0], [-2.0, -1.0, 1.0, 0.5]], np.float32)
BATCH = np.array([1, 0, 1], np.int32)


def test_roi_align_matches_numpy() -> None:
    (got,) = run(lambda t, r, b: ops.roi_align(t, r, b, (2, 3), 0.5, 2), FEATURES, ROIS, BATCH)
    assert got.shape == (3, 3, 2, 3)
    np.testing.assert_allclose(got, ref_roi_align(FEATURES, ROIS, BATCH, (2, 3), 0.5, 2), rtol=1e-5, atol=1e-6)


def test_roi_align_pinned_average_of_four_samples() -> None:
    x = np.arange(4, dtype=np.float32).reshape(1, 1, 2, 2)
    (got,) = run(lambda t, r, b: ops.roi_align(t, r, b, (1, 1), 1.0, 2), x, np.array([[0, 0, 1, 1]], np.float32),
                 np.array([0], np.int32))
    assert float(got[0, 0, 0, 0]) == pytest.approx(1.5)  # samples .75, 1.25, 1.75, 2.25


def test_roi_align_gradient_matches_finite_differences() -> None:
    rois, batch = ROIS[:2], np.array([0, 0], np.int32)

    def fn(t: popxl.Tensor) -> popxl.Tensor:
        return ops.roi_align(t, popxl.constant(rois), popxl.constant(batch), (2, 2), 0.5, 2)

    x = FEATURES[:1]
    up = np.random.default_rng(5).normal(size=(2, 3, 2, 2)).astype(np.float32)
    _, (g,) = grads_via_program(fn, [x], up)
    (num,) = numeric_grads(fn, [x], up)
    np.testing.assert_allclose(g, num, rtol=1e-3, atol=1e-3)


def test_roi_align_refuses_a_zero_sampling_ratio() -> None:
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(ValueError, match="samplingRatio must be greater than 0"):
        ops.roi_align(popxl.variable(FEATURES), popxl.variable(ROIS), popxl.variable(BATCH), (2, 2), 1.0, 0)


# --- var updates -----------------------------------------------------------------------------
M = np.array([0.1, -0.2, 0.05], np.float32)
V = np.array([0.2, 0.01, 0.0004], np.float32)


def test_adamax_updater_corrects_m_only_and_divides_by_v() -> None:
    def fn(m: popxl.Tensor, v: popxl.Tensor, step: popxl.Tensor) -> tuple:
        u = ops.var_updates.adamax_updater(m, v, time_step=step, beta1=0.9, epsilon=1e-3)
        return u, step + 0
    u, step = run(fn, M, V, np.float32(1.0))
    assert float(step) == 2.0
    np.testing.assert_allclose(u, M / (1 - 0.9 ** 2) / (V + 1e-3), rtol=1e-6)
    assert float(u[0]) == pytest.approx(2.6184, abs=1e-4)  # 0.1 / 0.19 / 0.201


def test_lamb_updater_is_the_adam_updater_term() -> None:
    def fn(m: popxl.Tensor, v: popxl.Tensor, w: popxl.Tensor, step: popxl.Tensor) -> popxl.Tensor:
        return ops.var_updates.lamb_updater(m, v, weight=w, time_step=step, weight_decay=0.1, beta1=0.9, beta2=0.99)
    w = np.array([1.0, 2.0, -1.0], np.float32)
    (u,) = run(fn, M, V, w, np.float32(0.0))
    mh, vh = M / (1 - 0.9), V / (1 - 0.99)
    np.testing.assert_allclose(u, mh / (np.sqrt(vh) + 1e-7) + 0.1 * w, rtol=1e-5)
    (no_bias,) = run(lambda m, v: ops.var_updates.lamb_updater(m, v), M, V)
    np.testing.assert_allclose(no_bias, M / (np.sqrt(V) + 1e-7), rtol=1e-6)


def test_adamax_updater_needs_a_time_step() -> None:
    ir = popxl.Ir()
    with ir.main_graph, pytest.raises(ValueError, match="AdaMax requires time_step"):
        ops.var_updates.adamax_updater(popxl.variable(M), popxl.variable(V))


@pytest.mark.parametrize("r1,r2,ratio", [(16.0, 4.0, 1.5), (16.0, 0.0, 1.0), (0.0, 4.0, 1.0), (0.25, 1.0, 0.5)])
def test_adam_var_update_applies_the_lamb_trust_ratio(r1: float, r2: float, ratio: float) -> None:
    w = np.array([1.0, 2.0, 3.0], np.float32)
    x = np.array([0.5, -1.0, 2.0], np.float32)

    def fn(t: popxl.Tensor, u: popxl.Tensor, a: popxl.Tensor, b: popxl.Tensor) -> tuple:
        y = ops.var_updates.adam_var_update(t, u, a, b, learning_rate=0.1, max_weight_norm=3.0)
        return y, t + 0
    y, t = run(fn, w, x, np.float32(r1), np.float32(r2))  # ratio = min(sqrt(r1), 3) / sqrt(r2)
    np.testing.assert_allclose(y, w - 0.1 * ratio * x, rtol=1e-6)
    np.testing.assert_array_equal(t, y)


def test_adam_var_update_with_tensor_factors_and_its_refusals() -> None:
    def fn(t: popxl.Tensor, u: popxl.Tensor, lr: popxl.Tensor, mwn: popxl.Tensor) -> popxl.Tensor:
        sq = ops.lamb_square(t)
        return ops.var_updates.adam_var_update(t, u, sq, ops.lamb_square(u), learning_rate=lr, max_weight_norm=mwn)
    w, x = np.array([3.0, 4.0], np.float32), np.array([0.0, 2.0], np.float32)
    (y,) = run(fn, w, x, np.float32(0.5), np.float32(0.0))  # a zero tensor max_weight_norm: ratio 1
    np.testing.assert_allclose(y, [3.0, 3.0])
    ir = popxl.Ir()
    with ir.main_graph:
        t, r = popxl.variable(w), popxl.variable(np.float32(1.0))
        with pytest.raises(ValueError, match="learning_rate and a max_weight_norm"):
            ops.var_updates.adam_var_update(t, t, r, r)
        with pytest.raises(ValueError, match="constant zero max_weight_norm"):
            ops.var_updates.adam_var_update(t, t, r, r, 0.1, 0.0)


def test_sparse_accumulate_adds_rows_at_indices_along_an_axis() -> None:
    acc = np.zeros((2, 4), np.float32)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)

    def fn(t: popxl.Tensor, u: popxl.Tensor, i: popxl.Tensor) -> popxl.Tensor:
        return ops.var_updates.sparse_accumulate_(t, u, i, axis=1, f=0.5)
    (got,) = run(fn, acc, x, np.array([3, 3, 9], np.int32))  # repeated indices add, 9 is skipped
    np.testing.assert_array_equal(got, [[0, 0, 0, 0.5], [0, 0, 0, 3.5]])
    (plain,) = run(lambda t, u, i: ops.var_updates.sparse_accumulate_(t, u, i), np.ones((3, 2), np.float32),
                   np.ones((2, 2), np.float32), np.array([[2], [0]], np.int32).reshape(2))
    np.testing.assert_array_equal(plain, [[2, 2], [1, 1], [2, 2]])


def test_lowering_marks_in_place_updates_as_aliases_and_counts_flops() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        acc = popxl.variable(np.zeros((4, 2), np.float32), name="accum")
        ops.var_updates.sparse_accumulate_(acc, popxl.variable(np.ones((3, 2), np.float32)),
                                           popxl.variable(np.array([0, 1, 2], np.int32)))
        w = popxl.variable(np.ones(3, np.float32), name="w")
        ops.var_updates.adam_var_update(w, popxl.variable(np.ones(3, np.float32)), ops.lamb_square(w),
                                        popxl.constant(np.float32(1.0)), 0.1, 1.0)
        ops.interpolate(popxl.variable(IMAGE), (1, 1, 2, 2), "linear")
    program = lower(ir)
    by_type = {o.type: o for o in program.ops.values()}
    for t in ("SparseAccumulate", "AdamVarUpdate"):
        op = by_type[t]
        assert op.attrs["aliases"] == {op.outputs[0]: op.inputs[0]}
    assert program.tensors[by_type["SparseAccumulate"].inputs[0]].kind == "accumulator"
    assert program.tensors[by_type["AdamVarUpdate"].inputs[0]].kind == "weight"
    assert by_type["Resize"].flops == 4 * 6 * 3 * 2  # 24 outputs, 3 FLOPs each, 2 resized dimensions
    assert by_type["LambSquare"].flops == 6
