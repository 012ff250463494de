"""popxl-addons transforms of the emulated subset."""

from __future__ import annotations

from profcompare.emulator.popxl_addons.transforms.autodiff import autodiff, autodiff_with_accumulation
from profcompare.emulator.popxl_addons.transforms.batch_serialisation import (
    RemoteHandle,
    batch_serial_buffer,
    batch_serialise,
    batch_serialise_fwd_and_grad,
)
from profcompare.emulator.popxl_addons.transforms.pipelining import pipelined_execution
from profcompare.emulator.popxl_addons.transforms.recomputation import (
    add_recompute_inputs,
    recompute_graph,
    suffix_graph_name,
)

__all__ = [
    "RemoteHandle",
    "add_recompute_inputs",
    "autodiff",
    "autodiff_with_accumulation",
    "batch_serial_buffer",
    "batch_serialise",
    "batch_serialise_fwd_and_grad",
    "pipelined_execution",
    "recompute_graph",
    "suffix_graph_name",
]
