"""Tensors, variables, constants, graph inputs/outputs (popxl tensor.py).

Ids follow popxl: ``<graph id>/<name scopes>/<name>`` in subgraphs, ``<name scopes>/<name>`` in
the main graph; a name already present in the graph gets ``__t<N>`` appended, N being an
Ir-wide counter.

A variable created from an ``np.memmap`` keeps that memmap as its host data (``_memmap_arr``)
instead of a copy, as popxl does: the Session reads it, writes device values into it and
flushes it (see ``Session``); a read-only memmap disables copying weights to the host.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from profcompare.backend import execution_mode

from . import dtypes, host_memory
from .context import gcg

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+; only the type checker reads this

    from .graph import Graph, Op
    from .ir import Ir
    from .remote_buffer import RemoteBuffer
    from .replica_grouping import ReplicaGrouping

#: popxl reports through PopART's logger; the emulator's messages go to a logger of that name
_POPART_LOG = logging.getLogger("popart")


class TensorSpec(Mapping):
    """Shape, dtype and meta_shape of a tensor, without the tensor (a hashable Mapping)."""

    def __init__(self, shape: Iterable[int], dtype: dtypes.dtype, meta_shape: Iterable[int] = ()) -> None:
        self.shape = tuple(int(s) for s in shape)
        if not isinstance(dtype, dtypes.dtype):
            raise TypeError(f"TensorSpec dtype must be a popxl dtype, got {dtype!r}")
        self.dtype = dtype
        self.meta_shape = tuple(int(s) for s in meta_shape) if meta_shape else ()

    def to_dict(self) -> dict[str, Any]:
        """Return ``{"shape", "dtype", "meta_shape"}``."""
        return {"shape": self.shape, "dtype": self.dtype, "meta_shape": self.meta_shape}

    def to_tuple(self) -> tuple[Any, ...]:
        """Return ``(shape, dtype, meta_shape)``."""
        return (self.shape, self.dtype, self.meta_shape)

    def __iter__(self) -> Iterator[str]:
        return iter(("shape", "dtype", "meta_shape"))

    def __len__(self) -> int:
        return 3

    def __getitem__(self, key: str) -> Any:
        return self.to_dict()[key]

    def __hash__(self) -> int:
        return hash(self.to_tuple())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TensorSpec):
            return self.to_tuple() == other.to_tuple()
        return Mapping.__eq__(self, other)

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype}, meta_shape={self.meta_shape})"


class Tensor:
    """A tensor of a graph. Built by ops, never constructed directly by users."""

    __slots__ = ("__weakref__", "_dtype", "_graph", "_id", "_meta_shape", "_producer", "_shape")
    _id: str
    _graph: Graph
    _shape: tuple[int, ...]
    _dtype: dtypes.dtype
    _meta_shape: tuple[int, ...]
    _producer: Op | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("popxl.Tensor cannot be constructed directly.")

    @classmethod
    def _create(cls, graph: Graph, tensor_id: str, shape: Iterable[int], dtype: dtypes.dtype,
                meta_shape: Iterable[int] = ()) -> Self:
        t = object.__new__(cls)
        t._id = tensor_id
        t._graph = graph
        t._shape = tuple(int(s) for s in shape)
        t._dtype = dtype
        t._meta_shape = tuple(int(s) for s in meta_shape) if meta_shape else ()
        t._producer = None
        graph._tensors[tensor_id] = t
        return t

    @classmethod
    def _from_pb_tensor(cls, pb_tensor: Any) -> Tensor:
        """The popxl tensor of a C++ custom op's output (``op.outTensor(i)``, pb_handles.PbTensor)."""
        from .pb_handles import PbTensor
        if not isinstance(pb_tensor, PbTensor):
            raise TypeError(f"_from_pb_tensor: expected an op's outTensor, got {type(pb_tensor).__name__}")
        return pb_tensor.tensor

    # --- properties --------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """Full id, including the graph scope."""
        return self._id

    @property
    def name(self) -> str:
        """The id without the graph scope."""
        prefix = self._graph._scope_prefix
        return self._id[len(prefix):] if prefix and self._id.startswith(prefix) else self._id

    @property
    def scope(self) -> str:
        """The graph scope part of the id."""
        return self._graph.id

    @property
    def dtype(self) -> dtypes.dtype:
        """The popxl dtype."""
        return self._dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape (per replica; the shard shape for a sharded tensor)."""
        return self._shape

    @property
    def meta_shape(self) -> tuple[int, ...]:
        """The full shape of a replica-sharded tensor; ``()`` when not sharded."""
        return self._meta_shape

    @property
    def spec(self) -> TensorSpec:
        """``TensorSpec(shape, dtype, meta_shape)``."""
        return TensorSpec(self._shape, self._dtype, self._meta_shape)

    @property
    def rank(self) -> int:
        """Number of dimensions."""
        return len(self._shape)

    @property
    def nelms(self) -> int:
        """Number of elements."""
        return int(np.prod(self._shape, dtype=np.int64)) if self._shape else 1

    @property
    def ir(self) -> Ir:
        """The Ir owning the tensor."""
        return self._graph.ir

    @property
    def graph(self) -> Graph:
        """The graph owning the tensor (simulator convenience)."""
        return self._graph

    @property
    def T(self) -> Tensor:
        """The tensor with its axes reversed."""
        return self.transpose()

    @property
    def T_(self) -> Tensor:  # noqa: N802 - popxl's name
        """The tensor with its axes reversed, in place (``transpose_()``)."""
        return self.transpose_()

    def transpose(self, permutation: Iterable[int] | None = None) -> Tensor:
        """Return ``ops.transpose(self, permutation)``."""
        from . import ops
        return ops.transpose(self, permutation)

    def transpose_(self, permutation: Iterable[int] | None = None) -> Tensor:
        """Return ``ops.transpose_(self, permutation)``: the permuted tensor as an alias of this one."""
        from . import ops
        return ops.transpose_(self, permutation)

    def reshape(self, shape: Iterable[int]) -> Tensor:
        """Return ``ops.reshape(self, shape)``."""
        from . import ops
        return ops.reshape(self, shape)

    def reshape_(self, shape: Iterable[int]) -> Tensor:
        """Return ``ops.reshape_(self, shape)`` (an alias)."""
        from . import ops
        return ops.reshape_(self, shape)

    def flatten(self) -> Tensor:
        """Return ``ops.flatten(self)``."""
        from . import ops
        return ops.flatten(self)

    def flatten_(self) -> Tensor:
        """Return ``ops.flatten_(self)`` (an alias)."""
        from . import ops
        return ops.flatten_(self)

    def detach(self) -> Tensor:
        """Return ``ops.detach(self)``: the same values, no gradient flows back."""
        from . import ops
        return ops.detach(self)

    def detach_(self) -> Tensor:
        """Return ``ops.detach_(self)``: detached in place (an alias of this tensor)."""
        from . import ops
        return ops.detach_(self)

    def diag(self) -> Tensor:
        """The diagonal of a 2-d tensor (every ``columns + 1``-th element of it flattened);
        ValueError for any other rank, as popxl."""
        if self.rank != 2:
            raise ValueError("Diag expected a 2d tensor.")
        return self.flatten()[:: self.shape[1] + 1]

    def strides(self, shape: Iterable[int] | None = None) -> tuple[int, ...]:
        """Bytes to step along each axis of a row-major tensor of ``shape`` (default: this
        tensor's) with this tensor's element size, as ``numpy.ndarray.strides``."""
        dims = tuple(int(d) for d in (self.shape if shape is None else shape))
        step = self.dtype.itemsize
        out = []
        for d in reversed(dims):
            out.append(step)
            step *= d
        return tuple(reversed(out))

    @property
    def ipu(self) -> int:
        """The IPU the tensor is on (its producer's; without one, its first consumer's)."""
        from .ipu_placement import tensor_ipu
        return tensor_ipu(self)

    @property
    def tile_set(self) -> str:
        """``"compute"`` or ``"io"``: the tile set the tensor is on."""
        from .ipu_placement import tensor_tile_set
        return tensor_tile_set(self)

    def copy_to_ipu(self, destination: int, source: int | None = None) -> Tensor:
        """Return ``ops.ipu_copy(self, destination, source)``."""
        from .ipu_placement import ipu_copy
        return ipu_copy(self, destination, source)

    def _ensure_tensor(self, value: Any, dtype: dtypes.dtype | None = None,
                       raise_on_empty: bool = True) -> Tensor:
        """Return ``value`` if it is a Tensor, else a constant of ``dtype`` (default: self's)."""
        if isinstance(value, Tensor):
            return value
        t = constant(value, dtype if dtype is not None else self._dtype)
        if raise_on_empty and t.nelms == 0:
            raise ValueError(f"The value has 0 elements - this is most likely a mistake. Value: {value!r}")
        return t

    # --- dunders ------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"{type(self).__name__}[{self._id} {self._dtype} {self._shape}]"

    def __hash__(self) -> int:
        return hash((self._id, id(self._graph._ir)))

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Tensor) and other._id == self._id
                and other._graph._ir is self._graph._ir)

    def __len__(self) -> int:
        if not self._shape:
            raise ValueError("Tensor is a scalar and doesn't have a length.")
        return self._shape[0]

    def __bool__(self) -> bool:
        return True

    def __add__(self, other: Any) -> Tensor:
        from . import ops
        return ops.add(self, self._ensure_tensor(other))

    def __radd__(self, other: Any) -> Tensor:
        from . import ops
        return ops.add(self._ensure_tensor(other), self)

    def __iadd__(self, other: Any) -> Tensor:
        from . import ops
        ops.add_(self, self._ensure_tensor(other))
        return self

    def __sub__(self, other: Any) -> Tensor:
        from . import ops
        return ops.sub(self, self._ensure_tensor(other))

    def __rsub__(self, other: Any) -> Tensor:
        from . import ops
        return ops.sub(self._ensure_tensor(other), self)

    def __mul__(self, other: Any) -> Tensor:
        from . import ops
        return ops.mul(self, self._ensure_tensor(other))

    def __rmul__(self, other: Any) -> Tensor:
        from . import ops
        return ops.mul(self._ensure_tensor(other), self)

    def __truediv__(self, other: Any) -> Tensor:
        from . import ops
        return ops.div(self, self._ensure_tensor(other))

    def __rtruediv__(self, other: Any) -> Tensor:
        from . import ops
        return ops.div(self._ensure_tensor(other), self)

    def __neg__(self) -> Tensor:
        from . import ops
        return ops.negate(self)

    def __matmul__(self, other: Any) -> Tensor:
        from . import ops
        return ops.matmul(self, self._ensure_tensor(other))

    def __rmatmul__(self, other: Any) -> Tensor:
        from . import ops
        return ops.matmul(self._ensure_tensor(other), self)

    def __pow__(self, other: Any) -> Tensor:
        """Return ``ops.pow(self, other)``."""
        from . import ops
        return ops.pow(self, other)

    def __rpow__(self, other: Any) -> Tensor:
        """Return ``ops.pow(constant(other), self)`` (the constant's dtype inferred from ``other``)."""
        from . import ops
        return ops.pow(constant(other), self)

    def __mod__(self, other: Any) -> Tensor:
        """Return ``ops.fmod(self, other)``."""
        from . import ops
        return ops.fmod(self, self._ensure_tensor(other))

    def __rmod__(self, other: Any) -> Tensor:
        """Return ``ops.fmod(other, self)``."""
        from . import ops
        return ops.fmod(self._ensure_tensor(other), self)

    def __and__(self, other: Any) -> Tensor:
        """Return ``ops.logical_and(self, other)``."""
        from . import ops
        return ops.logical_and(self, self._ensure_tensor(other))

    def __rand__(self, other: Any) -> Tensor:
        """Return ``ops.logical_and(other, self)``."""
        from . import ops
        return ops.logical_and(self._ensure_tensor(other), self)

    def __or__(self, other: Any) -> Tensor:
        """Return ``ops.logical_or(self, other)``."""
        from . import ops
        return ops.logical_or(self, self._ensure_tensor(other))

    def __ror__(self, other: Any) -> Tensor:
        """Return ``ops.logical_or(other, self)``."""
        from . import ops
        return ops.logical_or(self._ensure_tensor(other), self)

    def __invert__(self) -> Tensor:
        """Return ``ops.logical_not(self)``."""
        from . import ops
        return ops.logical_not(self)

    def __getitem__(self, key: Any) -> Tensor:
        """popxl's indexing: integers and slices (``x[0]``, ``x[:2, 3:]``, ``x[:, ::-1]``) slice, an
        integer squeezing its axis and |step| > 1 subsampling after the slice; an integer tensor (or
        host array) gathers along axis 0; a boolean one keeps where True and zeroes the rest
        (``where``; the shape stays, unlike NumPy)."""
        from . import ops

        if isinstance(key, (slice, int)) and not isinstance(key, bool) or (
                isinstance(key, tuple) and key and all(isinstance(k, (slice, int)) and not isinstance(k, bool)
                                                       for k in key)):
            keys = (key,) if isinstance(key, (slice, int)) else key
            start: list[Any] = []
            stop: list[Any] = []
            step: list[Any] = []
            subsample: list[int] = []
            squeezed: list[int] = []
            for axis, k in enumerate(keys):
                if isinstance(k, int):
                    start.append(k)
                    stop.append(k + 1 if k != -1 else None)
                    step.append(1)
                    subsample.append(1)
                    squeezed.append(axis)
                else:
                    start.append(k.start)
                    stop.append(k.stop)
                    step.append(None if k.step is None else max(-1, min(1, k.step)))
                    subsample.append(1 if k.step is None else abs(k.step))
            out = ops.slice(self, start, stop, step)
            if any(s != 1 for s in subsample):
                out = ops.subsample(out, subsample + [1] * (out.rank - len(subsample)))
            if squeezed:
                out = ops.squeeze(out, axes=squeezed)
            return out
        if isinstance(key, Tensor) or (isinstance(key, (np.ndarray, list, tuple)) and not isinstance(key, (str, bool))):
            index = key if isinstance(key, Tensor) else constant(np.asarray(key))
            if index.dtype.is_int:
                return ops.gather(self, index)
            if index.dtype == dtypes.bool:
                return ops.where(index, self, constant(0, dtype=self.dtype))
        raise TypeError("Only integers, slices (`:`), integer tensors and boolean tensors are valid indices. "
                        f"Not a valid Type: {type(key)}. Value: {key}.")

    def __iter__(self) -> Iterator[Any]:
        raise TypeError("popxl.Tensor is not iterable")


