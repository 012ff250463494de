"""popxl.ops random family: dropout, shaped_dropout, random_uniform, random_normal and
split_random_seed (popxl 3.4 signatures, defaults and dtype rules).

Every random op takes a seed tensor of dtype uint32 and shape (2,), as popxl's. The values are
NOT Poplar's: Poplar's generator cannot be reproduced bit for bit, so the simulator draws from
numpy's Philox generator keyed by the seed tensor's value (see ``popxl/kernels_nn.py`` for the
exact keying). What holds, as on the IPU: the same seed value gives the same numbers (dropout's
forward and gradient use the same mask), different seeds give different numbers, a dropout
keeps each element with probability exactly 1 - p and scales kept elements by 1 / (1 - p), and
``split_random_seed`` keeps the seed's first word and derives the second from the modifier.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .. import dtypes
from ..tensor import Tensor, constant
from ._util import add_op, out, single


def _check_seed(api: str, seed: Tensor) -> None:
    if not isinstance(seed, Tensor):
        raise TypeError(f"{api}: the seed must be a popxl Tensor, got {type(seed).__name__}")
    if seed.shape != (2,) or seed.dtype != dtypes.uint32:
        raise ValueError(f"{api}: the seed tensor must have shape=(2,) and dtype=uint32; {seed.id} has shape "
                         f"{seed.shape} and dtype {seed.dtype}")


def _check_float(api: str, t: Tensor) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{api}: expected a popxl Tensor, got {type(t).__name__}")
    if t.dtype not in (dtypes.float16, dtypes.float32):
        raise TypeError(f"{api}: {t.id} has dtype {t.dtype}; {api} takes float16 or float32 tensors")


def _check_ratio(api: str, p: float) -> float:
    p = float(p)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"{api}: ratio value {p} is not valid; use a value in the interval [0, 1)")
    return p


def dropout(t: Tensor, seed_tensor: Tensor, p: float) -> Tensor:
    """``t`` with each element zeroed with probability ``p`` and the others scaled by 1 / (1 - p);
    the mask is a function of ``seed_tensor``'s value and t's shape."""
    api = "popxl.ops.dropout"
    _check_float(api, t)
    _check_seed(api, seed_tensor)
    ratio = _check_ratio(api, p)
    return single(add_op("Dropout", "dropout", [t, seed_tensor], [out("dropout_out", t.shape, t.dtype)],
                         {"ratio": ratio}))


def shaped_dropout(t: Tensor, seed_tensor: Tensor, shape: Iterable[int], ratio: float) -> Tensor:
    """Dropout with a mask of ``shape`` broadcast over ``t`` (whole rows, channels ... dropped together)."""
    api = "popxl.ops.shaped_dropout"
    _check_float(api, t)
    _check_seed(api, seed_tensor)
    r = _check_ratio(api, ratio)
    mask_shape = tuple(int(s) for s in shape)
    try:
        if tuple(np.broadcast_shapes(t.shape, mask_shape)) != t.shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"{api}: incompatible input tensor and dropout shape: {mask_shape} is not broadcastable "
                         f"to {t.id} {t.shape}") from None
    return single(add_op("ShapedDropout", "shapeddropout", [t, seed_tensor],
                         [out("shapeddropout_out", t.shape, t.dtype)], {"ratio": r, "shape": mask_shape}))


def _random(api: str, op_type: str, name: str, seed_tensor: Tensor, shape: tuple[int, ...], dtype: dtypes.dtype,
            attrs: dict) -> Tensor:
    _check_seed(api, seed_tensor)
    if dtype not in (dtypes.float16, dtypes.float32):
        raise TypeError(f"{api}: dtype must be float16 or float32, got {dtype}")
    shape = tuple(int(s) for s in shape)
    return single(add_op(op_type, name, [seed_tensor], [out(f"{name}_out", shape, dtype)], attrs))


def random_uniform(seed_tensor: Tensor, shape: tuple[int, ...], low: float = 0.0, high: float = 1.0,
                   dtype: dtypes.dtype = dtypes.float32) -> Tensor:
    """Samples of U[low, high) of ``shape`` and ``dtype`` (float16/float32) drawn from ``seed_tensor``."""
    return _random("popxl.ops.random_uniform", "RandomUniform", "random_uniform", seed_tensor, shape, dtype,
                   {"low": float(low), "high": float(high)})


def random_normal(seed_tensor: Tensor, shape: tuple[int, ...], mean: float = 0.0, std: float = 1.0,
                  dtype: dtypes.dtype = dtypes.float32) -> Tensor:
    """Samples of N(mean, std^2) of ``shape`` and ``dtype`` (float16/float32) drawn from ``seed_tensor``."""
    return _random("popxl.ops.random_normal", "RandomNormal", "random_normal", seed_tensor, shape, dtype,
                   {"mean": float(mean), "std": float(std)})


def _modify_seed(seed: Tensor, modifier: Tensor) -> Tensor:
    api = "popxl.ops.split_random_seed"
    _check_seed(api, seed)
    if modifier.shape != () or modifier.dtype != dtypes.uint32:
        raise ValueError(f"{api}: the modifier must be a uint32 scalar; {modifier.id} has shape {modifier.shape} "
                         f"and dtype {modifier.dtype}")
    return single(add_op("ModifyRandomSeed", "modify_seed", [seed, modifier], [out("modified_seed", (2,), seed.dtype)]))


def split_random_seed(seed: Tensor, n: int = 2) -> tuple[Tensor, ...]:
    """``n`` new seeds from ``seed``: seed i is ``seed`` modified by the uint32 constant i."""
    return tuple(_modify_seed(seed, constant(i, dtypes.uint32)) for i in range(int(n)))


_VALUES_NOTE = ("values from the simulator's Philox generator keyed by the seed tensor, not Poplar's: same seed, "
                "same numbers{}")
dropout.__simulator_note__ = _VALUES_NOTE.format("; keep probability 1 - p and 1 / (1 - p) scaling exact")  # type: ignore[attr-defined]
shaped_dropout.__simulator_note__ = dropout.__simulator_note__  # type: ignore[attr-defined]
random_uniform.__simulator_note__ = _VALUES_NOTE.format("")  # type: ignore[attr-defined]
random_normal.__simulator_note__ = _VALUES_NOTE.format("")  # type: ignore[attr-defined]
split_random_seed.__simulator_note__ = ("derived seeds keep the first word as popxl's do; the second word is the "  # type: ignore[attr-defined]
                                        "simulator's, not Poplar's")


__all__ = ["dropout", "random_normal", "random_uniform", "shaped_dropout", "split_random_seed"]
