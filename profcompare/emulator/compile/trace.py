"""The simulated execution trace: Graph Analyser's blocks per IPU from the modelled steps.

Every executed step of one run of the main program becomes one block per IPU it runs on, from
the execution table's interval of that step (the first ``cycles_from`` to the last ``cycles_to``
of its back-to-back phase rows; a pipeline stage's step placed again later is another block), so the trace adds no time of its own and the blocks of an IPU cover exactly
the cycles the execution table gives the step. Nothing here is fitted.

- Type: the step's pva program type in Graph Analyser's names (:data:`TRACE_TYPE_OF_PROGRAM`):
  a ``Sync`` step is ExternalSync or InternalSync by its program name, StreamCopyMid is
  StreamCopy; RemoteLoad / RemoteStore keep their pva names (no Graph Analyser trace of a remote
  transfer is public to name them by). SyncAns blocks (an IPU waiting for the others or for the
  host, overlapping the blocks it waits for) are not modelled: the simulator's steps run one after
  another (docs/ipu-model.md).
- IPU: the IPU of the step's op (the IPU of its outputs, else of its inputs; IPU 0 for steps
  without an op). An IpuCopy's steps run on its source and destination IPUs, one block on each.
- Place in the program tree: ``parent`` is the op's name (the group Graph Analyser draws a
  program's steps under), ``depth`` 1, ``name`` the step's name inside it ("Internal Sync" of
  ``mul/Internal Sync``), ``program`` the step's full program name; steps without an op sit at
  the top level.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import numpy as np
import pandas as pd

from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram
from profcompare.model import make_frame

#: pva program type -> Graph Analyser block type (``Sync`` is decided by the program name).
TRACE_TYPE_OF_PROGRAM: Mapping[str, str] = MappingProxyType({"StreamCopyMid": "StreamCopy"})


def trace_type(program_type: str, program_name: str) -> str:
    """Graph Analyser's block type of a step of pva type ``program_type`` named ``program_name``."""
    if program_type == "Sync":
        return "ExternalSync" if program_name.endswith("External Sync") else "InternalSync"
    return TRACE_TYPE_OF_PROGRAM.get(program_type, program_type)


def _label(name: str, parent: str) -> str:
    return name[len(parent) + 1:] if parent and name.startswith(parent + "/") and len(name) > len(parent) + 1 else name


def step_places(program: LoweredProgram, steps: ProgramSteps) -> tuple[tuple[tuple[int, ...], ...], tuple[str, ...]]:
    """Per static step: the IPUs it runs on and its parent group's name ("" for none)."""
    ipus: list[tuple[int, ...]] = []
    parents: list[str] = []
    for step in steps.static:
        op = program.ops.get(step.op) if step.op else None
        if op is None:
            ipus.append((0,))
            parents.append("")
            continue
        outs = [program.tensors[t].ipu for t in op.outputs if t in program.tensors]
        ins = [program.tensors[t].ipu for t in op.inputs if t in program.tensors]
        if op.type == "IpuCopy" and ins and outs:
            ipus.append(tuple(sorted({int(ins[0]), int(outs[0])})))
        else:
            ipus.append((int((outs or ins or [0])[0]),))
        parents.append(op.name)
    return tuple(ipus), tuple(parents)


def trace_frame(execution: pd.DataFrame, steps: ProgramSteps, step_ipus: Sequence[tuple[int, ...]],
                step_parents: Sequence[str]) -> pd.DataFrame:
    """The ``trace`` table of run 0 of ``execution`` (see the module docstring).

    One row per (executed step, IPU it runs on), the runtime phase (host time outside the
    device) left out; sorted by (ipu, cycles_from, step).
    """
    if not len(execution):
        return make_frame("trace")
    ex = execution[(execution["run"].to_numpy() == 0) & (execution["phase"].astype(str) != "runtime").to_numpy()]
    if not len(ex):
        return make_frame("trace")
    step = ex["step"].to_numpy()
    start = ex["cycles_from"].to_numpy(dtype="int64")
    end = ex["cycles_to"].to_numpy(dtype="int64")
    # a step's phase rows are back to back; a pipeline stage that runs again later is a new block
    first = np.ones(len(step), dtype=bool)
    first[1:] = (step[1:] != step[:-1]) | (start[1:] != end[:-1])
    heads = np.flatnonzero(first)
    tails = np.append(heads[1:], len(step)) - 1
    rows: list[tuple[int, int, int, int, str, str, str, int]] = []
    for head, tail in zip(heads, tails):
        static = steps.static[int(steps.exec_static[int(step[head])])]
        parent = step_parents[static.index]
        block = trace_type(static.type, static.name)
        for ipu in step_ipus[static.index]:
            rows.append((int(ipu), int(start[head]), int(end[tail]), int(step[head]), block, static.name, parent,
                         1 if parent else 0))
    # the label is the step's name inside its group ("Internal Sync" of "mul/Internal Sync")
    rows.sort(key=lambda r: (r[0], r[1], r[3]))
    cols = list(zip(*rows))
    return make_frame("trace", {
        "ipu": np.asarray(cols[0], dtype=np.int64),
        "cycles_from": np.asarray(cols[1], dtype=np.int64),
        "cycles_to": np.asarray(cols[2], dtype=np.int64),
        "type": pd.Categorical(list(cols[4])),
        "name": np.asarray([_label(n, p) for n, p in zip(cols[5], cols[6])], dtype=object),
        "program": np.asarray(cols[5], dtype=object),
        "parent": np.asarray(cols[6], dtype=object),
        "depth": np.asarray(cols[7], dtype=np.int64),
    })


__all__ = ["TRACE_TYPE_OF_PROGRAM", "step_places", "trace_frame", "trace_type"]
