"""Stand-in for the PopART side of popxl-addons' C++ custom ops: a gradient of one's own.

A popxl-addons custom op is an ``Op`` (shape inference, ``getGradOps``) plus an ``Opx`` (the
Poplar program). The simulator builds the Opx's arithmetic from popxl ops, so it is executed,
lowered and costed like any popxl op; autodiff must then not differentiate those ops one by one
(some are collectives PopART cannot differentiate, and the custom op's gradient is its own grad
op's program, not the derivative of the forward program). :func:`with_gradient` ends such a
composition in one pass-through op of the custom op's type whose gradient rule is the custom
grad op, again built from popxl ops. The pass-through op copies its value (a small elementwise
op in the compile model: the custom op's outputs are usually a loss or an activation that the
composition's last op produced anyway).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from profcompare.emulator.popxl.execution import CompiledGraph, Executor, Kernel, _kernel
from profcompare.emulator.popxl.graph import Op, add_op
from profcompare.emulator.popxl.tensor import Tensor
from profcompare.emulator.popxl.transforms.grad_rules import GRAD_RULES

#: brings a forward tensor into the gradient graph (autodiff's ``fwd``)
Fwd = Callable[[Tensor], Tensor]
#: the custom grad op: (gradients of the outputs, fwd) -> one gradient (or None) per differentiable input
GradFn = Callable[[Sequence[Tensor | None], Fwd], Sequence[Tensor | None]]

_REGISTERED: set[str] = set()


def _pass_through(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    n_out = len(op.outputs)
    values = [cg.slot[t] for t in op.inputs[-n_out:]]
    outs = [cg.slot[t] for t in op.outputs]

    def run(env: list) -> None:
        for v, o in zip(values, outs):
            env[o] = np.array(env[v])
    return run


def _rule(op: Op, out_grads: list, fwd: Fwd) -> list:
    n_diff = op.attrs["differentiable"]
    grads = list(op.attrs["grad"](out_grads, fwd))
    if len(grads) != n_diff:
        raise ValueError(f"{op.type}: the gradient gives {len(grads)} tensors for {n_diff} inputs")
    return grads + [None] * (len(op.inputs) - n_diff)


def register(op_type: str) -> None:
    """Make ``op_type`` a pass-through op type with a per-op gradient (idempotent)."""
    if op_type in _REGISTERED:
        return
    _kernel(op_type)(_pass_through)
    GRAD_RULES[op_type] = _rule
    _REGISTERED.add(op_type)


def with_gradient(op_type: str, name: str, differentiable: Sequence[Tensor], values: Sequence[Tensor],
                  grad: GradFn, attrs: dict[str, Any] | None = None,
                  out_names: Sequence[str] | None = None) -> list[Tensor]:
    """Return copies of ``values`` (the custom op's outputs, computed by popxl ops) made by one
    ``op_type`` op whose inputs are ``differentiable`` then ``values``. Autodiff gives
    ``differentiable`` the gradients ``grad(output gradients, fwd)`` and nothing to ``values``
    (so the composition behind them is not differentiated)."""
    register(op_type)
    names = list(out_names) if out_names is not None else [f"{name}_out"] * len(values)
    op = add_op(op_type, name, [*differentiable, *values],
                [(n, v.shape, v.dtype, v.meta_shape) for n, v in zip(names, values)],
                {**(attrs or {}), "grad": grad, "differentiable": len(differentiable)})
    return list(op.outputs)


__all__ = ["Fwd", "GradFn", "register", "with_gradient"]
