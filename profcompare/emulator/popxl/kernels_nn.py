"""Numeric kernels of popxl's neural-network and random ops (normalisation, convolution,
pooling, dropout, random sampling, seed splitting) and of their gradient ops. Registered into
:mod:`.execution`'s kernel table when imported; values keep the ``(R, *shape)`` layout with the
replica axis first. float16 inputs are computed in float32 and rounded back.

Random numbers (documented, not Poplar's): a seed tensor's value ``[a, b]`` (uint32 words) keys
numpy's Philox bit generator with ``key = purpose << 64 | a << 32 | b``, where ``purpose`` is 1
for dropout masks, 2 for uniform samples, 3 for normal samples and 4 for seed splitting. A
dropout keeps an element when its uniform draw (float64, [0, 1)) is below 1 - p; uniform samples
are ``low + (high - low) * u``; normal samples ``mean + std * z`` (numpy's standard normal).
``ModifyRandomSeed`` returns ``[a, w]`` with ``w`` the first uint32 drawn from the key made of
``[a, (b + modifier) mod 2**32]``. Each replica draws from its own seed value.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import numpy as np

from .execution import CompiledGraph, Executor, Kernel, _kernel
from .graph import Op

_PURPOSE_DROPOUT, _PURPOSE_UNIFORM, _PURPOSE_NORMAL, _PURPOSE_SEED = 1, 2, 3, 4


def _calc_dtype(npdt: np.dtype) -> type:
    return np.float32 if npdt == np.float16 else npdt.type


# --- normalisation ---------------------------------------------------------------------------
def _group_stats(x: np.ndarray, groups: int, eps: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(xhat, mean, inv_std) of x (R, N, C, ...) per (replica, sample, group); xhat in x's layout."""
    r, n = x.shape[:2]
    xg = x.reshape(r, n, groups, -1)
    mean = xg.mean(axis=-1, keepdims=True)
    centred = xg - mean
    var = np.mean(centred * centred, axis=-1, keepdims=True)
    inv = 1.0 / np.sqrt(var + x.dtype.type(eps))
    return (centred * inv).reshape(x.shape), mean[..., 0], inv[..., 0]


def _channel_view(p: np.ndarray, rank: int) -> np.ndarray:
    """A (R, C) per-channel array viewed to broadcast against (R, N, C, *spatial)."""
    return p.reshape(p.shape[0], 1, p.shape[1], *(1,) * (rank - 3))


