"""Numeric kernels of the optimizer updates ``AdamVarUpdate`` (Adam / LAMB weight update) and
``SparseAccumulate`` (semantics in :mod:`.ops.var_updates`). Both update their first input in
place and output it. Registered into :mod:`.execution`'s kernel table when imported; values keep
the ``(R, *shape)`` layout (factors given as tensors are per replica).

The learning rate and the LAMB trust ratio are computed in float32 (PopART's expression of its
float32 inputs); a float16 weight is updated in float32 and rounded back.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .execution import CompiledGraph, Executor, Kernel, _factor_getter, _kernel, _var_update
from .graph import Op


def _tensor_factors(op: Op, cg: CompiledGraph, ex: Executor, keys: tuple[str, ...], first: int,
                    rank: int) -> dict[str, Any]:
    """Getters (env -> float or (R, 1, ...) array) of the ``keys`` factors; tensor ones are the
    op's inputs from index ``first`` on, in ``keys`` order."""
    idx = first
    getters = {}
    for key in keys:
        ti = None
        if op.attrs[f"{key}_tensor"]:
            ti, idx = idx, idx + 1
        getters[key] = _factor_getter(op, cg, ex, key, ti, rank)
    return getters


def _f32(value: Any) -> Any:
    return np.float32(value) if isinstance(value, float) else value.astype(np.float32)


@_kernel("AdamVarUpdate")
def _adam_var_update(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    w_t = op.inputs[0]
    ws, xs, r1s, r2s = (cg.slot[t] for t in op.inputs[:4])
    o = cg.slot[op.outputs[0]]
    rank = w_t.rank
    getters = _tensor_factors(op, cg, ex, ("learning_rate", "max_weight_norm"), 4, rank)
    mwn_tensor = op.attrs["max_weight_norm_tensor"]
    view = (ex.replicas,) + (1,) * rank
    npdt = w_t.dtype.as_numpy()

    def run(env: list) -> None:
        lr = _f32(getters["learning_rate"](env))
        mwn = _f32(getters["max_weight_norm"](env))
        r1 = env[r1s].reshape(view).astype(np.float32)
        r2 = env[r2s].reshape(view).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.minimum(np.sqrt(r1), mwn) / np.sqrt(r2)
        one = np.float32(1)
        ratio = np.where(r2 == 0, one, ratio)
        ratio = np.where(r1 == 0, one, ratio)
        if mwn_tensor:
            ratio = np.where(mwn == 0, one, ratio)
        w = env[ws]
        step = (lr * ratio) * env[xs].astype(np.float32)
        w[...] = (w.astype(np.float32) - step).astype(npdt)
        env[o] = w
    return run


@_kernel("SparseAccumulate")
def _sparse_accumulate(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    t = op.inputs[0]
    xs, idx_s = cg.slot[op.inputs[1]], cg.slot[op.inputs[2]]
    ax = int(op.attrs["axis"])
    size = t.shape[ax]
    npdt = t.dtype.as_numpy()
    flat_x = (*t.shape[:ax], op.inputs[2].nelms, *t.shape[ax + 1:])

    def body(acc: np.ndarray, env: list, f: Any) -> None:
        for r in range(acc.shape[0]):
            scale = npdt.type(f) if isinstance(f, float) else f[r].reshape(()).astype(npdt)
            rows = np.moveaxis(env[xs][r].astype(npdt).reshape(flat_x), ax, 0) * scale
            idx = env[idx_s][r].reshape(-1).astype(np.int64)
            keep = (idx >= 0) & (idx < size)  # multiUpdateAdd skips indices outside the axis
            np.add.at(np.moveaxis(acc[r], ax, 0), idx[keep], rows[keep])
    return _var_update(op, cg, ex, body)