class Variable(Tensor):
    """A variable of the main graph (on chip, or in a remote buffer for remote variables)."""

    __slots__ = (
        "_host_data",
        "_memmap_arr",
        "_offset",
        "_remote_buffer",
        "_replica_grouping",
        "_retrieval_mode",
        "_sharded",
    )
    _host_data: np.ndarray
    #: the np.memmap the variable was created from and shares with the host, else None
    _memmap_arr: np.memmap | None
    _replica_grouping: ReplicaGrouping
    _retrieval_mode: str
    _remote_buffer: RemoteBuffer | None
    _offset: int
    _sharded: bool

    @property
    def replica_grouping(self) -> ReplicaGrouping:
        """How replicas share this variable's values."""
        return self._replica_grouping

    @property
    def retrieval_mode(self) -> str:
        """``"one_per_group"`` (the host sees one value per group) or ``"all_replicas"``
        (``Session.get_tensor_data`` returns one value per replica when groups have more than
        one replica)."""
        return self._retrieval_mode

    @property
    def shape_on_host(self) -> tuple[int, ...]:
        """Host shape: a leading num_groups dimension only when there is more than one group."""
        groups = self._replica_grouping.num_groups
        return ((groups,) if groups > 1 else ()) + self._shape

    @property
    def shape_on_replica(self) -> tuple[int, ...]:
        """Shape of this variable on one replica (the full shape; the shard lives in the buffer)."""
        return self._shape

    @property
    def remote_buffer(self) -> RemoteBuffer | None:
        """The remote buffer of a remote variable, else None (simulator convenience)."""
        return self._remote_buffer

    @property
    def is_replica_sharded(self) -> bool:
        """True for a remote replica-sharded variable (simulator convenience)."""
        return self._sharded

    def copy_to_ipu(self, dst: int, src: int) -> Tensor:  # type: ignore[override]
        """Return ``ops.ipu_copy(self, dst, src)``; a variable has no producer, so ``src`` is needed."""
        from .ipu_placement import ipu_copy
        return ipu_copy(self, dst, src)

    def _flush_data_if_memmap(self) -> None:
        """Write a memmap-backed variable's host data back to its file (no-op otherwise)."""
        if self._memmap_arr is not None:
            self._memmap_arr.flush()


