"""popxl.ops element-wise and reduction families (signatures, defaults and dtype rules of popxl 3.4).

Unary float ops (exp, log, sqrt, tanh, ...) refuse integer inputs with a TypeError, as PopART
does; comparisons and logical ops give ``bool``; logical ops and ``where`` cast their condition
/ operands to bool when needed, as popxl's ``cast_if_needed`` does. Numeric kernels live in
``popxl/kernels_ext.py``; gradients in ``transforms/grad_rules.py``.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from typing import Any

from .. import dtypes
from ..tensor import Tensor, constant
from ._util import add_op, broadcast_shape, out, same_dtype, single

#: unary op: popxl name -> (op type, float inputs only)
UNARY = {
    "relu": ("Relu", True), "exp": ("Exp", True), "log": ("Log", True), "log2": ("Log2", True),
    "sqrt": ("Sqrt", True), "tanh": ("Tanh", True), "sin": ("Sin", True), "cos": ("Cos", True),
    "abs": ("Abs", False), "floor": ("Floor", True), "ceil": ("Ceil", True), "sign": ("Sign", False),
    "swish": ("Swish", True), "geluerf": ("GeluErf", True),
}


def _float_only(api: str, t: Tensor) -> None:
    if not isinstance(t, Tensor):
        raise TypeError(f"{api}: expected a popxl Tensor, got {type(t).__name__}")
    if not t.dtype.is_floating_point:
        raise TypeError(f"{api}: {t.id} has dtype {t.dtype}; {api} needs a floating-point tensor")


def _unary(api: str, t: Tensor, inplace: bool = False) -> Tensor:
    op_type, float_only = UNARY[api]
    if float_only:
        _float_only(f"popxl.ops.{api}", t)
    if inplace:
        return single(add_op(op_type + "Inplace", f"{api}_inplace", [t], [out(f"{api}_inplace_out", t.shape, t.dtype)],
                             modified=[t]))
    return single(add_op(op_type, api, [t], [out(f"{api}_out", t.shape, t.dtype)]))


def relu(t: Tensor) -> Tensor:
    """max(t, 0) element-wise."""
    return _unary("relu", t)


def relu_(t: Tensor) -> Tensor:
    """relu in place; returns t's alias."""
    return _unary("relu", t, inplace=True)


def exp(t: Tensor) -> Tensor:
    """e ** t element-wise."""
    return _unary("exp", t)


def exp_(t: Tensor) -> Tensor:
    """exp in place; returns t's alias."""
    return _unary("exp", t, inplace=True)


def log(t: Tensor) -> Tensor:
    """Natural logarithm element-wise."""
    return _unary("log", t)


def log2(t: Tensor) -> Tensor:
    """Base-2 logarithm element-wise."""
    return _unary("log2", t)


def sqrt(t: Tensor) -> Tensor:
    """Square root element-wise."""
    return _unary("sqrt", t)


def tanh(t: Tensor) -> Tensor:
    """Hyperbolic tangent element-wise."""
    return _unary("tanh", t)


def sin(t: Tensor) -> Tensor:
    """Sine element-wise."""
    return _unary("sin", t)


def cos(t: Tensor) -> Tensor:
    """Cosine element-wise."""
    return _unary("cos", t)


def abs(t: Tensor) -> Tensor:
    """Absolute value element-wise."""
    return _unary("abs", t)


def floor(t: Tensor) -> Tensor:
    """Largest integer <= t element-wise."""
    return _unary("floor", t)


def ceil(t: Tensor) -> Tensor:
    """Smallest integer >= t element-wise."""
    return _unary("ceil", t)


def sign(t: Tensor) -> Tensor:
    """-1, 0 or 1 by the sign of t, element-wise."""
    return _unary("sign", t)


def swish(t: Tensor) -> Tensor:
    """t * sigmoid(t) element-wise."""
    return _unary("swish", t)


def swish_(t: Tensor) -> Tensor:
    """swish in place; returns t's alias."""
    return _unary("swish", t, inplace=True)


def geluerf(t: Tensor) -> Tensor:
    """GELU, exact form: 0.5 t (1 + erf(t / sqrt 2))."""
    return _unary("geluerf", t)


