"""popxl.ops shape family (popxl 3.4 signatures, defaults and errors): concat(_), slice(_),
split, squeeze, subsample, transpose_, detach_.

Out-of-place ops produce fresh tensors; ``slice_``, ``transpose_`` and ``detach_`` are aliases of
their input (writes through them reach it), as in PopART. ``concat_`` aliases several inputs,
which numpy cannot express as one view: it computes a fresh concatenation and its kernel refuses
programs that modify its output or an input after it (see kernels_shape.py). Numeric kernels live
in ``popxl/kernels_shape.py``; gradients in ``transforms/grad_rules_shape.py``.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable, Sequence

from ..graph import check_in_graph
from ..tensor import Tensor
from ._util import add_op, gcg, out, single
from .core import _axis, reshape

#: popxl's defaults for an open slice end (int32 limits, as ONNX Slice takes them)
INT_MIN = -(2 ** 31)
INT_MAX = 2 ** 31 - 1

IntOrList = int | Sequence[int | None] | None


def _tensors(api: str, ts: Iterable[Tensor]) -> list[Tensor]:
    ts = list(ts)
    check_in_graph(gcg(), **{f"ts_{i}": t for i, t in enumerate(ts)})
    if not ts:
        raise ValueError(f"{api}: cannot concatenate zero tensors")
    kinds = [t.dtype for t in ts]
    if len(set(kinds)) > 1:
        raise TypeError(f"{api}: all inputs must have the same dtype, got {[d.name for d in kinds]}")
    return ts


def _concat_shape(api: str, ts: list[Tensor], axis: int) -> tuple[int, tuple[int, ...]]:
    first = ts[0]
    if first.rank == 0:
        raise ValueError(f"{api}: cannot concatenate scalars ({first.id})")
    ax = _axis(first, axis)
    for t in ts[1:]:
        if t.rank != first.rank or any(a != b for i, (a, b) in enumerate(zip(t.shape, first.shape)) if i != ax):
            raise ValueError(f"{api}: shapes {first.shape} ({first.id}) and {t.shape} ({t.id}) differ "
                             f"outside axis {ax}")
    size = sum(t.shape[ax] for t in ts)
    return ax, tuple(size if i == ax else s for i, s in enumerate(first.shape))


def concat(ts: Iterable[Tensor], axis: int = 0) -> Tensor:
    """Join ``ts`` (same dtype, same shape except on ``axis``) along ``axis``; a new tensor."""
    ts = _tensors("concat", ts)
    ax, shape = _concat_shape("concat", ts, axis)
    return single(add_op("Concat", "concat", ts, [out("concat_out", shape, ts[0].dtype)], {"axis": ax}))


def concat_(ts: Iterable[Tensor], axis: int = 0) -> Tensor:
    """concat whose output aliases the inputs (see the module docstring for the simulator's limit)."""
    ts = _tensors("concat_", ts)
    ax, shape = _concat_shape("concat_", ts, axis)
    return single(add_op("ConcatInplace", "concat_inplace", ts, [out("concat_out", shape, ts[0].dtype)],
                         {"axis": ax}))


def _as_list(value: IntOrList) -> list | None:
    if value is None:
        return None
    if isinstance(value, int):
        return [value]
    return list(value)


def slice_args(t: Tensor, start: IntOrList, stop: IntOrList, step: IntOrList,
               axis: int | Sequence[int] | None) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...],
                                                          tuple[int, ...]]:
    """popxl's normalisation of slice arguments: (starts, stops, steps, axes), one entry per slice.

    Scalars become one-element lists; missing steps are 1, missing starts 0 (-1 backwards),
    missing stops run to the end (INT_MAX, or INT_MIN backwards); axes default to 0..N-1."""
    lists = {"start": _as_list(start), "stop": _as_list(stop), "step": _as_list(step),
             "axis": _as_list(axis)}
    n = None
    for key, value in lists.items():
        if value is not None:
            if n is None:
                n = len(value)
            elif len(value) != n:
                raise ValueError(f"All inputs must have same length. `{key}` has length {len(value)} != {n}.")
    assert n is not None
    steps = [1 if s is None else int(s) for s in (lists["step"] or [None] * n)]
    if any(s == 0 for s in steps):
        raise ValueError(f"slice: step must not be 0, got {steps}")
    axes = list(range(n)) if lists["axis"] is None else [int(a) for a in lists["axis"]]
    starts = [(0 if steps[i] > 0 else -1) if s is None else int(s)
              for i, s in enumerate(lists["start"] or [None] * n)]
    stops = [(INT_MAX if steps[i] > 0 else INT_MIN) if s is None else int(s)
             for i, s in enumerate(lists["stop"] or [None] * n)]
    norm_axes = []
    for a in axes:
        if not -t.rank <= a < t.rank:
            raise ValueError(f"slice: axis {a} is out of range for {t.id} of rank {t.rank}")
        norm_axes.append(a % t.rank)
    if len(set(norm_axes)) != len(norm_axes):
        raise ValueError(f"slice: axes {axes} repeat an axis")
    return tuple(starts), tuple(stops), tuple(steps), tuple(norm_axes)


