"""The profcompare simulator's popxl: the subset of Graphcore popxl the MNIST workloads use,
with numeric execution in numpy. It is a simulator, never hardware (``Session.simulated``).

Semantics follow shared/reference/popxl.md; anything outside the subset raises
``NotImplementedError`` naming the API.
"""

from __future__ import annotations

from . import dtypes, ops, transforms
from .context import (
                     gcg,
                     get_current_graph,
                     get_ir,
                     get_main_graph,
                     gir,
                     gmg,
                     in_sequence,
                     io_tiles,
                     ipu,
                     name_scope,
)
from .dtypes import (
                     bool,
                     complex64,
                     complex128,
                     double,
                     dtype,
                     float,
                     float8_143,
                     float8_152,
                     float16,
                     float32,
                     float64,
                     half,
                     int8,
                     int16,
                     int32,
                     int64,
                     uint8,
                     uint16,
                     uint32,
                     uint64,
)
from .errors import SessionInputError, SimulatorNotImplementedError, module_getattr
from .graph import Graph
from .ir import Ir, Module
from .remote_buffer import RemoteBuffer, remote_buffer, replica_sharded_buffer
from .replica_grouping import ReplicaGrouping
from .session import Session
from .streams import DeviceToHostStream, HostToDeviceStream, d2h_stream, h2d_stream
from .tensor import (
                     Constant,
                     Tensor,
                     TensorByRef,
                     TensorSpec,
                     Variable,
                     constant,
                     graph_input,
                     graph_output,
                     remote_replica_sharded_variable,
                     remote_variable,
                     replica_sharded_variable,
                     variable,
)
from .transforms.autodiff import (
                     ExpectedConnection,
                     ExpectedConnectionType,
                     GradGraphInfo,
)

from . import kernels_ext  # noqa: E402,F401 - registers the numeric kernels of the extended ops
from . import kernels_nn  # noqa: E402,F401 - registers the kernels of the neural-network and random ops
from .random_seed import create_seeds  # noqa: E402
from . import kernels_shape  # noqa: E402,F401 - registers the kernels of the shape and indexing ops
from . import kernels_fp8  # noqa: E402,F401 - registers the kernels of the float8 ops

#: always True: this popxl executes on the profcompare simulator, not on an IPU
SIMULATED = True

__getattr__ = module_getattr("popxl")

__all__ = [
                     "SIMULATED",
                     "Constant",
                     "DeviceToHostStream",
                     "ExpectedConnection",
                     "ExpectedConnectionType",
                     "GradGraphInfo",
                     "Graph",
                     "HostToDeviceStream",
                     "Ir",
                     "Module",
                     "RemoteBuffer",
                     "ReplicaGrouping",
                     "Session",
                     "SessionInputError",
                     "SimulatorNotImplementedError",
                     "Tensor",
                     "TensorByRef",
                     "TensorSpec",
                     "Variable",
                     "bool",
                     "complex64",
                     "complex128",
                     "constant",
                     "create_seeds",
                     "d2h_stream",
                     "double",
                     "dtype",
                     "dtypes",
                     "float",
                     "float8_143",
                     "float8_152",
                     "float16",
                     "float32",
                     "float64",
                     "gcg",
                     "get_current_graph",
                     "get_ir",
                     "get_main_graph",
                     "gir",
                     "gmg",
                     "graph_input",
                     "graph_output",
                     "h2d_stream",
                     "half",
                     "in_sequence",
                     "int8",
                     "int16",
                     "int32",
                     "int64",
                     "io_tiles",
                     "ipu",
                     "name_scope",
                     "ops",
                     "remote_buffer",
                     "remote_replica_sharded_variable",
                     "remote_variable",
                     "replica_sharded_buffer",
                     "replica_sharded_variable",
                     "transforms",
                     "uint8",
                     "uint16",
                     "uint32",
                     "uint64",
                     "variable",
]
