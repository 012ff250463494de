"""Numeric kernels of the negative log likelihood losses (``Nll``, ``NllGrad``,
``NllLossWithSoftmaxGrad``); the semantics are listed in :mod:`.ops.losses`. Registered into
:mod:`.execution`'s kernel table when imported; values keep the ``(R, *shape)`` layout.

float16 probabilities are computed in float32 and rounded back, with PopART's float16 epsilons.
"""

from __future__ import annotations

import numpy as np

from .execution import CompiledGraph, Executor, Kernel, _kernel
from .graph import Op

#: PopART's epsilons: (loss floor of Nll, probability floor of NllGrad) per probs dtype
_NLL_EPS = {np.dtype(np.float32): (1.0e-7, 1.0e-10), np.dtype(np.float16): (6.104e-05, 6.104e-05)}
#: NlllWithSoftmaxGradDirect adds this to the picked probability before the log
_SOFTMAX_GRAD_EPS = 1.0e-7


class _Labels:
    """Labels of one run flattened to (R, N): the one-hot mask, the kept items and the divisors."""

    def __init__(self, labels: np.ndarray, classes: int, ignore_index: int | None) -> None:
        r = labels.shape[0]
        lab = labels.reshape(r, -1).astype(np.int64)
        self.in_range = (lab >= 0) & (lab < classes)
        self.index = np.where(self.in_range, lab, 0)
        self.kept = np.ones(lab.shape, bool) if ignore_index is None else lab != ignore_index
        self.count = np.maximum(self.kept.sum(axis=1), 1).astype(np.float32)  # (R,)

    def picked(self, p: np.ndarray) -> np.ndarray:
        """The probability at each label (0 for labels outside the classes), shape (R, N)."""
        got = np.take_along_axis(p, self.index[..., None], axis=2)[..., 0]
        return np.where(self.in_range, got, p.dtype.type(0))

    def onehot(self, shape: tuple[int, ...]) -> np.ndarray:
        """float32 one-hot rows of shape (R, N, C) (all-zero rows for labels outside the classes)."""
        hot = np.zeros(shape, np.float32)
        np.put_along_axis(hot, self.index[..., None], self.in_range[..., None].astype(np.float32), axis=2)
        return hot


def _reduce_loss(items: np.ndarray, labels: _Labels, reduction: str, ignoring: bool) -> np.ndarray:
    """The per-item losses (R, N) masked and reduced: (R,) for 'mean' / 'sum', (R, N) for 'none'."""
    if ignoring:
        items = items * labels.kept
    if reduction == "none":
        return items
    total = items.sum(axis=1)
    if reduction == "sum":
        return total
    return total / (labels.count if ignoring else np.float32(items.shape[1]))


def _grad_scale(g: np.ndarray, labels: _Labels, reduction: str, ignoring: bool, first_dim: int,
                n: int) -> np.ndarray:
    """The factor each gradient row is multiplied by, shape (R, N, 1): the loss gradient (per item
    for 'none'), divided for 'mean' by the kept items (ignore_index) or probs' first dimension."""
    r = g.shape[0]
    g = g.reshape(r, -1).astype(np.float32)
    g = np.broadcast_to(g, (r, n)) if g.shape[1] == 1 else g
    if reduction == "mean":
        g = g / (labels.count[:, None] if ignoring else np.float32(first_dim))
    if ignoring:
        g = g * labels.kept
    return g[..., None]


@_kernel("Nll")
def _nll(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    probs_t, labels_t = op.inputs
    p_s, l_s = cg.slot[probs_t], cg.slot[labels_t]
    o = cg.slot[op.outputs[0]]
    r, c = ex.replicas, probs_t.shape[-1]
    red, ignore, log_prob = op.attrs["reduction"], op.attrs["ignore_index"], op.attrs["log_prob"]
    npdt = probs_t.dtype.as_numpy()
    eps = np.float32(_NLL_EPS[np.dtype(npdt)][0])
    out_shape = (r, *op.outputs[0].shape)

    def run(env: list) -> None:
        p = env[p_s].reshape(r, -1, c).astype(np.float32)
        labels = _Labels(env[l_s], c, ignore)
        picked = labels.picked(p)
        items = -picked if log_prob else -np.log(np.maximum(picked, eps))
        env[o] = _reduce_loss(items, labels, red, ignore is not None).astype(npdt).reshape(out_shape)
    return run


@_kernel("NllGrad")
def _nll_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    g_t, probs_t, labels_t = op.inputs
    g_s, p_s, l_s = (cg.slot[t] for t in op.inputs)
    o = cg.slot[op.outputs[0]]
    r, c = ex.replicas, probs_t.shape[-1]
    red, ignore, log_prob = op.attrs["reduction"], op.attrs["ignore_index"], op.attrs["log_prob"]
    npdt = probs_t.dtype.as_numpy()
    eps = np.float32(_NLL_EPS[np.dtype(npdt)][1])
    first_dim, n = probs_t.shape[0], labels_t.nelms
    out_shape = (r, *probs_t.shape)

    def run(env: list) -> None:
        p = env[p_s].reshape(r, n, c).astype(np.float32)
        labels = _Labels(env[l_s], c, ignore)
        hot = labels.onehot(p.shape)
        d = -hot if log_prob else -hot / np.maximum(p, eps)
        d *= _grad_scale(env[g_s], labels, red, ignore is not None, first_dim, n)
        env[o] = d.astype(npdt).reshape(out_shape)
    return run


@_kernel("NllLossWithSoftmaxGrad")
def _nll_with_softmax_grad(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    probs_t, labels_t, _lg_t = op.inputs
    p_s, l_s, g_s = (cg.slot[t] for t in op.inputs)
    loss_s, dx_s = (cg.slot[t] for t in op.outputs)
    r, c = ex.replicas, probs_t.shape[-1]
    red, ignore = op.attrs["reduction"], op.attrs["ignore_index"]
    npdt = probs_t.dtype.as_numpy()
    first_dim, n = probs_t.shape[0], labels_t.nelms
    loss_shape, dx_shape = (r, *op.outputs[0].shape), (r, *probs_t.shape)

    def run(env: list) -> None:
        p = env[p_s].reshape(r, n, c).astype(np.float32)
        labels = _Labels(env[l_s], c, ignore)
        items = -np.log(labels.picked(p) + np.float32(_SOFTMAX_GRAD_EPS))
        dx = p - labels.onehot(p.shape)
        dx *= _grad_scale(env[g_s], labels, red, ignore is not None, first_dim, n)
        env[loss_s] = _reduce_loss(items, labels, red, ignore is not None).astype(npdt).reshape(loss_shape)
        env[dx_s] = dx.astype(npdt).reshape(dx_shape)
    return run
