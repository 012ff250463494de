"""popxl.ops negative log likelihood losses (popxl 3.4 signatures): ``nll_loss`` (PopART ``Nll``)
and ``nll_loss_with_softmax_grad`` (PopART ``NlllWithSoftmaxGradDirect``, op type
``NllLossWithSoftmaxGrad`` here).

Facts of PopART's lowering the kernels (``popxl/kernels_losses.py``) reproduce:

- the probability of each item's label is picked through a one-hot encoding: a label outside
  ``[0, classes)`` picks 0 (and its gradient row stays 0 in ``nll_loss``'s gradient);
- ``nll_loss``: loss ``-log(max(p, eps))``, eps 1e-7 (float16: 6.104e-05); with ``log_prob=True``
  the input already holds log probabilities and the loss is ``-p``. Its gradient (``NllGrad``) is
  ``-1 / max(p, eps)`` at the label (eps 1e-10, float16: 6.104e-05), or ``-1`` for log
  probabilities, times the loss gradient;
- ``nll_loss_with_softmax_grad``: loss ``-log(p + 1e-7)``; ``dx = (p - onehot) * loss_grad``;
- ``ignore_index``: items whose label equals it contribute 0 to the loss and a 0 gradient row;
  'mean' then divides by the number of items not ignored (at least 1);
- 'mean' without ``ignore_index`` divides the loss by the number of items, but the gradient by
  the first dimension of ``probs`` only (PopART scales by the one-hot tensor's dimension 0 after
  reshaping it back to probs' shape), which differs for probs of rank > 2.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np

from .. import dtypes
from ..graph import check_in_graph
from ..tensor import Tensor
from ._util import add_op, ensure_tensor, gcg, out, single

REDUCTIONS = ("mean", "sum", "none")
REDUCTION_TYPE = Literal["mean", "sum", "none"]


def _reduction(reduction: str) -> str:
    if reduction not in REDUCTIONS:
        raise ValueError(f"Not a valid reduction: {reduction}. Must choose from: {', '.join(REDUCTIONS)}")
    return reduction


def _loss_shapes(api: str, probs: Tensor, labels: Tensor, flattened: bool = False) -> None:
    if probs.rank == 0:
        raise ValueError(f"{api}: invalid shape for the probabilities {probs.id} ({probs.shape})")
    rows = int(np.prod(probs.shape[:-1], dtype=np.int64))
    if flattened and labels.nelms != rows:
        raise ValueError(f"{api}: the label tensor {labels.id} {labels.shape} must have {rows} elements, one per "
                         f"row of the probabilities tensor {probs.id} {probs.shape} (all but its final dimension)")
    if not flattened and labels.shape != probs.shape[:-1]:
        raise ValueError(f"{api}: the label tensor {labels.id} {labels.shape} must have shape {probs.shape[:-1]} to "
                         f"match all but the final dimension of the probabilities tensor {probs.id} {probs.shape}")
    if not labels.dtype.is_int:
        raise TypeError(f"{api}: labels {labels.id} must have an integer dtype, got {labels.dtype.name}")
    if probs.dtype not in (dtypes.float16, dtypes.float32):
        raise TypeError(f"{api}: probs {probs.id} must be float16 or float32, got {probs.dtype.name}")


def _ignore(ignore_index: int | None) -> int | None:
    return None if ignore_index is None else int(ignore_index)


def _flops(probs: Tensor) -> int:
    # one-hot encode, multiply, reduce the classes, log and scale: ~3 operations per probability
    return 3 * probs.nelms


def nll_loss(probs: Tensor, labels: Tensor, ignore_index: int | None = None, reduction: REDUCTION_TYPE = "mean",
             log_prob: bool = False) -> Tensor:
    """Negative log likelihood of ``probs`` (softmax output, classes last) at integer ``labels``
    (probs' shape without its last axis). Returns a scalar for 'mean' / 'sum', a labels-shaped
    tensor for 'none', in probs' dtype. Differentiable with respect to ``probs``."""
    api = "popxl.ops.nll_loss"
    check_in_graph(gcg(), probs=probs, labels=labels)
    red = _reduction(reduction)
    _loss_shapes(api, probs, labels)
    shape = labels.shape if red == "none" else ()
    attrs = {"reduction": red, "ignore_index": _ignore(ignore_index), "log_prob": bool(log_prob),
             "flops": _flops(probs)}
    return single(add_op("Nll", "nll", [probs, labels], [out("loss", shape, probs.dtype)], attrs))


def nll_loss_with_softmax_grad(probs: Tensor, labels: Tensor, loss_grad: Any = 1, ignore_index: int | None = None,
                               reduction: REDUCTION_TYPE = "mean") -> tuple[Tensor, Tensor]:
    """Negative log likelihood of softmax ``probs`` at ``labels`` and its gradient with respect to
    the softmax's logits. Returns (loss, dx): loss is ``()`` for 'mean' / 'sum' and labels-shaped
    for 'none'; dx has probs' shape: ``(probs - onehot) * loss_grad``, scaled for 'mean' as the
    module docstring says. ``loss_grad`` (float or tensor; float32 allowed with float16 probs) is
    dE/dloss."""
    api = "popxl.ops.nll_loss_with_softmax_grad"
    lg = ensure_tensor(loss_grad, dtypes.float32)
    check_in_graph(gcg(), probs=probs, labels=labels, loss_grad=lg)
    red = _reduction(reduction)
    # PopART's NlllWithSoftmaxGradDirectOp::setup checks no label shape (op/softmax.cpp) and its
    # Poplar lowering flattens probs to [rows, classes] and labels to [rows] (popx/op/nllx.cpp):
    # any labels with one element per row are accepted
    _loss_shapes(api, probs, labels, flattened=True)
    if red == "none" and lg.nelms != 1 and lg.shape != labels.shape:
        raise ValueError(f"{api}: loss_grad {lg.shape} must be a scalar or have the labels' shape {labels.shape}")
    if red != "none" and lg.nelms != 1:
        raise ValueError(f"{api}: loss_grad must be a scalar for reduction {red!r}, got shape {lg.shape}")
    loss_shape = labels.shape if red == "none" else ()
    # FLOPs: the lowering's per-element count of NllLossWithSoftmaxGrad
    attrs = {"reduction": red, "ignore_index": _ignore(ignore_index)}
    op = add_op("NllLossWithSoftmaxGrad", "nll_loss_with_softmax_grad", [probs, labels, lg],
                [out("loss", loss_shape, probs.dtype), out("dx", probs.shape, probs.dtype)], attrs)
    return op.outputs[0], op.outputs[1]


__all__ = ["REDUCTIONS", "nll_loss", "nll_loss_with_softmax_grad"]
