"""Gradient rules of the remaining reductions and element-wise ops PopART can differentiate,
merged into :data:`.grad_rules.GRAD_RULES` (same rule signature), built from popxl ops.

What PopART's grad ops compute (willow/src/op/*.cpp and willow/src/popx/op/*x.cpp):

- ReduceMax / ReduceMin (ReduceMaxGradOpx): the output gradient broadcast back, times
  ``sign(x - y) + 1`` (``sign(y - x) + 1`` for min), so every element equal to the extreme gets
  the full gradient (ties are not split).
- Max (``popxl.ops.maximum``, MaxArgGradOpx): the same mask per input, summed back to its shape.
- ReduceProd (ReduceProdGradOpx): the product of the other elements (left and right cumulative
  products, exact with zeros); here y / x where x != 0 and the product of the non-zero elements
  where x is the only zero of its slice.
- ReduceL1: g * sign(x); ReduceL2: g * x / y; ReduceLogSum: g / exp(y) (= g / sum(x)).
- Clip (ClipGradOpx): g * (y != min) * (y != max), y the clipped output.
- CumSum (CumSumGradOpx): the cumulative sum of g in the other direction, computed here as
  sum(g) - cumsum(g) + g along the axis.
- Fmod (FmodArg0GradOp only): g (reduced to the first input's shape) for the dividend, nothing
  for the divisor.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import ops
from ..graph import Op
from ..tensor import Tensor, constant
from .grad_rules import expand_reduced, reduce_to

Fwd = Callable[[Tensor], Tensor]
Rule = Callable[[Op, list, Fwd], list]


def _mask_at_extreme(x: Tensor, y: Tensor, sign: float) -> Tensor:
    """sign(sign * (x - y)) + 1: 1 where x equals the extreme y, 0 elsewhere."""
    d = ops.sub(x, y) if sign > 0 else ops.sub(y, x)
    return ops.add(ops.sign(d), constant(1.0, x.dtype))


def _reduce_extreme(sign: float) -> Rule:
    def rule(op: Op, gs: list, fwd: Fwd) -> list:
        x = fwd(op.inputs[0])
        y = expand_reduced(fwd(op.outputs[0]), op)
        return [ops.mul(expand_reduced(gs[0], op), _mask_at_extreme(x, y, sign))]
    return rule


def _max(op: Op, gs: list, fwd: Fwd) -> list:
    y = fwd(op.outputs[0])
    return [reduce_to(ops.mul(gs[0], _mask_at_extreme(fwd(t), y, 1.0)), t.shape) for t in op.inputs]


def _prod(op: Op, gs: list, fwd: Fwd) -> list:
    x = fwd(op.inputs[0])
    axes = list(op.attrs["axes"])
    zero, one = constant(0.0, x.dtype), constant(1.0, x.dtype)
    is_zero = ops.equal(x, zero)
    y = expand_reduced(fwd(op.outputs[0]), op)
    safe_x = ops.where(is_zero, one, x)
    nonzero_prod = expand_reduced(ops.prod(safe_x, axes, keepdims=True), op)
    zeros = expand_reduced(ops.sum(ops.cast(is_zero, x.dtype), axes, keepdims=True), op)
    only_zero = ops.equal(zeros, one)
    others = ops.where(is_zero, ops.where(only_zero, nonzero_prod, zero), ops.div(y, safe_x))
    return [ops.mul(expand_reduced(gs[0], op), others)]


def _clip(op: Op, gs: list, fwd: Fwd) -> list:
    y = fwd(op.outputs[0])
    g = gs[0]
    keep = None
    for bound in (op.attrs["min"], op.attrs["max"]):
        inside = ops.cast(ops.logical_not(ops.equal(y, constant(bound, y.dtype))), g.dtype)
        keep = inside if keep is None else ops.mul(keep, inside)
    return [ops.mul(g, keep)]


def _cumsum(op: Op, gs: list, fwd: Fwd) -> list:
    g = gs[0]
    axis = int(op.attrs["axis"])
    total = ops.sum(g, [axis], keepdims=True)
    return [ops.add(ops.sub(total, ops.cumsum(g, axis)), g)]


GRAD_RULES_REDUCE: dict[str, Rule] = {
    "ReduceMax": _reduce_extreme(1.0),
    "ReduceMin": _reduce_extreme(-1.0),
    "Max": _max,
    "ReduceProd": _prod,
    "ReduceL1": lambda op, gs, fwd: [ops.mul(expand_reduced(gs[0], op), ops.sign(fwd(op.inputs[0])))],
    "ReduceL2": lambda op, gs, fwd: [ops.mul(expand_reduced(gs[0], op),
                                             ops.div(fwd(op.inputs[0]), expand_reduced(fwd(op.outputs[0]), op)))],
    "ReduceLogSum": lambda op, gs, fwd: [ops.div(expand_reduced(gs[0], op),
                                                 ops.exp(expand_reduced(fwd(op.outputs[0]), op)))],
    "Clip": _clip,
    "CumSum": _cumsum,
    "Fmod": lambda op, gs, fwd: [reduce_to(gs[0], op.inputs[0].shape), None],
}

__all__ = ["GRAD_RULES_REDUCE"]