class Constant(Tensor):
    """A constant of any graph."""

    __slots__ = ("_data",)
    _data: np.ndarray

    @property
    def data(self) -> np.ndarray:
        """The constant's host data (read-only view)."""
        v = self._data.view()
        v.flags.writeable = False
        return v

    def copy_to_ipu(self, dst: int, src: int) -> Tensor:  # type: ignore[override]
        """Return ``ops.ipu_copy(self, dst, src)``; a constant has no producer, so ``src`` is needed."""
        from .ipu_placement import ipu_copy
        return ipu_copy(self, dst, src)


class TensorByRef(Tensor):
    """Annotation: a graph input of this type is passed by reference (modified in place)."""

    __slots__ = ()


ScalarType = Union[int, float, bool]
#: host data popxl turns into a tensor (popxl's tensor.py also adds ``torch.Tensor`` when torch
#: imports; the simulator adds it when the program has imported torch, so that loading the
#: emulator never imports torch itself -- the alias is only used in annotations)
HostTensor: Any = Union[np.ndarray, Iterable[ScalarType]]
if "torch" in sys.modules:
    _TORCH_TENSOR = sys.modules["torch"].Tensor
    HostTensor = Union[HostTensor, _TORCH_TENSOR]
HostScalarTensor = Any
TensorLike = Any


