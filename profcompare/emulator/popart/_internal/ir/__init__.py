"""``popart._internal.ir`` on the simulator: PopART's C++ Ir as tests read it.

Tests of popxl programs count the ops a graph holds by PopART class:
``ops_of_type(graph._pb_graph.getOps(), _ir.op.MatMulOp)``. The simulator keeps its own op
records (:class:`profcompare.emulator.popxl.graph.Op`, typed by PopART's op type names), so it
gives that much: ``Graph._pb_graph`` (:class:`profcompare.emulator.popxl.pb_handles.PbGraph`)
has a ``getOps()`` that returns one instance per op of the graph, of the class :mod:`.op` names
after the op's PopART class; :mod:`.patterns` has the pattern levels ``Ir._pb_ir.setPatterns`` takes. Building or rewriting a graph through PopART's Ir (custom ops, IR surgery) is
not simulated: every other name is refused in one line naming it.
"""

from __future__ import annotations

from profcompare.emulator.popxl.errors import module_getattr

from . import op, patterns
from .op import Op

__getattr__ = module_getattr("popart._internal.ir")

__all__ = ["Op", "op", "patterns"]
