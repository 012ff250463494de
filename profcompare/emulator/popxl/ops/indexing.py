"""popxl.ops indexing family (popxl 3.4 signatures, defaults and errors): gather, groupedgather,
tied_gather, scatter, scatter_reduce, dynamic_slice, dynamic_update(_), onehot, topk.

Indices are checked when the program runs: an index outside its axis (negative ones included)
raises a ValueError naming the op, where the IPU would produce undefined data; only
``zero_OOR=True`` gathers give zeros for them, as popxl documents. Numeric kernels live in
``popxl/kernels_shape.py``; gradients in ``transforms/grad_rules_shape.py``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .. import dtypes
from ..errors import SimulatorNotImplementedError, not_implemented_message
from ..graph import check_in_graph
from ..tensor import Constant, Tensor
from ._util import add_op, gcg, out, single

#: scatter_reduce reductions popxl accepts
SCATTER_REDUCTIONS = ("sum", "min", "max", "none")


def _int_tensor(api: str, name: str, t: Tensor) -> None:
    if not t.dtype.is_int:
        raise TypeError(f"{api}: {name} {t.id} must have an integer dtype, got {t.dtype.name}")


def _amp(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    if not 0.0 < value <= 1.0:
        raise ValueError(f"available_memory_proportion must be in (0, 1], got {value}")
    return value


def _gather(api: str, op_type: str, out_name: str, t: Tensor, indices: Tensor, axis: int, group_size: int,
            available_memory_proportion: float | None, zero_OOR: bool) -> Tensor:
    check_in_graph(gcg(), t=t, indices=indices)
    _int_tensor(api, "indices", indices)
    if t.rank == 0:
        raise ValueError(f"{api}: cannot gather from a scalar ({t.id})")
    if not -t.rank <= axis < t.rank:
        raise ValueError(f"{api}: axis = {axis} is outside the acceptable range [{-t.rank}, {t.rank - 1}]")
    ax = axis % t.rank
    group_size = int(group_size or 1)
    ishape = indices.shape
    if group_size > 1:
        if ax == 0:
            raise ValueError(f"{api}: axis = 0 indicates the dimension of the group")
        if t.shape[0] != group_size or not ishape or ishape[0] != group_size:
            raise ValueError(f"{api}: t {t.shape} and indices {ishape} must both lead with the group of "
                             f"{group_size}")
        ishape = ishape[1:]
    shape = t.shape[:ax] + ishape + t.shape[ax + 1:]
    attrs = {"axis": ax, "group_size": group_size, "zero_OOR": bool(zero_OOR),
             "available_memory_proportion": _amp(available_memory_proportion)}
    return single(add_op(op_type, api, [t, indices], [out(out_name, shape, t.dtype)], attrs))


def groupedgather(t: Tensor, indices: Tensor, axis: int = 0, group_size: int | None = 1,
                  available_memory_proportion: float | None = None, zero_OOR: bool = False) -> Tensor:
    """gather per group: ``t`` and ``indices`` lead with the group axis; group g gathers from
    ``t[g]`` with ``indices[g]`` along ``axis`` (which must not be 0 when grouped)."""
    return _gather("gather", "Gather", "gather_out", t, indices, axis, group_size or 1,
                   available_memory_proportion, zero_OOR)


def gather(t: Tensor, indices: Tensor, axis: int = 0, available_memory_proportion: float | None = None,
           zero_OOR: bool = False) -> Tensor:
    """``numpy.take(t, indices, axis)``: shape ``t.shape[:axis] + indices.shape + t.shape[axis+1:]``."""
    return _gather("gather", "Gather", "gather_out", t, indices, axis, 1, available_memory_proportion, zero_OOR)


def tied_gather(t: Tensor, indices: Tensor, axis: int = 0, available_memory_proportion: float | None = None,
                zero_OOR: bool = False) -> Tensor:
    """gather with the same values; on the IPU the indices' layout is left to a following matmul."""
    return _gather("tiedgather", "TiedGather", "tiedgather_out", t, indices, axis, 1,
                   available_memory_proportion, zero_OOR)


