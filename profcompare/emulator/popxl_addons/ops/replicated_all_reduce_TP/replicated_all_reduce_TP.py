"""popxl-addons' tensor-parallel all-reduce (``popxl_addons.ops.replicated_all_reduce_TP``, the C++
op ``ReplicatedAllReduceTP``): PopART's ReplicatedAllReduceOp (``add`` only) with two flags and
a gradient. Its grad op is the same op with the flags swapped:

- ``replicated_all_reduce_identical_inputs``: the inputs are the same on every replica, so the
  op is an identity (PopART's OpToIdentityPattern replaces it) and its gradient an all-reduce;
- ``replicated_all_reduce_identical_grad_inputs``: an all-reduce whose gradient is an identity;
- ``replicated_all_reduce`` (3.4 only): an all-reduce whose gradient is an all-reduce.

Here the op is a simulator op of type ``ReplicatedAllReduceTP`` with the collective attributes
of popxl's all-reduce plus the two flags; an op with ``identical_inputs`` runs as the identity
the pattern leaves (the simulator applies it implicitly, so running without the pattern does
not fail as on the IPU).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from profcompare.emulator.popxl.execution import _KERNELS, CompiledGraph, Executor, Kernel, _kernel
from profcompare.emulator.popxl.graph import Op, add_op
from profcompare.emulator.popxl.ops.collectives import _group, _op
from profcompare.emulator.popxl.transforms.grad_rules import GRAD_RULES
from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons._generation import current

_ALL = ["replicated_all_reduce_identical_inputs", "replicated_all_reduce_identical_grad_inputs"]

OP_TYPE = "ReplicatedAllReduceTP"


@_kernel(OP_TYPE)
def _kernel_tp(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    if not op.attrs["identical_inputs"]:
        return _KERNELS["ReplicatedAllReduce"](op, cg, ex)  # type: ignore[return-value]
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]

    def run(env: list) -> None:
        env[o] = np.array(env[i])
    return run


def _tp(t: popxl.Tensor, op: str, group: Any, identical_inputs: bool, identical_grad_inputs: bool) -> popxl.Tensor:
    reduce_op = _op(op)
    if reduce_op != "add":
        raise RuntimeError("Cannot create ReplicatedAllReduceTPOp op. CollectiveOperator::Add is the only collective "
                           "operator that is currently implemented.")
    g = _group(group)
    attrs = {"op": reduce_op, "group": g, "group_size": g.group_size, "identical_inputs": identical_inputs,
             "identical_grad_inputs": identical_grad_inputs}
    created = add_op(OP_TYPE, "replicated_all_reduce_TP", [t],
                     [("replicated_all_reduce_TP_out", t.shape, t.dtype, t.meta_shape)], attrs)
    return created.outputs[0]


def _grad(op: Op, out_grads: list, fwd: Callable[[Any], Any]) -> list:
    a = op.attrs
    return [_tp(out_grads[0], a["op"], a["group"], a["identical_grad_inputs"], a["identical_inputs"])]


GRAD_RULES[OP_TYPE] = _grad


def replicated_all_reduce_identical_inputs(t: popxl.Tensor, op: str = "add", group: Any = None) -> popxl.Tensor:
    """Return ``t`` (identical on every replica of ``group``); its gradient is all-reduced."""
    return _tp(t, op, group, True, False)


def replicated_all_reduce_identical_grad_inputs(t: popxl.Tensor, op: str = "add", group: Any = None
                                                ) -> popxl.Tensor:
    """Return ``t`` summed over the replicas of ``group``; its gradient passes unchanged."""
    return _tp(t, op, group, False, True)


def _replicated_all_reduce(t: popxl.Tensor, op: str = "add", group: Any = None) -> popxl.Tensor:
    """Return ``t`` summed over the replicas of ``group``; its gradient is all-reduced too."""
    return _tp(t, op, group, False, False)


_replicated_all_reduce.__name__ = _replicated_all_reduce.__qualname__ = "replicated_all_reduce"


def __getattr__(name: str) -> Any:
    # popxl-addons 3.4 adds replicated_all_reduce (and lists it in __all__); 3.0 has neither
    if name == "replicated_all_reduce" and current() != "3.0":
        return _replicated_all_reduce
    if name == "__all__":
        return _ALL if current() == "3.0" else [*_ALL, "replicated_all_reduce"]
    raise AttributeError(f"module 'popxl_addons.ops.replicated_all_reduce_TP.replicated_all_reduce_TP' has no "
                         f"attribute {name!r}")
