"""popxl-addons' scaled sum of squares (``popxl_addons.ops.grad_reduce_square_add``, the C++ op
``GradReduceSquareAdd``; 3.0 and 3.4), used for the norm of loss-scaled gradients.

The wrapper's scale is ``1 / (loss_scaling * loss_scaling)`` (a float32 constant, or popxl ops
when ``loss_scaling`` is a tensor). The Opx is one ``popops::reduce`` of the flattened input
with ``SQUARE_ADD``, float32 output and that scale: ``scale * sum(float32(t) ** 2)``, a float32
scalar. The op defines no gradient (autodiff gives ``t`` none).

Here the Opx's arithmetic is popxl ops (a cast to float32 unless ``t`` is float32, a
ReduceSumSquare and a multiply), ended by a pass-through op of type ``GradReduceSquareAdd``.
Approximations: the summation order is numpy's, not the reduction tree of popops; the compile
model sees the cast as its own elementwise op where popops casts while reducing.
"""

from __future__ import annotations

from collections.abc import Sequence

from profcompare.emulator.popxl_addons._compat import ops, popxl
from profcompare.emulator.popxl_addons.ops._custom_grad import Fwd, with_gradient

__all__ = ["grad_reduce_square_add"]


def _no_gradient(out_grads: Sequence[popxl.Tensor | None], fwd: Fwd) -> list[popxl.Tensor | None]:
    return [None]


def grad_reduce_square_add(t: popxl.Tensor, loss_scaling: int | float | popxl.Tensor) -> popxl.Tensor:
    """Return ``sum(t ** 2) / loss_scaling ** 2`` as a float32 scalar tensor (shape ``()``)."""
    scale = 1 / (loss_scaling * loss_scaling)
    if not isinstance(scale, popxl.Tensor):
        scale = popxl.constant(scale, popxl.float32)
    elif scale.dtype != popxl.float32:
        scale = ops.cast(scale, popxl.float32)
    x32 = t if t.dtype == popxl.float32 else ops.cast(t, popxl.float32)
    reduced = ops.sumsquare(x32) * scale
    (out,) = with_gradient("GradReduceSquareAdd", "grad_reduce_square_add", [t], [reduced], _no_gradient,
                           out_names=["grad_reduced"])
    return out
