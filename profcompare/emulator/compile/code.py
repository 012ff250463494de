"""Code and vertex data per tile, and the ``code`` table (docs/ipu-model.md "Code").

Everything here is counted per *static* program step, so a called graph's code exists once
however often it is called (outlining). WriteUndef steps generate no code and are skipped. A step's participating tiles are the tiles holding
the tensors it reads or writes (and its temporaries). Per tile:

- controlCode: a fixed base, plus a sync/branch per static step on every tile, plus a
  launch/call sequence per step on participating tiles;
- vertexCode: one copy of each codelet family used on the tile;
- vertexInstanceState: one vertex per worker with data (at most 6 per tile per compute step);
- internalExchangeCode: per DoExchange, and per compute set that receives data of other tiles
  (programs.EXCHANGE_INSIDE_ROLES: its exchange), on participating tiles;
- hostExchangeCode: per StreamCopy, RemoteLoad or RemoteStore on participating tiles;
- globalExchangeCode: per ring step of each collective on participating tiles;
- copyDescriptor: per tensor copied by a Call's enter/exit copies, on the tiles holding it.

The control and exchange code of a graph loaded by ``remote_code_load`` (its own steps) is not
always live: it is returned apart (``CodeModel.loaded``) and left out of the categories and the
code table, which therefore still sum to each other (loaded_code.py). A code load's own steps
take part on every tile that holds some of the loaded graph's code.
Sizes come from targets.DeviceSpec (each cites its source or is an ASSUMPTION).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from profcompare.emulator.compile.cycles import CostModel
from profcompare.emulator.compile.loaded_code import LOADED_CODE_CATEGORIES, loaded_graphs
from profcompare.emulator.compile.mapping import mapping_offset, tile_bytes_matrix
from profcompare.emulator.compile.memory import Storage
from profcompare.emulator.compile.placement import Layout, placed_tile_bytes
from profcompare.emulator.compile.programs import EXCHANGE_INSIDE_ROLES, NO_CODE_STEP_TYPES, ProgramSteps, codelet_kind
from profcompare.emulator.program import LoweredProgram
from profcompare.emulator.targets import DeviceSpec
from profcompare.model import make_frame

CODE_CATEGORIES = ("vertexCode", "controlCode", "internalExchangeCode", "hostExchangeCode", "globalExchangeCode")
VERTEX_CATEGORIES = ("vertexInstanceState", "copyDescriptor")
#: Steps that move data between the host or Streaming Memory and the tiles (they hold host exchange code).
HOST_STEP_TYPES = frozenset({"StreamCopyMid", "RemoteLoad", "RemoteStore"})


@dataclass(frozen=True)
class ComputeSetRecord:
    """One compute set (an OnTileExecute step) as the code model counts it."""

    step: int  # static step index
    codelet: str  # the codelet family its vertices run (targets.CODELET_BYTES keys)
    vertices: int  # vertex instances over its tiles
    tiles: int  # tiles with a vertex


@dataclass(frozen=True)
class ExchangeRecord:
    """Exchange code one step adds to the always-live categories (one per code row of an
    exchange category)."""

    step: int  # static step index
    name: str  # the code row's name (a compute set's own exchange: "<step>/exchange")
    type: str  # program type of the step
    code_bytes: int
    tiles: int


@dataclass(frozen=True)
class CodeModel:
    """Per-tile code/vertex-data categories, the code table and per-step participation counts."""

    categories: dict[str, np.ndarray]
    table: pd.DataFrame
    participating_tiles: np.ndarray  # per static step
    vertices: int  # vertex instances in total
    #: graph id -> category -> bytes per tile of the code of a graph loaded by remote_code_load
    #: (not in ``categories`` nor ``table``: it is not always live, loaded_code.py)
    loaded: Mapping[str, Mapping[str, np.ndarray]] = field(default_factory=dict)
    #: op id -> the always-live bytes its steps add: (code, vertex state and copy descriptors,
    #: exchange code -- part of code); vertex code is shared by ops and given to none
    op_bytes: Mapping[str, tuple[int, int, int]] = field(default_factory=dict)
    #: op id -> how many tiles its steps take part on
    op_tiles: Mapping[str, int] = field(default_factory=dict)
    #: every compute set's vertices, in step order (vertices.py)
    compute_sets: tuple[ComputeSetRecord, ...] = ()
    #: every always-live exchange code row, in step order (vertices.py)
    exchanges: tuple[ExchangeRecord, ...] = ()
    #: codelet family -> (vertex code bytes over the tiles holding it, those tiles)
    codelets: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    def loaded_tile_bytes(self) -> dict[str, np.ndarray]:
        """Graph id -> bytes per tile (int64) of its loaded code, all categories summed."""
        return {graph: np.sum([np.asarray(a, dtype=np.int64) for a in cats.values()], axis=0, dtype=np.int64)
                for graph, cats in self.loaded.items() if cats}


class _Tiles:
    """Bytes per tile of any tensor id (storage rows, else a linear mapping of its own)."""

    def __init__(self, program: LoweredProgram, steps: ProgramSteps, storage: Storage, device: DeviceSpec,
                 num_tiles: int, layout: Layout | None = None) -> None:
        self.layout = layout
        self.program = program
        self.root = steps.alias_root
        self.storage = storage
        self.device = device
        self.num_tiles = num_tiles
        self._cache: dict[str, np.ndarray] = {}

    def key(self, tid: str) -> tuple[str, str]:
        """A key equal for tensors with equal bytes per tile: the mapping pattern of a storage
        row, else the tensor id."""
        r = self.storage.row_of.get(self.root.get(tid, tid))
        if r is not None:
            return ("pattern", str(int(self.storage.tile_bytes.pattern_of[r])))
        return ("tensor", tid)

    def bytes(self, tid: str) -> np.ndarray | None:
        r = self.storage.row_of.get(self.root.get(tid, tid))
        if r is not None:
            return self.storage.tile_bytes[r]
        if tid in self._cache:
            return self._cache[tid]
        info = self.program.tensors.get(tid)
        if info is None:
            return None
        if self.layout is not None and not self.layout.trivial:
            row = placed_tile_bytes(self.layout, [info.nelms], [info.itemsize], [info.shape], [info.dtype], [info.ipu],
                                    [info.tile_set], datapath_bytes=self.device.datapath_bytes,
                                    min_bytes_per_tile=self.device.min_bytes_per_tile)[0]
        else:
            row = tile_bytes_matrix(
                np.array([info.nelms]), np.array([info.itemsize]),
                np.array([mapping_offset(info.shape, info.dtype, self.num_tiles)]), self.num_tiles,
                datapath_bytes=self.device.datapath_bytes, min_bytes_per_tile=self.device.min_bytes_per_tile,
            )[0]
        self._cache[tid] = row
        return row


def code_model(program: LoweredProgram, steps: ProgramSteps, storage: Storage, costs: CostModel,
               device: DeviceSpec, num_tiles: int, layout: Layout | None = None) -> CodeModel:
    """Compute code and vertex-data bytes per tile and the ``code`` table (model.SCHEMAS)."""
    tiles = _Tiles(program, steps, storage, device, num_tiles, layout)

    def zeros() -> np.ndarray:
        return np.zeros(num_tiles, dtype=np.int64)

    control = zeros()
    internal = zeros()
    host = zeros()
    global_ex = zeros()
    vstate = zeros()
    copy_desc = zeros()
    codelet_masks: dict[str, np.ndarray] = {}
    participating = np.zeros(len(steps.static), dtype=np.int64)
    rows_name: list[str] = []
    rows_type: list[str] = []
    rows_cat: list[str] = []
    rows_bytes: list[int] = []
    per_op_cache: dict[tuple[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    by_patterns: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    workers = device.worker_contexts

    def touched(st) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # a Call's copy step touches the copied tensor and its caller's tensor; a WeightsFromHost
        # step the variable it writes; any other step its op's tensors and temporaries
        key = (st.op, st.phase, st.tensor)
        hit = per_op_cache.get(key)
        if hit is not None:
            return hit
        hit = _touched_by_patterns(st)
        per_op_cache[key] = hit
        return hit

    def _touched_by_patterns(st) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # steps of different ops whose tensors have the same mappings touch the same tiles
        # (every layer of a stack): computed once per multiset of mappings
        temps: tuple = ()
        if not st.op or st.role == "scalar_update":
            # a WeightsFromHost copy, or a scalar update on its one tensor (a counter)
            tids = [st.tensor]
            copied_ids: list[str] = []
        else:
            op = program.ops[st.op]
            if steps.op_class[st.op] == "call":
                gin = op.attrs.get("inputs") or {}
                gout = op.attrs.get("outputs") or {}
                tids = [st.tensor, gin.get(st.tensor, gout.get(st.tensor, ""))] if st.tensor else []
                copied_ids = [st.tensor] if st.tensor else []
            else:
                tids = list(op.inputs) + list(op.outputs) + list(op.modified)
                copied_ids = []
                temps = storage.temp_rows.get(st.op, ())
        pattern_key = (tuple(sorted(tiles.key(t) for t in tids)), tuple(sorted(tiles.key(t) for t in copied_ids)),
                       tuple(sorted(int(storage.tile_bytes.pattern_of[r]) for r, _ in temps)))
        hit = by_patterns.get(pattern_key)
        if hit is not None:
            return hit
        mask = np.zeros(num_tiles, dtype=bool)
        largest = np.zeros(num_tiles, dtype=np.int64)
        copied = np.zeros(num_tiles, dtype=np.int64)  # tensors copied per tile
        for t in tids:
            b = tiles.bytes(t)
            if b is None:
                continue
            mask |= b > 0
            np.maximum(largest, b, out=largest)
        for t in copied_ids:
            b = tiles.bytes(t)
            if b is not None:
                copied += b > 0
        for row, _ in temps:
            b = storage.tile_bytes[row]
            mask |= b > 0
        if not mask.any():
            mask[0] = True
        by_patterns[pattern_key] = (mask, largest, copied)
        return mask, largest, copied

    def row(name: str, ptype: str, cat: str, nbytes: int) -> None:
        if nbytes:
            rows_name.append(name)
            rows_type.append(ptype)
            rows_cat.append(cat)
            rows_bytes.append(int(nbytes))

    vertices_total = 0
    code_steps = 0
    # code of graphs loaded by remote_code_load is kept apart: not always live (loaded_code.py)
    loaded: dict[str, dict[str, np.ndarray]] = {g: {c: zeros() for c in LOADED_CODE_CATEGORIES}
                                                 for g in loaded_graphs(program, steps)}
    loaded_steps = dict.fromkeys(loaded, 0)
    always = {"controlCode": control, "internalExchangeCode": internal, "hostExchangeCode": host,
              "globalExchangeCode": global_ex}

    def owner(st) -> str | None:
        graph = program.ops[st.op].graph if st.op else ""
        return graph if graph in loaded else None

    op_bytes: dict[str, list[int]] = {}
    op_tiles: dict[str, np.ndarray] = {}
    compute_sets: list[ComputeSetRecord] = []
    exchanges: list[ExchangeRecord] = []

    def add_to_op(st, code: int = 0, vertex_state: int = 0, exchange: int = 0) -> None:
        if st.op:
            tally = op_bytes.setdefault(st.op, [0, 0, 0])
            tally[0] += code
            tally[1] += vertex_state
            tally[2] += exchange

    def add_code(st, graph: str | None, cat: str, mask: np.ndarray, per_tile: int, suffix: str = "") -> None:
        if graph is not None and cat in loaded[graph]:
            loaded[graph][cat] += mask * per_tile
            return
        always[cat] += mask * per_tile
        nbytes = int(mask.sum()) * per_tile
        row(st.name + suffix, st.type, cat, nbytes)
        add_to_op(st, code=nbytes, exchange=nbytes if cat != "controlCode" else 0)
        if cat != "controlCode" and nbytes:
            exchanges.append(ExchangeRecord(st.index, st.name + suffix, st.type, nbytes, int(mask.sum())))

    def code_load_mask(st) -> np.ndarray:
        # the Copy writes the loaded graph's code on every tile that holds some of it
        target = str(program.ops[st.op].attrs.get("code_graph", ""))
        if target not in loaded:
            return touched(st)[0]
        total = sum(loaded[target].values()) + device.control_code_bytes_per_step * loaded_steps[target]
        mask = total > 0
        if not mask.any():
            mask[0] = True
        return mask

    # code loads last: the tiles they write are those of the loaded graph's code
    loads = [st for st in steps.static if steps.op_class.get(st.op) == "code_load"]
    ordered = [st for st in steps.static if steps.op_class.get(st.op) != "code_load"] + loads
    for st in ordered:
        if st.type in NO_CODE_STEP_TYPES:
            continue  # WriteUndef: a liveness marker only, no instructions on any tile
        graph = owner(st)
        if graph is None:
            code_steps += 1
        else:
            loaded_steps[graph] += 1
        cls = steps.op_class.get(st.op, "")
        op = program.ops[st.op] if st.op else None
        mask, largest, copied = touched(st)
        if cls == "code_load":
            mask = code_load_mask(st)
        n = int(mask.sum())
        participating[st.index] = n
        if st.op:
            seen = op_tiles.get(st.op)
            op_tiles[st.op] = mask.copy() if seen is None else (seen | mask)
        if st.type in ("Sync", "Call"):
            continue  # a barrier or a call: the per-step control code every tile holds (below)
        add_code(st, graph, "controlCode", mask, device.control_code_bytes_per_participating_step)
        if st.type == "OnTileExecute" and op is not None:
            kind = "copy" if st.role in ("copy_in", "copy_out", "local_copy", "mm_rearrange") else codelet_kind(op, cls)
            if st.role == "ring_reduce":
                kind = "collective"
            m = codelet_masks.get(kind)
            codelet_masks[kind] = mask.copy() if m is None else (m | mask)
            if st.role in ("mm_convolve", "mm_reduce"):
                v = mask * workers
            else:
                v = np.where(mask, np.clip(largest // device.datapath_bytes, 1, workers), 0)
            vstate += v * device.vertex_state_bytes
            vertices_total += int(v.sum())
            compute_sets.append(ComputeSetRecord(st.index, kind, int(v.sum()), int((v > 0).sum())))
            add_to_op(st, vertex_state=int(v.sum()) * device.vertex_state_bytes)
            if st.role in ("copy_in", "copy_out"):
                copy_desc += copied * device.copy_descriptor_bytes
                add_to_op(st, vertex_state=int(copied.sum()) * device.copy_descriptor_bytes)
        if st.type == "DoExchange":
            add_code(st, graph, "internalExchangeCode", mask, device.internal_exchange_code_bytes)
        elif st.role in EXCHANGE_INSIDE_ROLES:
            # a compute set that receives data of other tiles holds the code of its exchange and
            # that exchange's launch as a DoExchange step does (rows "<step>/exchange")
            if graph is None:
                code_steps += 1
            else:
                loaded_steps[graph] += 1
            add_code(st, graph, "controlCode", mask, device.control_code_bytes_per_participating_step, "/exchange")
            add_code(st, graph, "internalExchangeCode", mask, device.internal_exchange_code_bytes, "/exchange")
        if st.type in HOST_STEP_TYPES:
            add_code(st, graph, "hostExchangeCode", mask, device.host_exchange_code_bytes)
        elif st.type == "GlobalExchange":
            add_code(st, graph, "globalExchangeCode", mask, device.global_exchange_code_bytes)
    base = device.control_code_base_bytes + device.control_code_bytes_per_step * code_steps
    control += base
    row("program control (all steps)", "Sequence", "controlCode", base * num_tiles)
    for graph, cats_of_graph in loaded.items():
        per_step = device.control_code_bytes_per_step * loaded_steps[graph]
        if "controlCode" in cats_of_graph:
            cats_of_graph["controlCode"] += per_step
        else:
            control += per_step
            row(f"program control (loaded graph {graph})", "Sequence", "controlCode", per_step * num_tiles)
    vertex_code = np.zeros(num_tiles, dtype=np.int64)
    codelets: dict[str, tuple[int, int]] = {}
    for kind in sorted(codelet_masks):
        size = int(device.codelet_bytes.get(kind, device.codelet_bytes.get("elementwise", 0)))
        vertex_code += codelet_masks[kind] * size
        row(f"codelets:{kind}", "OnTileExecute", "vertexCode", size * int(codelet_masks[kind].sum()))
        codelets[kind] = (size * int(codelet_masks[kind].sum()), int(codelet_masks[kind].sum()))
    cats = {
        "vertexCode": vertex_code,
        "controlCode": control,
        "internalExchangeCode": internal,
        "hostExchangeCode": host,
        "globalExchangeCode": global_ex,
        "vertexInstanceState": vstate,
        "copyDescriptor": copy_desc,
    }
    table = make_frame("code", {"name": rows_name, "type": rows_type, "category": rows_cat, "code_bytes": rows_bytes})
    return CodeModel(cats, table, participating, vertices_total, loaded,
                     {op: (c, v, x) for op, (c, v, x) in op_bytes.items()},
                     {op: int(mask.sum()) for op, mask in op_tiles.items()},
                     tuple(compute_sets), tuple(exchanges), codelets)
