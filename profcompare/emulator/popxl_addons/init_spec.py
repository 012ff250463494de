"""The shape and dtype a variable factory's init function would return, read without calling it.

Compile-only execution (``profcompare.backend.execution_mode``) never calls a factory's init functions
for values. The factory still needs the shape and dtype of its graph input when the module is
built; for the init functions popxl-addons programs use, they are in the call itself: a
``functools.partial`` of a function with a ``size`` or ``shape`` parameter
(``partial(np.random.normal, 0, 0.02, (1024, 4096))``, ``partial(rng.normal, 0, 0.02, shape)``,
``partial(np.zeros, shape)``, ``partial(truncated_normal, shape)``), or of a scipy.stats
distribution's ``rvs`` with a ``size`` keyword (``partial(truncnorm.rvs, -2, 2, scale=0.02,
size=shape)``: scipy documents ``size`` as the shape of the draw, float64), with the dtype given to
the factory or, for numpy's own creation and random functions and scipy's draws, theirs. Anything
else (a lambda, a partial without a shape) is the caller's to call once.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

#: random functions of numpy (module level, RandomState, Generator) returning float64 by default
_FLOAT64_RANDOM = frozenset({"normal", "uniform", "standard_normal", "random", "random_sample", "laplace",
                             "logistic", "gumbel", "lognormal", "exponential", "standard_exponential"})
#: numpy creation functions whose dtype parameter defaults to float64
_FLOAT64_CREATION = frozenset({"zeros", "ones", "empty"})


def _is_numpy(func: Callable[..., Any]) -> bool:
    owner = getattr(func, "__self__", None)
    if isinstance(owner, (np.random.Generator, np.random.RandomState)):
        return True
    return (getattr(func, "__module__", None) or "").split(".")[0] == "numpy"


def _is_scipy_rvs(func: Callable[..., Any]) -> bool:
    """Whether ``func`` is the ``rvs`` of a scipy.stats distribution (``truncnorm.rvs``)."""
    owner = getattr(func, "__self__", None)
    return getattr(func, "__name__", "") == "rvs" and (type(owner).__module__ or "").startswith("scipy.stats")


def _as_shape(value: Any) -> tuple[int, ...] | None:
    if value is None:
        return ()
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),)
    try:
        return tuple(int(d) for d in value)
    except (TypeError, ValueError):
        return None


def spec_without_calling(data_iter: Any, dtype: Any) -> tuple[tuple[int, ...], Any] | None:
    """Return ``(shape, dtype)`` of what ``data_iter()`` would return, or None when that cannot
    be read from the call. ``dtype`` is the factory's dtype argument (kept when given; else
    numpy's default of a numpy function as a numpy dtype)."""
    if not isinstance(data_iter, functools.partial):
        return None
    func = data_iter.func
    if _is_scipy_rvs(func):
        shape = _as_shape(data_iter.keywords["size"]) if "size" in data_iter.keywords else None
        return None if shape is None else (shape, dtype if dtype is not None else np.dtype(np.float64))
    try:
        signature = inspect.signature(func)
        bound = signature.bind_partial(*data_iter.args, **data_iter.keywords)
    except (TypeError, ValueError):
        return None
    for name in ("size", "shape"):
        param = signature.parameters.get(name)
        if param is None:
            continue
        if name in bound.arguments:
            shape = _as_shape(bound.arguments[name])
        elif param.default is not inspect.Parameter.empty and _is_numpy(func):
            shape = _as_shape(param.default)
        else:
            shape = None
        break
    else:
        return None
    if shape is None:
        return None
    if dtype is not None:
        return shape, dtype
    if not _is_numpy(func):
        return None
    name = getattr(func, "__name__", "")
    if name in _FLOAT64_RANDOM and "dtype" not in signature.parameters:
        return shape, np.dtype(np.float64)
    if name in _FLOAT64_CREATION or name == "standard_normal":
        given = bound.arguments.get("dtype", signature.parameters["dtype"].default)
        return shape, np.dtype(np.float64 if given is None else given)
    return None


__all__ = ["spec_without_calling"]
