"""The start tile of each storage row's linear mapping (mapping.py), as PopART and PopLibs choose it.

Three mechanisms decide where a linearly mapped tensor starts:

- Tensors PopART lowers without a producer op, or whose producer leaves its output to be
  created outside the op (``PopOpx::outputCreatedExternally``: ``InitOpx``, ``IoTileCopyOpx``), are created by the
  lowering's init-tensor task. When no consumer creates the tensor with a layout of its own, PopART
  maps it with its ``LinearMapper`` (popart ``willow/src/popx/linearmapper.cpp``): the linear
  mapping rotated to start at ``next_mapping_start_index``, which then advances by the number of
  tiles the tensor used, modulo the tiles of the graph. The mapper keeps one index per Poplar
  graph, so every virtual graph (an IPU's compute or I/O tiles) has its own. In the model these
  are popxl variables and constants and the outputs of ``Init`` ops (zero fills and the
  undefined placeholders of host and remote loads) and of I/O tile copies that no matmul reads: a matmul operand
  is laid out by the matmul planner (the model maps it by shape, below). The index advances in
  the order the program creates the tensors (ASSUMPTION: PopART's lowering creates them in that
  order).
- Clones take the layout of the tensor they are cloned from: a called graph's input is prepared
  from its call site's tensor and the call's output from the graph's output (``SubgraphOpx``:
  ``getInputsToPrepare`` / ``getOutputsToPrepare``, created externally by cloning), and popops
  creates an elementwise op's output (and a collective's) as a clone of its input of the same
  shape. The model gives a clone its source's start tile (within the source's region).
- Every other tensor (the matmul planner lays out every matmul of one shape alike) starts where
  ``mapping_offset`` puts it: a stable hash of its shape and type, like PopLibs'
  ``chooseMappingOffset`` (mapping.py).

Without the first two rules every small tensor of one shape (a BERT layer's 768-element biases
and layer-norm parameters, each loaded into its own placeholder and passed to its layer's graph)
would start on the same tile, and every op touching one of them would put its code and vertices
there.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np

from profcompare.emulator.compile.mapping import linear_split, mapping_offset
from profcompare.emulator.program import LoweredProgram

#: op types whose output PopART creates outside the op (``outputCreatedExternally``), so that
#: the init-tensor task maps it (popart ``InitOpx``, ``IoTileCopyOpx``)
EXTERNALLY_CREATED_OUTPUTS = frozenset({"Init", "IoTileCopy"})
#: op types whose output popops creates as a clone of an input besides the elementwise ones
CLONING_OP_TYPES = frozenset({"Cast"})
#: op types whose output is laid out by a planner or a host/remote transfer, not cloned
NOT_CLONING_PREFIXES = ("MatMul", "Reduce", "Host", "Remote", "Init", "Call", "IpuCopy", "IoTileCopy",
                        "Gather", "Scatter", "DynamicSlice", "DynamicUpdate", "Slice", "Concat", "Conv")


def clone_sources(program: LoweredProgram, root: Mapping[str, str]) -> dict[str, str]:
    """Tensor id -> the tensor whose layout it clones (both storage roots): a called graph's input
    from its first call site's tensor, a call's output from the graph's output, an elementwise
    op's or a collective's output from its first input of the same shape."""
    out: dict[str, str] = {}

    def put(dst: str, src: str) -> None:
        d, s = root.get(dst, dst), root.get(src, src)
        if d != s and d not in out:
            out[d] = s
    tensors = program.tensors
    for op in program.ops.values():
        if op.type == "Call":
            for g_in, parent in (op.attrs.get("inputs") or {}).items():
                put(str(g_in), str(parent))
            for g_out, parent in (op.attrs.get("outputs") or {}).items():
                put(str(parent), str(g_out))
            continue
        if op.type in CLONING_OP_TYPES or op.type.startswith("Replicated") or _elementwise(op.type):
            for t in op.outputs:
                shape = tensors[t].shape if t in tensors else None
                src = next((i for i in op.inputs if i in tensors and tensors[i].shape == shape), None)
                if src is not None:
                    put(t, src)
    return out


def _elementwise(op_type: str) -> bool:
    from profcompare.emulator.compile.programs import VIEW_TYPES

    return not op_type.startswith(NOT_CLONING_PREFIXES) and op_type not in VIEW_TYPES


def linear_mapper_rows(program: LoweredProgram, ids: Sequence[str], planned: Collection[str]) -> list[bool]:
    """Whether each storage row (root tensor id) is mapped by PopART's LinearMapper: a variable,
    a constant or the output of an ``Init`` op or an I/O tile copy, and not read by a matmul
    (``planned``)."""
    created_by_init = {t for op in program.ops.values() if op.type in EXTERNALLY_CREATED_OUTPUTS for t in op.outputs}
    out = []
    for tid in ids:
        info = program.tensors[tid]
        external = info.storage in ("variable", "constant") or tid in created_by_init
        out.append(bool(external and tid not in planned))
    return out


def start_tiles(ids: Sequence[str], nelms: Sequence[int], itemsize: Sequence[int], shapes: Sequence[tuple[int, ...]],
                dtypes: Sequence[str], regions: Sequence[tuple[int, int]], by_linear_mapper: Sequence[bool],
                sources: Mapping[str, str], *, datapath_bytes: int, min_bytes_per_tile: int) -> np.ndarray:
    """Start tile of each row within its region ((first tile, tiles) of its IPU's compute or I/O
    tiles): LinearMapper rows in order, each where the previous one of its region ended; a clone
    (``sources``: row id -> the id it clones) where its source starts, when the source is a row
    of the same region; the others by ``mapping_offset`` of their shape and type (int64, one per
    row)."""
    n = len(nelms)
    out = np.zeros(n, dtype=np.int64)
    done = np.zeros(n, dtype=bool)
    next_start: dict[tuple[int, int], int] = {}
    for k, (region, linear) in enumerate(zip(regions, by_linear_mapper)):
        if not linear:
            continue
        size = int(region[1])
        start = next_start.get(region, 0)
        out[k], done[k] = start, True
        used = linear_split(int(nelms[k]), int(itemsize[k]), size, datapath_bytes=datapath_bytes,
                            min_bytes_per_tile=min_bytes_per_tile).tiles_used
        next_start[region] = (start + used) % size
    index = {tid: k for k, tid in enumerate(ids)}
    for k in range(n):
        if done[k]:
            continue
        # follow the chain of clones to a row already placed (or to its end), then place the chain
        chain = [k]
        seen = {k}
        while True:
            src = index.get(sources.get(ids[chain[-1]], "")) if chain[-1] < len(ids) else None
            if src is None or src in seen or regions[src] != regions[k] or done[src]:
                break
            chain.append(src)
            seen.add(src)
        last = chain[-1]
        src = index.get(sources.get(ids[last], "")) if last < len(ids) else None
        if src is not None and done[src] and regions[src] == regions[last]:
            start = int(out[src])
        else:
            start = mapping_offset(shapes[last], dtypes[last], int(regions[last][1]))
        for j in chain:
            if regions[j] == regions[last]:
                out[j], done[j] = start, True
            else:
                out[j], done[j] = mapping_offset(shapes[j], dtypes[j], int(regions[j][1])), True
    return out


__all__ = ["EXTERNALLY_CREATED_OUTPUTS", "clone_sources", "linear_mapper_rows", "start_tiles"]
