"""Numeric kernels of the image resampling ops (``Resize`` / ``ResizeGrad``, ``RoiAlign`` /
``RoiAlignGrad``); the semantics are listed in :mod:`.ops.image`. Registered into
:mod:`.execution`'s kernel table when imported; values keep the ``(R, *shape)`` layout.

Every resized dimension is a matrix of interpolation weights (output index x input index) built
once per op in float32, PopART's coordinate arithmetic; nearest resizing gathers instead, so
integer tensors stay exact. roi_align is separable: per region, a (rows x H) and a (columns x W)
matrix of bilinear weights of its sample points.
"""

from __future__ import annotations

import numpy as np

from .execution import CompiledGraph, Executor, Kernel, _kernel
from .graph import Op

_F32 = np.float32


def source_coordinate(i: np.ndarray, mode: str, scale: float, in_size: int) -> np.ndarray:
    """PopART's input coordinate (float32) of output indices ``i`` along one dimension."""
    i = i.astype(_F32)
    s = _F32(scale)
    size = _F32(in_size) * s
    if mode == "half_pixel":
        return (i + _F32(0.5)) / s - _F32(0.5)
    if mode == "pytorch_half_pixel":
        return (i + _F32(0.5)) / s - _F32(0.5) if size > _F32(1) else np.zeros_like(i)
    if mode == "asymmetric":
        return i / s
    if mode == "align_corners":
        return np.zeros_like(i) if size == _F32(1) else i * _F32(in_size - 1) / (size - _F32(1))
    raise ValueError(f"Unsupported coordinate transformation mode {mode!r}")


def _round(x: np.ndarray, nearest_mode: str) -> np.ndarray:
    if nearest_mode == "round_prefer_floor":
        fl = np.floor(x)
        return np.where(x - fl <= _F32(0.5), fl, np.ceil(x))
    if nearest_mode == "round_prefer_ceil":  # std::round: halves away from zero
        return np.sign(x) * np.floor(np.abs(x) + _F32(0.5))
    return np.floor(x) if nearest_mode == "floor" else np.ceil(x)


def nearest_indices(in_size: int, out_size: int, scale: float, nearest_mode: str, coordinates: str) -> np.ndarray:
    """The input index each output index copies (clamped into the input)."""
    x = source_coordinate(np.arange(out_size), coordinates, scale, in_size)
    return np.clip(_round(x, nearest_mode).astype(np.int64), 0, in_size - 1)


def _cubic_coefficients(r: np.ndarray, a: float = -0.75) -> np.ndarray:
    """Keys' cubic weights of the neighbours -1, 0, 1, 2 at fractions ``r``: shape (len(r), 4)."""
    a = _F32(a)
    one = _F32(1)

    def far(d: np.ndarray) -> np.ndarray:  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    def near(d: np.ndarray) -> np.ndarray:  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + one
    return np.stack([far(r + one), near(r), near(one - r), far(2 * one - r)], axis=1)


def interpolation_matrix(mode: str, in_size: int, out_size: int, scale: float, nearest_mode: str,
                         coordinates: str) -> np.ndarray:
    """float32 weights (out_size, in_size) of one resized dimension for ``mode``."""
    w = np.zeros((out_size, in_size), _F32)
    rows = np.arange(out_size)
    if mode == "nearest":
        w[rows, nearest_indices(in_size, out_size, scale, nearest_mode, coordinates)] = 1
        return w
    x = source_coordinate(rows, coordinates, scale, in_size)
    if mode == "linear":
        lo = np.clip(np.floor(x).astype(np.int64), 0, in_size - 1)
        hi = np.clip(np.ceil(x).astype(np.int64), 0, in_size - 1)
        frac = np.maximum(x, _F32(0))
        frac = frac - np.floor(frac)
        np.add.at(w, (rows, lo), _F32(1) - frac)
        np.add.at(w, (rows, hi), frac)
        return w
    base = np.floor(x)
    coeffs = _cubic_coefficients(x - base)
    for k, offset in enumerate((-1, 0, 1, 2)):
        np.add.at(w, (rows, np.clip(base.astype(np.int64) + offset, 0, in_size - 1)), coeffs[:, k])
    return w


