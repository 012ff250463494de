"""popxl data types (``popxl.float32``, ``popxl.float16``, ...), each tied to a numpy dtype."""

from __future__ import annotations

import builtins
from typing import Any, ClassVar

import numpy as np

from .errors import SimulatorNotImplementedError


class dtype:
    """A popxl data type. Compare with ``==``; convert with :meth:`as_numpy`."""

    __slots__ = ("_is_float", "_is_int", "_is_signed", "_name", "_np")

    _by_name: ClassVar[dict[str, dtype]] = {}
    _by_numpy: ClassVar[dict[np.dtype, dtype]] = {}

    def __init__(self, name: str, np_type: Any, is_float: builtins.bool, is_int: builtins.bool, is_signed: builtins.bool) -> None:
        self._name = name
        self._np = np.dtype(np_type) if np_type is not None else None
        self._is_float = is_float
        self._is_int = is_int
        self._is_signed = is_signed
        dtype._by_name[name] = self
        if self._np is not None:
            dtype._by_numpy.setdefault(self._np, self)

    @property
    def name(self) -> str:
        """The popxl name, e.g. ``"float32"``."""
        return self._name

    @property
    def is_floating_point(self) -> builtins.bool:
        """True for float types."""
        return self._is_float

    @property
    def is_int(self) -> builtins.bool:
        """True for integer types."""
        return self._is_int

    @property
    def is_signed(self) -> builtins.bool:
        """True for signed types."""
        return self._is_signed

    @property
    def is_complex(self) -> builtins.bool:
        """True for complex types."""
        return self._name.startswith("complex")

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return int(self.as_numpy().itemsize)

    def as_numpy(self) -> np.dtype:
        """Return the numpy dtype of this popxl dtype."""
        if self._np is None:
            raise SimulatorNotImplementedError(f"popxl.{self._name} data is not supported by the profcompare simulator")
        return self._np

    @classmethod
    def as_dtype(cls, x: Any) -> dtype:
        """Return the popxl dtype of a numpy dtype / array / popxl dtype / name.

        Raises ValueError when there is no popxl equivalent."""
        if isinstance(x, dtype):
            return x
        if isinstance(x, str) and x in cls._by_name:
            return cls._by_name[x]
        if isinstance(x, np.ndarray):
            x = x.dtype
        try:
            npd = np.dtype(x)
        except TypeError as exc:
            raise ValueError(f"There is no popxl dtype for {x!r}") from exc
        if npd not in cls._by_numpy:
            raise ValueError(f"There is no popxl dtype for numpy dtype {npd}")
        return cls._by_numpy[npd]

    def __repr__(self) -> str:
        return f"popxl.dtypes.{self._name}"

    __str__ = __repr__

    def __eq__(self, other: object) -> builtins.bool:
        return isinstance(other, dtype) and other._name == self._name

    def __hash__(self) -> int:
        return hash(("popxl.dtype", self._name))

    def __reduce__(self) -> tuple[Any, ...]:
        return (_lookup, (self._name,))


def _lookup(name: str) -> dtype:
    return dtype._by_name[name]


bool = dtype("bool", np.bool_, False, False, False)
int8 = dtype("int8", np.int8, False, True, True)
int16 = dtype("int16", np.int16, False, True, True)
int32 = dtype("int32", np.int32, False, True, True)
int64 = dtype("int64", np.int64, False, True, True)
uint8 = dtype("uint8", np.uint8, False, True, False)
uint16 = dtype("uint16", np.uint16, False, True, False)
uint32 = dtype("uint32", np.uint32, False, True, False)
uint64 = dtype("uint64", np.uint64, False, True, False)
float16 = dtype("float16", np.float16, True, False, True)
float32 = dtype("float32", np.float32, True, False, True)
float64 = dtype("float64", np.float64, True, False, True)
complex64 = dtype("complex64", np.complex64, False, False, True)
complex128 = dtype("complex128", np.complex128, False, False, True)
#: numpy has no float8: popxl keeps float8 data as bit patterns in one-field structured dtypes
np_dtype_float8_143 = np.dtype([("float8_143", "u1")])
np_dtype_float8_152 = np.dtype([("float8_152", "u1")])
float8_143 = dtype("float8_143", np_dtype_float8_143, True, False, True)
float8_152 = dtype("float8_152", np_dtype_float8_152, True, False, True)
half = float16
float = float32
double = float64

