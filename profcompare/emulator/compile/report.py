"""Assemble the Report frames of a compiled program (model.SCHEMAS)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from profcompare.emulator.compile.cycles import RunOpening
from profcompare.emulator.compile.liveness import Instances
from profcompare.emulator.compile.memory import Storage, TileMemory
from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram
from profcompare.model import CATEGORY_GROUPS, PHASES, PLACEMENT_MARK, format_shape, make_frame


def tiles_frame(mem: TileMemory, tiles_per_ipu: int) -> pd.DataFrame:
    """The ``tiles`` table: one row per tile with totals, memory by region and gaps, and one
    column per category."""
    n = len(mem.including_gaps)
    tile = np.arange(n, dtype=np.int64)
    data: dict[str, object] = {
        "tile": tile,
        "ipu": tile // tiles_per_ipu,
        "bytes_including_gaps": mem.including_gaps,
        "bytes_excluding_gaps": mem.excluding_gaps,
        "always_live_bytes": mem.always_live,
        "not_always_live_peak_bytes": mem.not_always_live_peak,
        "gap_bytes": mem.including_gaps - mem.excluding_gaps,
    }
    if mem.non_interleaved is not None and mem.interleaved is not None and mem.overflow is not None:
        data.update(non_interleaved_bytes=mem.non_interleaved, interleaved_bytes=mem.interleaved,
                    overflow_bytes=mem.overflow)
    for name in CATEGORY_GROUPS:
        if name in mem.categories:
            data[name] = mem.categories[name]
    return make_frame("tiles", data)


def categories_frame(mem: TileMemory) -> pd.DataFrame:
    """The ``categories`` table (model.SCHEMAS columns): bytes per category summed over tiles, every modelled category."""
    names = [c for c in CATEGORY_GROUPS if c in mem.categories]
    return make_frame("categories", {
        "category": names,
        "group": [CATEGORY_GROUPS[c] for c in names],
        "bytes": [int(mem.categories[c].sum()) for c in names],
    })


def _variable_order(storage: Storage, inst: Instances) -> tuple[np.ndarray, np.ndarray]:
    """(always-live storage rows, order of the instances): the ``variables`` table holds the
    always-live rows first, then the instances in this order."""
    n = len(storage.ids)
    counts = np.bincount(inst.row, minlength=n) if len(inst.row) else np.zeros(n, dtype=np.int64)
    always = np.array([s in ("variable", "constant") for s in storage.storage], dtype=bool) & (counts == 0)
    order = np.lexsort((np.arange(len(inst.row)), inst.first, inst.row)) if len(inst.row) else np.zeros(0, np.int64)
    return np.nonzero(always)[0], order


def variable_storage_rows(storage: Storage, inst: Instances) -> np.ndarray:
    """The storage row of each row of the ``variables`` table (int64, in its order)."""
    al_idx, order = _variable_order(storage, inst)
    return np.r_[al_idx, inst.row[order]].astype(np.int64)


def tile_runs(pattern: np.ndarray, tiles_per_ipu: int | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first tile, last tile, bytes per tile) of each run of consecutive tiles holding the same
    non-zero bytes in ``pattern`` (bytes per tile, int64); with ``tiles_per_ipu`` a run is also
    cut where an IPU's tiles end, so no run spans two IPUs."""
    pattern = np.asarray(pattern, dtype=np.int64)
    if not len(pattern):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    cuts = pattern[1:] != pattern[:-1]
    if tiles_per_ipu:
        cuts |= np.arange(1, len(pattern)) % tiles_per_ipu == 0
    starts = np.flatnonzero(np.r_[True, cuts])
    ends = np.r_[starts[1:], len(pattern)] - 1
    keep = pattern[starts] > 0
    return starts[keep], ends[keep], pattern[starts[keep]]


#: The most rows the simulator writes into ``variable_tiles``. A large program's mapping spreads
#: each of ~10^5 variables over every tile in runs of a few tiles (the grains do not divide
#: evenly), which would be ~5 x 10^7 rows; beyond this budget only the fullest tiles' variables
#: are recorded (:data:`MAX_PARTIAL_TILES` at most), each such tile marked by a row whose variable
#: is "" (model.PLACEMENT_MARK). An assumption of size, not of the model: MNIST's ~10^4 rows are
#: recorded in full.
MAX_PLACEMENT_ROWS = 500_000
#: The most tiles whose variables are recorded when the whole placement is over budget.
MAX_PARTIAL_TILES = 8