def _along(x: np.ndarray, w: np.ndarray, axis: int) -> np.ndarray:
    """Apply weights ``w`` (out, in) along ``axis`` of ``x``."""
    return np.moveaxis(np.tensordot(x, w, axes=([axis], [1])), -1, axis)


@_kernel("Resize")
def _resize(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    t = op.inputs[0]
    i, o = cg.slot[t], cg.slot[op.outputs[0]]
    at = op.attrs
    mode = at["mode"]
    npdt = t.dtype.as_numpy()
    dims = [d for d, s in enumerate(at["scales"]) if s != 1.0]
    if mode == "cubic":
        dims = dims[::-1]  # PopART's cubic resizes from the last dimension to the first
    steps = []
    for d in dims:
        args = (t.shape[d], op.outputs[0].shape[d], at["scales"][d], at["nearest_mode"],
                at["coordinate_transformation_mode"])
        if mode == "nearest":
            steps.append((d + 1, nearest_indices(*args)))
        else:
            steps.append((d + 1, interpolation_matrix(mode, *args)))

    def run(env: list) -> None:
        x = env[i]
        if mode == "nearest":
            for axis, idx in steps:
                x = np.take(x, idx, axis=axis)
            env[o] = np.array(x)
            return
        x = x.astype(_F32)
        for axis, w in steps:
            x = _along(x, w, axis)
        env[o] = x.astype(npdt)
    return run


def _nearest_grad_step(g: np.ndarray, axis: int, out_size: int, fwd_scale: float) -> np.ndarray:
    """One dimension of PopART's nearest-resize gradient (sum into, or place at, floor(i / scale))."""
    n = g.shape[axis]
    if n == out_size:
        return g
    pos = np.floor(np.arange(n, dtype=_F32) * (_F32(1) / _F32(fwd_scale))).astype(np.int64)
    moved = np.moveaxis(g, axis, 0)
    result = np.zeros((out_size, *moved.shape[1:]), g.dtype)
    ok = (pos >= 0) & (pos < out_size)
    if n > out_size:
        np.add.at(result, pos[ok], moved[ok])
    else:
        result[pos[ok]] = moved[ok]
    return np.moveaxis(result, 0, axis)


@_kernel("ResizeGrad")
def _resize_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    at = op.attrs
    if at["mode"] == "linear":
        raise RuntimeError(f"{op.name}: Resize mode 'linear' is not supported when training.")
    g_t, x_t = op.inputs[0], op.outputs[0]
    i, o = cg.slot[g_t], cg.slot[x_t]
    npdt = x_t.dtype.as_numpy()
    dims = [d for d, s in enumerate(at["scales"]) if s != 1.0]
    if at["mode"] == "nearest":
        def run(env: list) -> None:
            g = env[i]
            for d in range(x_t.rank):
                g = _nearest_grad_step(g, d + 1, x_t.shape[d], at["scales"][d])
            env[o] = np.array(g, dtype=npdt)
        return run
    # cubic: the transpose of the forward weights, taken with half_pixel coordinates
    mats = [(d + 1, interpolation_matrix("cubic", x_t.shape[d], g_t.shape[d], at["scales"][d], "round_prefer_floor",
                                         "half_pixel").T) for d in dims]

    def run_cubic(env: list) -> None:
        g = env[i].astype(_F32)
        for axis, wt in mats:
            g = _along(g, wt, axis)
        env[o] = g.astype(npdt)
    return run_cubic


def _roi_axis_weights(start: float, bin_size: float, bins: int, ratio: int, size: int) -> np.ndarray:
    """float32 bilinear weights (bins * ratio sample points, size) along one axis of a region."""
    grid = bin_size / _F32(ratio)
    pos = (start + (np.arange(ratio, dtype=_F32) + _F32(0.5)) * grid)[None, :] + \
        (np.arange(bins, dtype=_F32) * bin_size)[:, None]
    pos = pos.reshape(-1).astype(_F32)
    w = np.zeros((pos.size, size), _F32)
    rows = np.flatnonzero(pos <= size)  # points past the far edge contribute 0
    p = np.maximum(pos[rows], _F32(0))
    low = np.minimum(np.floor(p).astype(np.int64), size - 1)
    high = np.where(low >= size - 1, low, low + 1)
    frac = p - low.astype(_F32)
    np.add.at(w, (rows, low), _F32(1) - frac)
    np.add.at(w, (rows, high), frac)
    return w


class _Regions:
    """Per-run region geometry of a RoiAlign: (image index, row weights, column weights) per region."""

    def __init__(self, op: Op, height: int, width: int) -> None:
        at = op.attrs
        self.scale = _F32(at["spatial_scale"])
        self.ratio = int(at["sampling_ratio"])
        self.bins = (int(at["aligned_height"]), int(at["aligned_width"]))
        self.size = (height, width)

    def weights(self, roi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x1, y1, x2, y2 = (v * self.scale for v in roi.astype(_F32))
        roi_w, roi_h = max(x2 - x1, _F32(1)), max(y2 - y1, _F32(1))
        wy = _roi_axis_weights(y1, _F32(roi_h / _F32(self.bins[0])), self.bins[0], self.ratio, self.size[0])
        wx = _roi_axis_weights(x1, _F32(roi_w / _F32(self.bins[1])), self.bins[1], self.ratio, self.size[1])
        return wy, wx


def _images(batch: np.ndarray, n_images: int, name: str) -> np.ndarray:
    idx = batch.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= n_images):
        raise ValueError(f"{name}: batch_index {idx.tolist()} out of range for {n_images} images")
    return idx


@_kernel("RoiAlign")
def _roi_align(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    t, rois, batch = op.inputs
    ts, rs, bs = (cg.slot[x] for x in op.inputs)
    o = cg.slot[op.outputs[0]]
    regions = _Regions(op, t.shape[2], t.shape[3])
    ah, aw = regions.bins
    s = regions.ratio
    npdt = t.dtype.as_numpy()

    def run(env: list) -> None:
        x = env[ts].astype(_F32)
        r_all, b_all = env[rs], env[bs]
        result = np.zeros((x.shape[0], *op.outputs[0].shape), _F32)
        for r in range(x.shape[0]):
            images = _images(b_all[r], t.shape[0], op.name)
            for n, roi in enumerate(r_all[r]):
                wy, wx = regions.weights(roi)
                samples = wy @ x[r, images[n]] @ wx.T  # (C, ah * s, aw * s)
                result[r, n] = samples.reshape(-1, ah, s, aw, s).sum(axis=(2, 4)) / _F32(s * s)
        env[o] = result.astype(npdt)
    return run


@_kernel("RoiAlignGrad")
def _roi_align_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    g_t, rois, batch, t = op.inputs
    gs, rs, bs = cg.slot[g_t], cg.slot[rois], cg.slot[batch]
    o = cg.slot[op.outputs[0]]
    regions = _Regions(op, t.shape[2], t.shape[3])
    s = regions.ratio
    npdt = t.dtype.as_numpy()

    def run(env: list) -> None:
        g = env[gs].astype(_F32)
        result = np.zeros((g.shape[0], *t.shape), _F32)
        for r in range(g.shape[0]):
            images = _images(env[bs][r], t.shape[0], op.name)
            for n, roi in enumerate(env[rs][r]):
                wy, wx = regions.weights(roi)
                per_sample = np.repeat(np.repeat(g[r, n], s, axis=1), s, axis=2) / _F32(s * s)
                result[r, images[n]] += wy.T @ per_sample @ wx
        env[o] = result.astype(npdt)
    return run


__all__ = ["interpolation_matrix", "nearest_indices", "source_coordinate"]
