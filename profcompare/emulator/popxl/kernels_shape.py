"""Numeric kernels of the popxl shape and indexing ops (ops/shape.py, ops/indexing.py), their
gradient ops, and the in-replica all_reduce (ops/collectives). Registered into
:mod:`.execution`'s kernel table when imported; values keep the ``(R, *shape)`` layout, replica
axis first, so every axis attribute is shifted by one here.

Run-time indices (gather, scatter, dynamic slices, topk grads) may differ per replica: a kernel
computes once when every replica holds the same indices and per replica otherwise. An index
outside its axis raises a ValueError naming the popxl op (the IPU would give undefined data).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from typing import Any

import numpy as np

from .errors import SimulatorNotImplementedError, not_implemented_message
from .execution import CompiledGraph, Executor, Kernel, _kernel, _reduce, _view_kernel
from .graph import Op

Factory = Callable[[Op, CompiledGraph, Executor], Kernel]


def _index(rank: int, axes: tuple[int, ...], slices: list[builtins.slice]) -> tuple[builtins.slice, ...]:
    """An index of the (R, *shape) array taking ``slices`` on ``axes`` (replica axis whole)."""
    idx = [builtins.slice(None)] * (rank + 1)
    for a, s in zip(axes, slices):
        idx[a + 1] = s
    return tuple(idx)


def _same_rows(x: np.ndarray) -> bool:
    return x.shape[0] == 1 or bool((x == x[:1]).all())


# --- slices, concatenation, split, subsample ----------------------------------------------------
def _static_slice(op: Op) -> tuple[builtins.slice, ...]:
    at = op.attrs
    return _index(op.inputs[0].rank, at["axes"],
                  [builtins.slice(b, e, s) for b, e, s in zip(at["starts"], at["stops"], at["steps"])])


@_kernel("Slice")
def _slice(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
    idx = _static_slice(op)

    def run(env: list) -> None:
        env[o] = np.array(env[i][idx])
    return run


@_kernel("SliceInplace")
def _slice_inplace(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    idx = _static_slice(op)
    return _view_kernel(op, cg, lambda x: x[idx])


@_kernel("SliceGrad")
def _slice_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """Zeros of the sliced input's shape with the gradient written into the slice."""
    g, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
    idx = _index(op.outputs[0].rank, op.attrs["axes"],
                 [builtins.slice(b, e, s) for b, e, s in zip(op.attrs["starts"], op.attrs["stops"], op.attrs["steps"])])
    shape = (ex.replicas, *op.outputs[0].shape)
    npdt = op.outputs[0].dtype.as_numpy()

    def run(env: list) -> None:
        d = np.zeros(shape, npdt)
        d[idx] = env[g]
        env[o] = d
    return run


def _mutated_after(op: Op, cg: CompiledGraph, tensors: list) -> bool:
    """True when an op after ``op`` in its graph modifies one of ``tensors`` or an alias of one."""
    roots = {cg._uf.find(t) for t in tensors}
    ops = cg.graph._ops
    for later in ops[ops.index(op) + 1:]:
        if any(cg._uf.find(m) in roots for m in later.modified):
            return True
    return False