def geluerf_(t: Tensor) -> Tensor:
    """geluerf in place; returns t's alias."""
    return _unary("geluerf", t, inplace=True)


def _predicate(api: str, op_type: str, t: Tensor) -> Tensor:
    _float_only(f"popxl.ops.{api}", t)
    return single(add_op(op_type, api, [t], [out(f"{api}_out", t.shape, dtypes.bool)]))


def isnan(t: Tensor) -> Tensor:
    """True where t is NaN (bool)."""
    return _predicate("isnan", "IsNaN", t)


def isinf(t: Tensor) -> Tensor:
    """True where t is +-inf (bool)."""
    return _predicate("isinf", "IsInf", t)


def isfinite(t: Tensor) -> Tensor:
    """True where t is neither NaN nor +-inf (bool)."""
    return _predicate("isfinite", "IsFinite", t)


def _as_bool(t: Tensor) -> Tensor:
    from .core import cast

    return t if t.dtype == dtypes.bool else cast(t, dtypes.bool)


def _compare(api: str, op_type: str, lhs: Tensor, rhs: Tensor) -> Tensor:
    same_dtype(op_type, lhs, rhs)
    shape = broadcast_shape(op_type, lhs, rhs)
    return single(add_op(op_type, api, [lhs, rhs], [out(f"{api}_out", shape, dtypes.bool)]))


def equal(lhs: Tensor, rhs: Tensor) -> Tensor:
    """lhs == rhs element-wise with broadcasting (bool)."""
    return _compare("equal", "Equal", lhs, rhs)


def greater(input: Tensor, other: Tensor) -> Tensor:  # noqa: A002 - popxl's parameter name
    """input > other element-wise with broadcasting (bool)."""
    return _compare("greater", "Greater", input, other)


def logical_and(lhs: Tensor, rhs: Tensor) -> Tensor:
    """lhs and rhs element-wise (inputs cast to bool when needed)."""
    return _compare("logical_and", "And", _as_bool(lhs), _as_bool(rhs))


def logical_or(lhs: Tensor, rhs: Tensor) -> Tensor:
    """lhs or rhs element-wise (inputs cast to bool when needed)."""
    return _compare("logical_or", "Or", _as_bool(lhs), _as_bool(rhs))


def logical_not(t: Tensor) -> Tensor:
    """not t element-wise (cast to bool when needed)."""
    t = _as_bool(t)
    return single(add_op("Not", "logical_not", [t], [out("logical_not_out", t.shape, dtypes.bool)]))


def pow(t: Tensor, e: Any) -> Tensor:
    """t ** e with broadcasting; a python number ``e`` becomes a constant of t's dtype."""
    if not isinstance(e, Tensor):
        e = constant(e, t.dtype, "pow_exponent")
    dt = same_dtype("Pow", t, e)
    shape = broadcast_shape("Pow", t, e)
    return single(add_op("Pow", "pow", [t, e], [out("pow_out", shape, dt)]))


def fmod(lhs: Tensor, rhs: Tensor) -> Tensor:
    """Remainder of lhs / rhs with the sign of lhs (C fmod), with broadcasting."""
    dt = same_dtype("Fmod", lhs, rhs)
    shape = broadcast_shape("Fmod", lhs, rhs)
    return single(add_op("Fmod", "fmod", [lhs, rhs], [out("fmod_out", shape, dt)]))


def maximum(*ts: Tensor) -> Tensor:
    """Element-wise maximum of the tensors (broadcasting; same dtype)."""
    if not ts:
        raise ValueError("maximum needs at least one tensor")
    dt = same_dtype("Max", *ts)
    import numpy as np

    try:
        shape = tuple(np.broadcast_shapes(*(t.shape for t in ts)))
    except ValueError:
        raise ValueError(f"maximum: shapes {[t.shape for t in ts]} do not broadcast") from None
    return single(add_op("Max", "maximum", list(ts), [out("maximum_out", shape, dt)]))


