"""Control flow: ``repeat`` / ``repeat_with_info`` (PopART LoopOp) and ``conditional`` /
``conditional_with_info`` (PopART IfOp), with the rules of popxl 3.4.

repeat
    The graph runs ``repeat_count`` times (``repeat_count >= 0``, else ValueError). The graph
    needs at least as many inputs as outputs (else ValueError). Its N outputs are *loop
    carried*: after each iteration output i becomes input i of the next one; the remaining
    inputs keep their values (unless the graph changes them in place). The op's outputs are the
    last iteration's outputs; with ``repeat_count == 0`` they are the first N inputs as given.
    A by-ref input that is not loop carried is changed in place across all iterations; a by-ref
    loop-carried input receives, after the loop, the graph input's value at the end of the last
    iteration (PopART copies the modified body input back to the op input).

conditional
    ``cond`` (one element) picks ``then_branch`` or ``else_branch`` at run time. The branches
    take their own inputs (``then_inputs`` / ``else_inputs`` and the ``*_dict`` forms, with the
    rules of ``call``); they must have the same number of outputs (else ValueError), of the same
    dtype and shape. Outputs are named ``<then name>_or_<else name>``. By-ref inputs are refused
    with NotImplementedError, as popxl does.

Simulator choices (not popxl's): the op records are ``Loop`` and ``If`` ops whose attributes
name the user's graphs directly; popxl builds a wrapper graph around the repeated graph
(``<graph>__loop_wrapper``), so ``repeat_with_info(...).called_graph`` is that wrapper in
popxl and the user's graph here. A loop-carried output whose shape or dtype differs from the
input it feeds is refused when the op is built (PopART fails later, when it lowers the copy).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..graph import Graph, Op, add_op
from ..tensor import Tensor
from ._util import gcg
from .call import CallSiteInfo, connect_inputs, info_text


class RepeatSiteInfo(CallSiteInfo):
    """The :class:`CallSiteInfo` of a ``repeat``: inputs and outputs as for a call of the graph."""

    def __init__(self, op: Op) -> None:
        if op.type != "Loop":
            raise TypeError(f"RepeatSiteInfo needs a Loop op, got {op.type}")
        self._op = op

    @property
    def repeat_count(self) -> int:
        """How many times the graph runs (simulator convenience)."""
        return int(self._op.attrs["repeat_count"])

    def __repr__(self) -> str:
        return f"RepeatSiteInfo(graph={self.called_graph.name!r}, repeat_count={self.repeat_count}, op={self._op.id})"


def repeat(graph: Graph, repeat_count: int, *inputs: Any, inputs_dict: Mapping[Tensor, Any] | None = None
           ) -> tuple[Tensor, ...]:
    """Run ``graph`` ``repeat_count`` times, outputs fed back to the first inputs; return the
    parent tensors of the last iteration's outputs (see the module docstring)."""
    return repeat_with_info(graph, repeat_count, *inputs, inputs_dict=inputs_dict).outputs


