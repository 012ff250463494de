"""Tile memory: storage rows, categories per tile and the region/gap model.

Storage rows are every tensor that owns tile memory (always-live variables and constants,
not-always-live intermediates, each once however many call instances it has) followed by op
temporaries. Each row has a byte count per tile from the linear mapping (mapping.py).

Per tile (docs/ipu-model.md "Memory categories" and "Regions and gaps"):

- ``variable`` = the not-always-live peak of the tile: popxl variables (written from the host,
  live from then on) and intermediates; tensors never live together share addresses, so a tile
  needs room for its peak only. Code loaded by ``remote_code_load`` is not-always-live too and is
  part of this peak while it is live (loaded_code.py); it takes non-interleaved space;
- ``constant`` = constants;
- code and vertex-data categories come from code.py; ``stack`` and
  ``hostExchangePacketHeader`` are fixed per tile (targets.py).
- Regions: code, stack, vertex data, descriptors and headers live in the non-interleaved
  region (facts 2.1: code must). A matmul's partials live in the interleaved region: PopLibs'
  AMP vertices declare their ``out`` (partials) field interleaved and load it 128 bits at a
  time, while their ``in`` and ``weights`` fields are interleaved only with the
  ``use128BitConvUnitLoad`` option (default false; graphcore/poplibs
  ``lib/poplin/codelets/ConvPartial1x1Out.cpp``, ``ConvOptions.hpp``). Without a contraction
  split the partials are the matmul's output (``Convolution.cpp``: ``out = partials``), so that
  output is interleaved; the operands and their copies are not. Other data fills the
  non-interleaved region first and overflows into the interleaved one.
  A tile with interleaved data spans up to the region boundary plus its interleaved bytes:
  ``bytes_including_gaps = max(boundary, non-interleaved bytes) + interleaved bytes``;
  otherwise the span is its non-interleaved bytes. ``bytes_excluding_gaps`` sums categories.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from profcompare.emulator.compile.cycles import CostModel
from profcompare.emulator.compile.liveness import MEMORY_STORAGES, Temporary
from profcompare.emulator.compile.mapping import tile_bytes_matrix
from profcompare.emulator.compile.placement import Layout, placed_tile_bytes
from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.compile.start_tiles import clone_sources, linear_mapper_rows, start_tiles
from profcompare.emulator.compile.tile_bytes import TileBytes
from profcompare.emulator.program import LoweredProgram
from profcompare.emulator.targets import DeviceSpec

#: Categories placed in the non-interleaved region.
NON_INTERLEAVED_CATEGORIES = (
    "vertexCode", "controlCode", "internalExchangeCode", "hostExchangeCode", "globalExchangeCode",
    "vertexInstanceState", "copyDescriptor", "stack", "hostExchangePacketHeader",
)


@dataclass(frozen=True)
class Storage:
    """Every piece of tile storage (tensors then temporaries) and its bytes per tile."""

    ids: tuple[str, ...]  # tensor id, or "<op id>#<temporary name>"
    names: tuple[str, ...]
    storage: tuple[str, ...]  # variable | constant | intermediate | temporary
    kinds: tuple[str, ...]
    dtypes: tuple[str, ...]
    shapes: tuple[tuple[int, ...] | None, ...]
    interleaved: np.ndarray  # bool per row
    tile_bytes: TileBytes  # bytes per tile of each row, held once per distinct mapping
    row_of: Mapping[str, int]  # tensor id -> row (tensors only)
    temp_rows: Mapping[str, tuple[tuple[int, Temporary], ...]]  # op id -> temporaries

    def __post_init__(self) -> None:
        if isinstance(self.tile_bytes, np.ndarray):  # a dense (rows, tiles) matrix, compressed
            object.__setattr__(self, "tile_bytes", TileBytes.from_dense(self.tile_bytes))

    @property
    def row_bytes(self) -> np.ndarray:
        """Bytes of each row summed over tiles."""
        return self.tile_bytes.row_sums()


def temporaries(program: LoweredProgram, steps: ProgramSteps, costs: CostModel) -> list[Temporary]:
    """The op temporaries of the model: a matmul's operand copies (read by the AMP's ``in`` and
    ``weights`` fields: no region constraint) and its partials (its ``out`` field: interleaved)."""
    temps: list[Temporary] = []
    for op in program.ops.values():
        if steps.op_class.get(op.id) != "matmul" or len(op.inputs) < 1:
            continue
        plan = costs.matmul_plan(op)
        key = op.outputs[0] if op.outputs else op.inputs[0]
        base = _temporary_base(program, op.graph, key)
        if plan.copied_bytes:
            # from the operands' copy on (the preRegroup copy on the transposed weights' copy path)
            first = "mm_preregroup" if op.id in steps.weights_by_copy else "mm_rearrange"
            temps.append(Temporary(op.id, base + "/operand_copies", plan.copied_bytes,
                                   plan.kept_operand, first, "mm_convolve", False))
        if plan.partial_bytes:
            temps.append(Temporary(op.id, base + "/partials", plan.partial_bytes, key, "mm_convolve", "mm_reduce", True))
    return temps


def _temporary_base(program: LoweredProgram, graph: str, tid: str) -> str:
    """Name prefix of an op's temporaries: its output tensor's name (unique in its graph, unlike
    op names), with the graph scope for subgraph ops, as the tensors of the table are named."""
    info = program.tensors.get(tid)
    if info is None:
        return tid
    return info.name if graph == program.main_graph else info.id


def _unique(names: list[str]) -> tuple[str, ...]:
    """``names`` with repeats suffixed ``#2``, ``#3``... so that every row has its own name."""
    seen: dict[str, int] = {}
    out: list[str] = []
    taken = set(names)
    for n in names:
        k = seen.get(n, 0) + 1
        seen[n] = k
        if k == 1:
            out.append(n)
            continue
        while f"{n}#{k}" in taken:
            k += 1
        seen[n] = k
        taken.add(f"{n}#{k}")
        out.append(f"{n}#{k}")
    return tuple(out)