def where(condition: Tensor, lhs: Tensor, rhs: Tensor) -> Tensor:
    """lhs where condition (cast to bool when needed) else rhs, with broadcasting; lhs/rhs same dtype."""
    import numpy as np

    condition = _as_bool(condition)
    dt = same_dtype("Where", lhs, rhs)
    try:
        shape = tuple(np.broadcast_shapes(condition.shape, lhs.shape, rhs.shape))
    except ValueError:
        raise ValueError(f"where: shapes {condition.shape}, {lhs.shape} and {rhs.shape} do not broadcast") from None
    return single(add_op("Where", "where", [condition, lhs, rhs], [out("where_out", shape, dt)]))


def clip(t: Tensor, min: float = float("-inf"), max: float = float("inf")) -> Tensor:  # noqa: A002
    """t limited to [min, max] element-wise."""
    _float_only("popxl.ops.clip", t)
    return single(add_op("Clip", "clip", [t], [out("clip_out", t.shape, t.dtype)],
                         {"min": builtins.float(min), "max": builtins.float(max)}))


def clamp(t: Tensor, min: float = float("-inf"), max: float = float("inf")) -> Tensor:  # noqa: A002
    """Alias of :func:`clip`."""
    return clip(t, min, max)


# --- reductions -----------------------------------------------------------------------------------
def reduce_axes(t: Tensor, axis: Any) -> tuple[int, ...]:
    """Normalised, sorted axes of a reduction (all axes for None)."""
    if axis is None:
        return tuple(range(t.rank))
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = set()
    for a in items:
        if not -t.rank <= int(a) < builtins.max(t.rank, 1):
            raise ValueError(f"axis {a} is out of range for {t.id} of rank {t.rank}")
        axes.add(int(a) % t.rank if t.rank else 0)
    return tuple(sorted(axes))


def _reduce(api: str, op_type: str, t: Tensor, axis: Any, keepdims: bool) -> Tensor:
    axes = reduce_axes(t, axis)
    shape = tuple(1 if i in axes else s for i, s in enumerate(t.shape)) if keepdims else tuple(
        s for i, s in enumerate(t.shape) if i not in axes)
    return single(add_op(op_type, api, [t], [out(f"{api}_out", shape, t.dtype)],
                         {"axes": axes, "keepdims": bool(keepdims)}))