def repeat_with_info(graph: Graph, repeat_count: int, *inputs: Any, inputs_dict: Mapping[Tensor, Any] | None = None,
                     check_inputs: bool = True) -> RepeatSiteInfo:
    """Like :func:`repeat`; return the call site information."""
    if isinstance(repeat_count, bool) or not isinstance(repeat_count, int):
        try:
            repeat_count = int(repeat_count)
        except (TypeError, ValueError):
            raise TypeError(f"repeat_count must be an int, got {type(repeat_count).__name__}") from None
    if repeat_count < 0:
        raise ValueError(f"Repeat count must be >= 0. Repeat count: {repeat_count}. Graph: {graph}")
    n_in, n_out = len(graph._inputs), len(graph._outputs)
    if n_in < n_out:
        raise ValueError(f"To repeat the subgraph ({graph.id}) the number of inputs must be greater than or "
                         f"equal to the number of outputs. {n_in} < {n_out}")
    parent = gcg()
    ordered = connect_inputs(graph, parent, inputs, inputs_dict, check_inputs, "popxl.ops.repeat", "popxl.ops.repeat:")
    for i, (g_in, g_out) in enumerate(zip(graph._inputs, graph._outputs)):
        if g_in.shape != g_out.shape or g_in.dtype != g_out.dtype:
            raise ValueError(f"popxl.ops.repeat: output {i} of graph {graph.name!r} ({g_out.id}: {info_text(g_out)}) "
                             f"is carried to input {i} ({g_in.id}: {info_text(g_in)}), which has another "
                             "shape or dtype")
    modified = [p for p, g in zip(ordered, graph._inputs) if g in graph._by_ref_inputs]
    prefix = graph._scope_prefix
    outs = [(t.id.removeprefix(prefix), t.shape, t.dtype, t.meta_shape) for t in graph._outputs]
    op = add_op("Loop", f"{parent.name}--loop--{graph.name}", ordered, outs,
                {"called_graph": graph, "repeat_count": repeat_count}, modified=modified)
    return RepeatSiteInfo(op)


class ConditionalSiteInfo(CallSiteInfo):
    """What a ``conditional`` connects: the condition, each branch's inputs, the outputs.

    Op input 0 is the condition, then the then-branch inputs, then the else-branch inputs
    (PopART IfOp's order); outputs are shared by both branches."""

    def __init__(self, op: Op) -> None:
        if op.type != "If":
            raise TypeError(f"ConditionalSiteInfo needs an If op, got {op.type}")
        self._op = op

    @property
    def called_graph(self) -> tuple[Graph, Graph]:  # type: ignore[override]
        """The (then, else) graphs."""
        return self._op.attrs["then_branch"], self._op.attrs["else_branch"]

    def _n_then(self) -> int:
        return int(self._op.attrs["n_then"])

    def graph_to_parent_input_index(self, idx: int, then_branch: bool = True) -> int:  # type: ignore[override]
        """Op input index of input ``idx`` of the then (or else) branch."""
        g = self.called_graph[0 if then_branch else 1]
        if not 0 <= idx < len(g._inputs):
            raise IndexError("Invalid graph input index")
        return 1 + idx + (0 if then_branch else self._n_then())

    def parent_to_graph_input_index(self, idx: int) -> int:
        """Branch input index of op input ``idx`` (IndexError for the condition or out of range)."""
        if not 1 <= idx < len(self._op.inputs):
            raise IndexError("Invalid parent graph input index")
        k = idx - 1
        return k if k < self._n_then() else k - self._n_then()

    def is_parent_index_in_then_branch(self, idx: int) -> bool:
        """True when op input ``idx`` feeds the then branch, False for the else branch."""
        if not 1 <= idx < len(self._op.inputs):
            raise IndexError("Invalid parent graph input index")
        return idx - 1 < self._n_then()

    def graph_to_parent_output_index(self, idx: int, then_branch: bool = True) -> int:  # type: ignore[override]
        """Op output index of branch output ``idx`` (the same index)."""
        if not 0 <= idx < len(self._op.outputs):
            raise IndexError("Invalid graph input index")
        return idx

    def parent_to_graph_output_index(self, idx: int, then_branch: bool = True) -> int:  # type: ignore[override]
        """Branch output index of op output ``idx`` (the same index)."""
        if not 0 <= idx < len(self._op.outputs):
            raise IndexError("Invalid graph input index")
        return idx

    def graph_to_parent(self, graph_tensor: Tensor) -> Tensor:
        """The parent tensor connected to an input or output of either branch."""
        for then_branch, g in zip((True, False), self.called_graph):
            if graph_tensor in g._inputs:
                return self._op.inputs[self.graph_to_parent_input_index(g._inputs.index(graph_tensor), then_branch)]
            if graph_tensor in g._outputs:
                return self._op.outputs[g._outputs.index(graph_tensor)]
        raise ValueError(f"Tensor {graph_tensor.name} is not an input or output of the called graph(s).")

    def parent_to_graph(self, parent_tensor: Tensor) -> Tensor:
        """The branch input fed by ``parent_tensor`` (first match)."""
        for idx, t in enumerate(self._op.inputs):
            if idx and t == parent_tensor:
                g = self.called_graph[0 if self.is_parent_index_in_then_branch(idx) else 1]
                return g._inputs[self.parent_to_graph_input_index(idx)]
        raise ValueError(f"Tensor {parent_tensor.name} is not a parent graph input of the call site.")

    def set_parent_input_modified(self, parent_tensor: Tensor, infer_modified_regions: bool = True) -> None:
        """Refused, as in popxl."""
        raise NotImplementedError("Parent input modification is not yet implemented for the conditional op.")

    def __repr__(self) -> str:
        t, e = self.called_graph
        return f"ConditionalSiteInfo(then={t.name!r}, else={e.name!r}, op={self._op.id})"