def variable_tiles_frame(storage: Storage, variables: pd.DataFrame, rows: np.ndarray, tiles_per_ipu: int,
                         tile_bytes: np.ndarray | None = None,
                         max_rows: int | None = None) -> pd.DataFrame:
    """The ``variable_tiles`` table (model.SCHEMAS columns). For each row of ``variables`` (``rows`` its storage rows,
    :func:`variable_storage_rows`): the runs of consecutive tiles on which its storage row holds
    the same bytes, from the layout model's bytes per tile (mapping.py, placement.py); a run never
    spans two IPUs; each distinct mapping is cut into runs once. When that is more than
    ``max_rows`` rows (None: :data:`MAX_PLACEMENT_ROWS`), only the fullest tiles' variables are recorded (by ``tile_bytes``, bytes
    per tile including gaps; at most :data:`MAX_PARTIAL_TILES` tiles, as many as the budget
    holds, at least one), one row per variable and tile, and each of those tiles is marked by a
    row whose variable is ``""`` (bytes 0): readers then know which tiles the table covers."""
    tb = storage.tile_bytes
    budget = MAX_PLACEMENT_ROWS if max_rows is None else max_rows
    per_ipu = max(1, int(tiles_per_ipu))
    patterns = tb.pattern_of[rows] if len(rows) else np.zeros(0, dtype=np.int64)
    names = variables["name"].to_numpy(dtype=object)
    if not len(patterns):
        return make_frame("variable_tiles")
    used = np.unique(patterns)
    runs = {p: tile_runs(tb.patterns[p], per_ipu) for p in used.tolist()}
    run_count = np.zeros(len(tb.patterns), dtype=np.int64)
    run_count[used] = [len(runs[p][0]) for p in used.tolist()]
    counts = run_count[patterns]
    if int(counts.sum()) <= budget:
        if not counts.sum():
            return make_frame("variable_tiles")
        first_tile = np.concatenate([runs[p][0] for p in patterns.tolist()])
        return make_frame("variable_tiles", {
            "variable": np.repeat(names, counts),
            "ipu": first_tile // per_ipu,
            "first_tile": first_tile,
            "last_tile": np.concatenate([runs[p][1] for p in patterns.tolist()]),
            "bytes_per_tile": np.concatenate([runs[p][2] for p in patterns.tolist()]),
        })
    # over budget: the fullest tiles, as many as the budget holds
    fullness = np.asarray(tile_bytes if tile_bytes is not None else tb.patterns.sum(axis=0), dtype=np.int64)
    usage = np.bincount(patterns, minlength=len(tb.patterns))
    order = np.argsort(-fullness, kind="stable")[:MAX_PARTIAL_TILES]
    per_tile = (tb.patterns[:, order] > 0).astype(np.int64).T @ usage
    kept = order[: max(1, int(np.searchsorted(np.cumsum(per_tile + 1), budget, side="right")))]
    parts = []
    for tile in np.sort(kept).tolist():
        on_tile = tb.patterns[patterns, tile]
        hit = np.flatnonzero(on_tile > 0)
        parts.append((np.r_[np.array([PLACEMENT_MARK], dtype=object), names[hit]],
                      np.full(len(hit) + 1, tile, dtype=np.int64), np.r_[0, on_tile[hit]].astype(np.int64)))
    tiles = np.concatenate([t for _, t, _ in parts])
    return make_frame("variable_tiles", {
        "variable": np.concatenate([n for n, _, _ in parts]),
        "ipu": tiles // per_ipu,
        "first_tile": tiles,
        "last_tile": tiles,
        "bytes_per_tile": np.concatenate([b for _, _, b in parts]),
    })