def mean(t: Tensor, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` (all axes when None)."""
    return _reduce("mean", "ReduceMean", t, axis, keepdims)


def max(t: Tensor, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Maximum over ``axis`` (all axes when None)."""
    return _reduce("max", "ReduceMax", t, axis, keepdims)


def min(t: Tensor, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Minimum over ``axis`` (all axes when None)."""
    return _reduce("min", "ReduceMin", t, axis, keepdims)


def prod(t: Tensor, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:
    """Product over ``axis`` (all axes when None)."""
    return _reduce("prod", "ReduceProd", t, axis, keepdims)


def sumsquare(t: Tensor, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:
    """Sum of squares over ``axis`` (all axes when None)."""
    return _reduce("sumsquare", "ReduceSumSquare", t, axis, keepdims)


def logsumexp(t: Tensor, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:
    """log(sum(exp(t))) over ``axis`` (all axes when None), computed stably."""
    _float_only("popxl.ops.logsumexp", t)
    return _reduce("logsumexp", "ReduceLogSumExp", t, axis, keepdims)


def logsum(t: Tensor, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:
    """log(sum(t)) over ``axis`` (all axes when None)."""
    _float_only("popxl.ops.logsum", t)
    return _reduce("logsum", "ReduceLogSum", t, axis, keepdims)


def l1(t: Tensor, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:
    """Sum of absolute values over ``axis`` (all axes when None)."""
    return _reduce("l1", "ReduceL1", t, axis, keepdims)


def l2(t: Tensor, axis: int | Iterable[int] | None = None, keepdims: bool = False) -> Tensor:
    """Square root of the sum of squares over ``axis`` (all axes when None)."""
    _float_only("popxl.ops.l2", t)
    return _reduce("l2", "ReduceL2", t, axis, keepdims)


def _arg(api: str, op_type: str, t: Tensor, dim: int | None, keepdim: bool | None) -> Tensor:
    axis = 0 if dim is None else int(dim)
    if not -t.rank <= axis < t.rank:
        raise ValueError(f"{api}: dim {dim} is out of range for {t.id} of rank {t.rank}")
    axis %= t.rank
    shape = tuple(1 if i == axis else s for i, s in enumerate(t.shape)) if keepdim else tuple(
        s for i, s in enumerate(t.shape) if i != axis)
    return single(add_op(op_type, api, [t], [out(f"{api}_out", shape, dtypes.int32)],
                         {"axis": axis, "keepdims": bool(keepdim)}))


def argmax(t: Tensor, dim: int | None = 0, keepdim: bool | None = False) -> Tensor:
    """Index (int32) of the maximum along ``dim``; the first one on ties."""
    return _arg("argmax", "ArgMax", t, dim, keepdim)


def argmin(t: Tensor, dim: int | None = 0, keepdim: bool | None = False) -> Tensor:
    """Index (int32) of the minimum along ``dim``; the first one on ties."""
    return _arg("argmin", "ArgMin", t, dim, keepdim)


def cumsum(t: Tensor, dim: int | None = 0) -> Tensor:
    """Cumulative sum along ``dim``."""
    axis = 0 if dim is None else int(dim)
    if not -t.rank <= axis < t.rank:
        raise ValueError(f"cumsum: dim {dim} is out of range for {t.id} of rank {t.rank}")
    return single(add_op("CumSum", "cumsum", [t], [out("cumsum_out", t.shape, t.dtype)], {"axis": axis % t.rank}))


def identity(t: Tensor, output_name: str | None = None) -> Tensor:
    """A copy of t (named ``output_name`` when given)."""
    return single(add_op("Identity", "identity", [t], [out(output_name or "identity_out", t.shape, t.dtype)]))


def rename(t: Tensor, output_name: str) -> Tensor:
    """A copy of t named ``output_name``."""
    return identity(t, output_name)


#: dtypes PopART's IncrementMod accepts
INCREMENT_MOD_DTYPES = ("uint32", "int32", "float16", "float32")


def _increment_mod(api: str, t: Tensor, increment: float, modulus: float, inplace: bool) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{api}: expected a popxl Tensor, got {type(t).__name__}")
    if t.dtype.name not in INCREMENT_MOD_DTYPES:
        raise TypeError(f"{api}: {t.id} has dtype {t.dtype.name}; IncrementMod takes {', '.join(INCREMENT_MOD_DTYPES)}")
    inc, mod = float(increment), float(modulus)
    if t.dtype.is_int and int(mod) == 0:
        raise ValueError(f"{api}: modulus {modulus} is 0 once converted to {t.dtype.name} (integer division by zero)")
    attrs = {"increment": inc, "modulus": mod}
    if inplace:
        return single(add_op("IncrementModInplace", "increment_mod_inplace", [t],
                             [out("increment_mod_inplace_out", t.shape, t.dtype)], attrs, modified=[t]))
    return single(add_op("IncrementMod", "increment_mod", [t], [out("increment_mod_out", t.shape, t.dtype)], attrs))


def increment_mod(t: Tensor, increment: float, modulus: float) -> Tensor:
    """``(t + increment) % modulus`` element-wise, the remainder taking the sign of the dividend
    (C's fmod / %); for integer tensors ``increment`` and ``modulus`` are truncated to t's dtype
    first. Not differentiable."""
    return _increment_mod("popxl.ops.increment_mod", t, increment, modulus, inplace=False)


def increment_mod_(t: Tensor, increment: float, modulus: float) -> Tensor:
    """:func:`increment_mod` in place; returns t's alias."""
    return _increment_mod("popxl.ops.increment_mod_", t, increment, modulus, inplace=True)


__all__ = [
    "abs", "argmax", "argmin", "ceil", "clamp", "clip", "cos", "cumsum", "equal", "exp", "exp_", "floor",
    "fmod", "geluerf", "geluerf_", "greater", "identity", "increment_mod", "increment_mod_", "isfinite", "isinf", "isnan", "l1", "l2", "log", "log2",
    "logical_and", "logical_not", "logical_or", "logsum", "logsumexp", "max", "maximum", "mean", "min", "pow",
    "prod", "reduce_axes", "relu", "relu_", "rename", "sign", "sin", "sqrt", "sumsquare", "swish", "swish_",
    "tanh", "where",
]
