"""popxl.ops statistics of a tensor (popxl 3.4 signatures): ``histogram`` (PopART ``Histogram``),
``median`` (``ReduceMedian``) and ``lamb_square`` (``LambSquare``).

- ``histogram`` sorts ``levels`` (PopART does) and counts into ``len(levels) + 1`` uint32 bins:
  ``x < levels[0]``, ``levels[i-1] <= x < levels[i]``, ``x >= levels[-1]`` (a NaN compares
  false with every level, so it lands in the last bin). The levels are rounded to the input's
  dtype first, and ``absolute_of_input`` compares ``|x|``. No gradient.
- ``median`` returns the lower median for an even count (sorted position ``n // 2 - 1``), as
  PopART's ``ReduceMedian``; its gradient goes to the one element whose index the forward op
  returned. ASSUMPTION: when values tie, the simulator picks the first such element in the
  flattened reduced axes (a stable sort); PopART sorts with ``popops::sortKeyValueInPlace``,
  which Poplar does not document as stable, so the IPU may pick another of the tied elements.
- ``lamb_square``: the float32 scalar sum of squares of every element (the LAMB optimizer's
  ``||x||^2``). No gradient.
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import dtypes
from ..graph import check_in_graph
from ..tensor import Tensor
from ._util import add_op, gcg, out, single
from .elementwise import reduce_axes


def histogram(t: Tensor, levels: list[float], absolute_of_input: bool) -> Tensor:
    """Counts of ``t``'s elements in the bins ``levels`` bound (see the module docstring): a
    uint32 tensor of shape ``(len(levels) + 1,)``."""
    check_in_graph(gcg(), t=t)
    values = [float(v) for v in levels]
    if not all(values[i] < values[i + 1] for i in range(len(values) - 1)):
        raise ValueError(f"The input levels `{levels}` is not a monotonically increasing list.")
    if t.dtype not in (dtypes.float16, dtypes.float32):
        raise TypeError(f"HistogramOp input type {t.dtype.name} is not supported (float16 or float32)")
    attrs = {"levels": tuple(sorted(values)), "absolute_of_input": bool(absolute_of_input),
             "flops": t.nelms * max(1, len(values))}
    return single(add_op("Histogram", "histogram", [t], [out("histogram_out", (len(values) + 1,), dtypes.uint32)],
                         attrs))


def median(t: Tensor, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:
    """The (lower) median of ``t`` over ``axis`` (all axes when None); t's dtype, reduced shape."""
    check_in_graph(gcg(), t=t)
    axes = reduce_axes(t, axis)
    shape = tuple(1 if i in axes else s for i, s in enumerate(t.shape)) if keepdims else tuple(
        s for i, s in enumerate(t.shape) if i not in axes)
    reduced = 1
    for a in axes:
        reduced *= t.shape[a]
    # sorting n values costs ~log2(n) comparisons each
    flops = t.nelms * max(1, reduced.bit_length())
    op = add_op("ReduceMedian", "ReduceMedian", [t], [out("median_out", shape, t.dtype),
                                                      out("median_indices_out", shape, dtypes.int32)],
                {"axes": axes, "keepdims": bool(keepdims), "flops": flops})
    return op.outputs[0]


def lamb_square(t: Tensor) -> Tensor:
    """The sum of the squares of every element of ``t``: a float32 scalar."""
    check_in_graph(gcg(), t=t)
    return single(add_op("LambSquare", "lamb_square", [t], [out("lamb_square_out", (), dtypes.float32)],
                         {"flops": 2 * t.nelms}))


__all__ = ["histogram", "lamb_square", "median"]
