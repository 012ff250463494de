"""popxl-addons' ``set_available_memory_proportion_by_ipu`` and
``set_graph_available_memory_proportion_by_ipu`` (3.0 and 3.4): give every op that takes an
available memory proportion the proportion of its IPU (``proportions[ipu]``, IPU 0's for IPUs
past the end), replacing any set where the op was created.

The ops are those whose PopART class exposes the setting to Python: ``MatMul`` (float8 ones too)
and ``Gather`` (not ``TiedGather``), and under 3.4 also ``Conv`` (its convolution options then
hold ``[proportion]``); 3.0 leaves convolutions alone. ``set_graph_...`` follows the graphs called
by ``Call`` and ``Loop`` ops (not ``If`` branches), as popxl-addons does. The simulator records
the proportion on the op (``available_memory_proportion(s)``); its memory and cycle estimates
do not depend on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from profcompare.emulator.popxl.ipu_placement import op_ipu
from profcompare.emulator.popxl_addons._compat import popxl
from profcompare.emulator.popxl_addons._generation import current

__all__ = ["set_available_memory_proportion_by_ipu", "set_graph_available_memory_proportion_by_ipu"]

#: op types with a single available memory proportion (PopART MatMulOp, GatherOp)
_SINGLE = frozenset({"MatMul", "MatMulPow2Scaled", "Gather"})
#: op types with convolution options (PopART ConvOp); popxl-addons 3.4 sets them
_CONV = frozenset({"Conv", "ConvPow2Scaled"})
_NOTE = ("recorded on the ops (attrs available_memory_proportion / available_memory_proportions); the simulator's "
         "memory and cycle estimates do not depend on it")


def _set_for_op(op: Any, ipu_to_prop: dict[int, float]) -> None:
    if op.type in _SINGLE:
        op.attrs["available_memory_proportion"] = float(ipu_to_prop.get(op_ipu(op), ipu_to_prop[0]))
    elif op.type in _CONV and current() != "3.0":
        op.attrs["available_memory_proportions"] = (float(ipu_to_prop.get(op_ipu(op), ipu_to_prop[0])),)


def set_available_memory_proportion_by_ipu(ir: popxl.Ir, proportions: Iterable[float]) -> None:
    """Set the available memory proportion of every such op of every graph of ``ir`` from
    ``proportions[ipu of the op]`` (KeyError when ``proportions`` is empty and an op needs one)."""
    ipu_to_prop = dict(enumerate(proportions))
    for graph in ir.graphs:
        for op in graph.ops:
            _set_for_op(op, ipu_to_prop)


def _set_in_graph(graph: Any, ipu_to_prop: dict[int, float], visited: list[Any]) -> None:
    for op in graph.ops:
        if op.type in ("Call", "Loop"):
            called = op.attrs["called_graph"]
            if called not in visited:
                _set_in_graph(called, ipu_to_prop, visited)
        _set_for_op(op, ipu_to_prop)
    visited.append(graph)


def set_graph_available_memory_proportion_by_ipu(graph: popxl.Graph, proportions: Iterable[float]) -> None:
    """Like :func:`set_available_memory_proportion_by_ipu` for ``graph`` and the graphs its
    ``Call`` and ``Loop`` ops call."""
    _set_in_graph(graph, dict(enumerate(proportions)), [])


set_available_memory_proportion_by_ipu.__simulator_note__ = _NOTE  # type: ignore[attr-defined]
set_graph_available_memory_proportion_by_ipu.__simulator_note__ = _NOTE  # type: ignore[attr-defined]
