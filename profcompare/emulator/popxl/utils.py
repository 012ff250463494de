"""popxl.utils on the simulator: ``to_numpy`` (host data as popxl takes it) and
``table_to_string`` (the plain-text tables popxl and popxl-addons print)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from . import dtypes
from .errors import module_getattr

#: 64-bit host types popxl narrows when no dtype is given
_DOWNCAST = {np.dtype(np.int64): np.dtype(np.int32), np.dtype(np.uint64): np.dtype(np.uint32),
             np.dtype(np.float64): np.dtype(np.float32)}


def _check_memmap(x: np.memmap, dtype: dtypes.dtype | None) -> None:
    """popxl's conditions for using a memory-mapped array without copying it."""
    if dtype is not None and dtype.as_numpy() != x.dtype:
        raise ValueError("When passing a memory-mapped NumPy array, the `dtype` parameter must be None or the "
                         "same as the array's dtype")
    if not (x.flags.c_contiguous and x.flags.aligned):
        raise ValueError("When passing a memory-mapped NumPy array, it must already be in C-ordered and aligned form.")
    if x.dtype in _DOWNCAST:
        raise ValueError(f"When passing a memory-mapped NumPy array, the dtype {dtype} is not supported, as it "
                         "requires downcasting the array into a new array with a dtype supported by PopXL.")


def to_numpy(x: Any, dtype: dtypes.dtype | None = None, downcast: bool = True, copy: bool = True,
             log2_scale: int | None = None, nan_on_overflow: bool | None = None) -> np.ndarray:
    """Return host data ``x`` (array, torch tensor, number, nested list) as a C-ordered numpy array.

    With ``dtype`` the data is converted to it (float8: through ``host_pow2scale_cast_to_fp8``
    with ``log2_scale`` default 0 and ``nan_on_overflow`` default True; those two are a
    RuntimeError for other dtypes). Without it 64-bit data is narrowed to 32 bits when
    ``downcast``. ``copy=False`` returns ``x`` itself when nothing needs converting; an
    ``np.memmap`` must then already be C-ordered and of a popxl dtype (ValueError otherwise)."""
    if isinstance(x, np.memmap):
        _check_memmap(x, dtype)

    def as_array(value: Any, **kwargs: Any) -> np.ndarray:
        return value if isinstance(value, np.memmap) else np.asarray(value, **kwargs)

    if hasattr(x, "detach") and hasattr(x, "numpy"):  # a torch tensor
        x = x.detach().numpy()
    if dtype in (dtypes.float8_143, dtypes.float8_152):
        x = dtypes.as_float8_host_array(as_array(x, order="C"), dtype, log2_scale, nan_on_overflow)  # type: ignore[arg-type]
        return x.copy() if copy else x
    if log2_scale is not None:
        raise RuntimeError("Non-default value for 'log2scale' is not supported for dtypes  that are not "
                           "popxl.float8_143 or popxl.float8_152")
    if nan_on_overflow is not None:
        raise RuntimeError("Non-default value for 'nan_on_overflow' is not supported for  dtypes that are not "
                           "popxl.float8_143 or popxl.float8_152")
    target = dtype.as_numpy() if dtype else (x.dtype if isinstance(x, np.ndarray) else None)
    if not dtype and downcast and target in _DOWNCAST:
        target = _DOWNCAST[target]
    x = as_array(x, dtype=target, order="C")
    if not dtype and downcast and x.dtype in _DOWNCAST:
        return np.array(x, dtype=_DOWNCAST[x.dtype], order="C")
    return x.copy() if copy else x


def table_to_string(rows: Sequence[Sequence[Any]], delimiter: str = " | ", header: bool = True) -> str:
    """Return ``rows`` as a left-aligned text table, one line per row (each ending in a newline),
    columns padded to their widest cell and joined by ``delimiter``; with ``header`` and more
    than one row, the first row is followed by a line of ``-`` as long as that row's line."""
    widths = [max(len(str(cell)) for cell in column) for column in zip(*rows)]
    lines: list[str] = []
    for i, row in enumerate(rows):
        line = delimiter.join(f"{cell!s: <{width}}" for cell, width in zip(row, widths)) + "\n"
        lines.append(line)
        if header and i == 0 and len(rows) > 1:
            lines.append("-" * len(line) + "\n")
    return "".join(lines)


__all__ = ["table_to_string", "to_numpy"]

__getattr__ = module_getattr("popxl.utils")
