"""Numeric kernels of the popxl ops beyond the MNIST core (element-wise, reductions, shape ops,
normalisation, dropout). Registered into :mod:`.execution`'s kernel table when it is imported;
values keep the ``(R, *shape)`` layout with the replica axis first (see execution.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .execution import CompiledGraph, Executor, Kernel, _bview, _inplace_unary, _kernel, _unary
from .graph import Op


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x.astype(np.float64))


def _relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, x.dtype.type(0))


def _swish(x: np.ndarray) -> np.ndarray:
    return x / (x.dtype.type(1) + np.exp(-x))


def _geluerf(x: np.ndarray) -> np.ndarray:
    return (0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))).astype(x.dtype)


#: op type -> numpy function of one array (dtype kept)
UNARY_FUNCTIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "Relu": _relu, "Exp": np.exp, "Log": np.log, "Log2": np.log2, "Sqrt": np.sqrt, "Tanh": np.tanh,
    "Sin": np.sin, "Cos": np.cos, "Abs": np.abs, "Floor": np.floor, "Ceil": np.ceil, "Sign": np.sign,
    "Swish": _swish, "GeluErf": _geluerf, "IsNaN": np.isnan, "IsInf": np.isinf, "IsFinite": np.isfinite,
    "Not": np.logical_not, "Identity": np.array,
}

for _type, _fn in UNARY_FUNCTIONS.items():
    _kernel(_type)(_unary(_fn))




for _type in ("Relu", "Exp", "Swish", "GeluErf"):
    _kernel(_type + "Inplace")(_inplace_unary(UNARY_FUNCTIONS[_type]))


def _nary(fn: Callable[..., np.ndarray]) -> Callable[[Op, CompiledGraph, Executor], Kernel]:
    """A kernel broadcasting every input to the output's rank (replica axis first)."""
    def factory(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
        n = op.outputs[0].rank
        ins = [(cg.slot[t], _bview(t, n, ex.replicas)) for t in op.inputs]
        o = cg.slot[op.outputs[0]]
        npdt = op.outputs[0].dtype.as_numpy()

        def run(env: list) -> None:
            args = [env[s] if v is None else env[s].reshape(v) for s, v in ins]
            env[o] = np.asarray(fn(*args)).astype(npdt, copy=False)
        return run
    return factory


_kernel("Pow")(_nary(np.power))
_kernel("Fmod")(_nary(np.fmod))
_kernel("Equal")(_nary(np.equal))
_kernel("Greater")(_nary(np.greater))
_kernel("And")(_nary(np.logical_and))
_kernel("Or")(_nary(np.logical_or))
_kernel("Where")(_nary(np.where))
_kernel("Max")(_nary(lambda *xs: xs[0] if len(xs) == 1 else np.maximum.reduce(np.broadcast_arrays(*xs))))


@_kernel("Clip")
def _clip(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    lo, hi = op.attrs["min"], op.attrs["max"]
    return _unary(lambda x: np.clip(x, x.dtype.type(lo), x.dtype.type(hi)))(op, cg, ex)


# --- reductions ---------------------------------------------------------------------------------
def _logsumexp(x: np.ndarray, axis: tuple[int, ...], keepdims: bool) -> np.ndarray:
    m = x.max(axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0).astype(x.dtype)
    s = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
    return s if keepdims else np.squeeze(s, axis=axis)


_REDUCTIONS: dict[str, Callable[[np.ndarray, tuple[int, ...], bool], np.ndarray]] = {
    "ReduceMean": lambda x, a, k: x.mean(axis=a, keepdims=k),
    "ReduceMax": lambda x, a, k: x.max(axis=a, keepdims=k),
    "ReduceMin": lambda x, a, k: x.min(axis=a, keepdims=k),
    "ReduceProd": lambda x, a, k: x.prod(axis=a, keepdims=k),
    "ReduceSumSquare": lambda x, a, k: (x * x).sum(axis=a, keepdims=k),
    "ReduceLogSumExp": _logsumexp,
    "ReduceLogSum": lambda x, a, k: np.log(x.sum(axis=a, keepdims=k)),
    "ReduceL1": lambda x, a, k: np.abs(x).sum(axis=a, keepdims=k),
    "ReduceL2": lambda x, a, k: np.sqrt((x * x).sum(axis=a, keepdims=k)),
}


def _reduction(fn: Callable[[np.ndarray, tuple[int, ...], bool], np.ndarray]) -> Callable[[Op, CompiledGraph, Executor], Kernel]:
    def factory(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
        axes = tuple(a + 1 for a in op.attrs["axes"])
        keep = op.attrs["keepdims"]
        npdt = op.outputs[0].dtype.as_numpy()
        if not axes:
            return _unary(lambda x: np.array(x))(op, cg, ex)
        return _unary(lambda x: np.asarray(fn(x, axes, keep)).astype(npdt, copy=False))(op, cg, ex)
    return factory


for _type, _fn in _REDUCTIONS.items():
    _kernel(_type)(_reduction(_fn))


@_kernel("ArgMax", "ArgMin")
def _argminmax(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    axis = op.attrs["axis"] + 1
    keep = op.attrs["keepdims"]
    fn = np.argmax if op.type == "ArgMax" else np.argmin

    def run(x: np.ndarray) -> np.ndarray:
        idx = fn(x, axis=axis).astype(np.int32)
        return np.expand_dims(idx, axis) if keep else idx
    return _unary(run)(op, cg, ex)


@_kernel("CumSum")
def _cumsum(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    axis = op.attrs["axis"] + 1
    npdt = op.outputs[0].dtype.as_numpy()
    return _unary(lambda x: np.cumsum(x, axis=axis).astype(npdt, copy=False))(op, cg, ex)


# --- gradients (ops made by autodiff) ----------------------------------------------------------
def _grad_of(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Callable[[Op, CompiledGraph, Executor], Kernel]:
    """A kernel for ``grad * f'(x)``: inputs (grad, x), one output of x's shape."""
    def factory(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
        g, x = (cg.slot[t] for t in op.inputs)
        o = cg.slot[op.outputs[0]]
        npdt = op.outputs[0].dtype.as_numpy()

        def run(env: list) -> None:
            env[o] = np.asarray(fn(env[g], env[x])).astype(npdt, copy=False)
        return run
    return factory


def _swish_grad(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    s = 1 / (1 + np.exp(-x))
    return g * (s + x * s * (1 - s))


def _geluerf_grad(g: np.ndarray, x: np.ndarray) -> np.ndarray:
    xf = x.astype(np.float64)
    cdf = 0.5 * (1.0 + _erf(xf / math.sqrt(2.0)))
    pdf = np.exp(-0.5 * xf * xf) / math.sqrt(2.0 * math.pi)
    return g * (cdf + xf * pdf)


_kernel("ReluGrad")(_grad_of(lambda g, x: g * (x > 0)))
_kernel("SwishGrad")(_grad_of(_swish_grad))
_kernel("GeluErfGrad")(_grad_of(_geluerf_grad))
_kernel("AbsGrad")(_grad_of(lambda g, x: g * np.sign(x)))


__all__ = ["UNARY_FUNCTIONS"]

# the kernels of the losses, statistics, image and optimizer ops live in their own modules; they
# register themselves into the same table when imported with this one
from . import kernels_image, kernels_losses, kernels_optim, kernels_stats  # noqa: E402,F401