def _check_name(name: str | None) -> str | None:
    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    return name


def variable(data: Any, dtype: dtypes.dtype | None = None, name: str | None = None,
             downcast: bool = True, replica_grouping: ReplicaGrouping | None = None,
             retrieval_mode: str | None = "one_per_group", log2_scale: Any = None,
             nan_on_overflow: Any = None) -> Variable:
    """Create a variable in the main graph (ValueError elsewhere) and return it.

    float64/int64 data is downcast to 32 bits when no dtype is given. With a replica grouping of
    more than one group, ``data`` carries a leading num_groups dimension.

    An ``np.memmap`` is not copied: it becomes the variable's host data (``_memmap_arr``), so it
    must already be C-ordered and aligned, of a dtype popxl needs no downcast for and equal to
    ``dtype`` when one is given (ValueError otherwise). A replica grouping that is not of
    constant stride needs a copy: popxl then warns and treats the variable as not memmapped."""
    g = gcg()
    if g is not g.ir.main_graph:
        raise ValueError(
            "You cannot initialise a variable tensor within a graph. It can only be initialised "
            "within the main graph. Please create a graph input for this variable "
            "(`popxl.graph_input`) or use a constant tensor (`popxl.constant`).")
    is_memmap = isinstance(data, np.memmap)
    if is_memmap and not data.flags.writeable:
        g.ir._has_read_only_memmap = True
    compile_only = execution_mode.is_compile_only()
    is_memmap = is_memmap and not compile_only
    arr = _host_array(data, dtype, downcast, log2_scale, nan_on_overflow)
    rg = replica_grouping if replica_grouping is not None else g.ir.replica_grouping()
    mode = _check_retrieval_mode(retrieval_mode)
    if rg.num_groups > 1:
        if arr.ndim == 0 or arr.shape[0] != rg.num_groups:
            raise ValueError(f"variable data for {rg.num_groups} replica groups needs a leading "
                             f"dimension of {rg.num_groups}, got shape {arr.shape}")
        shape = arr.shape[1:]
    else:
        shape = arr.shape
    tensor_id = g._create_tensor_id(_check_name(name))
    if is_memmap and not rg.is_const:
        _POPART_LOG.warning(
            "In creation of variable %s, you have passed np.memmap data and a non-const replica grouping, "
            "which requires a copy of the np.memmap data. The variable will be treated as NOT an np.memmap.",
            tensor_id)
        is_memmap = False
        arr = np.array(arr)
    v = Variable._create(g, tensor_id, shape, dtypes.dtype.as_dtype(arr.dtype))
    v._host_data = arr
    v._memmap_arr = arr if is_memmap else None
    if not compile_only:
        # refuse a program whose numeric simulation cannot fit before the Session copies it per replica
        r = g.ir.replication_factor
        g.ir._numeric_host_bytes += host_memory.variable_bytes(arr.nbytes, shape, arr.dtype.itemsize, r, is_memmap)
        n = len(g.ir._variables) + 1
        host_memory.check_variables(g.ir, f"the {n} variable{'s' if n != 1 else ''} created so far "
                                    f"(host copies and {r} device cop{'ies' if r != 1 else 'y'} each)")
    v._replica_grouping = rg
    v._retrieval_mode = mode
    v._remote_buffer = None
    v._offset = 0
    v._sharded = False
    g.ir._variables.append(v)
    return v


