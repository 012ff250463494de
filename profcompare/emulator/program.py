"""The lowered program: what the compile model sees of a built popxl IR.

The emulator's IR (``profcompare.emulator.popxl``) is lowered once, when a ``Session`` is
created, into a :class:`LoweredProgram`: plain frozen records of tensors, ops, graphs, remote
buffers and streams, plus the schedule of one run of the main program with called graphs
expanded. The compile model (memory, liveness, code, cycles) walks this structure without
re-executing anything and without importing the IR classes.

Conventions
-----------
- Every tensor id is unique within the program (popxl ids carry their graph scope).
- Shapes are per replica, as on device: a replica-sharded tensor has its shard shape and
  ``meta_shape`` set to the full shape.
- A graph's ops exist once however often the graph is called (outlining); the schedule refers
  to op ids, with ``call_path`` telling which call sites enclose an execution.
- A ``Call`` op appears in the schedule twice: ``phase="enter"`` (inputs copied into the
  called graph's input tensors) before the called graph's steps, and ``phase="exit"`` (outputs
  and modified by-ref inputs copied back) after them. Every other step has ``phase=""``.
"""

from __future__ import annotations

import math

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: bytes per element of the popxl dtypes numpy has no type for (one byte of float8 bits)
_ITEMSIZE_WITHOUT_NUMPY = {"float8_143": 1, "float8_152": 1}


def dtype_itemsize(name: str) -> int:
    """Bytes per element of the popxl dtype called ``name``."""
    size = _ITEMSIZE_WITHOUT_NUMPY.get(name)
    return size if size is not None else int(np.dtype(name).itemsize)