def variables_frame(storage: Storage, inst: Instances, program: LoweredProgram | None = None,
                    steps: ProgramSteps | None = None, provenance: Any = None) -> pd.DataFrame:
    """The ``variables`` table (model.SCHEMAS columns): one row per always-live storage row and
    one per not-always-live *instance* (a storage row under one call path, liveness.Instances).

    A tensor of a graph called from several sites (one optimizer graph called for fc2.weight and
    fc3.weight) has one row per call instance, with that instance's first/last step and
    attribution, so the bytes of the rows live at a step add up to the liveness table's
    not-always-live bytes of that step. Rows of one storage row with several instances are named
    ``<name>@1``, ``<name>@2``, ... in the order they become live. Always-live rows (variables
    and constants without instances) have <NA> steps. ``parameter`` / ``role`` / ``which`` come
    from the program's provenance (attribution.py) when ``program`` and ``steps`` are given,
    else they are unattributed (``provenance``: the program's ``attribution.trace``, when the
    caller already has it).
    """
    n = len(storage.ids)
    counts = np.bincount(inst.row, minlength=n) if len(inst.row) else np.zeros(n, dtype=np.int64)
    al_idx, order = _variable_order(storage, inst)
    if program is not None and steps is not None:
        from profcompare.emulator.compile.attribution import attribute_rows, trace

        per_row, per_inst = attribute_rows(provenance or trace(program, steps), storage, inst)
    else:
        per_row, per_inst = None, None
    names: list[str] = [storage.names[i] for i in al_idx.tolist()]
    seen: dict[int, int] = {}
    counted = counts.tolist()
    row_names = storage.names
    for r in inst.row[order].tolist():
        if counted[r] == 1:
            names.append(row_names[r])
            continue
        k = seen.get(r, 0) + 1
        seen[r] = k
        names.append(f"{row_names[r]}@{k}")
    rows = np.r_[al_idx, inst.row[order]].astype(np.int64)
    n_al = len(al_idx)
    unknown = np.r_[np.ones(n_al, dtype=bool), np.zeros(len(order), dtype=bool)]  # always-live: <NA> steps
    first_s = pd.arrays.IntegerArray(np.r_[np.zeros(n_al, dtype=np.int64), inst.first[order]].astype(np.int64), unknown)
    last_s = pd.arrays.IntegerArray(np.r_[np.zeros(n_al, dtype=np.int64), inst.last[order]].astype(np.int64),
                                    unknown.copy())
    if per_row is not None and per_inst is not None:
        attributed = [per_row[i] for i in al_idx.tolist()] + [per_inst[j] for j in order.tolist()]
        attribution = {
            "parameter": [a.parameter for a in attributed],
            "role": [a.role for a in attributed],
            "which": [a.which for a in attributed],
        }
    else:
        attribution = {}
    return make_frame("variables", {
        "name": names,
        "bytes": storage.row_bytes[rows],
        "always_live": np.r_[np.ones(n_al, dtype=bool), np.zeros(len(order), dtype=bool)],
        # per storage row once, then one entry per table row (a row has many instances)
        "kind": np.array(storage.kinds, dtype=object)[rows],
        "dtype": np.array(storage.dtypes, dtype=object)[rows],
        "shape": np.array([format_shape(shape) for shape in storage.shapes], dtype=object)[rows],
        "tiles": storage.tile_bytes.tiles_used()[rows],
        "first_step": first_s,
        "last_step": last_s,
        **attribution,
    })


def liveness_frame(steps: ProgramSteps, totals: np.ndarray) -> pd.DataFrame:
    """The ``liveness`` table of one run: ``totals`` is the not-always-live bytes per executed
    step (1-D: one row per step, ``ipu`` <NA>, the whole replica) or per step and IPU (2-D, a
    multi-IPU program: one row per step and IPU, step-major, ``ipu`` set)."""
    names = np.array([s.name for s in steps.static], dtype=object)
    types = np.array([s.type for s in steps.static], dtype=object)
    ex = steps.exec_static
    if totals.ndim == 1:
        return make_frame("liveness", {
            "step": np.arange(len(ex), dtype=np.int64),
            "program": names[ex] if len(ex) else [],
            "program_type": types[ex] if len(ex) else [],
            "not_always_live_bytes": totals,
        })
    ipus = totals.shape[1]
    step = np.repeat(np.arange(len(ex), dtype=np.int64), ipus)
    return make_frame("liveness", {
        "step": step,
        "program": names[ex][step] if len(ex) else [],
        "program_type": types[ex][step] if len(ex) else [],
        "not_always_live_bytes": totals.reshape(-1),
        "ipu": pd.array(np.tile(np.arange(ipus, dtype=np.int64), len(ex)), dtype="Int64"),
    })


