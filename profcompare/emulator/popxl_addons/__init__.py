"""The emulated popxl-addons subset, in the API of the selected generation (3.0, the threshold
API, or 3.4, replica groupings: ``profcompare.backend.addons_generation``), built only on the emulator's
public popxl API (``profcompare.emulator.popxl``), as the real popxl-addons sits on popxl.

Semantics and orders follow shared/reference/popxl.md section 2. Names outside the subset
raise NotImplementedError naming the API.
"""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons import (
    array_munging,
    debugging,
    dot_tree,  # noqa: F401 -- registered as a submodule, as in popxl_addons
    graph,
    module,
    named_replica_grouping,  # noqa: F401 -- registered as a submodule, as in popxl_addons
    ops,
    remote,
    rts,  # noqa: F401 -- registered as a submodule, as in popxl_addons
    seed_variable as _seed_variable_module,
    task_session,
    transforms,
    utils,
    variable_factory,
)
from profcompare.emulator.popxl_addons._compat import not_supported
from profcompare.emulator.popxl_addons._generation import current
from profcompare.emulator.popxl_addons.graph import BoundGraph, GraphWithNamedArgs
from profcompare.emulator.popxl_addons.graph_cache import (
    GraphCache,
    argument_hash,
    bound_arguments,
    function,
    get_function_hash,
    tensor_hash,
)
from profcompare.emulator.popxl_addons.module import Module
from profcompare.emulator.popxl_addons.name_scope_meta import NameScopeMeta
from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
from profcompare.emulator.popxl_addons.ops import cross_entropy, cross_entropy_with_grad, host_load, host_store
from profcompare.emulator.popxl_addons.performance_utils import (
    evaluate_FLOPs,
    evaluate_ir_FLOPs,
    format_flops_scientific,
    print_FLOPs,
    total_FLOPs,
)
from profcompare.emulator.popxl_addons.remote import load_remote_graph, store_remote_graph
from profcompare.emulator.popxl_addons.route_tensor import is_subgraph, route_tensor_into_graph
from profcompare.emulator.popxl_addons.streams import InputStreams, OutputStreams
from profcompare.emulator.popxl_addons.transforms import (
    RemoteHandle,
    add_recompute_inputs,
    autodiff,
    batch_serial_buffer,
    batch_serialise,
    batch_serialise_fwd_and_grad,
    pipelined_execution,
    recompute_graph,
    set_available_memory_proportion_by_ipu,
    set_graph_available_memory_proportion_by_ipu,
    suffix_graph_name,
)
from profcompare.emulator.popxl_addons.task_session import write_variables_pb
from profcompare.emulator.popxl_addons.utils import OrderedDict, WeightsDict, timer
from profcompare.emulator.popxl_addons.variable_factory import NamedVariableFactories, VariableFactory, add_variable_input

from profcompare.emulator.popxl_addons import patterns  # noqa: E402,F401 - popxl_addons.patterns

#: the popxl-addons commit an installed copy reports (its setup writes it; Graphcore's
#: applications record it in their run config). The simulator names itself instead.
GIT_COMMIT = "profcompare-sim " + __import__("profcompare._version", fromlist=["__version__"]).__version__

# importing the submodule bound the package attribute ``seed_variable`` to it; popxl-addons 3.4
# binds the function there (3.0 has neither), so the name is resolved by __getattr__
globals().pop("seed_variable", None)

#: top-level names of popxl-addons (both generations) whose signature depends on the emulated
#: generation: resolved when accessed
_GENERATIONAL = {
    "named_variable_buffers": lambda: remote.named_variable_buffers,
    "named_buffers": lambda: remote.named_buffers,
    "create_remote_buffer": lambda: remote.create_remote_buffer,
    "autodiff_with_accumulation": lambda: transforms.autodiff_with_accumulation.resolve(),
    "add_replica_sharded_variable_input": lambda: variable_factory.add_replica_sharded_variable_input.resolve(),
    # not generational, but its class derives from popxl.Session as it is when first asked for
    "TaskSession": lambda: task_session.TaskSession,
}
#: top-level names that popxl-addons 3.4 has and 3.0 does not: resolved only when 3.4 is emulated
_SINCE_30 = {
    "seed_variable": lambda: _seed_variable_module.seed_variable,
    "create_grad_graph_info": lambda: module.create_grad_graph_info,
    "CalledGraphsGradInfo": lambda: graph.CalledGraphsGradInfo,
    "overrides": lambda: utils.overrides,
    "fp8_amax_scale": lambda: ops._fp8_amax_scale_module.fp8_amax_scale,
    "print_tensor": lambda: debugging.print_tensor,
    "print_text": lambda: debugging.print_text,
    "disable_fc_pass": lambda: transforms.use_fc_pass.disable_fc_pass,
    "enable_fc_pass": lambda: transforms.use_fc_pass.enable_fc_pass,
    "duplicate_items": lambda: utils.duplicate_items,
    **{name: (lambda name=name: getattr(array_munging, name)) for name in array_munging.__all__
       if name != "tensor_parallel_output"},  # 3.4 leaves it out of the module's __all__
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
    "InputStreams",
    "Module",
    "NameScopeMeta",
    "NamedTensors",
    "NamedVariableFactories",
    "OrderedDict",
    "OutputStreams",
    "RemoteHandle",
    "TaskSession",
    "VariableFactory",
    "WeightsDict",
    "add_recompute_inputs",
    "add_replica_sharded_variable_input",
    "add_variable_input",
    "argument_hash",
    "autodiff",
    "autodiff_with_accumulation",
    "batch_serial_buffer",
    "batch_serialise",
    "batch_serialise_fwd_and_grad",
    "bound_arguments",
    "create_remote_buffer",
    "cross_entropy",
    "cross_entropy_with_grad",
    "evaluate_FLOPs",
    "evaluate_ir_FLOPs",
    "format_flops_scientific",
    "function",
    "get_function_hash",
    "host_load",
    "host_store",
    "is_subgraph",
    "load_remote_graph",
    "named_buffers",
    "named_variable_buffers",
    "ops",
    "pipelined_execution",
    "print_FLOPs",
    "recompute_graph",
    "route_tensor_into_graph",
    "set_available_memory_proportion_by_ipu",
    "set_graph_available_memory_proportion_by_ipu",
    "store_remote_graph",
    "suffix_graph_name",
    "tensor_hash",
    "timer",
    "total_FLOPs",
    "write_variables_pb",
]


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _GENERATIONAL:
        return _GENERATIONAL[name]()
    if name in _SINCE_30:
        if current() == "3.0":
            raise AttributeError(f"module 'popxl_addons' has no attribute {name!r} (not in popxl-addons 3.0; the "
                                 "3.4 generation has it: PROFCOMPARE_SIM_ADDONS=3.4 or --addons 3.4)")
        return _SINCE_30[name]()
    if name in _IN_SUBMODULES:
        raise AttributeError(f"module 'popxl_addons' has no attribute {name!r} (popxl-addons keeps it in a "
                             f"submodule: {_IN_SUBMODULES[name]})")
    raise not_supported(name)
