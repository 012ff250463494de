"""Compute ops of the simulated subset (shapes, dtypes and ids as popxl forms them)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from ._util import (
    add_op,
    broadcast_shape,
    factor,
    out,
    same_dtype,
    single,
)
from .losses import nll_loss_with_softmax_grad  # noqa: F401 - popxl.ops.core's historical home of the op

#: tanh-approximation constants of popnn's GELU: 0.5 x (1 + tanh(A x + B x^3))
GELU_A = 0.7978845608
GELU_B = 0.035677408136


def _binary(op_type: str, out_name: str, lhs: Tensor, rhs: Tensor) -> Tensor:
    dt = same_dtype(op_type, lhs, rhs)
    shape = broadcast_shape(op_type, lhs, rhs)
    return single(add_op(op_type, op_type.lower(), [lhs, rhs], [out(out_name, shape, dt)]))


def add(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Elementwise lhs + rhs with NumPy broadcasting; same dtype required."""
    return _binary("Add", "add_out", lhs, rhs)


def add_(lhs: Tensor, rhs: Tensor) -> Tensor:
    """lhs += rhs in place (rhs broadcast to lhs's shape); returns lhs's alias."""
    dt = same_dtype("AddLhsInplace", lhs, rhs)
    shape = broadcast_shape("AddLhsInplace", lhs, rhs)
    if shape != lhs.shape:
        raise ValueError(f"add_: rhs {rhs.shape} would change the shape of the in-place lhs {lhs.shape}")
    return single(add_op("AddLhsInplace", "add_lhs_inplace", [lhs, rhs],
                         [out("add_lhs_inplace_out", lhs.shape, dt)], modified=[lhs]))


