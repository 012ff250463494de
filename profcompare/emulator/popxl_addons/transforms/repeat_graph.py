"""``repeat_graph``: wrap the ops of a graph in a loop (``popxl_addons.transforms.repeat_graph``,
both generations; not exported by ``popxl_addons.transforms``).

popxl-addons clones every op of the graph, in schedule order, into a new graph named
``repeat_graph`` (PopART's ``Op.cloneIntoGraph``): each tensor an op reads that no earlier op
produced (variables, constants, the graph's inputs) becomes a by-reference input of the new
graph, named as the tensor; each op output is a new tensor of the same name. The graph then
calls the new graph ``repeat_count`` times with ``ops.repeat`` (the repeat joins an enclosing
``in_sequence`` as a new op would), the ``in_sequence`` constraints between the moved ops move
with them, and the original ops are erased. Their outputs stay in the graph, unproduced (as
popxl-addons leaves them: it does not remove isolated tensors). The new graph is returned; with
``repeat_count <= 1`` nothing changes and ``graph`` is returned.

The emulator's popxl keeps ops as plain records (``Graph._ops``); this module clones those
records, without the building context (name scopes, IPU, ``in_sequence``, op-created hooks),
as PopART's clone does not go through popxl either.
"""

from __future__ import annotations

from profcompare.emulator.popxl.graph import Op
from profcompare.emulator.popxl_addons._compat import ops, popxl

__all__ = ["repeat_graph"]


def _clone_op(op: Op, into: popxl.Graph, inputs: list[popxl.Tensor], modified: list[popxl.Tensor]) -> Op:
    """A copy of ``op`` in ``into`` reading ``inputs``, with new outputs named as the old ones."""
    clone = Op(into.ir._next_op_id(), op.type, op.name, into, inputs, [], modified, dict(op.attrs))
    prefix = op.graph._scope_prefix
    for out in op.outputs:
        tensor_id = into._scope_prefix + out.id.removeprefix(prefix)
        if tensor_id in into._tensors:
            tensor_id = into.ir._intermediate_tensor_id(tensor_id)
        new = popxl.Tensor._create(into, tensor_id, out.shape, out.dtype, out.meta_shape)
        new._producer = clone
        clone.outputs.append(new)
    into._ops.append(clone)
    return clone


def repeat_graph(graph: popxl.Graph, repeat_count: int) -> popxl.Graph:
    """Move the ops of ``graph`` into a new graph called ``repeat_count`` times from ``graph``;
    return the new graph (``graph`` itself when ``repeat_count <= 1``). See the module docstring."""
    if repeat_count <= 1:
        return graph

    old_to_new: dict[popxl.Tensor, popxl.Tensor] = {}
    new_to_old_inputs: dict[popxl.Tensor, popxl.Tensor] = {}
    old_to_new_ops: dict[str, str] = {}
    moved = list(graph._ops)
    new_graph = graph.ir.create_empty_graph("repeat_graph")

    with new_graph:
        for op in moved:
            inputs = []
            for t in op.inputs:
                if t not in old_to_new:
                    new_t = popxl.graph_input(t.shape, t.dtype, t.name, by_ref=True, meta_shape=t.meta_shape or None)
                    old_to_new[t] = new_t
                    new_to_old_inputs[new_t] = t
                inputs.append(old_to_new[t])
            modified = [old_to_new[t] for t in op.modified if t in old_to_new]
            clone = _clone_op(op, new_graph, inputs, modified)
            old_to_new.update(zip(op.outputs, clone.outputs))
            old_to_new_ops[op.id] = clone.id

    constraints = graph._topo_constraints
    new_graph._topo_constraints.extend((old_to_new_ops[a], old_to_new_ops[b]) for a, b in constraints
                                       if a in old_to_new_ops and b in old_to_new_ops)
    graph._topo_constraints = [(a, b) for a, b in constraints if a not in old_to_new_ops and b not in old_to_new_ops]
    graph._ops = [op for op in graph._ops if op.id not in old_to_new_ops]

    with graph:
        ops.repeat_with_info(new_graph, repeat_count, inputs_dict=new_to_old_inputs)
    return new_graph