def _host_array(data: Any, dtype: dtypes.dtype | None, downcast: bool, log2_scale: Any,
                nan_on_overflow: Any) -> np.ndarray:
    """``dtypes.to_numpy(data, ...)`` (a copy), except that an ``np.memmap`` is returned itself
    after popxl's checks that it can be used without a copy (``utils.to_numpy(copy=False)``:
    ValueError when it cannot). In compile-only execution, a read-only zero array of the
    converted shape and dtype that holds no memory (:func:`host_placeholder`)."""
    if execution_mode.is_compile_only():
        return host_placeholder(data, dtype, downcast, log2_scale, nan_on_overflow)
    if not isinstance(data, np.memmap):
        return dtypes.to_numpy(data, dtype, downcast, log2_scale, nan_on_overflow)
    from .utils import to_numpy

    arr = to_numpy(data, dtype, downcast, copy=False, log2_scale=log2_scale, nan_on_overflow=nan_on_overflow)
    dtypes.dtype.as_dtype(arr.dtype)  # raises for types popxl has no equivalent of
    return arr


def host_placeholder(data: Any, dtype: dtypes.dtype | None = None, downcast: bool = True, log2_scale: Any = None,
                     nan_on_overflow: Any = None) -> np.ndarray:
    """Compile-only host data: zeros of the shape and dtype ``dtypes.to_numpy(data, ...)`` would
    give, as a read-only broadcast of one element (no memory however large; never copied per
    replica). Only one element of ``data`` is converted, so the dtype rules and their errors
    are popxl's; ``data`` may itself be a placeholder."""
    arr = data if isinstance(data, np.ndarray) else np.asarray(data)
    sample = arr[tuple(slice(0, 1) for _ in arr.shape)]
    converted = dtypes.to_numpy(sample, dtype, downcast, log2_scale, nan_on_overflow)
    return np.broadcast_to(np.zeros((), converted.dtype), arr.shape)


