"""popxl-addons transforms of the emulated subset."""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons._generation import current
from profcompare.emulator.popxl_addons.transforms import use_fc_pass
from profcompare.emulator.popxl_addons.transforms.autodiff import autodiff, autodiff_with_accumulation
from profcompare.emulator.popxl_addons.transforms.available_memory_proportion import (
    set_available_memory_proportion_by_ipu,
    set_graph_available_memory_proportion_by_ipu,
)
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
    "set_available_memory_proportion_by_ipu",
    "set_graph_available_memory_proportion_by_ipu",
    "suffix_graph_name",
]

#: names popxl-addons 3.4 has here and 3.0 does not
_SINCE_30 = {"disable_fc_pass": lambda: use_fc_pass.disable_fc_pass,
             "enable_fc_pass": lambda: use_fc_pass.enable_fc_pass}


def __getattr__(name: str) -> Any:
    if name in _SINCE_30:
        if current() == "3.0":
            raise AttributeError(f"module 'popxl_addons.transforms' has no attribute {name!r} (not in popxl-addons "
                                 "3.0; the 3.4 generation has it: PROFCOMPARE_SIM_ADDONS=3.4 or --addons 3.4)")
        return _SINCE_30[name]()
    raise AttributeError(f"module 'popxl_addons.transforms' has no attribute {name!r}")