#: storage classes of a tensor
STORAGES = ("variable", "constant", "intermediate", "remote", "stream")


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of the program."""

    id: str  # unique id, with graph scope as popxl forms it
    name: str  # user-facing name ("fc1.weight", "accum.fc1.bias", "first_order__t2", ...)
    graph: str  # id of the graph that owns it
    shape: tuple[int, ...]  # per-replica shape on device (shard shape when sharded)
    dtype: str  # numpy dtype name: "float32", "float16", "int32", "uint32", ...
    kind: str  # one of profcompare.model.VARIABLE_KINDS
    storage: str  # one of STORAGES: "variable" = on-chip popxl variable (always-live);
    #               "remote" = remote/RTS variable living in a remote buffer (no tile memory);
    #               "constant"; "intermediate" (op outputs, graph inputs/outputs); "stream"
    meta_shape: tuple[int, ...] = ()  # full shape of a replica-sharded tensor, () otherwise
    remote_buffer: int | None = None  # buffer id for storage == "remote" (and, for the on-chip shard of a
    #                                    popxl.replica_sharded_variable, the buffer it is loaded from / stored to)
    remote_offset: int | None = None  # entry of the remote buffer holding it (storage == "remote")
    ipu: int = 0  # IPU of the replica holding it (popxl.ipu; producer's IPU, else first consumer's)
    tile_set: str = "compute"  # "compute" | "io" (popxl.io_tiles, or landing data of a transfer with I/O tiles)

    @property
    def nelms(self) -> int:
        """Number of elements per replica."""
        return int(math.prod(self.shape))

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return dtype_itemsize(self.dtype)

    @property
    def nbytes(self) -> int:
        """Bytes per replica on device."""
        return self.nelms * self.itemsize


@dataclass(frozen=True)
class OpInfo:
    """One op of one graph (its code exists once, however often it runs)."""

    id: str  # unique op id
    graph: str  # owning graph id
    type: str  # popxl op type: "MatMul", "Add", "Gelu", "Reshape", "HostLoad", "HostStore",
    #            "RemoteLoad", "RemoteStore", "ReplicatedAllReduce", "ReplicatedReduceScatter",
    #            "ReplicatedAllGather", "Call", "AccumulateMovingAverage", "AdamUpdater", ...
    name: str  # debug name (name scope + op name)
    inputs: tuple[str, ...]  # tensor ids read
    outputs: tuple[str, ...]  # tensor ids written (new tensors)
    modified: tuple[str, ...] = ()  # tensor ids modified in place (inputs of in-place ops)
    flops: int = 0  # floating-point operations per replica for one execution
    attrs: Mapping[str, Any] = field(default_factory=dict)
    # attrs by type:
    #   Call: {"called_graph": graph id, "inputs": {graph input id: parent tensor id},
    #          "outputs": {graph output id: parent tensor id}}
    #   HostLoad / HostStore: {"stream": stream name}
    #   RemoteLoad / RemoteStore: {"remote_buffer": buffer id}
    #   Replicated*: {"op": "add" | "mean" | "local" ..., "group_size": int}


@dataclass(frozen=True)
class GraphInfo:
    """One graph: the main graph or a subgraph created with ``ir.create_graph``."""

    id: str
    name: str
    ops: tuple[str, ...]  # op ids in schedule order
    inputs: tuple[str, ...]  # graph input tensor ids, in order
    outputs: tuple[str, ...]  # graph output tensor ids, in order
    by_ref_inputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class RemoteBufferInfo:
    """One remote buffer (Streaming Memory), per replica."""

    id: int
    name: str  # a readable name (the variable it holds, or "remote_buffer_<id>")
    shape: tuple[int, ...]  # one entry's shape on device (shard shape when sharded)
    dtype: str
    entries: int
    meta_shape: tuple[int, ...] = ()  # full shape when replica-sharded
    variables: tuple[str, ...] = ()  # ids of the variables it holds (or backs), by entry

    @property
    def sharded(self) -> bool:
        """True for a replica-sharded buffer."""
        return bool(self.meta_shape)

    @property
    def nbytes(self) -> int:
        """entries x elements x itemsize, per replica."""
        nelms = int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1
        return self.entries * nelms * dtype_itemsize(self.dtype)


@dataclass(frozen=True)
class StreamInfo:
    """A host<->device stream (per-replica shape)."""

    name: str
    direction: str  # "h2d" | "d2h"
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class ExecStep:
    """One executed op in one run of the main program."""

    index: int
    op: str  # OpInfo id
    call_path: tuple[str, ...] = ()  # Call op ids enclosing this execution, outermost first
    phase: str = ""  # "" | "enter" | "exit" (only for Call ops)


@dataclass(frozen=True)
class PipelineInfo:
    """One ``pipelined_execution`` block of the main graph (popxl-addons pipelining)."""

    id: int
    steps: int  # micro-batches through the pipeline per run
    stages: tuple[tuple[int, tuple[str, ...]], ...]  # (stage, op ids) in stage order, IpuCopy ops excluded
    copies: tuple[str, ...] = ()  # IpuCopy op ids (run together after each pipeline cycle but the last)
    stage_ipus: tuple[tuple[int, int], ...] = ()  # (stage, IPU of its ops)


#: PopLibs' default availableMemoryProportion of a matmul (its matmul options documentation)
DEFAULT_AVAILABLE_MEMORY_PROPORTION = 0.6


@dataclass(frozen=True)
class LoweredProgram:
    """Everything the compile model needs to know about a built program."""

    replicas: int
    num_host_transfers: int
    main_graph: str
    tensors: Mapping[str, TensorInfo]
    ops: Mapping[str, OpInfo]
    graphs: Mapping[str, GraphInfo]
    schedule: tuple[ExecStep, ...]
    remote_buffers: tuple[RemoteBufferInfo, ...] = ()
    streams: tuple[StreamInfo, ...] = ()
    device: str = "ipu_model"  # the device name the Session was given
    ipus_per_replica: int = 1  # highest IPU any op uses + 1
    num_io_tiles: int = 0  # I/O tiles per IPU (PopART numIOTiles)
    pipelines: tuple[PipelineInfo, ...] = ()
    #: PopART session options of the Ir as set by the program (popxl/session_options.py:
    #: ``SessionOptions.as_dict()``; empty for programs lowered without an Ir's options)
    session_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def matmul_partials_bytes(self) -> int:
        """Bytes of one matmul partial unless the op says otherwise: 2 with PopART's
        ``partialsTypeMatMuls="half"``, else 4 (PopLibs' float partials)."""
        return 2 if str(self.session_options.get("partialsTypeMatMuls", "")).lower() == "half" else 4

    @property
    def matmul_available_memory_proportion(self) -> float:
        """The matmuls' temporary-memory share of tile memory unless the op sets its own:
        ``matmulOptions["availableMemoryProportion"]``, else PopLibs' default 0.6 (a value
        SessionOptions accepted: a number in (0, 1])."""
        raw = dict(self.session_options.get("matmulOptions") or {}).get("availableMemoryProportion")
        return float(raw) if raw is not None else DEFAULT_AVAILABLE_MEMORY_PROPORTION
