"""popxl-addons' rotary positional embedding (``popxl_addons.ops.rotary_pos_embed``, the C++ op
``RotaryPosEmbed`` and its grad op ``RotaryPosEmbedGrad``; 3.0 and 3.4).

``t`` is ``(batch, seq, heads, hh)``; its first ``rotary_dim`` hidden elements are read as
``rotary_dim / 2`` interleaved complex numbers ``(re, im)`` and rotated by the angles of the
``sin`` / ``cos`` tables (``(seq, rotary_dim / 2)`` from :func:`trig_tables`); the rest passes
unchanged. The Opx maps, in ``t``'s dtype with one rounding per multiply and per add (two
``popops::map`` expressions):

- forward: ``re' = re * cos - im * sin``, ``im' = im * cos + re * sin``;
- gradient (of ``t`` only; the tables get none): ``re' = re * cos + im * sin``,
  ``im' = im * cos - re * sin``.

The tables broadcast over batch and heads. popxl-addons 3.4 reshapes rank-2 tables to
``(1, seq, rotary_dim / 2)`` and its op takes rank 3 (``(1 or batch, seq, rotary_dim / 2)``);
3.0's op takes rank 2 only. Here each op is one simulator op with a numpy kernel, three FLOPs
per rotated element in the compile model (an elementwise op whose tables are broadcast).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from profcompare.emulator.popxl.execution import CompiledGraph, Executor, Kernel, _kernel
from profcompare.emulator.popxl.graph import Op, add_op
from profcompare.emulator.popxl.transforms.grad_rules import GRAD_RULES
from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons._generation import current

__all__ = ["rotary_pos_embed", "trig_tables", "trig_table_constants"]

OP_TYPE = "RotaryPosEmbed"
GRAD_OP_TYPE = "RotaryPosEmbedGrad"


def trig_tables(seq_len: int, rotary_dim: int, base: int = 10000, np_dtype: Any = "float32"
                ) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(sin, cos)`` of the angles ``m * base ** (-2i / rotary_dim)`` for positions
    ``m < seq_len`` and ``i < rotary_dim / 2``: two ``(seq_len, rotary_dim / 2)`` arrays, the
    angles computed in ``np_dtype``."""
    exponents = np.arange(0, rotary_dim, 2).astype(np_dtype) / rotary_dim
    theta = base ** (-1 * exponents)
    angles = np.outer(np.arange(seq_len).astype(np_dtype), theta)
    return np.sin(angles), np.cos(angles)


def trig_table_constants(seq_len: int, rotary_dim: int, base: int = 10000, dtype: Any = None
                         ) -> tuple[popxl.Tensor, popxl.Tensor]:
    """Return the :func:`trig_tables` as two popxl constants of ``dtype`` (default float32)."""
    dtype = popxl.float32 if dtype is None else dtype
    sin, cos = trig_tables(seq_len, rotary_dim, base, dtype.as_numpy())
    return popxl.constant(sin, dtype), popxl.constant(cos, dtype)


