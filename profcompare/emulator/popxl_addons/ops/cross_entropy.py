"""Softmax cross-entropy with its gradient (popxl-addons ``ops.cross_entropy_with_grad``)."""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons._compat import ops, popxl

__all__ = ["cross_entropy_with_grad", "cross_entropy"]


def cross_entropy_with_grad(
    x: Any, labels: Any, loss_scaling: float = 1, ignore_index: int | None = None, reduction: str = "mean"
) -> tuple[Any, Any]:
    """Return (loss, dx): the (unscaled) softmax cross-entropy of logits ``x`` against integer
    ``labels`` (a scalar for reduction 'mean') and dloss/dx times ``loss_scaling`` (shape of x, float32)."""
    probs = ops.softmax(x, axis=-1)
    loss_grad = popxl.constant(float(loss_scaling), popxl.float32)
    return ops.nll_loss_with_softmax_grad(
        probs, labels, loss_grad=loss_grad, ignore_index=ignore_index, reduction=reduction
    )


def cross_entropy(
    x: Any, labels: Any, loss_scaling: float = 1, ignore_index: int | None = None, reduction: str = "mean"
) -> Any:
    """Return only the loss of :func:`cross_entropy_with_grad`."""
    loss, _ = cross_entropy_with_grad(x, labels, loss_scaling, ignore_index, reduction)
    return loss
