"""Multi-IPU and I/O-tile layout, and the pipeline schedule (docs/ipu-model.md "More than one
IPU per replica").

Layout: a replica has ``ipus`` IPUs of ``tiles_per_ipu`` tiles; tile ``t`` is on IPU
``t // tiles_per_ipu``. With ``io_tiles`` I/O tiles per IPU, the first ``io_tiles`` tiles of each
IPU are its I/O tiles and the rest its compute tiles. A tensor is mapped linearly (mapping.py) over
the tiles of its region only: the compute tiles (or the I/O tiles) of its IPU, with the
``chooseMappingOffset``-like rotation taken modulo the region's size. A single IPU without I/O
tiles is one region of every tile: the mapping is exactly the single-IPU one.

Pipeline schedule: a ``pipelined_execution`` over S stages and N steps runs N + S - 1 pipeline
cycles: ramp-up cycles k = 1..S-1 run stages 0..k-1, N - S + 1 main cycles run every stage,
ramp-down cycles k = 1..S-1 run stages k..S-1; the inter-IPU copies run after every cycle but the
last. Inside a cycle the stages on different IPUs run at the same time and stages on the same IPU
one after another (ASSUMPTION: Poplar syncs per IPU between the cross-IPU copies), so a cycle
lasts as long as its busiest IPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from profcompare.emulator.compile.mapping import mapping_offset, tile_bytes_matrix
from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram, PipelineInfo


@dataclass(frozen=True)
class Layout:
    """The tiles of one replica: IPUs x tiles per IPU, the first ``io_tiles`` of each IPU for I/O."""

    ipus: int
    tiles_per_ipu: int
    io_tiles: int = 0

    def __post_init__(self) -> None:
        if self.io_tiles < 0 or self.io_tiles >= self.tiles_per_ipu:
            raise ValueError(f"num_io_tiles must be in [0, {self.tiles_per_ipu}), got {self.io_tiles}")

    @property
    def trivial(self) -> bool:
        """One IPU without I/O tiles: one region of every tile (the single-IPU mapping)."""
        return self.ipus == 1 and self.io_tiles == 0

    @property
    def total_tiles(self) -> int:
        """Tiles of one replica."""
        return self.ipus * self.tiles_per_ipu

    @property
    def compute_tiles(self) -> int:
        """Compute tiles of one IPU (the tiles an op's tensors spread over)."""
        return self.tiles_per_ipu - self.io_tiles

    def region(self, ipu: int, tile_set: str) -> tuple[int, int]:
        """(first tile, number of tiles) of the compute or I/O tiles of ``ipu``."""
        base = int(ipu) * self.tiles_per_ipu
        if tile_set == "io" and self.io_tiles:
            return base, self.io_tiles
        return base + self.io_tiles, self.compute_tiles


def layout_of(program: LoweredProgram, tiles_per_ipu: int) -> Layout:
    """The replica layout of ``program`` on a device of ``tiles_per_ipu`` tiles."""
    return Layout(max(1, int(program.ipus_per_replica)), int(tiles_per_ipu), int(program.num_io_tiles))


def placed_tile_bytes(layout: Layout, nelms: Sequence[int], itemsize: Sequence[int],
                      shapes: Sequence[tuple[int, ...]], dtypes: Sequence[str], ipus: Sequence[int],
                      tile_sets: Sequence[str], *, datapath_bytes: int, min_bytes_per_tile: int,
                      starts: Sequence[int] | None = None) -> np.ndarray:
    """Bytes per tile of each row (int64, rows x ``layout.total_tiles``): each row mapped linearly
    over its region (IPU and tile set), its start tile rotated within the region (``starts``,
    else ``mapping_offset`` of its shape and type; start_tiles.py)."""
    n = len(nelms)
    out = np.zeros((n, layout.total_tiles), dtype=np.int64)
    groups: dict[tuple[int, int], list[int]] = {}
    for k in range(n):
        groups.setdefault(layout.region(ipus[k], tile_sets[k]), []).append(k)
    for (start, size), rows in groups.items():
        sub = tile_bytes_matrix(
            np.array([nelms[k] for k in rows], dtype=np.int64), np.array([itemsize[k] for k in rows], dtype=np.int64),
            np.array([mapping_offset(shapes[k], dtypes[k], size) if starts is None else int(starts[k]) for k in rows],
                     dtype=np.int64), size,
            datapath_bytes=datapath_bytes, min_bytes_per_tile=min_bytes_per_tile)
        out[np.asarray(rows)[:, None], np.arange(start, start + size)[None, :]] = sub
    return out


# --- pipeline schedule -------------------------------------------------------------------------
def pipeline_cycles(num_stages: int, steps: int) -> list[tuple[tuple[int, ...], bool]]:
    """The pipeline cycles of one run: (active stage positions, copies after the cycle) each.

    A cycle running stages start..end-1 is followed by the inter-IPU copies unless start is the
    last stage (popxl-addons skips the final copy)."""
    s = num_stages
    spans = [(0, k) for k in range(1, s)] + [(0, s)] * max(0, steps - s + 1) + [(k, s) for k in range(1, s)]
    return [(tuple(range(a, b)), a != s - 1) for a, b in spans]


@dataclass(frozen=True)
class RunRow:
    """One executed step of one run on the timeline: which step, when, for how long (all phases)."""

    step: int  # executed step index
    start: int  # cycles from the start of the run
    cycles: np.ndarray  # per phase


def run_timeline(program: LoweredProgram, steps: ProgramSteps, static_cycles: np.ndarray) -> tuple[list[RunRow], np.ndarray]:
    """The timeline of one run of the main program with its pipelines (module docstring).

    Returns (rows, critical): ``rows`` place every executed step of the run (pipeline stages once
    per pipeline cycle they run in), ``critical`` the cycles per phase along the critical path,
    whose sum is the span of the run.
    """
    n_phases = static_cycles.shape[1]
    pipe_of: dict[str, tuple[PipelineInfo, int]] = {}  # top-level op id -> (pipeline, stage position or -1 copy)
    for p in program.pipelines:
        for pos, (_stage, op_ids) in enumerate(p.stages):
            for o in op_ids:
                pipe_of[o] = (p, pos)
        for o in p.copies:
            pipe_of[o] = (p, -1)
    rows: list[RunRow] = []
    critical = np.zeros(n_phases, dtype=np.int64)
    t = 0
    done: set[int] = set()
    entries = list(zip(program.schedule, steps.exec_ranges))
    members: dict[int, dict[int, list[int]]] = {}  # pipeline id -> stage position -> executed steps
    for entry, (a, b) in entries:
        top = entry.call_path[0] if entry.call_path else entry.op
        hit = pipe_of.get(top)
        if hit is not None:
            members.setdefault(hit[0].id, {}).setdefault(hit[1], []).extend(range(a, b))
    for entry, (a, b) in entries:
        top = entry.call_path[0] if entry.call_path else entry.op
        hit = pipe_of.get(top)
        if hit is None:
            for e in range(a, b):
                c = static_cycles[steps.exec_static[e]]
                rows.append(RunRow(e, t, c))
                critical += c
                t += int(c.sum())
            continue
        p = hit[0]
        if p.id in done:
            continue
        done.add(p.id)
        t = _pipeline_rows(p, members[p.id], steps, static_cycles, t, rows, critical)
    return rows, critical


def _pipeline_rows(p: PipelineInfo, members: dict[int, list[int]], steps: ProgramSteps, static_cycles: np.ndarray,
                   t: int, rows: list[RunRow], critical: np.ndarray) -> int:
    ipu_of = dict(p.stage_ipus)
    positions = [pos for pos in range(len(p.stages))]
    stage_ipu = {pos: ipu_of.get(p.stages[pos][0], 0) for pos in positions}
    for active, copies in pipeline_cycles(len(p.stages), p.steps):
        cursor: dict[int, int] = {}
        per_ipu: dict[int, np.ndarray] = {}
        for pos in active:
            ipu = stage_ipu[pos]
            start = cursor.get(ipu, t)
            acc = per_ipu.setdefault(ipu, np.zeros_like(critical))
            for e in members.get(pos, ()):
                c = static_cycles[steps.exec_static[e]]
                rows.append(RunRow(e, start, c))
                acc += c
                start += int(c.sum())
            cursor[ipu] = start
        if per_ipu:
            busiest = max(per_ipu, key=lambda i: (int(per_ipu[i].sum()), -i))
            critical += per_ipu[busiest]
            t = max(cursor.values())
        if copies:
            for e in members.get(-1, ()):
                c = static_cycles[steps.exec_static[e]]
                rows.append(RunRow(e, t, c))
                critical += c
                t += int(c.sum())
    return t


__all__ = ["Layout", "RunRow", "layout_of", "pipeline_cycles", "placed_tile_bytes", "run_timeline"]


def timeline_execution_frame(steps: ProgramSteps, rows: list[RunRow], runs: int, runtime_cycles: int = 0):  # -> DataFrame
    """The ``execution`` table of a pipelined program for ``runs`` runs (report.execution_frame's
    columns): one row per (placed step, phase) with non-zero cycles, phases of a step back to back
    from the step's start, then the ``runtime`` row; run r starts where run r-1's span ended."""
    import pandas as pd

    from profcompare.model import PHASES, make_frame

    names = [s.name for s in steps.static]
    types = [s.type for s in steps.static]
    one: list[tuple[int, str, str, str, int, int]] = []  # step, program, type, phase, cycles, from
    for r in rows:
        at = r.start
        static = int(steps.exec_static[r.step])
        for k, v in enumerate(r.cycles):
            if v:
                one.append((r.step, names[static], types[static], PHASES[k], int(v), at))
                at += int(v)
    span = max((f + c for *_, c, f in one), default=0)
    if runtime_cycles:
        one.append((steps.num_executed, "session.run (host)", "Host", "runtime", int(runtime_cycles), span))
        span += int(runtime_cycles)
    if runs <= 0 or not one:
        return make_frame("execution")
    cols = list(zip(*one))
    k = len(one)
    offsets = np.repeat(np.arange(runs, dtype=np.int64) * span, k)
    starts = np.tile(np.asarray(cols[5], dtype=np.int64), runs) + offsets
    cycles = np.tile(np.asarray(cols[4], dtype=np.int64), runs)
    return make_frame("execution", {
        "run": np.repeat(np.arange(runs, dtype=np.int64), k),
        "step": np.tile(np.asarray(cols[0], dtype=np.int64), runs),
        "program": np.tile(np.asarray(cols[1], dtype=object), runs),
        "type": pd.Categorical(np.tile(np.asarray(cols[2], dtype=object), runs)),
        "phase": pd.Categorical(np.tile(np.asarray(cols[3], dtype=object), runs), categories=list(PHASES)),
        "cycles": cycles,
        "cycles_from": starts,
        "cycles_to": starts + cycles,
    })