_DOWNCAST = {np.dtype(np.float64): np.dtype(np.float32), np.dtype(np.int64): np.dtype(np.int32),
             np.dtype(np.uint64): np.dtype(np.uint32)}


def as_float8_host_array(arr: np.ndarray, dt: dtype, log2_scale: int | None = None,
                         nan_on_overflow: builtins.bool | None = None) -> np.ndarray:
    """Return ``arr`` as host data of the float8 dtype ``dt``: ``arr`` itself when it already
    holds ``dt``'s bit patterns, else float16/32/64 data converted with
    ``fp8_utils.host_pow2scale_cast_to_fp8`` (``log2_scale`` default 0, ``nan_on_overflow``
    default True). Raises TypeError for other data types, with popxl's message."""
    from .fp8_utils import host_pow2scale_cast_to_fp8

    if arr.dtype == dt.as_numpy():
        return arr
    if arr.dtype not in (np.float16, np.float32, np.float64):
        # popxl's own wording, missing space included (popxl/utils.py to_numpy)
        raise TypeError(f"Type {arr.dtype} is not supported for float8 tensors."
                        "Please use float16, float32 or float64 types.")
    return host_pow2scale_cast_to_fp8(arr, dt, 0 if log2_scale is None else log2_scale,
                                      True if nan_on_overflow is None else nan_on_overflow)


def to_numpy(data: Any, dt: dtype | None = None, downcast: builtins.bool = True,
             log2_scale: int | None = None, nan_on_overflow: builtins.bool | None = None) -> np.ndarray:
    """Return ``data`` as a numpy array the way popxl's ``to_numpy`` does.

    With ``dt`` given the data is converted to it; otherwise 64-bit floats/ints are downcast to
    32 bits when ``downcast`` is true. Python floats become float32, ints int32. For a float8
    ``dt``, float16/32/64 data is converted with ``fp8_utils.host_pow2scale_cast_to_fp8``
    (``log2_scale`` default 0, ``nan_on_overflow`` default True); float8 data is kept."""
    if dt in (float8_143, float8_152):
        if hasattr(data, "detach") and hasattr(data, "numpy"):
            data = data.detach().numpy()
        arr = as_float8_host_array(np.asarray(data, order="C"), dt, log2_scale, nan_on_overflow)  # type: ignore[arg-type]
        return np.array(arr, copy=True)
    if log2_scale is not None or nan_on_overflow is not None:
        raise RuntimeError("log2_scale and nan_on_overflow are only supported for the dtypes popxl.float8_143 "
                           "and popxl.float8_152")
    if dt is not None:
        if not isinstance(dt, dtype):
            raise TypeError(f"dtype must be a popxl dtype, got {type(dt).__name__}: {dt!r}")
        return np.array(data, dtype=dt.as_numpy(), copy=True)
    arr = np.array(data, copy=True)
    if arr.dtype == np.dtype(object):
        raise ValueError(f"Cannot convert {type(data).__name__} to a popxl tensor")
    if downcast and arr.dtype in _DOWNCAST:
        arr = arr.astype(_DOWNCAST[arr.dtype])
    dtype.as_dtype(arr.dtype)  # raises for types popxl has no equivalent of
    return arr


__all__ = [
    "bool",
    "complex64",
    "complex128",
    "double",
    "dtype",
    "float",
    "float8_143",
    "float8_152",
    "float16",
    "float32",
    "float64",
    "half",
    "int8",
    "int16",
    "int32",
    "int64",
    "np_dtype_float8_143",
    "np_dtype_float8_152",
    "to_numpy",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
]
