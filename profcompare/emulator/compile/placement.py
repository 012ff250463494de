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
last. Inside a cycle, as the real 2-IPU trace in shared/data shows: the active stages' host loads
(each host copy synchronises every IPU), then their other steps (stages on different IPUs at the
same time, on the same IPU one after another), then their host stores, then the copies between
IPUs as one exchange (each IPU's on-chip move of what it sends, one external sync, every copy's
bytes, each IPU's move of what it received). A stage whose output is copied to another IPU moves
it into the pipeline's buffer right after its steps, and every main cycle (an iteration of
popxl-addons' repeat loop) starts with the loop iterator's move into the loop body. Each IPU keeps its own clock; a
synchronising step starts when the last IPU arrives, and the IPUs that arrived earlier wait in it
(``RunRow.arrivals``); the run ends when every IPU has (``RunRow.held``). Outside the pipeline the
IPUs run their own steps the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from profcompare.emulator.compile.cycles import RunOpening
from profcompare.emulator.compile.mapping import mapping_offset, tile_bytes_matrix
from profcompare.emulator.compile.programs import ProgramSteps
from profcompare.emulator.program import LoweredProgram, PipelineInfo
from profcompare.model import PHASES


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
    """One executed step of one run on the timeline: which step, when, for how long (all phases).

    ``arrivals``: (IPU, cycle) of the IPUs that reached this step before ``start`` and wait in it
    until the last one arrives (a host stream copy or an inter-IPU copy synchronises every IPU);
    ``held``: (IPU, cycle) of an IPU that ends the run early and waits in this, its last sync, for
    the others (a run ends when every IPU has)."""

    step: int  # executed step index
    start: int  # cycles from the start of the run
    cycles: np.ndarray  # per phase
    arrivals: tuple[tuple[int, int], ...] = ()
    held: tuple[tuple[int, int], ...] = ()  # (IPU, cycle): the IPU stays in this sync until then


HOST_ROLES = frozenset({"host_begin", "host_mid", "host_end"})

#: Roles of the steps that synchronise every IPU of the replica.
SYNC_ROLES = HOST_ROLES | frozenset({"remote_begin", "remote_mid", "remote_end", "code_load", "ipu_copy_sync",
                                     "ipu_copy", "collective_pre", "sync_external", "ring_exchange", "ring_reduce"})


def run_timeline(program: LoweredProgram, steps: ProgramSteps, static_cycles: np.ndarray, *,
                 opening: RunOpening | None = None, ipus: int = 1,
                 step_ipus: Sequence[tuple[int, ...]] = (), exchange_overhead: int = 0,
                 exchange_latency: int = 0) -> tuple[list[RunRow], np.ndarray]:
    """The timeline of one run of the main program with its pipelines (module docstring).

    Returns (rows, critical): ``rows`` place every executed step of the run (pipeline stages once
    per pipeline cycle they run in), ``critical`` the cycles per phase along the critical path,
    whose sum is the span of the run. ``opening`` (executed step, cycles): host_io cycles the run
    spends in that step (its first host transfer's Begin) before its own; ``ipus``: IPUs per replica;
    ``step_ipus``: per static step, the IPUs it runs on (trace.step_places); ``exchange_overhead``:
    the fixed cost of one global exchange, ``exchange_latency`` that of one on-chip exchange
    (exchange_cost.py), each paid once by the merged inter-IPU copies of a pipeline cycle.
    """
    n_phases = static_cycles.shape[1]
    pipe_of: dict[str, tuple[PipelineInfo, int]] = {}  # top-level op id -> (pipeline, stage position or -1 copy)
    for p in program.pipelines:
        for pos, (_stage, op_ids) in enumerate(p.stages):
            for o in op_ids:
                pipe_of[o] = (p, pos)
        for o in p.copies:
            pipe_of[o] = (p, -1)
    timeline = _Timeline(steps, static_cycles, n_phases, opening, max(1, ipus), step_ipus, exchange_overhead,
                         exchange_latency)
    done: set[int] = set()
    entries = list(zip(program.schedule, map(tuple, steps.exec_ranges.tolist())))
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
            # outside a pipeline too, each IPU runs its own steps; synchronising steps wait for all
            for e in range(a, b):
                timeline.place(e)
            continue
        p = hit[0]
        if p.id in done:
            continue
        done.add(p.id)
        _pipeline_rows(p, members[p.id], timeline, _buffer_stages(program, p))
    timeline.finish()
    return timeline.rows, timeline.critical


class _Timeline:
    """Per-IPU clocks of one run: steps of one IPU one after another, synchronising steps (host
    stream copies, inter-IPU copies, everything outside a pipeline) wait for every IPU."""

    def __init__(self, steps: ProgramSteps, static_cycles: np.ndarray, n_phases: int,
                 opening: RunOpening | None, ipus: int, step_ipus: Sequence[tuple[int, ...]],
                 exchange_overhead: int, exchange_latency: int) -> None:
        self.steps = steps
        self.step_ipus = step_ipus
        self.overhead = int(exchange_overhead)
        self.latency = int(exchange_latency)
        self.static_cycles = static_cycles
        self.opening = opening
        self.clock = dict.fromkeys(range(ipus), 0)
        self.rows: list[RunRow] = []
        self.critical = np.zeros(n_phases, dtype=np.int64)
        self.local = {i: np.zeros(n_phases, dtype=np.int64) for i in range(ipus)}  # since the last sync
        self.host_io = PHASES.index("host_io")
        self.last_alone: dict[int, int] = {}  # IPU -> index in rows of its last step run alone

    def cycles(self, e: int) -> np.ndarray:
        c = self.static_cycles[self.steps.exec_static[e]]
        if self.opening is not None and e == self.opening[0]:
            # the run's opening copies precede its first host transfer only (a pipeline stage's
            # steps are placed once per pipeline cycle with the same executed index)
            c = self.opening.add_to(c)
            self.opening = None
        return c

    def role(self, e: int) -> str:
        return self.steps.static[int(self.steps.exec_static[e])].role

    def place(self, e: int) -> None:
        """Step ``e`` outside a pipeline: on its own IPU, or on every IPU when it synchronises
        them (host and remote transfers, copies between IPUs, collectives, steps of several IPUs)."""
        static = int(self.steps.exec_static[e])
        where = self.step_ipus[static] if static < len(self.step_ipus) else (0,)
        if len(where) != 1 or self.role(e) in SYNC_ROLES or where[0] not in self.clock:
            self.together(e)
        else:
            self.alone(e, where[0])

    def finish(self) -> None:
        """Close the run: the busiest IPU since the last synchronisation is on the critical path;
        an IPU that ends earlier waits in its last Internal Sync until the run ends."""
        busiest = max(self.local, key=lambda i: (self.clock[i], -i))
        self.critical += self.local[busiest]
        for i in self.local:
            self.local[i] = np.zeros_like(self.critical)
        end = max(self.clock.values())
        for ipu, k in self.last_alone.items():
            row = self.rows[k]
            if self.clock[ipu] < end and row.start + int(row.cycles.sum()) == self.clock[ipu] \
                    and self.role(row.step) == "sync_internal":
                self.rows[k] = RunRow(row.step, row.start, row.cycles, row.arrivals, ((ipu, end),))

    def together(self, e: int, cycles: np.ndarray | None = None) -> None:
        """Step ``e`` on every IPU at once: it starts when the last IPU arrives."""
        c = self.cycles(e) if cycles is None else cycles
        start = max(self.clock.values())
        busiest = max(self.local, key=lambda i: (self.clock[i], -i))
        self.critical += self.local[busiest]
        for i in self.local:
            self.local[i] = np.zeros_like(self.critical)
        arrivals = tuple((i, t) for i, t in sorted(self.clock.items()) if t < start)
        self.rows.append(RunRow(e, start, c, arrivals))
        self.critical += c
        end = start + int(c.sum())
        for i in self.clock:
            self.clock[i] = end

    def alone(self, e: int, ipu: int, cycles: np.ndarray | None = None) -> None:
        """Step ``e`` on IPU ``ipu`` alone, after that IPU's previous step."""
        c = self.cycles(e) if cycles is None else cycles
        self.last_alone[ipu] = len(self.rows)
        self.rows.append(RunRow(e, self.clock[ipu], c))
        self.local[ipu] += c
        self.clock[ipu] += int(c.sum())


def _buffer_stages(program: LoweredProgram, p: PipelineInfo) -> dict[str, int]:
    """Copy op id -> position of the stage producing the tensor it copies (-1 when none does)."""
    made: dict[str, int] = {}
    for pos, (_stage, op_ids) in enumerate(p.stages):
        for o in op_ids:
            op = program.ops.get(o)
            for t in (op.outputs + op.modified) if op is not None else ():
                made[t] = pos
    return {c: made.get(program.ops[c].inputs[0], -1) if c in program.ops and program.ops[c].inputs else -1
            for c in p.copies}


def _pipeline_rows(p: PipelineInfo, members: dict[int, list[int]], tl: _Timeline,
                   buffer_stage: dict[str, int]) -> None:
    """Place one pipeline's cycles (docs/ipu-model.md section 10): per cycle the active stages'
    host loads (stream copies, every IPU together), then their other steps (IPUs in parallel, one
    IPU's stages one after another), then their host stores, then the copies between IPUs as one
    exchange (each IPU's move to its sending tiles, one external sync, every copy's bytes, each
    IPU's move from its receiving tiles), unless it is the last cycle."""
    ipu_of = dict(p.stage_ipus)
    stage_ipu = {pos: ipu_of.get(p.stages[pos][0], 0) for pos in range(len(p.stages))}
    op_class = tl.steps.op_class

    def host_class(e: int) -> str:
        op = tl.steps.static[int(tl.steps.exec_static[e])].op
        return op_class.get(op, "") if tl.role(e) in HOST_ROLES else ""

    copies = members.get(-1, [])
    # one exchange moves every copy's bytes, paying the fixed exchange cost once; before it each
    # IPU moves what it sends to its sending tiles, after it what it received to the destination
    # tiles (one DoExchange per IPU and side for all the copies, each on its IPU's own clock)
    step_ipus = tl.step_ipus

    def side(role: str) -> dict[int, tuple[int, np.ndarray] | None]:
        by_ipu: dict[int, list[int]] = {}
        for e in copies:
            if tl.role(e) == role:
                where = step_ipus[int(tl.steps.exec_static[e])] if step_ipus else (0,)
                by_ipu.setdefault(where[0], []).append(e)
        return {i: _merge(tl, es, tl.latency) for i, es in sorted(by_ipu.items())}

    pre, post = side("ipu_copy_pre"), side("ipu_copy_post")
    exchange = _merge(tl, [e for e in copies if tl.role(e) == "ipu_copy"], tl.overhead)
    syncs = [e for e in copies if tl.role(e) == "ipu_copy_sync"]
    # a copied tensor moves into the pipeline's buffer when the stage producing it runs
    buffers: dict[int, list[tuple[int, int]]] = {}  # stage position -> (executed step, IPU)
    for e in copies:
        if tl.role(e) == "ipu_copy_buffer":
            static = int(tl.steps.exec_static[e])
            pos = buffer_stage.get(tl.steps.static[static].op, -1)
            where = step_ipus[static] if step_ipus else (0,)
            buffers.setdefault(pos, []).append((e, where[0]))
    iterators = [e for e in copies if tl.role(e) == "pipeline_iterator"]
    parts = {"ipu_copy_pre", "ipu_copy", "ipu_copy_post", "ipu_copy_sync", "ipu_copy_buffer", "pipeline_iterator"}
    others = [e for e in copies if tl.role(e) not in parts]
    for active, copy_after in pipeline_cycles(len(p.stages), p.steps):
        if len(active) == len(p.stages):
            # a main cycle: one iteration of the repeat loop, its iterator moved into the body
            for e in iterators:
                tl.alone(e, 0)
        for pos in active:
            for e in members.get(pos, ()):
                if host_class(e) == "host_load":
                    tl.together(e)
        for pos in active:
            for e in members.get(pos, ()):
                if not host_class(e):
                    tl.alone(e, stage_ipu[pos])
            for e, ipu in buffers.get(pos, ()):
                tl.alone(e, ipu)
        for pos in active:
            for e in members.get(pos, ()):
                if host_class(e) == "host_store":
                    tl.together(e)
        if copy_after:
            for e in others:
                tl.together(e)
            # a copied tensor no stage of the pipeline produces moves into the buffer with the copy
            for e, ipu in buffers.get(-1, ()):
                tl.alone(e, ipu)
            for ipu, m in pre.items():
                if m is not None:
                    tl.alone(m[0], ipu, m[1])
            if syncs:
                tl.together(syncs[0])
            if exchange is not None:
                tl.together(*exchange)
            for ipu, m in post.items():
                if m is not None:
                    tl.alone(m[0], ipu, m[1])


def _merge(tl: _Timeline, parts: list[int], fixed: int) -> tuple[int, np.ndarray] | None:
    """(first executed step, cycles) of ``parts`` run as one exchange: their cycles summed, the
    fixed exchange cost ``fixed`` paid once (None without parts). ASSUMPTION: each part keeps
    its own reach to its receiving tiles (exchange_cost.py); only the latency is shared."""
    if not parts:
        return None
    total = sum(tl.cycles(e) for e in parts)
    return parts[0], total - (len(parts) - 1) * _overhead(tl, fixed)


def timeline_arrivals(rows: Sequence[RunRow]) -> dict[tuple[int, int], dict[int, int]]:
    """(executed step, start) -> {IPU: arrival} of the rows whose IPUs wait (run 0's cycles)."""
    return {(r.step, r.start): dict(r.arrivals) for r in rows if r.arrivals}


def timeline_holds(rows: Sequence[RunRow]) -> dict[tuple[int, int], dict[int, int]]:
    """(executed step, start) -> {IPU: end} of the rows an IPU stays in past their cycles."""
    return {(r.step, r.start): dict(r.held) for r in rows if r.held}


def _overhead(tl: _Timeline, fixed: int) -> np.ndarray:
    """The fixed cost ``fixed`` each part of an inter-IPU copy carries (paid once by the merged
    exchange), as cycles by phase."""
    out = np.zeros_like(tl.critical)
    out[PHASES.index("exchange")] = fixed
    return out


__all__ = ["Layout", "RunRow", "layout_of", "pipeline_cycles", "placed_tile_bytes", "run_timeline",
           "timeline_arrivals", "timeline_holds"]


def timeline_execution_frame(steps: ProgramSteps, rows: list[RunRow], runs: int, runtime_cycles: int = 0,
                             static_bytes: np.ndarray | None = None):  # -> DataFrame
    """The ``execution`` table of a pipelined program for ``runs`` runs (report.execution_frame's
    columns): one row per (placed step, phase) with non-zero cycles, phases of a step back to back
    from the step's start, then the ``runtime`` row; run r starts where run r-1's span ended.
    ``static_bytes``: the bytes each static step moves, on the first row of each placed step."""
    import pandas as pd

    from profcompare.emulator.compile.report import bytes_column
    from profcompare.model import PHASES, make_frame

    names = [s.name for s in steps.static]
    types = [s.type for s in steps.static]
    one: list[tuple[int, str, str, str, int, int]] = []  # step, program, type, phase, cycles, from
    moved: list[int] = []  # bytes moved per row, -1 none
    for r in rows:
        at = r.start
        static = int(steps.exec_static[r.step])
        first = True
        for k, v in enumerate(r.cycles):
            if v:
                one.append((r.step, names[static], types[static], PHASES[k], int(v), at))
                moved.append(int(static_bytes[static]) if first and static_bytes is not None else -1)
                first = False
                at += int(v)
    span = max((f + c for *_, c, f in one), default=0)
    if runtime_cycles:
        one.append((steps.num_executed, "session.run (host)", "Host", "runtime", int(runtime_cycles), span))
        moved.append(-1)
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
        "bytes_moved": bytes_column(np.tile(np.asarray(moved, dtype=np.int64), runs)),
    })