def rotate(x: np.ndarray, sin: np.ndarray, cos: np.ndarray, rotary_dim: int, inverse: bool = False,
           halves: bool = False) -> np.ndarray:
    """Return ``x`` (``(..., seq, heads, hh)``) with its first ``rotary_dim`` hidden elements
    rotated (``inverse``: the gradient's rotation, by the opposite angle); ``sin`` and ``cos``
    are ``(..., seq, rotary_dim / 2)`` and broadcast over the heads. Computed in ``x``'s dtype.
    The complex numbers are interleaved ``(re, im)`` pairs, or with ``halves`` the first half of
    the rotated elements holds the real parts and the second the imaginary ones (GPT-NeoX's and
    LLaMA's layout, cpp_custom_ops/rotary_pos_embed_halves.py)."""
    if halves:
        re, im = x[..., :rotary_dim // 2], x[..., rotary_dim // 2:rotary_dim]
    else:
        pairs = x[..., :rotary_dim].reshape(*x.shape[:-1], rotary_dim // 2, 2)
        re, im = pairs[..., 0], pairs[..., 1]
    s = sin[..., None, :].astype(x.dtype, copy=False)
    c = cos[..., None, :].astype(x.dtype, copy=False)
    if inverse:
        out_re, out_im = re * c + im * s, im * c - re * s
    else:
        out_re, out_im = re * c - im * s, im * c + re * s
    if halves:
        rotated = np.concatenate([out_re, out_im], axis=-1)
    else:
        rotated = np.stack([out_re, out_im], axis=-1).reshape(*x.shape[:-1], rotary_dim)
    if rotary_dim == x.shape[-1]:
        return rotated
    return np.concatenate([rotated, x[..., rotary_dim:]], axis=-1)


def _rotation_kernel(inverse: bool) -> Callable[[Op, CompiledGraph, Executor], Kernel]:
    def factory(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
        x, s, c = (cg.slot[t] for t in op.inputs)
        o = cg.slot[op.outputs[0]]
        rotary_dim = op.attrs["rotary_dim"]
        halves = bool(op.attrs.get("halves", False))
        # rank-2 tables (3.0) broadcast over the batch like a rank-3 table of batch 1
        table_shape = (ex.replicas, 1, *op.inputs[1].shape) if op.inputs[1].rank == 2 else None

        def run(env: list) -> None:
            sin, cos = env[s], env[c]
            if table_shape is not None:
                sin, cos = sin.reshape(table_shape), cos.reshape(table_shape)
            env[o] = rotate(env[x], sin, cos, rotary_dim, inverse, halves)
        return run
    return factory


_kernel(OP_TYPE)(_rotation_kernel(inverse=False))
_kernel(GRAD_OP_TYPE)(_rotation_kernel(inverse=True))


def rotation_attrs(t: popxl.Tensor, rotary_dim: int) -> dict[str, Any]:
    """The op attributes of a rotation of ``t``: ``rotary_dim`` and its FLOPs (three per rotated
    element: two multiplies and an add or subtract)."""
    return {"rotary_dim": int(rotary_dim), "flops": 3 * int(np.prod(t.shape[:-1], dtype=np.int64)) * rotary_dim}


def _add_rotation(op_type: str, name: str, t: popxl.Tensor, sin: popxl.Tensor, cos: popxl.Tensor,
                  rotary_dim: int) -> popxl.Tensor:
    op = add_op(op_type, name, [t, sin, cos], [(f"{name}_out" if op_type == GRAD_OP_TYPE else "t_rotated",
                                                t.shape, t.dtype, t.meta_shape)],
                rotation_attrs(t, rotary_dim))
    return op.outputs[0]


def _grad(op: Op, out_grads: list, fwd: Callable[[Any], Any]) -> list:
    _, sin, cos = op.inputs
    dx = _add_rotation(GRAD_OP_TYPE, "rotary_pos_embed_grad", out_grads[0], fwd(sin), fwd(cos),
                       op.attrs["rotary_dim"])
    return [dx, None, None]


GRAD_RULES[OP_TYPE] = _grad


def check_tables(t: popxl.Tensor, sin: popxl.Tensor, cos: popxl.Tensor, rotary_dim: int, table_rank: int) -> None:
    """Raise unless the ``sin``/``cos`` tables have ``table_rank`` and broadcast to ``t``'s
    ``(batch, seq)`` and ``rotary_dim / 2`` (the op's shape checks)."""
    if sin.rank != table_rank or cos.rank != table_rank:
        detail = "(seq_length, hh_dim/2)" if table_rank == 2 else "(1 or batch, seq, hh/2)"
        raise RuntimeError(f"RotaryPosEmbedOp::setup trig functions should have rank {table_rank} {detail}")
    want = (t.shape[1], rotary_dim // 2)
    for name, table in (("sin", sin), ("cos", cos)):
        lead = table.shape[0] if table.rank == 3 else 1
        if tuple(table.shape[-2:]) != want or lead not in (1, t.shape[0]):
            raise ValueError(f"rotary_pos_embed: {name} of shape {table.shape} does not broadcast to "
                             f"(batch {t.shape[0]}, seq {want[0]}, rotary_dim / 2 = {want[1]})")


def rotary_pos_embed(t: popxl.Tensor, sin: popxl.Tensor, cos: popxl.Tensor, rotary_dim: int | None = None
                     ) -> popxl.Tensor:
    """Return ``t`` (``(batch, seq, heads, hh)``) with its first ``rotary_dim`` (default: all)
    hidden elements rotated by the positions' angles (see the module docstring); same shape and
    dtype. Its gradient reaches ``t`` only."""
    if not rotary_dim:
        rotary_dim = t.shape[-1]
    assert t.rank == 4
    if current() != "3.0":
        if sin.rank == 2:
            sin = sin.reshape((1, *sin.shape))
        if cos.rank == 2:
            cos = cos.reshape((1, *cos.shape))
        assert sin.rank == 3
        assert cos.rank == 3
    if rotary_dim % 2 != 0:
        raise RuntimeError("RotaryPosEmbedOp::RotaryPosEmbedOp rotary_dim must be a multiple of 2")
    check_tables(t, sin, cos, rotary_dim, 2 if current() == "3.0" else 3)
    return _add_rotation(OP_TYPE, "rotary_pos_embed", t, sin, cos, rotary_dim)