def scatter(t: Tensor, indices: Tensor, values: Tensor, axis: int = 0,
            available_memory_proportion: float | None = None) -> Tensor:
    """A copy of ``t`` with ``values`` written element-wise at ``indices`` along ``axis``
    (ONNX ScatterElements: ``indices`` and ``values`` share a shape and ``t``'s rank)."""
    check_in_graph(gcg(), t=t, indices=indices, values=values)
    _int_tensor("scatter", "indices", indices)
    if t.dtype != values.dtype:
        raise TypeError(f"scatter: values {values.id} ({values.dtype.name}) must have t's dtype {t.dtype.name}")
    if t.rank == 0 or indices.rank != t.rank or values.shape != indices.shape:
        raise ValueError(f"scatter: t {t.shape}, indices {indices.shape} and values {values.shape} must have the "
                         "same rank (>= 1), indices and values the same shape")
    if not -t.rank <= axis < t.rank:
        raise ValueError(f"scatter: axis = {axis} is outside the acceptable range [{-t.rank}, {t.rank - 1}]")
    ax = axis % t.rank
    if any(i > s for d, (i, s) in enumerate(zip(indices.shape, t.shape)) if d != ax):
        raise ValueError(f"scatter: indices {indices.shape} exceed t {t.shape} outside axis {ax}")
    attrs = {"axis": ax, "available_memory_proportion": _amp(available_memory_proportion)}
    return single(add_op("Scatter", "scatter", [t, indices, values], [out("scatter_out", t.shape, t.dtype)], attrs))


def scatter_reduce(data: Tensor, indices: Tensor, reduction: str, initial_values: Tensor | None = None,
                   axis: int = 0, axis_size: int | None = None, enable_index_broadcast: int = True,
                   available_memory_proportion: float | None = None) -> Tensor:
    """Reduce ``data`` into an output along ``axis`` at positions ``indices`` ('sum', 'min', 'max',
    or 'none' = write). The output is ``initial_values`` reduced with the scattered data, or
    zeros-based with ``axis_size`` on ``axis`` (positions nothing reaches stay 0).

    Indices either have data's shape or are a vector along ``axis`` broadcast over the other axes;
    other shapes are refused by the simulator."""
    if initial_values is None and axis_size is None:
        raise ValueError("One of initial_values and axis_size must be specified")
    if reduction not in SCATTER_REDUCTIONS:
        raise ValueError(f"The reduction must be one of {list(SCATTER_REDUCTIONS)}")
    tensors = {"data": data, "indices": indices}
    if initial_values is not None:
        tensors["initial_values"] = initial_values
    check_in_graph(gcg(), **tensors)
    _int_tensor("scatter_reduce", "indices", indices)
    if not -data.rank <= axis < data.rank:
        raise ValueError(f"ScatterReduceOp::setup axis = {axis} is outside the acceptable range "
                         f"[{-data.rank}, {data.rank - 1}]")
    ax = axis % data.rank
    if axis_size is None:
        axis_size = initial_values.shape[ax]  # type: ignore[union-attr]
    if int(axis_size) <= 0:
        raise ValueError(f"ScatterReduceOp axis_size = {axis_size} is not valid: must be > 0.")
    if indices.rank > data.rank:
        raise ValueError(f"Invalid rank for indices input. Indices rank {indices.rank} must be <= data input rank "
                         f"{data.rank}.")
    broadcast = indices.shape != data.shape
    if broadcast and not (enable_index_broadcast and indices.rank == 1 and indices.shape[0] == data.shape[ax]):
        raise SimulatorNotImplementedError(not_implemented_message(
            f"popxl.ops.scatter_reduce with indices {indices.shape} for data {data.shape} on axis {ax} "
            "(only data-shaped indices or a vector along the axis)"))
    shape = tuple(int(axis_size) if d == ax else s for d, s in enumerate(data.shape))
    if initial_values is not None:
        if initial_values.dtype != data.dtype:
            raise TypeError(f"scatter_reduce: initial_values must have data's dtype {data.dtype.name}")
        if initial_values.shape != shape:
            raise ValueError(f"scatter_reduce: initial_values {initial_values.shape} must have shape {shape}")
    inputs = [data, indices] + ([initial_values] if initial_values is not None else [])
    attrs = {"axis": ax, "axis_size": int(axis_size), "reduction": reduction, "broadcast": broadcast,
             "available_memory_proportion": _amp(available_memory_proportion)}
    return single(add_op("ScatterReduce", "scatterreduce", inputs, [out("scatterreduce_out", shape, data.dtype)],
                         attrs))