def build_storage(program: LoweredProgram, steps: ProgramSteps, costs: CostModel, device: DeviceSpec,
                  num_tiles: int, layout: Layout | None = None) -> Storage:
    """Map every storage row to tiles. Returns :class:`Storage`. With a non-trivial ``layout``
    (several IPUs or I/O tiles) each row is mapped over its IPU's region (placement.py)."""
    root = steps.alias_root
    used: set[str] = set()
    amp: set[str] = set()  # every tensor a matmul touches: its planner lays it out
    amp_partials: set[str] = set()  # matmul outputs the AMP writes as its partials: interleaved
    for op in program.ops.values():
        touched = [*op.inputs, *op.outputs, *op.modified]
        if steps.op_class.get(op.id) == "call":
            touched += list((op.attrs.get("inputs") or {}).keys()) + list((op.attrs.get("outputs") or {}).keys())
        roots = [root.get(t, t) for t in touched]
        used.update(roots)
        if steps.op_class.get(op.id) == "matmul":
            amp.update(roots)
            if op.outputs and costs.matmul_plan(op).contraction_splits == 1:
                amp_partials.add(root.get(op.outputs[0], op.outputs[0]))
    ids: list[str] = []
    for tid, info in program.tensors.items():
        if tid in root or info.storage not in MEMORY_STORAGES:
            continue
        if info.storage == "intermediate" and tid not in used:
            continue
        ids.append(tid)
    temps = temporaries(program, steps, costs)
    tensors = program.tensors
    n_t = len(ids)
    nelms = np.array([tensors[t].nelms for t in ids] + [-(-tp.nbytes // 4) for tp in temps], dtype=np.int64)
    itemsize = np.array([tensors[t].itemsize for t in ids] + [4] * len(temps), dtype=np.int64)
    dp, mb = device.datapath_bytes, device.min_bytes_per_tile
    trivial = layout is None or layout.trivial

    def where(tid: str) -> tuple[int, str]:
        info = tensors.get(tid)
        return (info.ipu, info.tile_set) if info is not None and not trivial else (0, "compute")
    places = [where(t) for t in ids] + [(where(tp.offset_key)[0], "compute") for tp in temps]
    # a temporary follows the mapping offset of its op's tensor (offset_key)
    shapes = [tensors[t].shape for t in ids] + [tensors[tp.offset_key].shape if tp.offset_key in tensors else ()
                                                 for tp in temps]
    dtypes = [tensors[t].dtype for t in ids] + [tensors[tp.offset_key].dtype if tp.offset_key in tensors
                                                 else "float32" for tp in temps]
    regions = [(0, num_tiles) if trivial else layout.region(ipu, tile_set) for ipu, tile_set in places]  # type: ignore[union-attr]
    # variables, constants and Init outputs no matmul reads start where PopART's LinearMapper
    # puts them, clones where their source starts, every other row at the hash of its shape
    # (start_tiles.py)
    linear = linear_mapper_rows(program, ids, amp) + [False] * len(temps)
    starts = start_tiles(ids, nelms, itemsize, shapes, dtypes, regions, linear, clone_sources(program, root),
                         datapath_bytes=dp, min_bytes_per_tile=mb)
    if not trivial:
        assert layout is not None
        # a row's mapping is fixed by its size, item size, region and start tile in the region
        keys = np.array([(int(nelms[k]), int(itemsize[k]), start, size, int(starts[k]))
                         for k, (start, size) in enumerate(regions)], dtype=np.int64).reshape(-1, 5)

        def placed(_: np.ndarray, first: np.ndarray) -> np.ndarray:
            pick = first.tolist()
            return placed_tile_bytes(layout, [nelms[k] for k in pick], [itemsize[k] for k in pick],
                                     [shapes[k] for k in pick], [dtypes[k] for k in pick],
                                     [places[k][0] for k in pick], [places[k][1] for k in pick],
                                     datapath_bytes=dp, min_bytes_per_tile=mb, starts=[starts[k] for k in pick])
        tile_bytes = TileBytes.from_keys(keys, placed)
    else:
        def linear_rows(uniq: np.ndarray, _: np.ndarray) -> np.ndarray:
            return tile_bytes_matrix(uniq[:, 0], uniq[:, 1], uniq[:, 2], num_tiles, datapath_bytes=dp,
                                     min_bytes_per_tile=mb)
        tile_bytes = TileBytes.from_keys(np.stack([nelms, itemsize, starts % num_tiles], axis=1), linear_rows)
    row_of = {t: i for i, t in enumerate(ids)}
    temp_rows: dict[str, list[tuple[int, Temporary]]] = {}
    for j, tp in enumerate(temps):
        temp_rows.setdefault(tp.op, []).append((n_t + j, tp))
    interleaved = np.array([t in amp_partials for t in ids] + [tp.interleaved for tp in temps], dtype=bool)
    return Storage(
        ids=tuple(ids) + tuple(f"{tp.op}#{tp.name}" for tp in temps),
        # a subgraph's tensors keep their graph scope ("Net_subgraph(0)/fc1/weight"), as popxl ids
        # do, so that the forward and backward graphs' inputs are not reported under one name
        names=_unique([tensors[t].name if tensors[t].graph == program.main_graph else t for t in ids]
                      + [tp.name for tp in temps]),
        storage=tuple(tensors[t].storage for t in ids) + ("temporary",) * len(temps),
        kinds=tuple(tensors[t].kind for t in ids) + ("other",) * len(temps),
        dtypes=tuple(tensors[t].dtype for t in ids) + ("float32",) * len(temps),
        shapes=tuple(tuple(tensors[t].shape) for t in ids) + (None,) * len(temps),
        interleaved=interleaved,
        tile_bytes=tile_bytes,
        row_of=row_of,
        temp_rows={k: tuple(v) for k, v in temp_rows.items()},
    )


def sum_rows(tile_bytes: TileBytes, mask: np.ndarray) -> np.ndarray:
    """Sum of the selected rows per tile (int64 array of length tiles)."""
    return tile_bytes.sum_rows(mask)


@dataclass(frozen=True)
class TileMemory:
    """Per-tile memory of one replica."""

    categories: dict[str, np.ndarray]  # category -> bytes per tile
    including_gaps: np.ndarray
    excluding_gaps: np.ndarray
    always_live: np.ndarray
    not_always_live_peak: np.ndarray
    #: bytes allocated per region at the tile's not-always-live peak (:func:`regions_at_peak`);
    #: each None when not computed
    non_interleaved: np.ndarray | None = None
    interleaved: np.ndarray | None = None
    overflow: np.ndarray | None = None


@dataclass(frozen=True)
class RegionParts:
    """What a tile holds whatever the step, by region (module docstring "Regions"): the span of a
    tile at one step follows from these and the not-always-live bytes live then."""

    ni_required: np.ndarray  # bytes per tile that must be non-interleaved (code, vertex data, ...)
    il_always: np.ndarray  # always-live data that must be interleaved
    flex_always: np.ndarray  # always-live data that may go in either region
    boundary: int  # start of the interleaved region

    def span(self, il: np.ndarray, flex: np.ndarray) -> np.ndarray:
        """Bytes including gaps of each tile holding ``il`` interleaved-class and ``flex`` other
        not-always-live bytes (arrays of tiles, or of (live sets, tiles)): the other data fills the
        non-interleaved region first and overflows into the interleaved one; a tile with
        interleaved data spans up to the boundary plus its interleaved bytes."""
        flex_all = self.flex_always + flex
        ni_free = np.maximum(0, self.boundary - self.ni_required)
        flex_in_ni = np.minimum(flex_all, ni_free)
        ni_used = self.ni_required + flex_in_ni
        il_used = self.il_always + il + (flex_all - flex_in_ni)
        return np.where(il_used > 0, np.maximum(self.boundary, ni_used) + il_used, ni_used)


def _always_live(storage: Storage, device: DeviceSpec, code_categories: Mapping[str, np.ndarray],
                 has_host_transfers: bool) -> tuple[dict[str, np.ndarray], RegionParts]:
    """The always-live categories per tile (``variable`` without the not-always-live peak) and
    the region parts they make."""
    num_tiles = storage.tile_bytes.num_tiles
    st = np.array(storage.storage, dtype=object)
    const_mask = st == "constant"
    const_al = sum_rows(storage.tile_bytes, const_mask)
    const_il = sum_rows(storage.tile_bytes, const_mask & storage.interleaved)
    cats: dict[str, np.ndarray] = {"variable": np.zeros(num_tiles, dtype=np.int64), "constant": const_al}
    for name, arr in code_categories.items():
        cats[name] = np.asarray(arr, dtype=np.int64)
    cats["stack"] = np.full(num_tiles, device.stack_bytes_per_tile, dtype=np.int64)
    cats["hostExchangePacketHeader"] = np.full(
        num_tiles, device.host_packet_header_bytes_per_tile if has_host_transfers else 0, dtype=np.int64)
    ni_required = np.zeros(num_tiles, dtype=np.int64)
    for name in NON_INTERLEAVED_CATEGORIES:
        if name in cats:
            ni_required += cats[name]
    return cats, RegionParts(ni_required, const_il, const_al - const_il, device.non_interleaved_bytes)


def region_parts(storage: Storage, device: DeviceSpec, code_categories: Mapping[str, np.ndarray],
                 has_host_transfers: bool) -> RegionParts:
    """The region parts of a tile's always-live memory (for :func:`liveness.tile_peaks_and_span`)."""
    return _always_live(storage, device, code_categories, has_host_transfers)[1]


def regions_at_peak(parts: RegionParts, excluding: np.ndarray, including: np.ndarray, nal_il_at_peak: np.ndarray,
                    nal_peak: np.ndarray, bytes_per_tile: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bytes allocated per tile in (non-interleaved, interleaved, overflow), which add up to
    ``excluding`` (the always-live bytes plus the not-always-live peak).

    The data live at the tile's not-always-live peak is placed as :meth:`RegionParts.span` places
    it: ``nal_il_at_peak`` of the peak in the interleaved region, the rest of the peak with the
    always-live data that may go anywhere filling the non-interleaved region up to the boundary,
    then the interleaved one. The overflow is what lies beyond the tile's capacity: the span
    (``including``) minus ``bytes_per_tile``, taken from the top of the span (the interleaved
    region when the tile has interleaved data: the model's gaps are below the boundary, so all
    of it is allocated bytes), so a tile overflows exactly when it is over budget.
    """
    flex_all = parts.flex_always + (nal_peak - nal_il_at_peak)
    ni_free = np.maximum(0, parts.boundary - parts.ni_required)
    il_used = parts.il_always + nal_il_at_peak + (flex_all - np.minimum(flex_all, ni_free))
    il_used = np.minimum(il_used, excluding)
    ni_used = excluding - il_used
    beyond = np.clip(including - bytes_per_tile, 0, excluding)
    from_il = np.minimum(beyond, il_used)
    from_ni = beyond - from_il
    return ((ni_used - from_ni).astype(np.int64), (il_used - from_il).astype(np.int64), beyond.astype(np.int64))


def tile_memory(storage: Storage, device: DeviceSpec, code_categories: Mapping[str, np.ndarray],
                nal_peak: np.ndarray, nal_il_peak: np.ndarray, nal_flex_peak: np.ndarray,
                has_host_transfers: bool, nal_code_peak: np.ndarray | None = None,
                span_peak: np.ndarray | None = None, nal_il_at_peak: np.ndarray | None = None) -> TileMemory:
    """Assemble the categories per tile and apply the region/gap model (module docstring).

    ``nal_peak`` is the joint not-always-live peak per tile, counted in ``variable``; it includes
    code loaded by ``remote_code_load`` while it is live (loaded_code.py). ``nal_il_peak`` and
    ``nal_flex_peak`` are the peaks of the data that must be interleaved and of the other data;
    ``nal_code_peak`` (None: no loaded code) the peak of loaded code, which must be non-interleaved
    like all code. ``span_peak`` (:meth:`RegionParts.span` at each step, its peak over steps;
    without loaded code) gives bytes including gaps from the data live together at each step;
    without it the span is taken from the separate class peaks, an upper bound.
    ``nal_il_at_peak`` (the interleaved-class bytes live at each tile's peak) splits the memory
    by region (:func:`regions_at_peak`); None leaves the regions uncomputed.
    """
    cats, parts = _always_live(storage, device, code_categories, has_host_transfers)
    always_parts = parts
    cats["variable"] = cats["variable"] + nal_peak
    excluding = np.zeros(storage.tile_bytes.num_tiles, dtype=np.int64)
    for arr in cats.values():
        excluding += arr
    always_live = excluding - nal_peak
    if span_peak is not None and nal_code_peak is None:
        including = np.asarray(span_peak, dtype=np.int64)
    else:
        if nal_code_peak is not None:
            parts = RegionParts(parts.ni_required + nal_code_peak, parts.il_always, parts.flex_always, parts.boundary)
        including = parts.span(nal_il_peak, nal_flex_peak)
    # the separate class peaks may exceed the joint peak; never report less than allocated
    including = np.maximum(including, excluding)
    if nal_il_at_peak is None:
        return TileMemory(cats, including.astype(np.int64), excluding, always_live, nal_peak.astype(np.int64))
    # loaded code is counted with the data that may go anywhere (an approximation: code must be
    # non-interleaved, but which of it is live at the peak step is not tracked)
    ni, il, overflow = regions_at_peak(always_parts, excluding, including, np.asarray(nal_il_at_peak, dtype=np.int64),
                                       np.asarray(nal_peak, dtype=np.int64), device.bytes_per_tile)
    return TileMemory(cats, including.astype(np.int64), excluding, always_live, nal_peak.astype(np.int64),
                      ni, il, overflow)