def _nonzero_cycles(ex: np.ndarray, static_cycles: np.ndarray, setup_steps: int, opening: RunOpening | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(executed step, phase, cycles) of every non-zero cell of the executed steps' cycles, step
    after step, phases in order (as ``np.nonzero`` of the executed steps x phases matrix gives
    them), found once per static step and repeated per execution: no dense matrix of tens of
    millions of executed steps. ``opening`` adds the run's opening (cycles.RunOpening) to one executed step (its own row)."""
    table, rows = static_cycles, ex
    if opening is not None:
        at = opening[0] - setup_steps
        own = opening.add_to(table[ex[at]]).astype(table.dtype)
        table = np.vstack([table, own[None, :]])
        rows = ex.copy()
        rows[at] = len(table) - 1
    nonzero = table != 0
    per_row = nonzero.sum(axis=1).astype(np.int64)
    row_phases = np.nonzero(nonzero)[1]
    row_values = table[nonzero]
    row_start = np.cumsum(per_row) - per_row
    counts = per_row[rows]
    step_idx = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    # each cell's place among its static step's non-zero cells: its index minus its step's first
    cell = np.arange(len(step_idx), dtype=np.int64)
    cell -= np.repeat(np.cumsum(counts) - counts, counts)
    cell += np.repeat(row_start[rows], counts)
    return step_idx, row_phases[cell], row_values[cell].astype(np.int64)


def execution_frame(steps: ProgramSteps, static_cycles: np.ndarray, runs: int, runtime_cycles: int = 0,
                    opening: RunOpening | None = None, static_bytes: np.ndarray | None = None) -> pd.DataFrame:
    """The ``execution`` table for ``runs`` profiled runs: one row per (run, step, phase) with
    non-zero cycles, steps of the main program only (WeightsFromHost runs once per engine), then
    one ``runtime`` row per run for host/runtime time outside the device (program
    ``session.run (host)``, type ``Host``). Every run costs the same in the model. ``opening``
    (executed step, cycles): host_io cycles the run spends in that step before its own (the run's
    opening control copies, cycles.run_opening_cycles). ``static_bytes`` (cycles.static_bytes): the
    bytes each static step moves, on the first row of each of its executions (<NA> elsewhere)."""
    ex = steps.exec_static[steps.setup_steps:]
    if runs <= 0 or (not len(ex) and not runtime_cycles):
        return make_frame("execution")
    step_idx, phase_idx, values = _nonzero_cycles(ex, np.asarray(static_cycles), steps.setup_steps, opening)
    static_of_row = ex[step_idx]  # one index into the static steps (no array of every executed step's names)
    names = np.array([s.name for s in steps.static], dtype=object)[static_of_row]
    moved = _first_row_bytes(step_idx, static_of_row, static_bytes)
    # the type and phase columns as codes (a categorical of millions of rows is not hashed row by
    # row), in the narrowest integers that hold them: one run's rows are millions at LLM sizes
    type_codes, type_levels = pd.factorize(np.array([s.type for s in steps.static] + ["Host"], dtype=object))
    type_codes = type_codes.astype(np.int8 if len(type_levels) < 128 else np.int32)
    types = type_codes[:-1][static_of_row]
    del static_of_row
    phases = phase_idx.astype(np.int8)
    del phase_idx
    step_idx += steps.setup_steps
    step_no = step_idx.astype(np.int64, copy=False)
    del step_idx
    if runtime_cycles:
        values = np.append(values, np.int64(runtime_cycles))
        names = np.append(names, "session.run (host)")
        types = np.append(types, type_codes[-1])
        phases = np.append(phases, np.int8(PHASES.index("runtime")))
        step_no = np.append(step_no, np.int64(steps.num_executed))
        moved = np.append(moved, np.int64(-1))
    k = len(values)

    def every_run(column: np.ndarray) -> np.ndarray:
        # one run's column for every run (the column itself for one run: no copy)
        return column if runs == 1 else np.tile(column, runs)

    # The model's steps (and a step's phases) run one after another, the host/runtime time after
    # the device's program: each row starts where the previous one ended, and run r starts where
    # run r-1 ended.
    ends_one_run = np.cumsum(values)
    per_run = int(ends_one_run[-1]) if k else 0
    cycles_to = np.tile(ends_one_run, runs) if runs > 1 else ends_one_run
    del ends_one_run
    if runs > 1:
        cycles_to += np.repeat(np.arange(runs, dtype=np.int64) * per_run, k)
    cycles_from = cycles_to - every_run(values)
    columns: dict[str, object] = {
        "run": np.repeat(np.arange(runs, dtype=np.int64), k),
        "step": every_run(step_no),
        "program": every_run(names),
        "type": pd.Categorical.from_codes(every_run(types), categories=type_levels),
        "phase": pd.Categorical.from_codes(every_run(phases), categories=list(PHASES)),
        "cycles": every_run(values),
        # the interval columns as nullable integers around their arrays (none missing)
        "cycles_from": pd.arrays.IntegerArray(cycles_from, np.zeros(len(cycles_from), dtype=bool)),
        "cycles_to": pd.arrays.IntegerArray(cycles_to, np.zeros(len(cycles_to), dtype=bool)),
        "bytes_moved": bytes_column(every_run(moved)),
    }
    del step_no, names, types, phases, values, moved, cycles_from, cycles_to
    # the arrays are this function's own: the frame takes them as they are
    return make_frame("execution", columns, adopt=True)


def _first_row_bytes(step_idx: np.ndarray, static_of_row: np.ndarray, static_bytes: np.ndarray | None) -> np.ndarray:
    """The bytes moved of each row: its static step's, on the first row of each executed step
    (a step's phases are rows of their own), -1 (none) elsewhere."""
    if static_bytes is None or not len(step_idx):
        return np.full(len(step_idx), -1, dtype=np.int64)
    first = np.r_[True, step_idx[1:] != step_idx[:-1]]
    return np.where(first, np.asarray(static_bytes, dtype=np.int64)[static_of_row], -1)


def bytes_column(moved: np.ndarray) -> pd.arrays.IntegerArray:
    """The ``bytes_moved`` column from bytes per row, -1 meaning none (<NA>)."""
    moved = np.asarray(moved, dtype=np.int64)
    return pd.arrays.IntegerArray(np.maximum(moved, 0), moved < 0)


def remote_buffers_frame(program: LoweredProgram, steps: ProgramSteps | None = None,
                         provenance: Any = None) -> pd.DataFrame:
    """The ``remote_buffers`` table: Streaming Memory per replica, one row per buffer, with the
    parameter / role / which of the variables it holds (attribution.py) when ``steps`` is given
    (``provenance``: the program's ``attribution.trace``, when the caller already has it)."""
    bufs = program.remote_buffers
    attribution: dict[str, list[str]] = {}
    if steps is not None:
        from profcompare.emulator.compile.attribution import trace

        by_id = (provenance or trace(program, steps)).buffers
        attributed = [by_id[b.id] for b in bufs]
        attribution = {"parameter": [a.parameter for a in attributed], "role": [a.role for a in attributed],
                       "which": [a.which for a in attributed]}
    return make_frame("remote_buffers", {
        "name": [b.name for b in bufs],
        "entries": [int(b.entries) for b in bufs],
        "shape": [format_shape(b.shape) for b in bufs],
        "dtype": [b.dtype for b in bufs],
        "sharded": [bool(b.sharded) for b in bufs],
        "bytes": [int(b.nbytes) for b in bufs],
        **attribution,
    })


def replication(program: LoweredProgram, steps: ProgramSteps, static_cycles: np.ndarray, io_tiles: int) -> dict:
    """``meta.replication`` (model.ReportMeta): the I/O tiles per IPU and, per replica grouping
    the collectives of one run of the main program use (the op's ``stride`` / ``group_size`` /
    ``num_groups``; a collective without a grouping spans all replicas), how many execute and
    their device cycles (every phase of their steps). Exact: from the program and the cycles
    the report states."""
    replicas = max(int(program.replicas or 1), 1)
    found: dict[tuple[int, int, int], list[int]] = {}
    for index, entry in enumerate(program.schedule):
        if entry.phase or steps.op_class.get(entry.op) != "collective":
            continue
        attrs = program.ops[entry.op].attrs
        size = int(attrs.get("group_size") or replicas)
        stride = int(attrs.get("stride") or 1)
        groups = int(attrs.get("num_groups") or max(replicas // max(size, 1), 1))
        start, end = (int(v) for v in steps.exec_ranges[index])
        cycles = int(static_cycles[steps.exec_static[start:end]].sum()) if end > start else 0
        tally = found.setdefault((stride, size, groups), [0, 0])
        tally[0] += 1
        tally[1] += cycles
    groupings = [{"stride": k[0], "group_size": k[1], "num_groups": k[2], "collectives": v[0], "cycles": v[1]}
                 for k, v in sorted(found.items(), key=lambda item: (item[0][1], item[0][0]))]
    return {"io_tiles_per_ipu": int(io_tiles), "replica_groupings": groupings}


def phase_totals(steps: ProgramSteps, static_cycles: np.ndarray, runtime_cycles: int = 0) -> Mapping[str, int]:
    """Cycles of one run per phase: the main program's steps, plus ``runtime_cycles`` of host/runtime time."""
    ex = steps.exec_static[steps.setup_steps:]
    tot = static_cycles[ex].sum(axis=0) if len(ex) else np.zeros(len(PHASES), dtype=np.int64)
    out = {p: int(tot[i]) for i, p in enumerate(PHASES)}
    out["runtime"] = out.get("runtime", 0) + int(runtime_cycles)
    return out