@_kernel("Concat", "ConcatInplace")
def _concat(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    if op.type == "ConcatInplace" and _mutated_after(op, cg, [*op.inputs, op.outputs[0]]):
        raise SimulatorNotImplementedError(not_implemented_message(
            f"popxl.ops.concat_ ({op.name}) whose inputs or output are modified in place after it"))
    ins = [cg.slot[t] for t in op.inputs]
    o = cg.slot[op.outputs[0]]
    axis = op.attrs["axis"] + 1

    def run(env: list) -> None:
        env[o] = np.concatenate([env[s] for s in ins], axis=axis)
    return run


@_kernel("Split")
def _split(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i = cg.slot[op.inputs[0]]
    rank = op.inputs[0].rank
    ax = op.attrs["axis"]
    parts = []
    start = 0
    for t, size in zip(op.outputs, op.attrs["splits"]):
        parts.append((cg.slot[t], _index(rank, (ax,), [builtins.slice(start, start + size)])))
        start += size

    def run(env: list) -> None:
        x = env[i]
        for s, idx in parts:
            env[s] = np.array(x[idx])
    return run


def _strided(op: Op, rank: int) -> tuple[builtins.slice, ...]:
    return _index(rank, tuple(range(rank)), [builtins.slice(None, None, s) for s in op.attrs["strides"]])


@_kernel("Subsample")
def _subsample(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
    idx = _strided(op, op.inputs[0].rank)

    def run(env: list) -> None:
        env[o] = np.array(env[i][idx])
    return run


@_kernel("SubsampleGrad")
def _subsample_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    g, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]
    idx = _strided(op, op.outputs[0].rank)
    shape = (ex.replicas, *op.outputs[0].shape)
    npdt = op.outputs[0].dtype.as_numpy()

    def run(env: list) -> None:
        d = np.zeros(shape, npdt)
        d[idx] = env[g]
        env[o] = d
    return run


# --- gather and scatter --------------------------------------------------------------------------
def _checked_indices(api: str, idx: np.ndarray, n: int, zero_oor: bool = False) -> tuple[np.ndarray, Any]:
    """(indices as int64 with out-of-range ones at 0, mask of the out-of-range ones or None)."""
    i64 = idx.astype(np.int64, copy=False)
    bad = (i64 < 0) | (i64 >= n)
    if not bad.any():
        return i64, None
    if not zero_oor:
        raise ValueError(f"{api}: index {int(i64[bad][0])} is out of range for an axis of {n} "
                         "(the IPU gives undefined data)")
    return np.where(bad, 0, i64), bad


def _take(x: np.ndarray, idx: np.ndarray, ax: int, group: int) -> np.ndarray:
    """Gather for every replica: x (R, *t.shape), idx (R, *indices.shape)."""
    if group > 1:
        return np.stack([np.stack([np.take(x[r, gi], idx[r, gi], axis=ax - 1) for gi in range(group)])
                         for r in range(x.shape[0])])
    if _same_rows(idx):
        return np.take(x, idx[0], axis=ax + 1)
    return np.stack([np.take(x[r], idx[r], axis=ax) for r in range(x.shape[0])])


def _oor_view(bad: np.ndarray, ax: int, group: int, t_rank: int) -> np.ndarray:
    """The out-of-range mask (R, *indices.shape) shaped to broadcast over the gather's output."""
    post = (1,) * (t_rank - ax - 1)
    if group > 1:
        return bad.reshape(bad.shape[:2] + (1,) * (ax - 1) + bad.shape[2:] + post)
    return bad.reshape(bad.shape[:1] + (1,) * ax + bad.shape[1:] + post)


@_kernel("Gather", "TiedGather")
def _gather(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    t, ind = op.inputs
    xs, js, o = cg.slot[t], cg.slot[ind], cg.slot[op.outputs[0]]
    ax, group, zero = op.attrs["axis"], op.attrs["group_size"], op.attrs["zero_OOR"]
    n = t.shape[ax]
    api = f"popxl.ops.{'tied_gather' if op.type == 'TiedGather' else 'gather'}"

    def run(env: list) -> None:
        idx, bad = _checked_indices(api, env[js], n, zero)
        y = _take(env[xs], idx, ax, group)
        if bad is not None:
            y = np.where(_oor_view(bad, ax, group, t.rank), y.dtype.type(0), y)
        env[o] = y
    return run


@_kernel("GatherGrad")
def _gather_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """The gradient of gather: the output gradient added into zeros at the gathered positions."""
    g_t, ind = op.inputs
    gs, js, o = cg.slot[g_t], cg.slot[ind], cg.slot[op.outputs[0]]
    ax, group = op.attrs["axis"], op.attrs["group_size"]
    shape = op.outputs[0].shape
    n = shape[ax]
    npdt = op.outputs[0].dtype.as_numpy()
    r_count = ex.replicas

    def run(env: list) -> None:
        idx, bad = _checked_indices("popxl.ops.gather (gradient)", env[js], n, True)
        g = env[gs]
        d = np.zeros((r_count, *shape), npdt)
        for r in range(r_count):
            for gi in range(group) if group > 1 else (None,):
                dst = d[r] if gi is None else d[r, gi]
                src = g[r] if gi is None else g[r, gi]
                ir = idx[r] if gi is None else idx[r, gi]
                br = None if bad is None else (bad[r] if gi is None else bad[r, gi])
                a = ax if gi is None else ax - 1
                # move the gathered axis first: src (pre, *ishape, post) -> updates per index
                pre = a
                src_m = np.moveaxis(src.reshape(src.shape[:pre] + (-1,) + src.shape[pre + ir.ndim:]), pre, 0)
                flat = ir.reshape(-1)
                if br is not None:
                    keep = ~br.reshape(-1)
                    flat, src_m = flat[keep], src_m[keep]
                np.add.at(np.moveaxis(dst, a, 0), flat, src_m)
        env[o] = d
    return run


def _scatter_view(out: np.ndarray, ishape: tuple[int, ...], ax: int) -> np.ndarray:
    """The part of ``out`` (R, *shape) the indices cover outside the scatter axis."""
    idx = [builtins.slice(None)] + [builtins.slice(None) if d == ax else builtins.slice(0, n)
                                    for d, n in enumerate(ishape)]
    return out[tuple(idx)]


@_kernel("Scatter")
def _scatter(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    t, ind, val = op.inputs
    xs, js, vs, o = cg.slot[t], cg.slot[ind], cg.slot[val], cg.slot[op.outputs[0]]
    ax = op.attrs["axis"]
    n = t.shape[ax]

    def run(env: list) -> None:
        idx, _ = _checked_indices("popxl.ops.scatter", env[js], n)
        y = np.array(env[xs])
        np.put_along_axis(_scatter_view(y, ind.shape, ax), idx, env[vs], axis=ax + 1)
        env[o] = y
    return run


def _scatter_grad(op: Op, cg: CompiledGraph, read: bool) -> Kernel:
    """The gradients of scatter: of ``values`` (``read``: the output gradient read at the scattered
    positions) or of ``t`` (the output gradient with the overwritten positions zeroed)."""
    g_t, ind = op.inputs
    gs, js, o = cg.slot[g_t], cg.slot[ind], cg.slot[op.outputs[0]]
    ax = op.attrs["axis"]
    n = g_t.shape[ax]

    def run(env: list) -> None:
        idx, _ = _checked_indices("popxl.ops.scatter (gradient)", env[js], n)
        if read:
            env[o] = np.take_along_axis(_scatter_view(env[gs], ind.shape, ax), idx, axis=ax + 1)
            return
        d = np.array(env[gs])
        np.put_along_axis(_scatter_view(d, ind.shape, ax), idx, d.dtype.type(0), axis=ax + 1)
        env[o] = d
    return run


@_kernel("ScatterDataGrad")
def _scatter_data_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """The gradient of scatter's ``t``."""
    return _scatter_grad(op, cg, read=False)


@_kernel("ScatterUpdateGrad")
def _scatter_update_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """The gradient of scatter's ``values``."""
    return _scatter_grad(op, cg, read=True)


def _full_indices(idx: np.ndarray, data_shape: tuple[int, ...], ax: int, broadcast: bool) -> tuple:
    """Index arrays addressing, for every data element, its target in the output (R axis first)."""
    if broadcast:
        view = (idx.shape[0],) + tuple(idx.shape[1] if d == ax else 1 for d in range(len(data_shape)))
        idx = idx.reshape(view)
    grid = list(np.ix_(*(np.arange(n) for n in (idx.shape[0], *data_shape))))
    grid[ax + 1] = idx
    full = (idx.shape[0], *data_shape)
    return tuple(np.broadcast_to(gr, full) for gr in grid)


_REDUCE_AT = {"sum": np.add, "max": np.maximum, "min": np.minimum}


@_kernel("ScatterReduce")
def _scatter_reduce(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    data = op.inputs[0]
    ds, js = cg.slot[data], cg.slot[op.inputs[1]]
    init = cg.slot[op.inputs[2]] if len(op.inputs) > 2 else None
    o = cg.slot[op.outputs[0]]
    at = op.attrs
    ax, red, bcast, size = at["axis"], at["reduction"], at["broadcast"], at["axis_size"]
    shape = (ex.replicas, *op.outputs[0].shape)
    npdt = op.outputs[0].dtype.as_numpy()

    def run(env: list) -> None:
        idx, _ = _checked_indices("popxl.ops.scatter_reduce", env[js], size)
        where = _full_indices(idx, data.shape, ax, bcast)
        src = env[ds]
        if init is not None:
            y = np.array(env[init])
        elif red in ("max", "min"):
            info = np.finfo(npdt) if np.issubdtype(npdt, np.floating) else np.iinfo(npdt)
            y = np.full(shape, info.min if red == "max" else info.max, npdt)
        else:
            y = np.zeros(shape, npdt)
        if red == "none":
            y[where] = src
        else:
            _REDUCE_AT[red].at(y, where, src)
        if init is None and red in ("max", "min"):
            reached = np.zeros(shape, bool)
            reached[where] = True
            y[~reached] = 0  # positions no data reaches are 0, as PopART's masked fill leaves them
        env[o] = y
    return run


@_kernel("ScatterReduceGrad")
def _scatter_reduce_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """The gradient of a sum (or 'none') scatter_reduce's data: the output gradient at each target."""
    g_t, ind = op.inputs
    gs, js, o = cg.slot[g_t], cg.slot[ind], cg.slot[op.outputs[0]]
    ax, bcast = op.attrs["axis"], op.attrs["broadcast"]
    data_shape = op.outputs[0].shape
    size = g_t.shape[ax]

    def run(env: list) -> None:
        idx, _ = _checked_indices("popxl.ops.scatter_reduce (gradient)", env[js], size)
        env[o] = np.array(env[gs][_full_indices(idx, data_shape, ax, bcast)])
    return run


@_kernel("ScatterReduceInitialGrad")
def _scatter_reduce_initial_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """The gradient of a 'none' scatter_reduce's initial values: zero where data overwrote them."""
    g_t, ind = op.inputs
    gs, js, o = cg.slot[g_t], cg.slot[ind], cg.slot[op.outputs[0]]
    ax, bcast = op.attrs["axis"], op.attrs["broadcast"]
    data_shape = op.attrs["data_shape"]
    size = g_t.shape[ax]

    def run(env: list) -> None:
        idx, _ = _checked_indices("popxl.ops.scatter_reduce (gradient)", env[js], size)
        d = np.array(env[gs])
        d[_full_indices(idx, data_shape, ax, bcast)] = 0
        env[o] = d
    return run


# --- dynamic slices ------------------------------------------------------------------------------
def _offsets(api: str, index: np.ndarray, t_shape: tuple[int, ...], axes: tuple[int, ...],
             sizes: tuple[int, ...]) -> np.ndarray:
    off = index.reshape(index.shape[0], -1).astype(np.int64)
    limits = np.array([t_shape[a] - s for a, s in zip(axes, sizes)], np.int64)
    if (off < 0).any() or (off > limits).any():
        raise ValueError(f"{api}: offsets {off.tolist()} put the slice outside the tensor "
                         f"(axes {list(axes)}, sizes {list(sizes)}, shape {list(t_shape)}); popxl does not "
                         "support slices past an axis")
    return off


def _regions(off: np.ndarray, rank: int, axes: tuple[int, ...], sizes: tuple[int, ...]) -> list:
    """[(replica rows, index)]: one region for all replicas when they agree, else one per replica."""
    def region(row: np.ndarray) -> tuple:
        return _index(rank, axes, [builtins.slice(int(b), int(b) + s) for b, s in zip(row, sizes)])[1:]
    if _same_rows(off):
        return [(builtins.slice(None), region(off[0]))]
    return [(r, region(off[r])) for r in range(off.shape[0])]


@_kernel("DynamicSlice")
def _dynamic_slice(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    t, ind = op.inputs
    xs, js, o = cg.slot[t], cg.slot[ind], cg.slot[op.outputs[0]]
    axes, sizes = op.attrs["axes"], op.attrs["sizes"]
    shape = (ex.replicas, *op.outputs[0].shape)
    npdt = op.outputs[0].dtype.as_numpy()

    def run(env: list) -> None:
        off = _offsets("popxl.ops.dynamic_slice", env[js], t.shape, axes, sizes)
        x = env[xs]
        regions = _regions(off, t.rank, axes, sizes)
        if len(regions) == 1:
            env[o] = np.array(x[(builtins.slice(None), *regions[0][1])])
            return
        y = np.empty(shape, npdt)
        for r, reg in regions:
            y[r] = x[r][reg]
        env[o] = y
    return run


@_kernel("DynamicUpdate", "DynamicUpdateInplace", "DynamicSlicePadGrad", "DynamicUpdateUpdaterGrad")
def _dynamic_update(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """Write a region at run-time offsets: t_update into t (copied unless in place), the gradient
    into zeros (DynamicSlicePadGrad), or zeros into the gradient (DynamicUpdateUpdaterGrad)."""
    kind = op.type
    base = op.inputs[0]
    bs, js, o = cg.slot[base], cg.slot[op.inputs[1]], cg.slot[op.outputs[0]]
    us = cg.slot[op.inputs[2]] if kind in ("DynamicUpdate", "DynamicUpdateInplace") else None
    axes, sizes = op.attrs["axes"], op.attrs["sizes"]
    full = op.outputs[0].shape
    shape = (ex.replicas, *full)
    npdt = op.outputs[0].dtype.as_numpy()
    api = "popxl.ops.dynamic_slice" if kind == "DynamicSlicePadGrad" else "popxl.ops.dynamic_update"

    def run(env: list) -> None:
        off = _offsets(api, env[js], full, axes, sizes)
        if kind == "DynamicSlicePadGrad":
            y, src = np.zeros(shape, npdt), env[bs]
        elif kind == "DynamicUpdateUpdaterGrad":
            y, src = np.array(env[bs]), None
        else:
            y = env[bs] if kind == "DynamicUpdateInplace" else np.array(env[bs])
            src = env[us]
        for r, reg in _regions(off, len(full), axes, sizes):
            whole = isinstance(r, builtins.slice)  # one region for every replica
            target = (builtins.slice(None), *reg) if whole else (r, *reg)
            if src is None:
                y[target] = 0
            else:
                y[target] = src if whole else src[r]
        env[o] = y
    return run


# --- onehot, topk --------------------------------------------------------------------------------
def _onehot_mask(idx: np.ndarray, depth: int, ax: int) -> np.ndarray:
    """(R, *out_shape) bool: True at each index's class (negative ones count from the end; out of
    range ones hit no class, as ONNX OneHot defines)."""
    i = idx.astype(np.int64)
    i = np.where(i < 0, i + depth, i)
    mask = i[..., None] == np.arange(depth)
    return np.moveaxis(mask, -1, ax + 1)


@_kernel("Onehot")
def _onehot(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    t, _, vals = op.inputs
    ts, vs, o = cg.slot[t], cg.slot[vals], cg.slot[op.outputs[0]]
    ax, depth = op.attrs["axis"], op.attrs["depth"]
    rank = op.outputs[0].rank
    r_count = ex.replicas

    def run(env: list) -> None:
        v = env[vs].reshape(r_count, 2)
        view = (r_count,) + (1,) * rank
        env[o] = np.where(_onehot_mask(env[ts], depth, ax), v[:, 1].reshape(view), v[:, 0].reshape(view))
    return run


@_kernel("OnehotGrad")
def _onehot_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """The gradient of onehot's ``values``: [sum of the gradient off the classes, sum on them]."""
    g_t, t = op.inputs
    gs, ts, o = cg.slot[g_t], cg.slot[t], cg.slot[op.outputs[0]]
    ax, depth = op.attrs["axis"], op.attrs["depth"]
    out_shape = (ex.replicas, *op.outputs[0].shape)

    def run(env: list) -> None:
        g = env[gs]
        mask = _onehot_mask(env[ts], depth, ax)
        axes = tuple(range(1, g.ndim))
        on = np.where(mask, g, 0).sum(axis=axes)
        off = g.sum(axis=axes) - on
        env[o] = np.stack([off, on], axis=1).astype(g.dtype).reshape(out_shape)
    return run


@_kernel("TopK")
def _topk(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    t = op.inputs[0]
    i = cg.slot[t]
    vo, io = cg.slot[op.outputs[0]], cg.slot[op.outputs[1]]
    k, axis, largest = op.attrs["k"], op.attrs["axis"] + 1, op.attrs["largest"]

    def run(env: list) -> None:
        x = env[i]
        if largest:
            key = -x.astype(np.float64) if x.dtype.kind == "f" else -x.astype(np.int64)
        else:
            key = x
        # stable: among equal values the lower index comes first
        order = np.argsort(key, axis=axis, kind="stable")
        order = np.take(order, np.arange(k), axis=axis)
        env[vo] = np.take_along_axis(x, order, axis=axis)
        env[io] = order.astype(np.int32)
    return run


@_kernel("TopKGrad")
def _topk_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """The gradient of topk: the values' gradient written at the chosen positions, zeros elsewhere."""
    g_t, ind = op.inputs
    gs, js, o = cg.slot[g_t], cg.slot[ind], cg.slot[op.outputs[0]]
    axis = op.attrs["axis"] + 1
    shape = (ex.replicas, *op.outputs[0].shape)
    npdt = op.outputs[0].dtype.as_numpy()

    def run(env: list) -> None:
        d = np.zeros(shape, npdt)
        np.put_along_axis(d, env[js].astype(np.int64), env[gs], axis=axis)
        env[o] = d
    return run


# --- all_reduce within a replica -----------------------------------------------------------------
@_kernel("AllReduce")
def _all_reduce(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    """Every output is the reduction of all inputs (one per IPU), or its own input when the op is
    declared over identical inputs (PopART's AllReduceToIdentityPattern makes it an identity)."""
    ins = [cg.slot[t] for t in op.inputs]
    outs = [cg.slot[t] for t in op.outputs]
    red_op = op.attrs["op"]
    n = len(ins)
    npdt = op.outputs[0].dtype.as_numpy()
    if op.attrs["identical_inputs"]:
        def run_identity(env: list) -> None:
            for s, d in zip(ins, outs):
                env[d] = np.array(env[s])
        return run_identity

    def run(env: list) -> None:
        red = _reduce(np.stack([env[s] for s in ins]), red_op, 0, n)[0].astype(npdt, copy=False)
        for d in outs:
            env[d] = np.array(red)
    return run


__all__: list[str] = []  # registers kernels; nothing to import
