"""popxl-addons 3.4's 4-bit group-quantised weights (``popxl_addons.ops.group_quantize_decompress``,
the C++ op ``GroupQuantizeDecompress`` and its codelet; not in 3.0), after FlexGen's scheme.

A packed tensor ``(rows, groups, ids)`` of uint16 holds four 4-bit ids per element, the first in
the top nibble (bits 12-15), then bits 8-11, 4-7, 0-3. The codelet unpacks each element into
four float16 values in that order and the Opx maps ``id * scale + bias`` (``scale`` and
``bias`` float16 ``(rows, groups, 1)``), giving ``(rows, groups * ids * 4)`` float16; the op
defines no gradient. Here the op is one simulator op of type ``GroupQuantizeDecompress`` with a
numpy kernel (two FLOPs per output element in the compile model); the optional transpose for
``dim`` is popxl's, as in popxl-addons.
"""

from __future__ import annotations

import numpy as np

from profcompare.emulator.popxl.execution import CompiledGraph, Executor, Kernel, _kernel
from profcompare.emulator.popxl.graph import Op, add_op
from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons.ops._generation_gate import require_34

require_34("popxl_addons.ops.group_quantize_decompress")

__all__ = ["group_quantize_decompress", "group_quantize_decompress_numpy", "group_quantize_compress_numpy"]

#: bit offsets of the four 4-bit ids of a packed uint16, in unpacking order
NIBBLE_SHIFTS = (12, 8, 4, 0)


def unpack_nibbles(packed: np.ndarray) -> np.ndarray:
    """Return the 4-bit ids of a uint16 array: shape ``(*packed.shape[:-1], packed.shape[-1] * 4)``,
    each element's four ids in :data:`NIBBLE_SHIFTS` order, as float16."""
    ids = np.stack([(packed >> s) & 15 for s in NIBBLE_SHIFTS], axis=-1)
    return ids.reshape(*packed.shape[:-1], packed.shape[-1] * 4).astype(np.float16)


def _last_axis_to(t: np.ndarray, dim: int) -> np.ndarray:
    if dim == -1:
        return t
    perm = list(range(t.ndim))
    perm.insert(dim, perm.pop(-1))
    return t.transpose(perm)


def group_quantize_decompress_numpy(t: np.ndarray, group_scale: np.ndarray, group_bias: np.ndarray,
                                    dim: int) -> np.ndarray:
    """Return the float16 values of packed ``t`` ``(*lead, groups, ids)`` rescaled per group:
    ``(*lead, groups * ids * 4)``, its last axis moved to ``dim`` when ``dim != -1``."""
    ids = unpack_nibbles(t)
    scaled = ids * group_scale + group_bias
    return _last_axis_to(scaled.reshape(*t.shape[:-2], t.shape[-2] * t.shape[-1] * 4), dim)


def group_quantize_compress_numpy(t: np.ndarray, group_size: int, dim: int
                                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (packed uint16 ``(*lead, groups, group_size // 4)``, scale, bias
    ``(*lead, groups, 1)`` float16) of ``t`` grouped along ``dim`` in runs of ``group_size``:
    ``scale = (max - min) / 15``, ``bias = min`` per group, ids rounded to nearest. Raises
    ValueError when ``t`` holds a non-finite value."""
    if dim != -1:
        perm = list(range(t.ndim))
        perm.append(perm.pop(dim))
        t = t.transpose(perm)
    if not np.isfinite(t).all():
        raise ValueError("Cannot compress t which contains non-finite values")
    lead = t.shape[:-1]
    groups = t.shape[-1] // group_size
    grouped = t.reshape(*lead, groups, group_size)
    low = grouped.min(-1, keepdims=True).astype(np.float16)
    high = grouped.max(-1, keepdims=True).astype(np.float16)
    scale = (high - low) / (2**4 - 1)
    ids = np.round((grouped - low) / scale).astype(np.uint16).reshape(*lead, groups, group_size // 4, 4)
    packed = np.zeros(ids.shape[:-1], np.uint16)
    for k, shift in enumerate(NIBBLE_SHIFTS):
        packed |= (ids[..., k] << shift).astype(np.uint16)
    return packed, scale, low


@_kernel("GroupQuantizeDecompress")
def _decompress_kernel(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    i, s, b = (cg.slot[t] for t in op.inputs)
    o = cg.slot[op.outputs[0]]
    r = ex.replicas
    out_shape = (r, *op.outputs[0].shape)
    npdt = op.outputs[0].dtype.as_numpy()

    def run(env: list) -> None:
        scaled = unpack_nibbles(env[i]) * env[s] + env[b]
        env[o] = scaled.astype(npdt, copy=False).reshape(out_shape)
    return run


def _as_rank3(name: str, x: popxl.Tensor, t: popxl.Tensor) -> popxl.Tensor:
    if x.rank < t.rank - 1 or x.rank > t.rank:
        raise ValueError(f"{name}.rank must be equal to or one less than t.rank")
    return x.reshape((*x.shape, 1)) if x.rank == t.rank - 1 else x


def group_quantize_decompress(t: popxl.Tensor, group_scale: popxl.Tensor, group_bias: popxl.Tensor,
                              dim: int = -1) -> popxl.Tensor:
    """Return the float16 ``(rows, groups * ids * 4)`` decompression of packed uint16 ``t``
    ``(rows, groups, ids)`` (see the module docstring), its last axis moved to ``dim``."""
    if t.rank != 3:
        raise NotImplementedError("4-bit decompression currently supported only for packed tensors with rank 3")
    group_scale = _as_rank3("group_scale", group_scale, t)
    group_bias = _as_rank3("group_bias", group_bias, t)
    if t.shape[:-1] != group_scale.shape[:2]:
        raise ValueError("The first two dimensions of t and group_scale must be the same")
    if t.shape[:-1] != group_bias.shape[:2]:
        raise ValueError("The first two dimensions of t and group_bias must be the same")
    rows, groups, ids = t.shape
    n_out = rows * groups * ids * 4
    op = add_op("GroupQuantizeDecompress", "group_quantize_decompress", [t, group_scale, group_bias],
                [("t_decompressed", (rows, groups * ids * 4), group_scale.dtype, ())], {"flops": 2 * n_out})
    out = op.outputs[0]
    if dim != -1:
        perm = list(range(out.rank))
        perm.insert(dim, perm.pop(-1))
        out = out.transpose(perm)
    return out
