"""Assemble the Report frames of a compiled program (model.SCHEMAS)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from profcompare.emulator.compile.liveness import Instances
from profcompare.emulator.compile.memory import Storage, TileMemory
from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram
from profcompare.model import CATEGORY_GROUPS, PHASES, format_shape, make_frame


def tiles_frame(mem: TileMemory, tiles_per_ipu: int) -> pd.DataFrame:
    """The ``tiles`` table: one row per tile with totals and one column per category."""
    n = len(mem.including_gaps)
    tile = np.arange(n, dtype=np.int64)
    data: dict[str, object] = {
        "tile": tile,
        "ipu": tile // tiles_per_ipu,
        "bytes_including_gaps": mem.including_gaps,
        "bytes_excluding_gaps": mem.excluding_gaps,
        "always_live_bytes": mem.always_live,
        "not_always_live_peak_bytes": mem.not_always_live_peak,
    }
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


def variables_frame(storage: Storage, inst: Instances) -> pd.DataFrame:
    """The ``variables`` table: one row per storage row (tensor or temporary) with tile memory.

    always_live rows have <NA> first/last steps; others carry the union of their instances'
    live intervals.
    """
    n = len(storage.ids)
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n, -1, dtype=np.int64)
    if len(inst.row):
        np.minimum.at(first, inst.row, inst.first)
        np.maximum.at(last, inst.row, inst.last)
    always = np.array([s in ("variable", "constant") for s in storage.storage], dtype=bool)
    live = ~always & (last >= 0)
    keep = always | live
    idx = np.nonzero(keep)[0]
    first_s = pd.array([int(first[i]) if live[i] else pd.NA for i in idx], dtype="Int64")
    last_s = pd.array([int(last[i]) if live[i] else pd.NA for i in idx], dtype="Int64")
    return make_frame("variables", {
        "name": [storage.names[i] for i in idx],
        "bytes": storage.row_bytes[idx],
        "always_live": always[idx],
        "kind": [storage.kinds[i] for i in idx],
        "dtype": [storage.dtypes[i] for i in idx],
        "shape": [format_shape(storage.shapes[i]) for i in idx],
        "tiles": (storage.tile_bytes[idx] > 0).sum(axis=1),
        "first_step": first_s,
        "last_step": last_s,
    })


def liveness_frame(steps: ProgramSteps, totals: np.ndarray) -> pd.DataFrame:
    """The ``liveness`` table: one row per executed program step of one run."""
    names = np.array([s.name for s in steps.static], dtype=object)
    types = np.array([s.type for s in steps.static], dtype=object)
    ex = steps.exec_static
    return make_frame("liveness", {
        "step": np.arange(len(ex), dtype=np.int64),
        "program": names[ex] if len(ex) else [],
        "program_type": types[ex] if len(ex) else [],
        "not_always_live_bytes": totals,
    })


def execution_frame(steps: ProgramSteps, static_cycles: np.ndarray, runs: int) -> pd.DataFrame:
    """The ``execution`` table for ``runs`` profiled runs: one row per (run, step, phase) with
    non-zero cycles. Every run costs the same in the model (it is deterministic)."""
    ex = steps.exec_static
    if runs <= 0 or not len(ex):
        return make_frame("execution")
    cyc = static_cycles[ex]  # (steps, phases)
    step_idx, phase_idx = np.nonzero(cyc)
    values = cyc[step_idx, phase_idx]
    names = np.array([s.name for s in steps.static], dtype=object)[ex]
    types = np.array([s.type for s in steps.static], dtype=object)[ex]
    phases = np.array(PHASES, dtype=object)
    k = len(step_idx)
    run = np.repeat(np.arange(runs, dtype=np.int64), k)
    # The model's steps (and a step's phases) run one after another: each row starts where the
    # previous one ended, and run r starts where run r-1 ended.
    ends_one_run = np.cumsum(values.astype(np.int64))
    per_run = int(ends_one_run[-1]) if k else 0
    offsets = np.repeat(np.arange(runs, dtype=np.int64) * per_run, k)
    cycles_to = np.tile(ends_one_run, runs) + offsets
    cycles_from = cycles_to - np.tile(values.astype(np.int64), runs)
    return make_frame("execution", {
        "run": run,
        "step": np.tile(step_idx.astype(np.int64), runs),
        "program": np.tile(names[step_idx], runs),
        "type": pd.Categorical(np.tile(types[step_idx], runs)),
        "phase": pd.Categorical(np.tile(phases[phase_idx], runs), categories=list(PHASES)),
        "cycles": np.tile(values, runs),
        "cycles_from": cycles_from,
        "cycles_to": cycles_to,
    })


def remote_buffers_frame(program: LoweredProgram) -> pd.DataFrame:
    """The ``remote_buffers`` table: Streaming Memory per replica, one row per buffer."""
    bufs = program.remote_buffers
    return make_frame("remote_buffers", {
        "name": [b.name for b in bufs],
        "entries": [int(b.entries) for b in bufs],
        "shape": [format_shape(b.shape) for b in bufs],
        "dtype": [b.dtype for b in bufs],
        "sharded": [bool(b.sharded) for b in bufs],
        "bytes": [int(b.nbytes) for b in bufs],
    })


def phase_totals(steps: ProgramSteps, static_cycles: np.ndarray) -> Mapping[str, int]:
    """Cycles of one run per phase."""
    tot = static_cycles[steps.exec_static].sum(axis=0) if len(steps.exec_static) else np.zeros(len(PHASES))
    return {p: int(tot[i]) for i, p in enumerate(PHASES)}
