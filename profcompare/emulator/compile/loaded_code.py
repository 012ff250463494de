"""Code loaded at run time by ``remote_code_load(graph, "executable")`` (docs/ipu-model.md).

What the sources say (facts, not modelled choices): PopART lowers the op by giving the loaded
graph's functions a ``poplar::FunctionBuffer`` with the ``REMOTE`` mapping (the code is kept in
Streaming Memory; one buffer per graph however many ops load it) and a ``Copy(buffer, function)``
at the op, which brings the code to the tiles. popxl warns that a graph that is never loaded is
assumed to be in executable memory all along, "and hence always live": loaded code is not.

What the model does with it:

- A loaded graph's *loaded code* is, per tile, the code of its own static steps in
  :data:`LOADED_CODE_CATEGORIES` (the code of graphs it calls is theirs). code.py takes it out
  of the always-live code categories and the ``code`` table, so the table still sums to the code
  categories.
- On the tiles it is a not-always-live storage row (kind ``other``, named
  ``<graph>/loaded code``): live from the first step of a code load to the last executed step of
  the graph's last run before the next load of the same graph (:func:`live_intervals`). It is
  code, so it must sit in the non-interleaved region (facts 2.1).
- In Streaming Memory the buffer holds every tile's copy: :attr:`LoadedCode.streaming_memory_bytes`
  per replica, which is also what each load moves (cycles.py, at the gateway bandwidth of remote
  buffer loads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from profcompare.emulator.compile.liveness import Instances
from profcompare.emulator.compile.memory import Storage
from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram

#: Code categories whose bytes move with a loaded graph. ASSUMPTION: a poplar::Function's code is
#: the instructions generated from its program, which are its control code and its exchange code
#: (the exchanges are instructions of the function's own steps). Not moved (ASSUMPTION): codelets
#: (vertexCode), which every graph shares and which stay resident, and vertex state and copy
#: descriptors, which are data (the vertex_data group), not code.
LOADED_CODE_CATEGORIES: tuple[str, ...] = (
    "controlCode", "internalExchangeCode", "hostExchangeCode", "globalExchangeCode",
)

#: Storage class of the loaded-code rows in :class:`~profcompare.emulator.compile.memory.Storage`.
LOADED_CODE_STORAGE = "loaded_code"

#: Suffix of a loaded-code row's name in the variables table.
LOADED_CODE_SUFFIX = "/loaded code"


@dataclass(frozen=True, eq=False)
class LoadedCode:
    """The code of one graph loaded by ``remote_code_load``.

    ``tile_bytes`` is its code per tile (int64, one per tile of the replica); ``intervals`` are
    its live intervals in executed program steps (first, last inclusive), one per load.
    """

    graph: str
    name: str
    tile_bytes: np.ndarray
    intervals: tuple[tuple[int, int], ...]

    @property
    def streaming_memory_bytes(self) -> int:
        """Bytes of its FunctionBuffer in Streaming Memory, per replica: every tile's copy
        (modelled: the code sizes are the model's, docs/ipu-model.md section 2)."""
        return int(self.tile_bytes.sum())


def loaded_graphs(program: LoweredProgram, steps: ProgramSteps) -> tuple[str, ...]:
    """Ids of the graphs some compiled ``remote_code_load`` op loads, in first-load order."""
    out: list[str] = []
    for st in steps.static:
        if st.role != "code_load":
            continue
        graph = str(program.ops[st.op].attrs.get("code_graph", ""))
        if graph and graph not in out:
            out.append(graph)
    return tuple(out)


def live_intervals(program: LoweredProgram, steps: ProgramSteps, graph: str) -> tuple[tuple[int, int], ...]:
    """Live intervals (first, last executed step, inclusive) of ``graph``'s loaded code.

    A load writes the code (Poplar's liveness sees the Copy as the write of the function's code,
    as a remote load writes its data): an interval starts at the load's first step, like a loaded
    tensor's. A step of the graph runs its code: the graph's own ops, and every op under a call
    made by one of its ops (the graph's code is on the stack while a callee runs). An interval
    ends at the last such step before the next load of the graph, or at the load's last step
    when the graph does not run in between. ASSUMPTION (the sources do not say how long the
    executable storage stays reserved): it is freed after its last use, as Poplar frees a
    variable after its last read. A run of the graph before its first load (popxl leaves the
    order to the user) makes an interval of its own from that run.
    """
    ops = program.ops
    intervals: list[list[int]] = []
    open_interval: list[int] | None = None
    for entry, s, t in zip(program.schedule, steps.exec_ranges[:, 0].tolist(), steps.exec_ranges[:, 1].tolist()):
        if t == s:
            continue
        op = ops[entry.op]
        if op.type == "RemoteCodeLoad" and str(op.attrs.get("code_graph", "")) == graph:
            open_interval = [s, t - 1]
            intervals.append(open_interval)
            continue
        runs_graph = op.graph == graph or any(c in ops and ops[c].graph == graph for c in entry.call_path)
        if not runs_graph:
            continue
        if open_interval is None:
            open_interval = [s, t - 1]
            intervals.append(open_interval)
        open_interval[1] = max(open_interval[1], t - 1)
    return tuple((a, b) for a, b in intervals)


def loaded_code(program: LoweredProgram, steps: ProgramSteps,
                tile_bytes: Mapping[str, np.ndarray]) -> tuple[LoadedCode, ...]:
    """One :class:`LoadedCode` per graph in ``tile_bytes`` (graph id -> code per tile, from
    code.py), with its live intervals."""
    out = []
    for graph, per_tile in tile_bytes.items():
        info = program.graphs.get(graph)
        name = info.name if info is not None else graph
        out.append(LoadedCode(graph, name, np.asarray(per_tile, dtype=np.int64),
                              live_intervals(program, steps, graph)))
    return tuple(out)


def with_loaded_code(storage: Storage, loaded: Sequence[LoadedCode]) -> Storage:
    """``storage`` with one not-always-live row per loaded graph appended (after the tensors and
    temporaries; storage class :data:`LOADED_CODE_STORAGE`, kind ``other``, non-interleaved)."""
    if not loaded:
        return storage
    rows = np.stack([lc.tile_bytes for lc in loaded]).astype(np.int64)
    taken = set(storage.names)
    names = []
    for lc in loaded:
        name = lc.name + LOADED_CODE_SUFFIX
        k = 2
        while name in taken:
            name = f"{lc.name}{LOADED_CODE_SUFFIX}#{k}"
            k += 1
        taken.add(name)
        names.append(name)
    n = len(loaded)
    return replace(
        storage,
        ids=storage.ids + tuple(f"{lc.graph}#loaded_code" for lc in loaded),
        names=storage.names + tuple(names),
        storage=storage.storage + (LOADED_CODE_STORAGE,) * n,
        kinds=storage.kinds + ("other",) * n,
        dtypes=storage.dtypes + ("",) * n,
        shapes=storage.shapes + (None,) * n,
        interleaved=np.concatenate([storage.interleaved, np.zeros(n, dtype=bool)]),
        tile_bytes=storage.tile_bytes.append(rows),
    )


def loaded_code_rows(storage: Storage) -> np.ndarray:
    """Bool per storage row: True for the loaded-code rows."""
    return np.array([s == LOADED_CODE_STORAGE for s in storage.storage], dtype=bool)


def with_code_instances(inst: Instances, storage: Storage, loaded: Sequence[LoadedCode]) -> Instances:
    """``inst`` plus one instance per live interval of each loaded graph (call path ``()``), the
    rows being those :func:`with_loaded_code` appended to ``storage``."""
    if not loaded:
        return inst
    first_row = len(storage.ids) - len(loaded)
    rows = [first_row + k for k, lc in enumerate(loaded) for _ in lc.intervals]
    firsts = [a for lc in loaded for a, _ in lc.intervals]
    lasts = [b for lc in loaded for _, b in lc.intervals]
    paths = inst.path if len(inst.path) == len(inst.row) else ((),) * len(inst.row)
    return Instances(
        row=np.concatenate([inst.row, np.asarray(rows, dtype=np.int64)]),
        first=np.concatenate([inst.first, np.asarray(firsts, dtype=np.int64)]),
        last=np.concatenate([inst.last, np.asarray(lasts, dtype=np.int64)]),
        path=tuple(paths) + ((),) * len(rows),
    )


def select(inst: Instances, keep: np.ndarray) -> Instances:
    """The instances where ``keep`` (bool per instance) is True."""
    paths = inst.path if len(inst.path) == len(inst.row) else ((),) * len(inst.row)
    return Instances(row=inst.row[keep], first=inst.first[keep], last=inst.last[keep],
                     path=tuple(p for p, k in zip(paths, keep.tolist()) if k))


__all__ = [
    "LOADED_CODE_CATEGORIES", "LOADED_CODE_STORAGE", "LoadedCode", "live_intervals", "loaded_code",
    "loaded_code_rows", "loaded_graphs", "select", "with_code_instances", "with_loaded_code",
]