def slice_shape(t: Tensor, starts: Sequence[int], stops: Sequence[int], steps: Sequence[int],
                axes: Sequence[int]) -> tuple[int, ...]:
    """The shape of t after the normalised slices (ONNX clamping, as Python slicing does)."""
    shape = list(t.shape)
    for b, e, s, a in zip(starts, stops, steps, axes):
        shape[a] = len(range(*builtins.slice(b, e, s).indices(t.shape[a])))
    return tuple(shape)


def _slice(api: str, op_type: str, t: Tensor, start: IntOrList, stop: IntOrList, step: IntOrList,
           axis: int | Sequence[int] | None) -> Tensor:
    check_in_graph(gcg(), t=t)
    if start is None and stop is None and step is None:
        return t
    starts, stops, steps, axes = slice_args(t, start, stop, step, axis)
    shape = slice_shape(t, starts, stops, steps, axes)
    attrs = {"starts": starts, "stops": stops, "steps": steps, "axes": axes}
    return single(add_op(op_type, api, [t], [out("slice_out", shape, t.dtype)], attrs))


def slice(t: Tensor, start: IntOrList = None, stop: IntOrList = None, step: IntOrList = None,
          axis: int | Sequence[int] | None = None) -> Tensor:
    """Select ``t[start:stop:step]`` on each given axis (lists give several slices); a new tensor.

    With no start, stop or step, returns ``t`` itself."""
    return _slice("slice", "Slice", t, start, stop, step, axis)


def slice_(t: Tensor, start: IntOrList = None, stop: IntOrList = None, step: IntOrList = None,
           axis: int | Sequence[int] | None = None) -> Tensor:
    """slice as an alias of ``t``: in-place changes to the result reach ``t``."""
    return _slice("slice_inplace", "SliceInplace", t, start, stop, step, axis)


def split(t: Tensor, splits: int | list[int], axis: int = 0) -> list[Tensor]:
    """Cut ``t`` along ``axis`` into ``splits`` equal parts (int) or parts of the given lengths."""
    check_in_graph(gcg(), t=t)
    ax = _axis(t, axis)
    n = t.shape[ax]
    if isinstance(splits, int):
        if splits <= 0 or n % splits:
            raise ValueError(f"Split {splits} does not equally divide tensor axis {ax} of length {n}.")
        sizes = [n // splits] * splits
    else:
        sizes = [int(s) for s in splits]
        if any(s < 0 for s in sizes) or builtins.sum(sizes) != n:
            raise ValueError(f"split: lengths {sizes} do not add up to axis {ax} of length {n}")
    outs = [out(f"{t.name}_split_{i}", tuple(s if d == ax else x for d, x in enumerate(t.shape)), t.dtype)
            for i, s in enumerate(sizes)]
    return list(add_op("Split", "split", [t], outs, {"axis": ax, "splits": tuple(sizes)}).outputs)


def squeeze(t: Tensor, axes: list[int] | None = None) -> Tensor:
    """Drop axes of length one (all of them, or those in ``axes``); a reshape of ``t``."""
    if axes is None:
        return reshape(t, [s for s in t.shape if s != 1])
    norm = sorted(_axis(t, a) for a in axes)
    if len(norm) != len(set(norm)):
        raise ValueError("Axes contains duplicates")
    for a in norm:
        if t.shape[a] != 1:
            raise ValueError(f"Can't squeeze axis '{a}' as length of axis is >1: {t.shape[a]}")
    return reshape(t, [s for i, s in enumerate(t.shape) if i not in norm])


def subsample(t: Tensor, strides: int | Iterable[int]) -> Tensor:
    """Every n-th element per axis (``t[::s0, ::s1, ...]``); missing trailing strides are 1."""
    check_in_graph(gcg(), t=t)
    s = [int(strides)] if isinstance(strides, int) else [int(x) for x in strides]
    if len(s) > t.rank:
        raise ValueError("The length of subsample `strides` must not be greater than the rank of the input tensor.")
    s += [1] * (t.rank - len(s))
    if any(x <= 0 for x in s):
        raise ValueError(f"subsample: strides must be positive, got {s}")
    shape = tuple(-(-n // x) for n, x in zip(t.shape, s))
    return single(add_op("Subsample", "subsample", [t], [out("subsample_out", shape, t.dtype)],
                         {"strides": tuple(s)}))


def transpose_(t: Tensor, permutation: Iterable[int] | None = None) -> Tensor:
    """transpose as an alias of ``t`` (axes reversed by default)."""
    check_in_graph(gcg(), t=t)
    perm = tuple(range(t.rank))[::-1] if permutation is None else tuple(int(p) for p in permutation)
    if sorted(perm) != list(range(t.rank)):
        raise ValueError(f"transpose_: {perm} is not a permutation of the {t.rank} axes of {t.id}")
    shape = tuple(t.shape[p] for p in perm)
    return single(add_op("TransposeInplace", "transpose_inplace", [t], [out(f"{t.name}_T", shape, t.dtype)],
                         {"perm": perm}))


def detach_(t: Tensor) -> Tensor:
    """detach as an alias of ``t``: no gradient flows through it."""
    check_in_graph(gcg(), t=t)
    return single(add_op("DetachInplace", "detach_inplace", [t], [out("detach_out", t.shape, t.dtype)]))


__all__ = ["concat", "concat_", "detach_", "slice", "slice_", "slice_args", "slice_shape", "split", "squeeze",
           "subsample", "transpose_"]
