"""The emulated popxl-addons subset (Gen A, threshold API), built only on the emulator's
public popxl API (``profcompare.emulator.popxl``), as the real popxl-addons sits on popxl.

Semantics and orders follow shared/reference/popxl.md section 2. Names outside the subset
raise NotImplementedError naming the API.
"""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons import ops, rts, transforms
from profcompare.emulator.popxl_addons._compat import not_supported
from profcompare.emulator.popxl_addons.dot_tree import DotTree
from profcompare.emulator.popxl_addons.graph import BoundGraph, GraphWithNamedArgs
from profcompare.emulator.popxl_addons.graph_cache import GraphCache
from profcompare.emulator.popxl_addons.module import Module
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.ops import cross_entropy, cross_entropy_with_grad, host_load, host_store
from profcompare.emulator.popxl_addons.remote import (
    NamedRemoteBuffers,
    load_remote,
    load_remote_graph,
    named_buffers,
    named_variable_buffers,
    store_remote,
    store_remote_graph,
)
from profcompare.emulator.popxl_addons.rts import reduce_replica_sharded_graph, replica_sharded_spec
from profcompare.emulator.popxl_addons.transforms import autodiff, autodiff_with_accumulation
from profcompare.emulator.popxl_addons.variable_factory import (
    NamedVariableFactories,
    VariableFactory,
    add_replica_sharded_variable_input,
    add_variable_input,
)

__all__ = [
    "BoundGraph",
    "DotTree",
    "GraphCache",
    "GraphWithNamedArgs",
    "Module",
    "NamedRemoteBuffers",
    "NamedTensors",
    "NamedVariableFactories",
    "VariableFactory",
    "add_replica_sharded_variable_input",
    "add_variable_input",
    "autodiff",
    "autodiff_with_accumulation",
    "cross_entropy",
    "cross_entropy_with_grad",
    "host_load",
    "host_store",
    "load_remote",
    "load_remote_graph",
    "named_buffers",
    "named_variable_buffers",
    "ops",
    "reduce_replica_sharded_graph",
    "replica_sharded_spec",
    "rts",
    "store_remote",
    "store_remote_graph",
    "transforms",
]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise not_supported(name)