def _check_retrieval_mode(mode: str | None) -> str:
    if mode is None or mode == "one_per_group":
        return "one_per_group"
    if mode == "all_replicas":
        return mode
    raise ValueError(f"retrieval_mode must be 'one_per_group' or 'all_replicas', got {mode!r}")


def constant(data: Any, dtype: dtypes.dtype | None = None, name: str | None = None,
             downcast: bool = True, log2_scale: Any = None, nan_on_overflow: Any = None) -> Constant:
    """Create a constant in the current graph and return it (float8 data needs its dtype)."""
    g = gcg()
    if isinstance(data, Tensor):
        raise TypeError("A Tensor cannot be used as the data of popxl.constant")
    if (isinstance(data, np.ndarray) and data.dtype in (dtypes.np_dtype_float8_143, dtypes.np_dtype_float8_152)
            and dtype is None):
        raise TypeError("Please explicitly set the data type when calling popxl.constant with float8 data")
    arr = dtypes.to_numpy(data, dtype, downcast, log2_scale, nan_on_overflow)
    c = Constant._create(g, g._create_tensor_id(_check_name(name)), arr.shape, dtypes.dtype.as_dtype(arr.dtype))
    c._data = arr
    return c


def graph_input(shape: Iterable[int], dtype: dtypes.dtype, name: str | None = None,
                by_ref: bool = False, meta_shape: Iterable[int] | None = None) -> Tensor:
    """Add an input to the current graph and return it (appended after existing inputs)."""
    g = gcg()
    if not isinstance(dtype, dtypes.dtype):
        raise TypeError(f"graph_input dtype must be a popxl dtype, got {dtype!r}")
    t = Tensor._create(g, g._create_tensor_id(_check_name(name)), tuple(shape), dtype,
                       tuple(meta_shape) if meta_shape else ())
    g._inputs.append(t)
    if by_ref:
        g._by_ref_inputs[t] = None
    return t


