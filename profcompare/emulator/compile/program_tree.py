"""The simulated program tree: the ``programs`` table from the lowering's static steps.

Graph Analyser's Program Tree shows the engine's programs nested as Poplar nests them. The
simulator's lowering (programs.py) knows every step once (calls outlined), so its tree is:

- ``WeightsFromHost`` (a Sequence; only when the program has on-chip variables): the host stream
  copies (Begin, Mid, End) that write each variable before the first run;
- ``main`` (a Sequence): one Sequence per op of the main graph that lowers to steps, in op order,
  named after the op and holding its steps (views lower to none and have no row). A call's
  ``Call`` / ``Repeat`` / ``If`` step holds the called graph's ops the same way; a graph called
  from several sites is nested once, under the first call step that calls it (its code exists
  once), and later call steps of it are leaves;
- a graph the program reaches without a call (code loaded by ``remote_code_load`` and called
  from nowhere) is one more root Sequence named after the graph.

Every static step is one row (a leaf or a call step); the Sequences around them, and the
exchange a matmul's compute set opens with (:func:`exchange_pre_row`), are the only rows the
lowering does not list itself. ``op`` is the op's name (its popxl debug name; "" for
WeightsFromHost and the roots); ``ipu`` a step's IPU when it runs on one, a Sequence's when all
the steps under it run on the same one, else <NA>. Ids are row numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from profcompare.emulator.compile.programs import WEIGHTS_FROM_HOST, ProgramSteps, StaticStep, reachable_graphs
from profcompare.emulator.program import LoweredProgram
from profcompare.model import programs_from_rows

#: Name of the root Sequence holding one run of the main graph.
MAIN_PROGRAM = "main"

#: Roles (programs.templates) of the matmul compute sets that open with an exchange of their own:
#: the Convolve receiving its weights slices, each reduction stage its partials.
EXCHANGE_PRE_ROLES = frozenset({"mm_convolve", "mm_reduce"})


def exchange_pre_row(step: StaticStep) -> tuple[str, str] | None:
    """(type, name) of the program-tree row of the exchange ``step`` opens with, or None.

    Poplar runs a compute set whose vertices read other tiles' data as an exchange then the
    compute, and Graph Analyser's program tree lists the exchange as a step of its own just before
    the compute set: ``DoExchange (cs0_m4/Conv_1/Convolve/ExchangePre)`` before ``OnTileExecute
    (m4/Conv_1/Convolve)``, and ``.../Reduce0/ExchangePre`` before ``Reduce0``, for both matmuls of
    shared/reference/popvision_screenshots/program_tree.png. The execution trace draws no such
    block (the real trace in shared/data has none among its 130 DoExchange blocks, all Copy
    programs'), so the executed step keeps the exchange inside the compute set's block and its
    cycles (cycles.CostModel.convolve_exchange_cycles, conv_reduce.reduce_stage_cycles): the row
    is the tree's only."""
    if step.role not in EXCHANGE_PRE_ROLES:
        return None
    return "DoExchange", f"{step.name}/ExchangePre"


def program_tree(program: LoweredProgram, steps: ProgramSteps,
                 step_ipus: Sequence[tuple[int, ...]] = ()) -> pd.DataFrame:
    """The ``programs`` table of ``program`` lowered to ``steps`` (see the module docstring).

    ``step_ipus`` holds the IPUs of each static step (trace.step_places); without it every
    ``ipu`` is <NA>. Columns as :data:`profcompare.model.SCHEMAS` ``programs``.
    """
    by_op: dict[str, list[StaticStep]] = {}
    setup: list[StaticStep] = []
    for step in steps.static:
        if step.op:
            by_op.setdefault(step.op, []).append(step)
        else:
            setup.append(step)
    ops_of: dict[str, list[str]] = {}
    for op in program.ops.values():
        ops_of.setdefault(op.graph, []).append(op.id)

    parents: list[int | None] = []
    depths: list[int] = []
    kinds: list[str] = []
    names: list[str] = []
    op_names: list[str] = []
    ipus: list[set[int]] = []

    def add(parent: int | None, kind: str, name: str, op: str, on: tuple[int, ...] = ()) -> int:
        parents.append(parent)
        depths.append(0 if parent is None else depths[parent] + 1)
        kinds.append(kind)
        names.append(name)
        op_names.append(op)
        ipus.append(set(on))
        return len(names) - 1

    def ipus_of(step: StaticStep) -> tuple[int, ...]:
        return tuple(int(i) for i in step_ipus[step.index]) if step.index < len(step_ipus) else ()

    expanded: set[str] = set()

    def expand(graph: str, parent: int) -> None:
        expanded.add(graph)
        for op_id in ops_of.get(graph, ()):
            op_steps = by_op.get(op_id)
            if not op_steps:
                continue  # a view: no step of its own
            op = program.ops[op_id]
            label = op.name or op.id
            group = add(parent, "Sequence", label, label)
            for step in op_steps:
                pre = exchange_pre_row(step)
                if pre is not None:
                    add(group, *pre, label, ipus_of(step))
                row = add(group, step.type, step.name, label, ipus_of(step))
                if step.role != "call":
                    continue
                called = (op.attrs.get("called_graph"), *(op.attrs.get("other_graphs") or ()))
                for sub in called:
                    if sub and sub not in expanded and sub in program.graphs:
                        expand(str(sub), row)

    if setup:
        weights = add(None, "Sequence", WEIGHTS_FROM_HOST, "")
        for step in setup:
            add(weights, step.type, step.name, "", ipus_of(step))
    expand(program.main_graph, add(None, "Sequence", MAIN_PROGRAM, ""))
    for graph in sorted(reachable_graphs(program) - expanded):
        if graph not in expanded:  # a graph expanded under an earlier root of this loop is done
            expand(graph, add(None, "Sequence", program.graphs[graph].name if graph in program.graphs else graph, ""))

    # a Sequence runs on an IPU when every step under it does (children follow their parent)
    for row in range(len(names) - 1, -1, -1):
        parent = parents[row]
        if parent is not None:
            ipus[parent] |= ipus[row]
    rows = [(row, parents[row], depths[row], kinds[row], names[row], op_names[row],
             next(iter(ipus[row])) if len(ipus[row]) == 1 else None) for row in range(len(names))]
    return programs_from_rows(rows)


__all__ = ["EXCHANGE_PRE_ROLES", "MAIN_PROGRAM", "exchange_pre_row", "program_tree"]
