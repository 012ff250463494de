"""The popxl API this package is built on, plus small helpers over it.

popxl_addons uses only popxl's public API (as the real popxl-addons sits on popxl); this
module is the one place that imports it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops

__all__ = ["popxl", "ops", "AddonsNotImplementedError", "as_popxl_dtype", "not_supported", "is_tensor_like"]


def as_popxl_dtype(value: Any) -> Any:
    """Return the popxl dtype for a popxl dtype, a numpy dtype or a numpy array's dtype."""
    popxl_dtype_cls = getattr(popxl, "dtype", None)
    if popxl_dtype_cls is not None and isinstance(popxl_dtype_cls, type) and isinstance(value, popxl_dtype_cls):
        return value
    np_dtype = np.dtype(value.dtype if hasattr(value, "dtype") and not isinstance(value, np.dtype) else value)
    if np_dtype == np.float64:
        np_dtype = np.dtype(np.float32)  # popxl downcasts host float64 data to float32
    elif np_dtype == np.int64:
        np_dtype = np.dtype(np.int32)
    name = {"bool": "bool"}.get(np_dtype.name, np_dtype.name)
    result = getattr(popxl, name, None)
    if result is None:
        raise NotImplementedError(f"popxl_addons: dtype {np_dtype.name} is not supported by the emulator")
    return result


class AddonsNotImplementedError(NotImplementedError, AttributeError):
    """A popxl-addons API outside the emulated subset (also an AttributeError, so ``hasattr``
    and ``getattr(..., default)`` work on the package)."""


def not_supported(api: str, detail: str = "") -> AddonsNotImplementedError:
    """Return the error raised for a popxl-addons API outside the emulated subset."""
    suffix = f" ({detail})" if detail else ""
    return AddonsNotImplementedError(f"popxl_addons.{api} is outside the emulated popxl-addons subset{suffix}")


def is_tensor_like(value: Any) -> bool:
    """Return True for popxl Tensors and TensorSpecs (arguments that become graph inputs)."""
    return isinstance(value, (popxl.Tensor, popxl.TensorSpec))
