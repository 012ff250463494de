"""popxl.ops for the simulated subset. Any other op raises a NotImplementedError naming it."""

from __future__ import annotations

from ..errors import module_getattr
from . import collectives, var_updates
from .call import CallSiteInfo, call, call_with_info
from .core import (
                   add,
                   add_,
                   cast,
                   detach,
                   div,
                   flatten,
                   flatten_,
                   gelu,
                   gelu_,
                   init,
                   matmul,
                   mul,
                   negate,
                   nll_loss_with_softmax_grad,
                   reshape,
                   reshape_,
                   scaled_add,
                   scaled_add_,
                   softmax,
                   sub,
                   sum,
                   transpose,
)
from .io import host_load, host_store, remote_load, remote_load_, remote_store

__getattr__ = module_getattr("popxl.ops")

__all__ = [
                   "CallSiteInfo",
                   "add",
                   "add_",
                   "call",
                   "call_with_info",
                   "cast",
                   "collectives",
                   "detach",
                   "div",
                   "flatten",
                   "flatten_",
                   "gelu",
                   "gelu_",
                   "host_load",
                   "host_store",
                   "init",
                   "matmul",
                   "mul",
                   "negate",
                   "nll_loss_with_softmax_grad",
                   "remote_load",
                   "remote_load_",
                   "remote_store",
                   "reshape",
                   "reshape_",
                   "scaled_add",
                   "scaled_add_",
                   "softmax",
                   "sub",
                   "sum",
                   "transpose",
                   "var_updates",
]