def _dynamic_args(api: str, t: Tensor, index: Tensor, axes: Iterable[int], sizes: Iterable[int],
                  ) -> tuple[tuple[int, ...], tuple[int, ...]]:
    _int_tensor(api, "index", index)
    ax = tuple(int(a) for a in axes)
    sz = tuple(int(s) for s in sizes)
    if len(ax) != len(sz):
        raise ValueError(f"{api}: axes {ax} and sizes {sz} must have the same length")
    if index.nelms != len(ax):
        raise ValueError(f"{api}: index {index.id} has {index.nelms} elements, one per axis ({len(ax)}) expected")
    for a, s in zip(ax, sz):
        if not 0 <= a < t.rank:
            raise ValueError(f"{api}: axis {a} is out of range for {t.id} of rank {t.rank}")
        if not 0 < s <= t.shape[a]:
            raise ValueError(f"{api}: size {s} on axis {a} must be in [1, {t.shape[a]}]")
    if len(set(ax)) != len(ax):
        raise ValueError(f"{api}: axes {ax} repeat an axis")
    return ax, sz


def dynamic_slice(t: Tensor, index: Tensor, axes: list[int], sizes: list[int], no_overlap: bool) -> Tensor:
    """A copy of ``t[index[i] : index[i] + sizes[i]]`` on each of ``axes``, the offsets read at run time."""
    check_in_graph(gcg(), t=t, index=index)
    ax, sz = _dynamic_args("dynamic_slice", t, index, axes, sizes)
    shape = tuple(sz[ax.index(d)] if d in ax else s for d, s in enumerate(t.shape))
    return single(add_op("DynamicSlice", "dynamicslice", [t, index], [out("dynamic_slice_out", shape, t.dtype)],
                         {"axes": ax, "sizes": sz, "no_overlap": bool(no_overlap)}))


def _dynamic_update(api: str, t: Tensor, index: Tensor, t_update: Tensor, axes: Iterable[int],
                    sizes: Iterable[int], no_overlap: bool, inplace: bool) -> Tensor:
    check_in_graph(gcg(), t=t, index=index, t_update=t_update)
    ax, sz = _dynamic_args(api, t, index, axes, sizes)
    if t_update.dtype != t.dtype:
        raise TypeError(f"{api}: t_update {t_update.id} ({t_update.dtype.name}) must have t's dtype {t.dtype.name}")
    region = tuple(sz[ax.index(d)] if d in ax else s for d, s in enumerate(t.shape))
    if t_update.shape != region:
        raise ValueError(f"{api}: t_update {t_update.shape} must have the updated region's shape {region}")
    attrs = {"axes": ax, "sizes": sz, "no_overlap": bool(no_overlap)}
    if inplace:
        return single(add_op("DynamicUpdateInplace", "dynamicupdate_inplace", [t, index, t_update],
                             [out("dynamicupdateinplace_out", t.shape, t.dtype)], attrs, modified=[t]))
    return single(add_op("DynamicUpdate", "dynamicupdate", [t, index, t_update],
                         [out("dynamic_update_out", t.shape, t.dtype)], attrs))


