"""The simulated ``operations`` table: what each op of the program costs (model.SCHEMAS).

The simulator lowers every op itself (programs.py), so every static step, and therefore every
byte of control and exchange code, vertex state and every cycle of a step, belongs to the op
that step lowers. Per op (views lower to no step and have no row):

- ``code_bytes``: the control and exchange code its steps add (code.py's ``code`` table rows of
  its steps); ``exchange_code_bytes`` the exchange part of it (internal, host and global);
- ``vertex_state_bytes``: the vertex instance state and copy descriptors its steps add;
- ``cycles``: the device cycles (every phase but host/runtime) of its steps over one run of the
  main program, a step run n times counted n times;
- ``flops``: the op's FLOPs per execution (lowering.py) times how often it runs in one run;
- ``tiles``: the tiles its steps take part on; ``ipu``: the IPU when all its steps run on one;
- ``name``: a distinct readable name (:func:`unique_names`); ``debug_name`` its popxl debug name;
  ``type`` its popxl op type; ``layer`` and ``source`` are "" (the emulator records no debug
  layer nor source location);
- ``parameter`` and ``role``: the parameter whose data the op acts on and what of it the op
  serves, exact from the program's provenance (op_attribution.py: the rule); "" and "" without
  a provenance.

What no op owns -- the program's base control code, the vertex code (one copy of a codelet
serves every op on a tile), the WeightsFromHost copies, the run's opening control copies and
the host's start-of-run wait (cycles.run_opening_cycles) --
is the remainder row :data:`~profcompare.model.UNATTRIBUTED_OPERATION`, so the columns sum
exactly to the report's code bytes (the ``code`` group of ``categories``), its vertex instance
state plus copy descriptors, its exchange code, and its device cycles per step. In a pipelined
program the stages overlap, so the ops' cycles may add up to more than one run's span; the
remainder's cycles are then 0 (never negative).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from profcompare.emulator.compile.attribution import Provenance
from profcompare.emulator.compile.code import CodeModel
from profcompare.emulator.compile.op_attribution import op_attributions
from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram, OpInfo
from profcompare.model import CATEGORY_GROUPS, DEVICE_PHASES, PHASES, UNATTRIBUTED_OPERATION, operations_from_rows

#: Categories summed into ``vertex_state_bytes``.
VERTEX_STATE_CATEGORIES = ("vertexInstanceState", "copyDescriptor")
#: Categories summed into ``exchange_code_bytes``.
EXCHANGE_CODE_CATEGORIES = ("internalExchangeCode", "hostExchangeCode", "globalExchangeCode")


def category_totals(categories: pd.DataFrame) -> tuple[int, int, int]:
    """(code bytes, vertex state bytes, exchange code bytes) of a ``categories`` table: the
    totals the operations reconcile with."""
    by_name = dict(zip(categories["category"].astype(str), categories["bytes"].astype("int64").tolist()))
    code = sum(v for name, v in by_name.items() if CATEGORY_GROUPS.get(name) == "code")
    vertex_state = sum(by_name.get(name, 0) for name in VERTEX_STATE_CATEGORIES)
    exchange = sum(by_name.get(name, 0) for name in EXCHANGE_CODE_CATEGORIES)
    return int(code), int(vertex_state), int(exchange)


def operations_frame(program: LoweredProgram, steps: ProgramSteps, code: CodeModel, static_cycles: np.ndarray,
                     categories: pd.DataFrame, device_cycles: int,
                     step_ipus: Sequence[tuple[int, ...]] = (), *,
                     provenance: Provenance | None = None) -> pd.DataFrame:
    """The ``operations`` table of ``program`` (see the module docstring): one row per op that
    lowers to steps, in program order, then the remainder row when anything is left.

    ``static_cycles`` is the cycles of each static step by phase (cycles.static_cycles),
    ``categories`` the report's categories table, ``device_cycles`` the report's device cycles of
    one run, ``step_ipus`` the IPUs of each static step (trace.step_places), ``provenance`` the
    program's attribution (attribution.trace), which gives each op its parameter and role.
    """
    n_static = len(steps.static)
    run = steps.exec_static[steps.setup_steps:]
    runs_of = np.bincount(run, minlength=n_static).astype(np.int64) if n_static else np.zeros(0, np.int64)
    device = [PHASES.index(p) for p in DEVICE_PHASES]
    per_step = np.asarray(static_cycles, dtype=np.int64)[:, device].sum(axis=1) if n_static else runs_of
    cycles_of_step = (per_step * runs_of).tolist()
    runs = runs_of.tolist()
    steps_of: dict[str, list[int]] = {}
    for step in steps.static:
        if step.op:
            steps_of.setdefault(step.op, []).append(step.index)
    rows: list[tuple] = []
    lowered = [op for op in program.ops.values() if steps_of.get(op.id)]  # a view has no step of its own
    names = unique_names(program, lowered)
    served = op_attributions(program, provenance, steps.op_class) if provenance is not None else {}
    for op, name in zip(lowered, names):
        indices = steps_of[op.id]
        ipus = {int(i) for s in indices if s < len(step_ipus) for i in step_ipus[s]}
        code_bytes, vertex_state, exchange = code.op_bytes.get(op.id, (0, 0, 0))
        executions = runs[indices[0]]
        rows.append((name, op.name, op.type, "", next(iter(ipus)) if len(ipus) == 1 else None,
                     int(code_bytes), int(vertex_state), int(exchange),
                     int(sum(cycles_of_step[s] for s in indices)),
                     int(op.flops) * executions, code.op_tiles.get(op.id), "",
                     served[op.id].parameter if op.id in served else "",
                     served[op.id].role if op.id in served else ""))
    code_total, vertex_total, exchange_total = category_totals(categories)
    left = _remainder(rows, code_total, vertex_total, exchange_total, int(device_cycles))
    if any(left):
        rows.append((UNATTRIBUTED_OPERATION, "", "", "", None, *left, None, None, "", "", ""))
    return operations_from_rows(rows)


def unique_names(program: LoweredProgram, ops: Sequence[OpInfo]) -> list[str]:
    """One distinct, readable name per op of ``ops``: its debug name (else its id), prefixed
    with its graph's name outside the main graph; where that repeats (one ``remote_load`` per
    variable), followed by ``:`` and the name of the tensor it writes (else the first it reads);
    where even that repeats, ``@1``, ``@2``, ... in program order."""
    def qualified(op: OpInfo) -> str:
        label = op.name or op.id
        graph = program.graphs.get(op.graph)
        return label if op.graph == program.main_graph or graph is None else f"{graph.name}/{label}"

    def with_tensor(op: OpInfo, name: str) -> str:
        tensor = next(iter(op.outputs or op.modified or op.inputs), "")
        info = program.tensors.get(tensor)
        return f"{name}:{info.name if info is not None else tensor}" if tensor else name

    names = [qualified(op) for op in ops]
    counts = Counter(names)
    names = [with_tensor(op, name) if counts[name] > 1 else name for op, name in zip(ops, names)]
    counts = Counter(names)
    seen: Counter[str] = Counter()
    out = []
    for name in names:
        if counts[name] > 1:
            seen[name] += 1
            name = f"{name}@{seen[name]}"
        out.append(name)
    return out


def _remainder(rows: Sequence[tuple], code: int, vertex_state: int, exchange: int, cycles: int) -> tuple[int, ...]:
    """What the ``rows`` leave of the totals: code, vertex state, exchange code, cycles (cycles
    never below 0: overlapping pipeline stages)."""
    def taken(column: int) -> int:
        return int(sum(int(row[column]) for row in rows))

    return (code - taken(5), vertex_state - taken(6), exchange - taken(7), max(0, cycles - taken(8)))


def totals(frame: pd.DataFrame) -> Mapping[str, int]:
    """Column sums of an ``operations`` table (code, vertex state, exchange code, cycles), the
    figures that reconcile with the report."""
    return {column: int(frame[column].sum()) for column in
            ("code_bytes", "vertex_state_bytes", "exchange_code_bytes", "cycles")}


__all__ = [
    "EXCHANGE_CODE_CATEGORIES",
    "VERTEX_STATE_CATEGORIES",
    "category_totals",
    "operations_frame",
    "totals",
    "unique_names",
]