@_kernel("GroupNormalization")
def _group_norm(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    xs, ws, bs = (cg.slot[t] for t in op.inputs)
    ys, ms, isd = (cg.slot[t] for t in op.outputs)
    groups, eps = op.attrs["num_groups"], op.attrs["epsilon"]
    npdt = op.outputs[0].dtype.as_numpy()
    calc = _calc_dtype(npdt)
    rank = op.inputs[0].rank + 1

    def run(env: list) -> None:
        x = env[xs].astype(calc, copy=False)
        xhat, mean, inv = _group_stats(x, groups, eps)
        y = xhat * _channel_view(env[ws].astype(calc, copy=False), rank) + _channel_view(
            env[bs].astype(calc, copy=False), rank)
        r = x.shape[0]
        env[ys] = y.astype(npdt, copy=False)
        env[ms] = mean.reshape(r, -1).astype(npdt)
        env[isd] = inv.reshape(r, -1).astype(npdt)
    return run


@_kernel("GroupNormalizationGrad")
def _group_norm_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    gs, xs, ws, ms, isd = (cg.slot[t] for t in op.inputs)
    dxs, dws, dbs = (cg.slot[t] for t in op.outputs)
    groups = op.attrs["num_groups"]
    npdt = op.outputs[0].dtype.as_numpy()
    calc = _calc_dtype(npdt)
    rank = op.inputs[1].rank + 1

    def run(env: list) -> None:
        x = env[xs].astype(calc, copy=False)
        gy = env[gs].astype(calc, copy=False)
        r, n = x.shape[:2]
        mean = env[ms].astype(calc, copy=False).reshape(r, n, groups, 1)
        inv = env[isd].astype(calc, copy=False).reshape(r, n, groups, 1)
        xhat = ((x.reshape(r, n, groups, -1) - mean) * inv).reshape(x.shape)
        other = (1, *range(3, x.ndim))
        env[dbs] = gy.sum(axis=other).astype(npdt, copy=False)
        env[dws] = (gy * xhat).sum(axis=other).astype(npdt, copy=False)
        dxhat = (gy * _channel_view(env[ws].astype(calc, copy=False), rank)).reshape(r, n, groups, -1)
        xh = xhat.reshape(r, n, groups, -1)
        dx = inv * (dxhat - dxhat.mean(axis=-1, keepdims=True) - xh * (dxhat * xh).mean(axis=-1, keepdims=True))
        env[dxs] = dx.reshape(x.shape).astype(npdt, copy=False)
    return run


@_kernel("BatchNormalization")
def _batch_norm(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    xs, ss, bs, ms, vs = (cg.slot[t] for t in op.inputs)
    o = cg.slot[op.outputs[0]]
    eps = op.attrs["epsilon"]
    npdt = op.outputs[0].dtype.as_numpy()
    calc = _calc_dtype(npdt)
    rank = op.inputs[0].rank + 1

    def run(env: list) -> None:
        def v(s: int) -> np.ndarray:
            return _channel_view(env[s].astype(calc, copy=False), rank)
        x = env[xs].astype(calc, copy=False)
        y = (x - v(ms)) / np.sqrt(v(vs) + calc(eps)) * v(ss) + v(bs)
        env[o] = y.astype(npdt, copy=False)
    return run


# --- convolution core: correlation of a pre-padded input -------------------------------------
def _window(kpos: tuple[int, ...], strides: tuple[int, ...], dilations: tuple[int, ...],
            out_spatial: tuple[int, ...]) -> tuple[slice, ...]:
    """Spatial slices of the padded input that kernel position ``kpos`` meets, one per output."""
    return tuple(slice(k * d, k * d + s * (o - 1) + 1, s)
                 for k, s, d, o in zip(kpos, strides, dilations, out_spatial))


def correlate(xp: np.ndarray, w: np.ndarray, groups: int, strides: tuple[int, ...], dilations: tuple[int, ...],
              out_spatial: tuple[int, ...]) -> np.ndarray:
    """Grouped cross-correlation: xp (R, N, C, *padded) with w (R, M, C/groups, *kernel) -> (R, N, M, *out)."""
    r, n, c = xp.shape[:3]
    m, cg = w.shape[1:3]
    xg = xp.reshape(r, n, groups, cg, *xp.shape[3:])
    wg = w.reshape(r, groups, m // groups, cg, *w.shape[3:])
    out = np.zeros((r, n, groups, m // groups, int(np.prod(out_spatial))), np.result_type(xp, w))
    for kpos in itertools.product(*(range(k) for k in w.shape[3:])):
        xs = xg[(Ellipsis, *_window(kpos, strides, dilations, out_spatial))].reshape(r, n, groups, cg, -1)
        out += np.einsum("rngcp,rgmc->rngmp", xs, wg[(Ellipsis, *kpos)])
    return out.reshape(r, n, m, *out_spatial)


def correlate_data_grad(gy: np.ndarray, w: np.ndarray, groups: int, strides: tuple[int, ...],
                        dilations: tuple[int, ...], padded_spatial: tuple[int, ...]) -> np.ndarray:
    """Gradient of :func:`correlate` w.r.t. its padded input: gy (R, N, M, *out) -> (R, N, C, *padded)."""
    r, n, m = gy.shape[:3]
    cg = w.shape[2]
    out_spatial = gy.shape[3:]
    gg = gy.reshape(r, n, groups, m // groups, -1)
    wg = w.reshape(r, groups, m // groups, cg, *w.shape[3:])
    dxp = np.zeros((r, n, groups, cg, *padded_spatial), np.result_type(gy, w))
    for kpos in itertools.product(*(range(k) for k in w.shape[3:])):
        contrib = np.einsum("rngmp,rgmc->rngcp", gg, wg[(Ellipsis, *kpos)])
        dxp[(Ellipsis, *_window(kpos, strides, dilations, out_spatial))] += contrib.reshape(
            r, n, groups, cg, *out_spatial)
    return dxp.reshape(r, n, groups * cg, *padded_spatial)


def correlate_weight_grad(gy: np.ndarray, xp: np.ndarray, groups: int, strides: tuple[int, ...],
                          dilations: tuple[int, ...], kernel: tuple[int, ...]) -> np.ndarray:
    """Gradient of :func:`correlate` w.r.t. its weight: -> (R, M, C/groups, *kernel)."""
    r, n, m = gy.shape[:3]
    c = xp.shape[2]
    cg = c // groups
    out_spatial = gy.shape[3:]
    gg = gy.reshape(r, n, groups, m // groups, -1)
    xg = xp.reshape(r, n, groups, cg, *xp.shape[3:])
    dw = np.zeros((r, groups, m // groups, cg, *kernel), np.result_type(gy, xp))
    for kpos in itertools.product(*(range(k) for k in kernel)):
        xs = xg[(Ellipsis, *_window(kpos, strides, dilations, out_spatial))].reshape(r, n, groups, cg, -1)
        dw[(Ellipsis, *kpos)] = np.einsum("rngmp,rngcp->rgmc", gg, xs)
    return dw.reshape(r, m, cg, *kernel)


def _pad(x: np.ndarray, lower: tuple[int, ...], upper: tuple[int, ...], value: float = 0.0) -> np.ndarray:
    if not any(lower) and not any(upper):
        return x
    return np.pad(x, [(0, 0)] * 3 + list(zip(lower, upper)), constant_values=value)


def _crop(xp: np.ndarray, lower: tuple[int, ...], spatial: tuple[int, ...]) -> np.ndarray:
    return xp[(Ellipsis, *(slice(lo, lo + s) for lo, s in zip(lower, spatial)))]


def _shift(full: np.ndarray, start: tuple[int, ...], spatial: tuple[int, ...]) -> np.ndarray:
    """The window [start, start + spatial) of ``full``'s spatial axes, zero where it falls outside."""
    out = np.zeros((*full.shape[:3], *spatial), full.dtype)
    src, dst = [], []
    for st, size, fsize in zip(start, spatial, full.shape[3:]):
        lo, hi = max(st, 0), min(st + size, fsize)
        src.append(slice(lo, max(hi, lo)))
        dst.append(slice(lo - st, lo - st + max(hi - lo, 0)))
    out[(Ellipsis, *dst)] = full[(Ellipsis, *src)]
    return out


def _conv_args(op: Op) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    return op.attrs["groups"], op.attrs["strides"], op.attrs.get("dilations", (1,) * len(op.attrs["strides"]))


def _run_kernel(op: Op, cg: CompiledGraph, fn: Callable[..., np.ndarray]) -> Kernel:
    """A kernel calling fn(*inputs) in the calculation dtype and storing its output in the op's dtype."""
    ins = [cg.slot[t] for t in op.inputs]
    o = cg.slot[op.outputs[0]]
    npdt = op.outputs[0].dtype.as_numpy()
    calc = _calc_dtype(npdt)

    def run(env: list) -> None:
        env[o] = fn(*(env[s].astype(calc, copy=False) for s in ins)).astype(npdt, copy=False)
    return run


def conv_values(op: Op, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The convolution a ``Conv``-shaped op (``ops.nn.conv_geometry`` attributes) computes:
    x (R, N, C, *spatial) with w (R, M, C/groups, *kernel) -> (R, N, M, *out), in their dtype."""
    groups, strides, dil = _conv_args(op)
    lower, upper = op.attrs["lower_pads"], op.attrs["upper_pads"]
    return correlate(_pad(x, lower, upper), w, groups, strides, dil, op.outputs[0].shape[2:])


@_kernel("Conv")
def _conv(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    return _run_kernel(op, cg, lambda x, w: conv_values(op, x, w))


@_kernel("ConvDataGrad")
def _conv_data_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    groups, strides, dil = _conv_args(op)
    lower, upper = op.attrs["lower_pads"], op.attrs["upper_pads"]
    spatial = op.outputs[0].shape[2:]
    padded = tuple(s + lo + up for s, lo, up in zip(spatial, lower, upper))
    return _run_kernel(op, cg, lambda g, w: _crop(correlate_data_grad(g, w, groups, strides, dil, padded),
                                                  lower, spatial))


@_kernel("ConvWeightsGrad")
def _conv_weights_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    groups, strides, dil = _conv_args(op)
    lower, upper = op.attrs["lower_pads"], op.attrs["upper_pads"]
    kernel = op.outputs[0].shape[2:]
    return _run_kernel(op, cg, lambda g, x: correlate_weight_grad(g, _pad(x, lower, upper), groups, strides, dil,
                                                                  kernel))


def _transpose_full(op: Op, in_spatial: tuple[int, ...], kernel: tuple[int, ...]) -> tuple[int, ...]:
    """Spatial shape of the uncropped transposed convolution: stride * (in - 1) + kernel."""
    return tuple(s * (i - 1) + k for s, i, k in zip(op.attrs["strides"], in_spatial, kernel))


def conv_transpose_values(op: Op, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The transposed convolution a ``ConvTranspose``-shaped op (``ops.nn.conv_transpose_geometry``
    attributes) computes: x (R, N, C, *spatial) with w (R, C, M/groups, *kernel) -> (R, N, M, *out)."""
    groups, strides, dil = _conv_args(op)
    full = _transpose_full(op, x.shape[3:], w.shape[3:])
    crop, osp = op.attrs["crop"], op.outputs[0].shape[2:]
    return _shift(correlate_data_grad(x, w, groups, strides, dil, full), crop, osp)


@_kernel("ConvTranspose")
def _conv_transpose(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    return _run_kernel(op, cg, lambda x, w: conv_transpose_values(op, x, w))


@_kernel("ConvTransposeDataGrad")
def _conv_transpose_data_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    groups, strides, dil = _conv_args(op)
    _g_t, w_t = op.inputs
    in_spatial = op.outputs[0].shape[2:]
    full = _transpose_full(op, in_spatial, w_t.shape[2:])
    start = tuple(-c for c in op.attrs["crop"])
    return _run_kernel(op, cg, lambda g, w: correlate(_shift(g, start, full), w, groups, strides, dil, in_spatial))


@_kernel("ConvTransposeWeightsGrad")
def _conv_transpose_weights_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    groups, strides, dil = _conv_args(op)
    x_t = op.inputs[1]
    kernel = op.outputs[0].shape[2:]
    full = _transpose_full(op, x_t.shape[2:], kernel)
    start = tuple(-c for c in op.attrs["crop"])
    return _run_kernel(op, cg, lambda g, x: correlate_weight_grad(x, _shift(g, start, full), groups, strides, dil,
                                                                  kernel))


# --- pooling ---------------------------------------------------------------------------------
def _pool_windows(op: Op) -> tuple[tuple[int, ...], list[tuple[slice, ...]]]:
    strides, kernel = op.attrs["strides"], op.attrs["kernel"]
    osp = op.outputs[0].shape[2:] if op.type in ("MaxPool", "AveragePool") else op.inputs[0].shape[2:]
    ones = (1,) * len(kernel)
    return osp, [_window(kpos, strides, ones, osp) for kpos in itertools.product(*(range(k) for k in kernel))]


def _avg_count(op: Op, spatial: tuple[int, ...], windows: list[tuple[slice, ...]], calc: type) -> np.ndarray:
    """Number of real (unpadded) inputs under each output window."""
    lower, upper = op.attrs["lower_pads"], op.attrs["upper_pads"]
    ones = _pad(np.ones((1, 1, 1, *spatial), calc), lower, upper)
    return sum(ones[(Ellipsis, *w)] for w in windows)


@_kernel("MaxPool")
def _max_pool(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    lower, upper = op.attrs["lower_pads"], op.attrs["upper_pads"]
    _osp, windows = _pool_windows(op)

    def fn(x: np.ndarray) -> np.ndarray:
        xp = _pad(x, lower, upper, -np.inf)
        return np.maximum.reduce([xp[(Ellipsis, *w)] for w in windows])
    return _run_kernel(op, cg, fn)


@_kernel("AveragePool")
def _average_pool(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    lower, upper = op.attrs["lower_pads"], op.attrs["upper_pads"]
    _osp, windows = _pool_windows(op)
    count = _avg_count(op, op.inputs[0].shape[2:], windows, _calc_dtype(op.outputs[0].dtype.as_numpy()))

    def fn(x: np.ndarray) -> np.ndarray:
        xp = _pad(x, lower, upper)
        return sum(xp[(Ellipsis, *w)] for w in windows) / count
    return _run_kernel(op, cg, fn)


@_kernel("MaxPoolGrad")
def _max_pool_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """Inputs (grad of output, forward input, forward output): every input equal to its window's
    maximum receives that window's gradient."""
    lower, upper = op.attrs["lower_pads"], op.attrs["upper_pads"]
    spatial = op.outputs[0].shape[2:]
    osp = op.inputs[0].shape[2:]
    strides, kernel = op.attrs["strides"], op.attrs["kernel"]
    windows = [_window(k, strides, (1,) * len(kernel), osp) for k in itertools.product(*(range(k) for k in kernel))]

    def fn(g: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        xp = _pad(x, lower, upper, -np.inf)
        dxp = np.zeros_like(xp)
        for w in windows:
            dxp[(Ellipsis, *w)] += np.where(xp[(Ellipsis, *w)] == y, g, 0)
        return _crop(dxp, lower, spatial)
    return _run_kernel(op, cg, fn)


@_kernel("AveragePoolGrad")
def _average_pool_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    lower, upper = op.attrs["lower_pads"], op.attrs["upper_pads"]
    spatial = op.outputs[0].shape[2:]
    osp = op.inputs[0].shape[2:]
    strides, kernel = op.attrs["strides"], op.attrs["kernel"]
    windows = [_window(k, strides, (1,) * len(kernel), osp) for k in itertools.product(*(range(k) for k in kernel))]
    calc = _calc_dtype(op.outputs[0].dtype.as_numpy())
    count = _avg_count(op, spatial, windows, calc)
    padded = tuple(s + lo + up for s, lo, up in zip(spatial, lower, upper))

    def fn(g: np.ndarray) -> np.ndarray:
        share = g / count
        dxp = np.zeros((*g.shape[:3], *padded), g.dtype)
        for w in windows:
            dxp[(Ellipsis, *w)] += share
        return _crop(dxp, lower, spatial)
    return _run_kernel(op, cg, fn)


# --- random ----------------------------------------------------------------------------------
def generator(seed: np.ndarray, purpose: int) -> np.random.Generator:
    """numpy Philox generator keyed by a (2,) uint32 seed value and the draw's purpose."""
    a, b = (int(v) for v in seed)
    return np.random.Generator(np.random.Philox(key=(purpose << 64) | (a << 32) | b))


def keep_mask(seed: np.ndarray, shape: tuple[int, ...], ratio: float) -> np.ndarray:
    """Dropout's keep mask (bool, ``shape``) for one replica's seed value."""
    return generator(seed, _PURPOSE_DROPOUT).random(shape) < 1.0 - ratio


def _dropout_factory(mask_shape_of: Callable[[Op], tuple[int, ...]]) -> Callable[[Op, CompiledGraph, Executor], Kernel]:
    """Kernel for Dropout / ShapedDropout and their gradients: inputs (x or grad, seed)."""
    def factory(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
        xs, ss = (cg.slot[t] for t in op.inputs)
        o = cg.slot[op.outputs[0]]
        ratio = op.attrs["ratio"]
        npdt = op.outputs[0].dtype.as_numpy()
        mask_shape = mask_shape_of(op)
        scale = npdt.type(1.0 / (1.0 - ratio))

        def run(env: list) -> None:
            x, seeds = env[xs], env[ss]
            masks = np.stack([keep_mask(s, mask_shape, ratio) for s in seeds])
            masks = masks.reshape((masks.shape[0],) + (1,) * (x.ndim - masks.ndim) + masks.shape[1:])
            env[o] = np.where(masks, x * scale, npdt.type(0)).astype(npdt, copy=False)
        return run
    return factory


_kernel("Dropout", "DropoutGrad")(_dropout_factory(lambda op: op.outputs[0].shape))
_kernel("ShapedDropout", "ShapedDropoutGrad")(_dropout_factory(lambda op: op.attrs["shape"]))


@_kernel("RandomUniform", "RandomNormal")
def _random(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    ss = cg.slot[op.inputs[0]]
    o = cg.slot[op.outputs[0]]
    shape = op.outputs[0].shape
    npdt = op.outputs[0].dtype.as_numpy()
    if op.type == "RandomUniform":
        low, high = op.attrs["low"], op.attrs["high"]

        def draw(seed: np.ndarray) -> np.ndarray:
            return low + (high - low) * generator(seed, _PURPOSE_UNIFORM).random(shape)
    else:
        mean, std = op.attrs["mean"], op.attrs["std"]

        def draw(seed: np.ndarray) -> np.ndarray:
            return mean + std * generator(seed, _PURPOSE_NORMAL).standard_normal(shape)

    def run(env: list) -> None:
        env[o] = np.stack([draw(s) for s in env[ss]]).astype(npdt)
    return run


def modify_seed(seed: np.ndarray, modifier: int) -> np.ndarray:
    """One replica's ModifyRandomSeed: [a, first uint32 drawn from the key [a, b + modifier]]."""
    a, b = (int(v) for v in seed)
    word = generator(np.array([a, (b + int(modifier)) & 0xFFFFFFFF]), _PURPOSE_SEED).integers(
        0, 1 << 32, dtype=np.uint64)
    return np.array([a, int(word)], np.uint32)


@_kernel("ModifyRandomSeed")
def _modify_random_seed(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    ss, ms = (cg.slot[t] for t in op.inputs)
    o = cg.slot[op.outputs[0]]

    def run(env: list) -> None:
        env[o] = np.stack([modify_seed(s, m) for s, m in zip(env[ss], env[ms].reshape(-1))])
    return run


__all__ = ["correlate", "correlate_data_grad", "correlate_weight_grad", "generator", "keep_mask", "modify_seed"]