def graph_output(t: Tensor) -> None:
    """Mark ``t`` (a tensor of the current graph) as the next output of the current graph."""
    g = gcg()
    if not isinstance(t, Tensor):
        raise TypeError(f"graph_output expects a Tensor, got {type(t).__name__}")
    if t._graph is not g:
        raise ValueError(f"The tensor {t.id} is not in the current graph {g.name}")
    g._outputs.append(t)


def remote_variable(data: Any, remote_buffer: RemoteBuffer, offset: int = 0,
                    dtype: dtypes.dtype | None = None, name: str | None = None,
                    downcast: bool = True, replica_grouping: ReplicaGrouping | None = None,
                    retrieval_mode: str | None = "one_per_group", log2_scale: Any = None,
                    nan_on_overflow: Any = None) -> Variable:
    """Create a variable stored at entry ``offset`` of ``remote_buffer`` (load it before use)."""
    v = variable(data, dtype, name, downcast, replica_grouping, retrieval_mode, log2_scale, nan_on_overflow)
    _attach_remote(v, remote_buffer, offset, sharded=False)
    return v


def remote_replica_sharded_variable(data: Any, remote_buffer: RemoteBuffer, offset: int = 0,
                                    dtype: dtypes.dtype | None = None, name: str | None = None,
                                    downcast: bool = True,
                                    replica_grouping: ReplicaGrouping | None = None,
                                    retrieval_mode: str | None = "one_per_group",
                                    log2_scale: Any = None, nan_on_overflow: Any = None) -> Variable:
    """Create a replica-sharded remote variable from the FULL data; each replica holds a shard.

    Raises ValueError when the replication factor is 1 or the buffer's meta_shape differs."""
    ir = gcg().ir
    rf = ir.replication_factor
    if rf <= 1:
        raise ValueError(f"The IR's global replication factor is {rf}. It must be greater than 1 "
                         "to create a replica sharded variable.")
    arr = _host_array(data, dtype, downcast, log2_scale, nan_on_overflow)
    rg = replica_grouping if replica_grouping is not None else ir.replica_grouping()
    required = arr.shape[1:] if rg.num_groups > 1 else arr.shape
    if remote_buffer.meta_shape == ():
        remote_buffer.meta_shape = required
    elif remote_buffer.meta_shape != tuple(required):
        raise ValueError(
            f"Cannot use RemoteBuffer[id={remote_buffer.remote_buffer_id}] for replica sharded variable "
            f"of shape {tuple(required)}. The buffer's meta_shape has already been set to: "
            f"{remote_buffer.meta_shape}.")
    v = variable(arr, None, name, downcast, rg, retrieval_mode)
    _attach_remote(v, remote_buffer, offset, sharded=True)
    return v