def sub(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Elementwise lhs - rhs with broadcasting."""
    return _binary("Sub", "sub_out", lhs, rhs)


def mul(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Elementwise lhs * rhs with broadcasting."""
    return _binary("Mul", "mul_out", lhs, rhs)


def div(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Elementwise lhs / rhs with broadcasting."""
    return _binary("Div", "div_out", lhs, rhs)


def negate(t: Tensor) -> Tensor:
    """Elementwise -t."""
    return single(add_op("Neg", "negate", [t], [out("negate_out", t.shape, t.dtype)]))


def gelu(t: Tensor) -> Tensor:
    """GELU, tanh form: 0.5 x (1 + tanh(0.7978845608 x + 0.035677408136 x^3)); same shape/dtype."""
    return single(add_op("Gelu", "gelu", [t], [out("gelu_out", t.shape, t.dtype)]))


def gelu_(t: Tensor) -> Tensor:
    """In-place GELU (tanh form); returns t's alias."""
    return single(add_op("GeluInplace", "gelu_inplace", [t], [out("gelu_inplace_out", t.shape, t.dtype)],
                         modified=[t]))


def _gelu_grad(grad: Tensor, x: Tensor) -> Tensor:
    """d gelu(x)/dx * grad (used by autodiff)."""
    same_dtype("GeluGrad", grad, x)
    return single(add_op("GeluGrad", "gelu_grad", [grad, x], [out("gelu_grad_out", x.shape, x.dtype)]))


def _reshape_shape(t: Tensor, shape: Iterable[int]) -> tuple[int, ...]:
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise ValueError(f"reshape: at most one -1 is allowed, got {shape}")
    if any(s == 0 or s < -1 for s in shape):
        raise ValueError(f"reshape: invalid shape {shape} (sizes must be positive or a single -1)")
    known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
    if -1 in shape:
        shape = tuple(t.nelms // known if s == -1 else s for s in shape)
    if int(np.prod(shape, dtype=np.int64)) != t.nelms:
        raise ValueError(f"reshape: cannot reshape {t.id} of shape {t.shape} ({t.nelms} elements) to {shape}")
    return shape


def reshape(t: Tensor, shape: Iterable[int]) -> Tensor:
    """Return t with a new shape (at most one -1, inferred)."""
    new = _reshape_shape(t, shape)
    return single(add_op("Reshape", "reshape", [t], [out(f"{t.name}_reshaped", new, t.dtype)], {"shape": new}))


def reshape_(t: Tensor, shape: Iterable[int]) -> Tensor:
    """Reshape as an alias of t (changes through it reach t)."""
    new = _reshape_shape(t, shape)
    return single(add_op("ReshapeInplace", "reshape_inplace", [t], [out(f"{t.name}_reshaped", new, t.dtype)],
                         {"shape": new}))


def flatten(t: Tensor) -> Tensor:
    """Return t reshaped to one dimension."""
    return reshape(t, (t.nelms,))


def flatten_(t: Tensor) -> Tensor:
    """Flatten as an alias of t."""
    return reshape_(t, (t.nelms,))


def transpose(t: Tensor, permutation: Iterable[int] | None = None) -> Tensor:
    """Permute the axes of t (reverse them by default)."""
    perm = tuple(range(t.rank))[::-1] if permutation is None else tuple(int(p) for p in permutation)
    if sorted(perm) != list(range(t.rank)):
        raise ValueError(f"transpose: {perm} is not a permutation of the {t.rank} axes of {t.id}")
    shape = tuple(t.shape[p] for p in perm)
    return single(add_op("Transpose", "transpose", [t], [out(f"{t.name}_T", shape, t.dtype)], {"perm": perm}))


def detach(t: Tensor) -> Tensor:
    """The same values as t; autodiff does not propagate through it."""
    return single(add_op("Detach", "detach", [t], [out("detach_out", t.shape, t.dtype)]))


def cast(t: Tensor, data_type: dtypes.dtype) -> Tensor:
    """Return t converted to ``data_type``."""
    if not isinstance(data_type, dtypes.dtype):
        raise TypeError(f"cast: data_type must be a popxl dtype, got {data_type!r}")
    data_type.as_numpy()
    return single(add_op("Cast", "cast", [t], [out(f"{t.name}_{data_type.name}", t.shape, data_type)],
                         {"dtype": data_type}))


def matmul_shape(api: str, lhs: Tensor, rhs: Tensor) -> tuple[tuple[int, ...], int]:
    """The output shape of ``lhs @ rhs`` under NumPy's matmul rules (rank-1 operands promoted
    and dropped again, batch dimensions broadcast) and the contracted size k; ValueError naming
    ``api`` for scalars, different inner dimensions or batch dimensions that do not broadcast."""
    if lhs.rank == 0 or rhs.rank == 0:
        raise ValueError(f"{api}: scalar operands are not allowed")
    a = (1,) + lhs.shape if lhs.rank == 1 else lhs.shape
    b = rhs.shape + (1,) if rhs.rank == 1 else rhs.shape
    if a[-1] != b[-2]:
        raise ValueError(f"{api}: inner dimensions differ: {lhs.id} {lhs.shape} @ {rhs.id} {rhs.shape}")
    try:
        batch = tuple(int(d) for d in np.broadcast_shapes(a[:-2], b[:-2]))
    except ValueError:
        raise ValueError(f"{api}: batch dimensions of {lhs.shape} and {rhs.shape} do not broadcast") from None
    shape = batch + (a[-2], b[-1])
    if lhs.rank == 1:
        shape = shape[:-2] + shape[-1:]
    if rhs.rank == 1:
        shape = shape[:-1]
    return shape, a[-1]


def matmul(lhs: Tensor, rhs: Tensor, available_memory_proportion: float | None = None,
           output_type: dtypes.dtype | None = None, partials_type: dtypes.dtype | None = None) -> Tensor:
    """Matrix product with NumPy matmul rules, typed as PopART's MatMulOp: ``output_type`` when
    given, else lhs's dtype. PopART does not compare the operand dtypes (``float32 @ float16``
    builds, giving float32); Poplar's matmul refuses operands of different types when the
    session compiles (see the MatMul kernel). float8 operands need
    :func:`matmul_pow2scaled`: one float8 operand, or two without a log2 scale, are refused."""
    float8 = [t for t in (lhs, rhs) if t.dtype in (dtypes.float8_143, dtypes.float8_152)]
    if len(float8) == 1:
        other = rhs if float8[0] is lhs else lhs
        raise RuntimeError(f"matmul: operand {other.id} has dtype {other.dtype.name} next to the float8 operand "
                           f"{float8[0].id}; PopART needs every operand of a float8 matmul to be float8")
    if len(float8) == 2:
        raise RuntimeError(f"matmul: float8 operands {lhs.id} and {rhs.id} need a log2 scale; "
                           "use popxl.ops.matmul_pow2scaled")
    dt = lhs.dtype
    shape, k = matmul_shape("matmul", lhs, rhs)
    otype = output_type or dt
    attrs = {"available_memory_proportion": available_memory_proportion, "partials_type": partials_type,
             "output_type": otype, "k": k}
    return single(add_op("MatMul", "matmul", [lhs, rhs], [out("matmul_out", shape, otype)], attrs))


def softmax(t: Tensor, axis: int) -> Tensor:
    """Softmax along ``axis``."""
    ax = _axis(t, axis)
    return single(add_op("Softmax", "softmax", [t], [out("softmax_out", t.shape, t.dtype)], {"axis": ax}))


def _axis(t: Tensor, axis: int) -> int:
    if not -t.rank <= axis < max(t.rank, 1):
        raise ValueError(f"axis {axis} is out of range for {t.id} of rank {t.rank}")
    return axis % t.rank if t.rank else 0


def sum(t: Tensor, axis: Any | None = None, keepdims: bool = False) -> Tensor:
    """Sum over ``axis`` (int, iterable, or all axes when None)."""
    if axis is None:
        axes = tuple(range(t.rank))
    else:
        axes = tuple(sorted({_axis(t, a) for a in ((axis,) if isinstance(axis, int) else axis)}))
    shape = tuple(1 if i in axes else s for i, s in enumerate(t.shape)) if keepdims else tuple(
        s for i, s in enumerate(t.shape) if i not in axes)
    return single(add_op("ReduceSum", "ReduceSum", [t], [out("sum_out", shape, t.dtype)],
                         {"axes": axes, "keepdims": bool(keepdims)}))


def scaled_add(X: Tensor, Y: Tensor, a: Any = 1.0, b: Any = 1.0) -> Tensor:
    """Return a*X + b*Y (no broadcasting; dtypes may differ, the result has X's dtype)."""
    return _scaled_add(X, Y, a, b, inplace=False)


def scaled_add_(X: Tensor, Y: Tensor, a: Any = 1.0, b: Any = 1.0) -> Tensor:
    """X <- a*X + b*Y in place (mixed precision allowed); returns X's alias."""
    return _scaled_add(X, Y, a, b, inplace=True)


def _scaled_add(X: Tensor, Y: Tensor, a: Any, b: Any, inplace: bool) -> Tensor:
    if X.shape != Y.shape:
        raise ValueError(f"scaled_add: shapes must match (no broadcasting): {X.shape} vs {Y.shape}")
    af, at = factor(a, X.dtype, "a")
    bf, bt = factor(b, X.dtype, "b")
    inputs = [X, Y] + [t for t in (at, bt) if t is not None]
    attrs = {"a": af, "b": bf, "a_tensor": at is not None, "b_tensor": bt is not None}
    if inplace:
        return single(add_op("ScaledAddLhsInplace", "scaled_add", inputs,
                             [out("scaled_add__" + X.name, X.shape, X.dtype)], attrs, modified=[X]))
    return single(add_op("ScaledAdd", "scaled_add", inputs, [out("scaled_add_out", X.shape, X.dtype)], attrs))


def init(shape: Iterable[int], dtype: dtypes.dtype, name: str | None = None, init_type: str = "zero",
         meta_shape: Iterable[int] | None = None) -> Tensor:
    """A new tensor filled with zeros ('zero'); 'undef' leaves it undefined (zeros here)."""
    if init_type not in ("zero", "undef"):
        raise ValueError(f"init_type must be 'zero' or 'undef', got {init_type!r}")
    return single(add_op("Init", "init", [], [out(name or "init", tuple(shape), dtype, tuple(meta_shape or ()))],
                         {"init_type": init_type}))


def _expand(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Broadcast t to ``shape`` (used by autodiff for the gradient of sums)."""
    np.broadcast_shapes(t.shape, shape)
    return single(add_op("Expand", "expand", [t], [out("expand_out", shape, t.dtype)], {"shape": shape}))
