"""Gradient rules of the extended popxl ops, used by :func:`.autodiff.autodiff`.

Each rule takes the forward op, the gradients of its outputs and ``fwd`` (which brings a forward
tensor into the gradient graph as an input) and returns one gradient (or None) per op input,
built from popxl ops in the current (gradient) graph. Ops without a rule make autodiff refuse
with one line naming the op.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .. import ops
from ..graph import Op, add_op
from ..ops._util import out, single
from ..ops.core import _expand
from ..tensor import Constant, Tensor, constant

Fwd = Callable[[Tensor], Tensor]
Rule = Callable[[Op, list, Fwd], list]


def _const(value: float, like: Tensor) -> Tensor:
    return constant(value, like.dtype)


def _grad_op(op_type: str, g: Tensor, x: Tensor) -> Tensor:
    return single(add_op(op_type, op_type.lower(), [g, x], [out(f"{op_type.lower()}_out", x.shape, x.dtype)]))


def reduce_to(g: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sum a broadcast gradient back to ``shape``."""
    if g.shape == shape:
        return g
    lead = g.rank - len(shape)
    axes = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1]
    r = ops.sum(g, axes) if axes else g
    return r if r.shape == shape else ops.reshape(r, shape)


def expand_reduced(g: Tensor, op: Op) -> Tensor:
    """The gradient of a reduction's output broadcast back to its input's shape."""
    x = op.inputs[0]
    keep = tuple(1 if i in op.attrs["axes"] else s for i, s in enumerate(x.shape))
    g2 = g if g.shape == keep else ops.reshape(g, keep)
    return _expand(g2, x.shape) if g2.shape != x.shape else g2


def _no_grad(op: Op, grads: list, fwd: Fwd) -> list:
    return [None] * len(op.inputs)


def _pow(op: Op, grads: list, fwd: Fwd) -> list:
    g = grads[0]
    base, exponent = op.inputs
    x, y = fwd(base), fwd(op.outputs[0])
    if isinstance(exponent, Constant):
        e = constant(exponent._data, exponent.dtype)
    else:
        e = fwd(exponent)
    dx = ops.mul(g, ops.mul(e, ops.pow(x, ops.sub(e, _const(1.0, e)))))
    de = None if isinstance(exponent, Constant) else reduce_to(ops.mul(g, ops.mul(y, ops.log(x))), exponent.shape)
    return [reduce_to(dx, base.shape), de]


def _where(op: Op, grads: list, fwd: Fwd) -> list:
    g = grads[0]
    c = fwd(op.inputs[0])
    zero = _const(0.0, g)
    return [None, reduce_to(ops.where(c, g, zero), op.inputs[1].shape), reduce_to(ops.where(c, zero, g), op.inputs[2].shape)]


def _mean(op: Op, grads: list, fwd: Fwd) -> list:
    x = op.inputs[0]
    n = 1
    for a in op.attrs["axes"]:
        n *= x.shape[a]
    return [ops.div(expand_reduced(grads[0], op), _const(float(n), grads[0]))]


GRAD_RULES: dict[str, Rule] = {
    "Relu": lambda op, gs, fwd: [_grad_op("ReluGrad", gs[0], fwd(op.inputs[0]))],
    "Exp": lambda op, gs, fwd: [ops.mul(gs[0], fwd(op.outputs[0]))],
    "Log": lambda op, gs, fwd: [ops.div(gs[0], fwd(op.inputs[0]))],
    "Log2": lambda op, gs, fwd: [ops.div(gs[0], ops.mul(fwd(op.inputs[0]), _const(math.log(2.0), gs[0])))],
    "Sqrt": lambda op, gs, fwd: [ops.div(gs[0], ops.mul(fwd(op.outputs[0]), _const(2.0, gs[0])))],
    "Tanh": lambda op, gs, fwd: [ops.mul(gs[0], ops.sub(_const(1.0, gs[0]),
                                                      ops.mul(fwd(op.outputs[0]), fwd(op.outputs[0]))))],
    "Sin": lambda op, gs, fwd: [ops.mul(gs[0], ops.cos(fwd(op.inputs[0])))],
    "Cos": lambda op, gs, fwd: [ops.negate(ops.mul(gs[0], ops.sin(fwd(op.inputs[0]))))],
    "Abs": lambda op, gs, fwd: [_grad_op("AbsGrad", gs[0], fwd(op.inputs[0]))],
    "Swish": lambda op, gs, fwd: [_grad_op("SwishGrad", gs[0], fwd(op.inputs[0]))],
    "GeluErf": lambda op, gs, fwd: [_grad_op("GeluErfGrad", gs[0], fwd(op.inputs[0]))],
    "Identity": lambda op, gs, fwd: [gs[0]],
    "Pow": _pow,
    "Where": _where,
    "ReduceMean": _mean,
    "ReduceSumSquare": lambda op, gs, fwd: [ops.mul(ops.mul(expand_reduced(gs[0], op), fwd(op.inputs[0])),
                                                    _const(2.0, gs[0]))],
    "ReduceLogSumExp": lambda op, gs, fwd: [ops.mul(expand_reduced(gs[0], op),
                                                    ops.exp(ops.sub(fwd(op.inputs[0]),
                                                                    expand_reduced(fwd(op.outputs[0]), op))))],
    # no gradient flows through comparisons, logical ops, predicates and indices
    "Equal": _no_grad, "Greater": _no_grad, "And": _no_grad, "Or": _no_grad, "Not": _no_grad,
    "IsNaN": _no_grad, "IsInf": _no_grad, "IsFinite": _no_grad, "ArgMax": _no_grad, "ArgMin": _no_grad,
    "Sign": _no_grad, "Floor": _no_grad, "Ceil": _no_grad,
}

from .grad_rules_shape import SHAPE_GRAD_RULES  # noqa: E402 - shape, indexing and collective ops

GRAD_RULES.update(SHAPE_GRAD_RULES)

from .grad_rules_nn import GRAD_RULES_NN  # noqa: E402 - normalisation, conv, pooling, dropout

GRAD_RULES.update(GRAD_RULES_NN)

from .grad_rules_reduce import GRAD_RULES_REDUCE  # noqa: E402 - max/min/prod/norm reductions, clip, cumsum, fmod

GRAD_RULES.update(GRAD_RULES_REDUCE)

from .grad_rules_control import GRAD_RULES_CONTROL  # noqa: E402 - copies and float8 ops PopART cannot differentiate

GRAD_RULES.update(GRAD_RULES_CONTROL)

__all__ = ["GRAD_RULES", "expand_reduced", "reduce_to"]
