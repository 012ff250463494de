"""The simulated ``vertices``, ``compute_sets`` and ``exchanges`` tables (model.SCHEMAS).

The code model (code.py) already counts, step by step, the vertices every compute set creates,
the codelet family they run and the exchange code every exchange adds; this module lays those
counts out as tables:

- ``vertices``: one row per codelet family (the simulator's vertex types, named
  ``codelets:<family>`` as the ``code`` table names their code: matmul, reduce, nonlinearity,
  elementwise, copy, collective, ...; a real profile names each vertex class instead), the most
  code first; ``instances`` the vertices of that family over every compute set and tile,
  ``vertex_state_bytes`` instances x targets.DeviceSpec.vertex_state_bytes, ``code_bytes`` the
  family's codelet size x the tiles holding it, ``compute_sets`` the compute sets using it;
- ``compute_sets``: one row per OnTileExecute step (one compute set each), in step order, named
  as the program tree names the step with the op's distinct name (operations.unique_names) in
  place of its debug name, ``op`` that distinct name, ``program`` the step's id in the program
  tree when no other step shares its name; its vertices (one codelet family: ``vertex_types`` is 1), their state, the tiles with a
  vertex, and the step's compute-phase cycles of one execution (cycles.py);
- ``exchanges``: one row per step holding exchange code (DoExchange, host and Streaming Memory
  copies, global exchanges, and a compute set's own exchange, named ``<step>/exchange``): its
  code over the tiles holding it and the step's cycles of one execution in every device phase
  but compute.

All figures are modelled (docs/ipu-model.md "Code"); the names, program ids, ops and IPUs are
the lowering's own. The exchange code of a graph loaded by ``remote_code_load`` is not always
live and has no row (loaded_code.py); its vertices and codelets stay (vertex state and vertex
code are not loaded). By construction the columns sum exactly to the
report's ``vertexCode`` (vertices' code), ``vertexInstanceState`` (vertices' and compute sets'
state) and exchange code categories (exchanges' code); a remainder row is added only if they
did not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from profcompare.emulator.compile.code import CodeModel
from profcompare.emulator.compile.operations import unique_names
from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram
from profcompare.emulator.targets import DeviceSpec
from profcompare.model import (
    DEVICE_PHASES,
    PHASES,
    UNATTRIBUTED_COMPUTE_SETS,
    UNATTRIBUTED_EXCHANGES,
    UNATTRIBUTED_VERTICES,
    table_from_rows,
)

#: Prefix of a simulated vertex type's name: the codelet family is not a Poplar vertex class (and
#: reads as the family's row of the ``code`` table, ``codelets:<family>``, not as a phase or op).
CODELET_PREFIX = "codelets:"

#: The categories each table reconciles with.
VERTEX_CODE_CATEGORY = "vertexCode"
VERTEX_STATE_CATEGORY = "vertexInstanceState"
EXCHANGE_CODE_CATEGORIES = ("internalExchangeCode", "hostExchangeCode", "globalExchangeCode")


def vertex_tables(program: LoweredProgram, steps: ProgramSteps, code: CodeModel, device: DeviceSpec,
                  static_cycles: np.ndarray, categories: pd.DataFrame, programs: pd.DataFrame,
                  step_ipus: Sequence[tuple[int, ...]] = ()) -> dict[str, pd.DataFrame]:
    """The ``vertices``, ``compute_sets`` and ``exchanges`` tables of ``program`` (see the module
    docstring), keyed by table name.

    ``static_cycles`` is the cycles of each static step by phase (cycles.static_cycles),
    ``categories`` the report's categories table, ``programs`` its program tree (for the
    program ids), ``step_ipus`` the IPUs of each static step (trace.step_places).
    """
    by_category = dict(zip(categories["category"].astype(str), categories["bytes"].astype("int64").tolist()))
    program_ids = _program_ids(programs)
    stepped = {step.op for step in steps.static if step.op}
    lowered = [op for op in program.ops.values() if op.id in stepped]
    op_names = dict(zip((op.id for op in lowered), unique_names(program, lowered)))
    op_labels = {op.id: op.name or op.id for op in lowered}

    def step_name(step: int, name: str) -> str:
        # a step is named after its op's label (repeated debug names repeat it): the op's
        # distinct name in its place, as the operations table names the op
        op = steps.static[step].op
        label = op_labels.get(op, "")
        return op_names[op] + name[len(label):] if label and name.startswith(label) else name
    compute = PHASES.index("compute")
    others = [PHASES.index(p) for p in DEVICE_PHASES if p != "compute"]
    cycles = np.asarray(static_cycles, dtype=np.int64)

    def ipu_of(step: int) -> int | None:
        ipus = step_ipus[step] if step < len(step_ipus) else ()
        return int(ipus[0]) if len(ipus) == 1 else None

    compute_rows: list[tuple] = []
    instances: dict[str, int] = {}
    uses: dict[str, int] = {}
    for record in code.compute_sets:
        st = steps.static[record.step]
        state = record.vertices * device.vertex_state_bytes
        compute_rows.append((step_name(record.step, st.name), program_ids.get(st.name), op_names.get(st.op, ""), ipu_of(record.step), 1,
                             record.vertices, state, int(cycles[record.step, compute]) if len(cycles) else None,
                             record.tiles))
        instances[record.codelet] = instances.get(record.codelet, 0) + record.vertices
        uses[record.codelet] = uses.get(record.codelet, 0) + 1
    vertex_rows: list[tuple] = []
    for kind, (code_bytes, tiles) in code.codelets.items():
        count = instances.get(kind, 0)
        vertex_rows.append((f"{CODELET_PREFIX}{kind}", count, count * device.vertex_state_bytes, code_bytes, tiles,
                            uses.get(kind, 0)))
    vertex_rows.sort(key=lambda row: (-row[3], row[0]))
    exchange_rows: list[tuple] = []
    for ex in code.exchanges:
        st = steps.static[ex.step]
        exchange_rows.append((step_name(ex.step, ex.name), program_ids.get(st.name), op_names.get(st.op, ""), ipu_of(ex.step), ex.type,
                              ex.code_bytes, int(cycles[ex.step, others].sum()) if len(cycles) else None, ex.tiles))
    vertex_state = by_category.get(VERTEX_STATE_CATEGORY, 0)
    left_code = by_category.get(VERTEX_CODE_CATEGORY, 0) - sum(row[3] for row in vertex_rows)
    left_state = vertex_state - sum(row[2] for row in vertex_rows)
    if left_code > 0 or left_state > 0:
        vertex_rows.append((UNATTRIBUTED_VERTICES, 0, max(0, left_state), max(0, left_code), None, 0))
    left_state = vertex_state - sum(row[6] for row in compute_rows)
    if left_state > 0:
        compute_rows.append((UNATTRIBUTED_COMPUTE_SETS, None, "", None, 0, 0, left_state, None, None))
    left_exchange = sum(by_category.get(c, 0) for c in EXCHANGE_CODE_CATEGORIES) - sum(row[5] for row in exchange_rows)
    if left_exchange > 0:
        exchange_rows.append((UNATTRIBUTED_EXCHANGES, None, "", None, "", left_exchange, None, None))
    return {"vertices": table_from_rows("vertices", vertex_rows),
            "compute_sets": table_from_rows("compute_sets", compute_rows),
            "exchanges": table_from_rows("exchanges", exchange_rows)}


def _program_ids(programs: pd.DataFrame) -> Mapping[str, int]:
    """Program name -> id of the one row of the program tree that is a step (not a Sequence) of
    that name; a name several steps share has no id (which of them is which is not known)."""
    ids: dict[str, int] = {}
    shared: set[str] = set()
    if not len(programs):
        return ids
    kinds = programs["kind"].astype(str).tolist()
    for pid, name, kind in zip(programs["id"].tolist(), programs["name"].tolist(), kinds):
        if kind != "Sequence":
            if str(name) in ids:
                shared.add(str(name))
            ids[str(name)] = int(pid)
    return {name: pid for name, pid in ids.items() if name not in shared}


__all__ = ["CODELET_PREFIX", "EXCHANGE_CODE_CATEGORIES", "VERTEX_CODE_CATEGORY", "VERTEX_STATE_CATEGORY", "vertex_tables"]
