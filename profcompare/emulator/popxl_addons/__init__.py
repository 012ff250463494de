"""The emulated popxl-addons subset, in the API of the selected generation (3.0, the threshold
API, or 3.4, replica groupings: ``profcompare.addons_generation``), built only on the emulator's
public popxl API (``profcompare.emulator.popxl``), as the real popxl-addons sits on popxl.

Semantics and orders follow shared/reference/popxl.md section 2. Names outside the subset
raise NotImplementedError naming the API.
"""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons import (
    dot_tree,  # noqa: F401 -- registered as a submodule, as in popxl_addons
    named_replica_grouping,  # noqa: F401 -- registered as a submodule, as in popxl_addons
    ops,
    remote,
    rts,  # noqa: F401 -- registered as a submodule, as in popxl_addons
    transforms,
    variable_factory,
)
from profcompare.emulator.popxl_addons._compat import not_supported
from profcompare.emulator.popxl_addons.graph import BoundGraph, GraphWithNamedArgs
from profcompare.emulator.popxl_addons.graph_cache import GraphCache
from profcompare.emulator.popxl_addons.module import Module
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.ops import cross_entropy, cross_entropy_with_grad, host_load, host_store
from profcompare.emulator.popxl_addons.remote import load_remote_graph, store_remote_graph
from profcompare.emulator.popxl_addons.transforms import autodiff, pipelined_execution
from profcompare.emulator.popxl_addons.variable_factory import NamedVariableFactories, VariableFactory, add_variable_input

#: top-level names of popxl-addons (both generations) whose signature depends on the emulated
#: generation: resolved when accessed
_GENERATIONAL = {
    "named_variable_buffers": lambda: remote.named_variable_buffers,
    "named_buffers": lambda: remote.named_buffers,
    "create_remote_buffer": lambda: remote.create_remote_buffer,
    "autodiff_with_accumulation": lambda: transforms.autodiff_with_accumulation.resolve(),
    "add_replica_sharded_variable_input": lambda: variable_factory.add_replica_sharded_variable_input.resolve(),
}
#: names popxl-addons keeps in submodules (neither generation exports them at the top level)
_IN_SUBMODULES = {
    "DotTree": "popxl_addons.dot_tree.DotTree",
    "NamedRemoteBuffers": "popxl_addons.remote.NamedRemoteBuffers",
    "load_remote": "popxl_addons.remote.load_remote",
    "store_remote": "popxl_addons.remote.store_remote",
    "replica_sharded_spec": "popxl_addons.rts.replica_sharded_spec",
    "reduce_replica_sharded_graph": "popxl_addons.rts.reduce_replica_sharded_graph",
    "reduce_replica_sharded_tensor": "popxl_addons.rts.reduce_replica_sharded_tensor",
    "NamedReplicaGrouping": "popxl_addons.named_replica_grouping.NamedReplicaGrouping",
}

__all__ = [
    "BoundGraph",
    "GraphCache",
    "GraphWithNamedArgs",
    "Module",
    "NamedTensors",
    "NamedVariableFactories",
    "VariableFactory",
    "add_replica_sharded_variable_input",
    "add_variable_input",
    "autodiff",
    "autodiff_with_accumulation",
    "create_remote_buffer",
    "cross_entropy",
    "cross_entropy_with_grad",
    "host_load",
    "host_store",
    "load_remote_graph",
    "named_buffers",
    "named_variable_buffers",
    "ops",
    "pipelined_execution",
    "store_remote_graph",
]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _GENERATIONAL:
        return _GENERATIONAL[name]()
    if name in _IN_SUBMODULES:
        raise AttributeError(f"module 'popxl_addons' has no attribute {name!r} (popxl-addons keeps it in a "
                             f"submodule: {_IN_SUBMODULES[name]})")
    raise not_supported(name)
