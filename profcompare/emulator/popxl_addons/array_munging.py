"""Host-side numpy helpers for laying out data over replicas (``popxl_addons.array_munging``,
new in popxl-addons 3.4; absent from 3.0).

Conventions: "shard" splits one axis into ``n`` equal pieces and stacks them on a new leading
axis (one entry per replica); "unshard" undoes it; an ``axis`` of the unshard functions counts
the axes of one shard, i.e. without the stacking axis.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

__all__ = [
    "shard",
    "unshard_arrays",
    "unshard",
    "repeat",
    "repeat_axis",
    "split2D",
    "shard2D",
    "unshard2D",
    "repeat_shard",
    "tensor_parallel_input",
    "tensor_parallel_output",
    "pad_axis",
    "squeeze_safe",
    "handle_negative_axis",
]


def handle_negative_axis(x: np.ndarray, axis: int) -> int:
    """Return ``axis`` as a non-negative axis of ``x``. Raises IndexError for a 0-d array or an
    axis out of range."""
    if x.ndim == 0:
        raise IndexError("Array is 0-dimensional")
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"Axis is out of range. Axis: {axis}. Array Rank: {x.ndim}")
    return axis % x.ndim


def shard(x: np.ndarray, n: int, axis: int) -> np.ndarray:
    """Return ``x`` split into ``n`` equal pieces along ``axis``, stacked on a new first axis
    (shape ``(n, ..., x.shape[axis] // n, ...)``)."""
    axis = handle_negative_axis(x, axis)
    return np.stack(np.split(x, n, axis=axis))


def unshard_arrays(xs: list[np.ndarray], axis: int) -> np.ndarray:
    """Return the arrays ``xs`` (each with a leading axis of length 1) joined along ``axis`` of
    their remaining axes, with the leading axis removed. Raises ValueError for mixed ranks."""
    if any(x.ndim != xs[0].ndim for x in xs):
        raise ValueError(f"All arrays must be of the same rank. Ranks: {','.join(str(x.ndim) for x in xs)}")
    joined_axis = axis + 1 if axis >= 0 else handle_negative_axis(xs[0], axis)
    return np.concatenate(xs, axis=joined_axis).squeeze(0)


def unshard(x: np.ndarray, axis: int) -> np.ndarray:
    """Undo :func:`shard`: return the shards on the first axis of ``x`` joined along ``axis``
    (an axis of one shard)."""
    return unshard_arrays(list(np.split(x, x.shape[0], axis=0)), axis)


def repeat(x: np.ndarray, n: int, axis: int = 0) -> np.ndarray:
    """Return ``n`` copies of ``x`` stacked on a new axis inserted at ``axis``."""
    return np.repeat(np.expand_dims(x, axis), n, axis=axis)


def repeat_axis(x: np.ndarray, n: int, axis: int = 0) -> np.ndarray:
    """Return ``x`` tiled ``n`` times along its existing ``axis``."""
    return np.concatenate([x] * n, axis=axis)


def split2D(x: np.ndarray, n_1: int, n_2: int, axis_1: int, axis_2: int) -> list[list[np.ndarray]]:
    """Return ``x`` split in ``n_1`` pieces along ``axis_1``, each split in ``n_2`` pieces along
    ``axis_2`` (a list of ``n_1`` lists of ``n_2`` arrays)."""
    return [np.split(piece, n_2, axis_2) for piece in np.split(x, n_1, axis_1)]


def shard2D(x: np.ndarray, n_1: int, n_2: int, axis_1: int, axis_2: int) -> np.ndarray:
    """Return the ``n_1 * n_2`` pieces of :func:`split2D` stacked on a new first axis
    (``axis_1`` outermost)."""
    return np.stack([piece for row in split2D(x, n_1, n_2, axis_1, axis_2) for piece in row])


def unshard2D(x: np.ndarray, n_1: int, n_2: int, axis_1: int, axis_2: int) -> np.ndarray:
    """Undo :func:`shard2D` (axes count the axes of one piece)."""
    if x.shape[0] != n_1 * n_2:
        raise ValueError(f"unshard2D: the first axis has {x.shape[0]} pieces, not {n_1} * {n_2}")
    pieces = list(np.split(x, x.shape[0], axis=0))
    rows = [unshard_arrays(pieces[i:i + n_2], axis_2) for i in range(0, len(pieces), n_2)]
    return np.concatenate(rows, axis=axis_1)


def repeat_shard(x: np.ndarray, n_repeats: int, n_shards: int, shard_axis: int,
                 sharded_tensor: Literal["contiguous", "strided"] = "contiguous") -> np.ndarray:
    """Return the ``n_shards`` shards of ``x`` (along ``shard_axis``) repeated ``n_repeats``
    times on the first axis: contiguous ``s0 s1 s0 s1``, strided ``s0 s0 s1 s1``. Raises
    ValueError for another ``sharded_tensor``."""
    shards = shard(x, n_shards, shard_axis)
    if sharded_tensor == "contiguous":
        return repeat_axis(shards, n_repeats, 0)
    if sharded_tensor == "strided":
        return np.repeat(shards, n_repeats, axis=0)
    raise ValueError(f"sharded_tensor should be either 'contiguous' or 'strided'. Not: {sharded_tensor}")


def _check_tp(tp: int, rf: int) -> None:
    if tp > rf:
        raise ValueError(f"tensor parallel factor `tp` is not less than replication factor `rf`: {tp} > {rf}")
    if rf % tp:
        raise ValueError(f"tensor parallel factor `tp` does not equally divide replication factor `rf`: "
                         f"rf/tp={rf / tp}")


def tensor_parallel_input(input_data: np.ndarray, tp: int, rf: int,
                          repeat_fn: Callable[[np.ndarray, int], np.ndarray] | None = None) -> np.ndarray:
    """Return host input ``[n, *data_shape]`` laid out as ``[n * tp / rf, rf, *data_shape]`` so
    that each group of ``tp`` consecutive replicas gets the same sample (copy ``i`` of a group
    passed through ``repeat_fn(copy, i)`` when given); an axis of length 1 among the first two
    is squeezed, as popxl.Session expects. Raises ValueError unless ``tp`` divides ``rf``."""
    _check_tp(tp, rf)
    data = np.expand_dims(input_data, axis=1)
    copies = [repeat_fn(data.copy(), i) if repeat_fn else data for i in range(tp)]
    laid_out = np.concatenate(copies, axis=1).reshape(-1, rf, *input_data.shape[1:])
    return squeeze_safe(laid_out, [0, 1])


def tensor_parallel_output(output_data: np.ndarray, num_host_transfers: int, tp: int, rf: int,
                           data_shape: tuple[int, ...], tp_identical: bool = True,
                           true_num_host_transfers: int | None = None) -> np.ndarray:
    """Return Session output ``[num_host_transfers, rf, *data_shape]`` as
    ``[samples, *data_shape]`` (the first replica of each tensor-parallel group) or, when
    ``tp_identical`` is False, ``[samples, tp, *data_shape]``; only the first
    ``true_num_host_transfers`` transfers are kept when given. Raises ValueError unless ``tp``
    divides ``rf``."""
    _check_tp(tp, rf)
    out = output_data.reshape(num_host_transfers, rf // tp, tp, *data_shape)
    if true_num_host_transfers is not None:
        out = out[:true_num_host_transfers]
    out = out.reshape(-1, tp, *data_shape)
    return out[:, 0] if tp_identical else out


def pad_axis(x: np.ndarray, n: int, axis: int, value: int | float = 0) -> np.ndarray:
    """Return ``x`` padded at the end of ``axis`` with ``value`` to length ``n``. Raises
    ValueError when the axis is already longer."""
    if x.shape[axis] > n:
        raise ValueError(f"pad_axis: axis {axis} has length {x.shape[axis]} > {n}")
    widths = [(0, 0)] * x.ndim
    widths[axis] = (0, n - x.shape[axis])
    return np.pad(x, widths, constant_values=value)


def squeeze_safe(x: np.ndarray, axis: int | Sequence[int] | None = None) -> np.ndarray:
    """Return ``x`` without the given axes (all when None) that have length 1; axes of another
    length are kept rather than raising as ``np.squeeze`` does."""
    if axis is None:
        return np.squeeze(x)
    axes = [axis] if isinstance(axis, int) else list(axis)
    squeezable = tuple(sorted({a for a in (handle_negative_axis(x, a) for a in axes) if x.shape[a] == 1}))
    return np.squeeze(x, axis=squeezable) if squeezable else x