def _attach_remote(v: Variable, buffer: RemoteBuffer, offset: int, sharded: bool) -> None:
    if not isinstance(offset, (int, np.integer)) or offset < 0:
        raise ValueError(f"remote variable offset must be a non-negative int, got {offset!r}")
    if offset >= buffer.entries:
        raise ValueError(f"offset {offset} is out of range for RemoteBuffer[id={buffer.remote_buffer_id}] "
                         f"with {buffer.entries} entries")
    if v.dtype != buffer.tensor_dtype:
        raise ValueError(f"remote variable dtype {v.dtype} does not match the buffer dtype {buffer.tensor_dtype}")
    if sharded:
        # shards over the grouping's constant-stride part, as popxl's replica_sharded_buffer
        # makes them (its const_rg: the grouping itself unless made by assignment)
        n = v.nelms
        groups = v.replica_grouping.const_rg.group_size
        shard = (-(-n // groups),)
        held = int(np.prod(buffer.tensor_shape, dtype=np.int64))
        fewer = [k for k in range(2, groups) if groups % k == 0 and -(-n // k) == held]
        if tuple(buffer.tensor_shape) != shard and len(buffer.tensor_shape) == 1 and fewer:
            # the buffer shards over a sub-group of the variable's grouping (its shard_over): the
            # simulator shards a variable over its whole grouping only
            from .errors import SimulatorNotImplementedError, not_implemented_message
            raise SimulatorNotImplementedError(not_implemented_message(
                f"popxl.remote_replica_sharded_variable sharded over {fewer[-1]} of the {groups} replicas of its "
                f"replica grouping (RemoteBuffer[id={buffer.remote_buffer_id}] holds shards of {held})"))
        if tuple(buffer.tensor_shape) != shard:
            raise ValueError(f"RemoteBuffer[id={buffer.remote_buffer_id}] has tensor shape {buffer.tensor_shape}; "
                             f"a shard of {v.shape} over {groups} replicas needs {shard}")
    elif tuple(buffer.tensor_shape) != v.shape:
        raise ValueError(f"remote variable shape {v.shape} does not match the buffer tensor shape "
                         f"{buffer.tensor_shape}")
    v._remote_buffer = buffer
    v._offset = int(offset)
    v._sharded = sharded
    buffer._variables.append(v)


class _ReplicaShard(Tensor):
    """The on-chip shard returned by :func:`replica_sharded_variable`: a main-graph tensor (not a
    Variable) with the shard shape and ``meta_shape`` = the full shape, loaded from entry 0 of its
    buffer by weights_from_host and stored back by weights_to_host."""

    __slots__ = ("_full",)
    _full: Variable

    def __repr__(self) -> str:
        return f"Tensor[{self._id} {self._dtype} {self._shape}]"  # a plain popxl Tensor to users


def replica_sharded_variable(data: Any, dtype: dtypes.dtype | None = None, name: str | None = None,
                             downcast: bool = True, replica_grouping: ReplicaGrouping | None = None,
                             shard_over: int | None = None, retrieval_mode: str | None = "one_per_group",
                             log2_scale: Any = None, nan_on_overflow: Any = None) -> tuple[Variable, Tensor]:
    """Return ``(full variable, shard)``: a replica-sharded buffer (``replica_sharded_buffer``), a
    remote replica-sharded variable of the FULL data at its entry 0, and the shard every replica
    holds on chip (named ``<name>_rts``, shape ``(ceil(nelms / shard_over),)``, meta_shape = the
    full shape). As in popxl, the shard is loaded from the buffer in the WeightsFromHost program
    and stored back in WeightsToHost; use the shard in the program and the full variable only
    with the Session's get/write data methods."""
    from .remote_buffer import replica_sharded_buffer

    arr = _host_array(data, dtype, downcast, log2_scale, nan_on_overflow)
    buffer_dtype = dtype if dtype is not None else dtypes.dtype.as_dtype(arr.dtype)
    buffer = replica_sharded_buffer(arr.shape, buffer_dtype, replica_grouping, shard_over)
    var = remote_replica_sharded_variable(arr, buffer, 0, dtype, name, downcast, replica_grouping, retrieval_mode)
    main = var.ir.main_graph
    shard = _ReplicaShard._create(main, main._create_tensor_id(var.name + "_rts"), buffer.tensor_shape,
                                  buffer.tensor_dtype, buffer.meta_shape)
    shard._full = var
    var.ir._replica_shards.append(shard)
    return var, shard


__all__ = [
    "Constant",
    "Tensor",
    "TensorByRef",
    "TensorSpec",
    "Variable",
    "constant",
    "graph_input",
    "graph_output",
    "remote_replica_sharded_variable",
    "remote_variable",
    "replica_sharded_variable",
    "variable",
]
