"""popxl-addons 3.4's ``linear_layout`` (``popxl_addons.ops.linear_layout``, the C++ op
``LinearLayout``; not in 3.0): a copy of ``t`` into a tensor mapped linearly over the tiles in
grains of ``bs`` elements. Values are unchanged; the op defines no gradient. Here it is one
simulator op of type ``LinearLayout`` whose kernel copies (an elementwise copy in the compile
model, which does not model tile mappings)."""

from __future__ import annotations

import numpy as np

from profcompare.emulator.popxl.execution import CompiledGraph, Executor, Kernel, _kernel
from profcompare.emulator.popxl.graph import Op, add_op
from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons.ops._generation_gate import require_34

require_34("popxl_addons.ops.linear_layout")

__all__ = ["linear_layout"]


@_kernel("LinearLayout")
def _copy_kernel(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i, o = cg.slot[op.inputs[0]], cg.slot[op.outputs[0]]

    def run(env: list) -> None:
        env[o] = np.array(env[i])
    return run


def linear_layout(t: popxl.Tensor, bs: int = 1) -> popxl.Tensor:
    """Return a copy of ``t`` (same shape and dtype) laid out linearly over the tiles in grains of
    ``bs`` elements."""
    op = add_op("LinearLayout", "linear_layout", [t], [("linear_layout", t.shape, t.dtype, t.meta_shape)],
                {"batchsize": int(bs)})
    return op.outputs[0]