def conditional(cond: Tensor, then_branch: Graph, else_branch: Graph,
                then_inputs: Iterable[Any] | None = None, else_inputs: Iterable[Any] | None = None,
                then_inputs_dict: Mapping[Tensor, Any] | None = None,
                else_inputs_dict: Mapping[Tensor, Any] | None = None) -> tuple[Tensor, ...]:
    """Run ``then_branch`` if ``cond`` is true, else ``else_branch``; return the outputs."""
    return conditional_with_info(cond, then_branch, else_branch, then_inputs, else_inputs,
                                 then_inputs_dict, else_inputs_dict).outputs


def conditional_with_info(cond: Tensor, then_branch: Graph, else_branch: Graph,
                          then_inputs: Iterable[Any] | None = None, else_inputs: Iterable[Any] | None = None,
                          then_inputs_dict: Mapping[Tensor, Any] | None = None,
                          else_inputs_dict: Mapping[Tensor, Any] | None = None,
                          check_inputs: bool = True) -> ConditionalSiteInfo:
    """Like :func:`conditional`; return the :class:`ConditionalSiteInfo`."""
    parent = gcg()
    if not isinstance(cond, Tensor):
        raise TypeError(f"conditional: cond must be a Tensor, got {type(cond).__name__}")
    if cond.nelms != 1:
        raise ValueError(f"conditional: cond must hold one value, {cond.id} has shape {cond.shape}")
    then_api, else_api = "popxl.ops.conditional (then_branch)", "popxl.ops.conditional (else_branch)"
    then_all = connect_inputs(then_branch, parent, then_inputs or (), then_inputs_dict, check_inputs, then_api,
                              f"{then_api}:")
    else_all = connect_inputs(else_branch, parent, else_inputs or (), else_inputs_dict, check_inputs, else_api,
                              f"{else_api}:")
    n_then, n_else = len(then_branch._outputs), len(else_branch._outputs)
    if n_then != n_else:
        raise ValueError("`then_branch` graph and `else_branch` graph must have the same number of outputs: "
                         f"{n_then} != {n_else}")
    outs = []
    for i, (a, b) in enumerate(zip(then_branch._outputs, else_branch._outputs)):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise ValueError(f"conditional: output {i} differs between the branches: {a.id} is {info_text(a)}, "
                             f"{b.id} is {info_text(b)}")
        name = (f"{a.id.removeprefix(then_branch._scope_prefix)}_or_"
                f"{b.id.removeprefix(else_branch._scope_prefix)}")
        outs.append((name, a.shape, a.dtype, a.meta_shape))
    for g in (then_branch, else_branch):
        for t in g._by_ref_inputs:
            branch = "then_branch" if g is then_branch else "else_branch"
            raise NotImplementedError(f"TensorByRef is not implemented for the conditional op. You cannot call "
                                      f"this input to the {branch} graph by ref: {t}")
    op = add_op("If", "conditional", [cond, *then_all, *else_all], outs,
                {"then_branch": then_branch, "else_branch": else_branch, "n_then": len(then_all)})
    return ConditionalSiteInfo(op)
