"""The popxl / popxl-addons API the MNIST workloads use, as the real releases define it.

Recorded by reading the sources (names, parameter names, positional order and defaults; no
code): popxl-addons branch ``sdk-release-3.0`` (commit 6da586a0, 2022-09-16: the threshold API)
and ``sdk-release-3.4`` (commit 7499fca8, "Prepare for release 3.4": replica groupings);
popxl from graphcore/popart ``python/popxl/python_files`` at d2f20d78 (SDK 3.3/3.4 era), used
for both generations. Methods are listed without ``self``/``cls``.

Keys: ``"<where>:<name>"`` where ``<where>`` is how the workloads reach it: ``popxl``, ``ops``
(popxl.ops), ``addons`` (the package top level), ``rts`` (popxl_addons.rts), ``nrg``
(popxl_addons.named_replica_grouping) or a class name for a method. Values: the signature per
generation (one string when both agree). A key naming ``__init__`` is the class's constructor.
"""

from __future__ import annotations

BOTH = ("3.0", "3.4")

POPXL = {
    "popxl:Ir.__init__": "(replication=1)",
    "popxl:Ir.replica_grouping": "(stride=1, group_size=None)",
    "popxl:TensorSpec.__init__": "(shape, dtype, meta_shape=())",
    "popxl:h2d_stream": "(shape, dtype, name=None)",
    "popxl:d2h_stream": "(shape, dtype, name=None)",
    "popxl:in_sequence": "(mode=True)",
    "popxl:gcg": "()",
    "popxl:replica_sharded_variable": "(data, dtype=None, name=None, downcast=True, replica_grouping=None, "
                                      "shard_over=None, retrieval_mode='one_per_group', log2_scale=None, "
                                      "nan_on_overflow=None)",
    "popxl:Tensor.reshape": "(shape)",
    "popxl:Session.__init__": "(ir, device_desc='cpu', weights_to_host_on_exit=True)",
    "popxl:Session.run": "(inputs=None, downcast_inputs=True)",
    "ops:gelu": "(t)",
    "ops:host_load": "(h2d_stream, name=None)",
    "ops:host_store": "(d2h_stream, t)",
    "ops:collectives.replicated_all_reduce_": "(t, op='add', group=None)",
    "ops:collectives.replica_sharded_slice": "(t, group=None)",
    "ops:collectives.replicated_all_gather": "(t, axis=0, group=None, output_shape='auto')",
    "ops:var_updates.accumulate_moving_average_": "(t, X, f)",
    "ops:var_updates.accumulate_moving_average_square_": "(t, X, f)",
    "ops:var_updates.accumulator_scale_": "(t, f)",
    "ops:var_updates.adam_updater": "(acc_first_order, acc_second_order, weight=None, time_step=None, "
                                    "weight_decay=None, beta1=None, beta2=None, epsilon=1e-07)",
    "ops:var_updates.copy_var_update_": "(t, X)",
    "ops:scaled_add_": "(X, Y, a=1.0, b=1.0)",
}

ADDONS = {
    "addons:Module.__init__": {"3.0": "(cache=False)", "3.4": "(cache=False, grad_inlining_error='error')"},
    "addons:Module.add_variable_input": {
        "3.0": "(name, data_iter, dtype=None, by_ref=False, replica_grouping=None)",
        "3.4": "(name, data_iter, dtype=None, by_ref=False, replica_grouping=None, overwrite=False)",
    },
    "addons:Module.add_replica_sharded_variable_input": {
        "3.0": "(name, data_iter, dtype=None, by_ref=False, replica_grouping=None)",
        "3.4": "(name, data_iter, dtype=None, by_ref=False, replica_grouping=None, shard_over=None)",
    },
    "addons:Module.create_graph": "(*args, **kwargs)",
    "addons:VariableFactory.next_data": "(empty=False)",
    "addons:VariableFactory.create_tensor": {
        "3.0": "(name=None, empty=False)",
        "3.4": "(name=None, empty=False, memmap_dir=None, read_only_if_exists=False)",
    },
    "addons:NamedVariableFactories.init": {
        "3.0": "(prefix=None)",
        "3.4": "(prefix=None, empty=False, memmap_dir=None, read_only_if_exists=False)",
    },
    "addons:NamedVariableFactories.init_remote": {
        "3.0": "(buffers, entry=0, prefix=None, empty=False)",
        "3.4": "(buffers, entry=0, prefix=None, empty=False, memmap_dir=None, read_only_if_exists=False)",
    },
    "addons:NamedTensors.from_dict": "(d)",
    "addons:NamedTensors.pack": "(keys, values)",
    "addons:NamedTensors.get": "(key)",
    "addons:NamedTensors.to_dict": "()",
    "addons:GraphWithNamedArgs.bind": "(args=None)",
    "addons:BoundGraph.call": "(*targs, args=None)",
    "addons:BoundGraph.call_with_info": "(*targs, args=None)",
    "addons:named_variable_buffers": {
        "3.0": "(factories, entries=1, sharded_threshold=1024, shard_over_dict=None)",
        "3.4": "(factories, entries=1, shard_over_dict=True)",
    },
    "addons:load_remote_graph": "(buffers, entries=1, use_io_tiles=False)",
    "addons:store_remote_graph": "(buffers, entries=1, use_io_tiles=False)",
    "addons:autodiff": "(graph, grads_provided=None, grads_required=None, called_graphs_grad_info=None)",
    "addons:autodiff_with_accumulation": {
        "3.0": "(graph, tensors_to_accumulate_grads, grads_required=None, called_graphs_grad_info=None, "
               "replica_groupings=None)",
        "3.4": "(graph, tensors_to_accumulate_grads, grads_provided=None, grads_required=None, "
               "called_graphs_grad_info=None, replica_groupings=None)",
    },
    "addons:ops.cross_entropy_with_grad": "(x, labels, loss_scaling=1, ignore_index=None, reduction='mean')",
    "rts:replica_sharded_spec": {"3.0": "(t, threshold=1024, replica_grouping=None)", "3.4": "(t, shard_over)"},
    "rts:reduce_replica_sharded_graph": {
        "3.0": "(tensors, op='add', threshold=1024, use_io_tiles=False, shard_groups=None, replica_group=None)",
        "3.4": "(tensors, op='add', use_io_tiles=False, shard_groups=None, replica_group=None)",
    },
    "nrg:NamedReplicaGrouping.from_dict": "(d)",
    "nrg:NamedReplicaGrouping.build_groups": {"3.0": "(names, value=None)", "3.4": "(names, value)"},
}

#: names the package top level of each generation does NOT export (kept in submodules)
NOT_TOP_LEVEL = ("DotTree", "NamedRemoteBuffers", "load_remote", "store_remote", "replica_sharded_spec",
                 "reduce_replica_sharded_graph", "NamedReplicaGrouping")


def recorded(key: str, generation: str) -> str:
    """Return the recorded signature of ``key`` in ``generation``."""
    value = {**POPXL, **ADDONS}[key]
    return value if isinstance(value, str) else value[generation]


ALL_KEYS = tuple(POPXL) + tuple(ADDONS)