def dynamic_update(t: Tensor, index: Tensor, t_update: Tensor, axes: Iterable[int], sizes: Iterable[int],
                   no_overlap: bool) -> Tensor:
    """A copy of ``t`` with the region ``index .. index + sizes`` on ``axes`` replaced by ``t_update``."""
    return _dynamic_update("dynamic_update", t, index, t_update, axes, sizes, no_overlap, inplace=False)


def dynamic_update_(t: Tensor, index: Tensor, t_update: Tensor, axes: Iterable[int], sizes: Iterable[int],
                    no_overlap: bool) -> Tensor:
    """dynamic_update in place on ``t``; returns t's alias."""
    return _dynamic_update("dynamic_update_", t, index, t_update, axes, sizes, no_overlap, inplace=True)


def onehot(t: Tensor, num_classes: Tensor, values: Tensor, axis: int) -> Tensor:
    """One-hot encoding of the integer ``t``: a new axis of ``num_classes`` at ``axis`` (-1 = last)
    holding ``values[1]`` at each index and ``values[0]`` elsewhere; dtype of ``values``.

    ``num_classes`` must be a scalar constant (PopART reads its value when building the op);
    negative indices count from the end of the class axis."""
    check_in_graph(gcg(), t=t, num_classes=num_classes, values=values)
    _int_tensor("onehot", "t", t)
    if not isinstance(num_classes, Constant):
        raise ValueError(f"onehot: the depth tensor {num_classes.id} does not have data (it must be a constant)")
    if num_classes.nelms != 1:
        raise ValueError("onehot: the depth tensor should be rank 0")
    depth = int(np.asarray(num_classes._data).reshape(-1)[0])
    if depth <= 0:
        raise ValueError(f"onehot: num_classes must be positive, got {depth}")
    if values.nelms != 2:
        raise ValueError(f"onehot: values must hold [off, on] (2 elements), got shape {values.shape}")
    if axis != -1 and not 0 <= axis <= t.rank:
        raise ValueError(f"onehot: axis {axis} must be -1 or in [0, {t.rank}]")
    ax = t.rank if axis == -1 else axis
    shape = t.shape[:ax] + (depth,) + t.shape[ax:]
    return single(add_op("Onehot", "onehot", [t, num_classes, values], [out("onehot_out", shape, values.dtype)],
                         {"axis": ax, "depth": depth}))


def topk(t: Tensor, k: int, axis: int, largest: bool, sorted: bool,
         available_memory_proportion: float | None = None) -> tuple[Tensor, Tensor]:
    """(values, indices) of the ``k`` largest (or smallest) entries along ``axis``; indices are int32.

    Ties keep the lower index first; with ``sorted=False`` the simulator still returns them sorted
    (popxl leaves the order unspecified)."""
    check_in_graph(gcg(), t=t)
    if t.rank == 0:
        raise ValueError(f"topk: cannot take top-k of a scalar ({t.id})")
    if not -t.rank <= axis < t.rank:
        raise ValueError(f"topk: axis {axis} is out of range for {t.id} of rank {t.rank}")
    ax = axis % t.rank
    k = int(k)
    if not 0 < k <= t.shape[ax]:
        raise ValueError(f"Cannot take top-{k} on dim of size {t.shape[ax]}")
    shape = tuple(k if d == ax else s for d, s in enumerate(t.shape))
    attrs = {"k": k, "axis": ax, "largest": bool(largest), "sorted": bool(sorted),
             "available_memory_proportion": _amp(available_memory_proportion)}
    op = add_op("TopK", "topk", [t], [out("topk_out_value", shape, t.dtype),
                                      out("topk_out_indices", shape, dtypes.int32)], attrs)
    return op.outputs[0], op.outputs[1]


__all__ = ["SCATTER_REDUCTIONS", "dynamic_slice", "dynamic_update", "dynamic_update_", "gather", "groupedgather",
           "onehot", "scatter", "scatter_reduce", "tied_gather", "topk"]
