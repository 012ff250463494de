"""A simulated execution trace against a measured one (Graph Analyser's): pure figures, no I/O.

Both traces are ``Report.trace`` tables (docs/report-format.md). A measured profile may hold
several runs of the main program (Poplar records two by default); :func:`split_runs` finds them
as the repeats of the lowest IPU's sequence of executed blocks, so every figure here is per run
(the mean over the measured runs). Per IPU, :func:`compare_traces` gives:

- the span of the run (first block's start to last block's end, SyncAns left out);
- per block type, the number of blocks and the cycles in them (sum of their lengths); SyncAns,
  the blocks an IPU spends waiting for another IPU or the host, overlap the blocks they wait for
  and are reported apart (:data:`WAITING_TYPE`);
- the pipeline structure: the run cut at the end of every inter-IPU exchange (GlobalExchange) into
  pipeline cycles, each cycle's compute (OnTileExecute, DoExchange, InternalSync cycles) per IPU,
  and its classification into ramp-up, steady and ramp-down (:func:`pipeline_structure`);
- overlap: the share of the host-copy time (StreamCopyBegin / StreamCopy / StreamCopyEnd) in which
  every IPU is in a host copy at once, and the share of the compute time in which every IPU
  computes at once (:func:`overlaps`).

Errors are (simulated - measured) / measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from profcompare.analysis.trace import WAITING_TYPE

#: Block types of a host stream copy (Graph Analyser's names).
HOST_COPY_TYPES = frozenset({"StreamCopyBegin", "StreamCopy", "StreamCopyEnd"})

#: Block types counted as a pipeline cycle's compute: on-tile work, on-chip exchange, on-chip sync.
COMPUTE_TYPES = frozenset({"OnTileExecute", "DoExchange", "InternalSync"})

#: Block type of an exchange between IPUs (the copies between pipeline stages).
INTER_IPU_TYPE = "GlobalExchange"

#: A pipeline cycle is steady when every IPU's compute in it is within this share of that IPU's
#: median compute per cycle (an analysis threshold, not a model constant).
STEADY_TOLERANCE = 0.10

#: A leading segment whose compute is below this share of the median cycle's is a prologue (the
#: host syncs and control broadcasts before the pipeline), not a pipeline cycle.
PROLOGUE_SHARE = 0.05


def _ordered(trace: pd.DataFrame) -> pd.DataFrame:
    frame = pd.DataFrame({
        "ipu": trace["ipu"].to_numpy(dtype="int64"),
        "cycles_from": trace["cycles_from"].to_numpy(dtype="int64"),
        "cycles_to": trace["cycles_to"].to_numpy(dtype="int64"),
        "type": trace["type"].astype(str).to_numpy(dtype=object),
        "name": trace["name"].astype(str).to_numpy(dtype=object),
    })
    return frame.sort_values(["ipu", "cycles_from", "type", "name", "cycles_to"], kind="stable").reset_index(drop=True)


def _period(seq: Sequence[tuple[str, str]]) -> int:
    """The smallest p dividing len(seq) such that seq repeats every p items (len(seq) when none)."""
    n = len(seq)
    for p in range(1, n + 1):
        if n % p == 0 and all(seq[i] == seq[i + p] for i in range(n - p)):
            return p
    return n


def split_runs(trace: pd.DataFrame) -> list[pd.DataFrame]:
    """The runs of the main program in ``trace``: the number of times every IPU's sequence of
    executed blocks (type and name, SyncAns left out) repeats whole; each run is the blocks that
    start from that run's first block (on any IPU) to the next run's. One run when nothing repeats
    or when the IPUs disagree. A trace whose ``run`` column names several runs (the simulator's,
    a Poplar profile's) is split by it instead."""
    if not len(trace):
        return []
    named = np.unique(trace["run"].to_numpy()) if "run" in trace.columns else np.zeros(0)
    if len(named) > 1:
        run = trace["run"].to_numpy()
        return [_ordered(trace[run == r]) for r in named.tolist()]
    frame = _ordered(trace)
    executed = frame[frame["type"] != WAITING_TYPE]
    starts_per_ipu: list[np.ndarray] = []
    runs = None
    for _ipu, blocks in executed.groupby("ipu", sort=True):
        seq = list(zip(blocks["type"], blocks["name"]))
        period = _period(seq)
        count = len(seq) // period
        if runs is None:
            runs = count
        elif runs != count:
            runs = 1
            break
        starts_per_ipu.append(blocks["cycles_from"].to_numpy()[::period])
    if not runs or runs <= 1:
        return [frame]
    bounds = np.min(np.vstack([s[:runs] for s in starts_per_ipu]), axis=0)
    edges = np.append(bounds, np.iinfo(np.int64).max)
    edges[0] = min(int(edges[0]), int(frame["cycles_from"].min()))
    at = frame["cycles_from"].to_numpy()
    return [frame[(at >= edges[k]) & (at < edges[k + 1])].reset_index(drop=True) for k in range(runs)]


@dataclass(frozen=True)
class IpuFigures:
    """One IPU in one run: span, and per type the blocks and the cycles in them."""

    span: int
    blocks: Mapping[str, int]
    cycles: Mapping[str, int]


def ipu_figures(run: pd.DataFrame) -> dict[int, IpuFigures]:
    """Per IPU of one run (:func:`split_runs`): its span (SyncAns left out) and per-type totals."""
    out: dict[int, IpuFigures] = {}
    frame = _ordered(run) if "name" in run else run
    for ipu, blocks in frame.groupby("ipu", sort=True):
        executed = blocks[blocks["type"] != WAITING_TYPE]
        span = int(executed["cycles_to"].max() - executed["cycles_from"].min()) if len(executed) else 0
        length = (blocks["cycles_to"] - blocks["cycles_from"]).to_numpy()
        kinds = blocks["type"].to_numpy()
        counts = {str(t): int((kinds == t).sum()) for t in sorted(set(kinds))}
        cycles = {str(t): int(length[kinds == t].sum()) for t in sorted(set(kinds))}
        out[int(ipu)] = IpuFigures(span, counts, cycles)
    return out


@dataclass(frozen=True)
class PipelineStructure:
    """A run cut into pipeline cycles at the end of each inter-IPU exchange of the lowest IPU.

    ``lengths[c]``: cycles of pipeline cycle c; ``compute[c][i]``: compute cycles of IPU ``ipus[i]``
    in it; ``kinds[c]``: "ramp-up", "steady" or "ramp-down"."""

    ipus: tuple[int, ...]
    lengths: tuple[int, ...]
    compute: tuple[tuple[int, ...], ...]
    kinds: tuple[str, ...]

    def count(self, kind: str) -> int:
        return sum(1 for k in self.kinds if k == kind)

    def mean_length(self, kind: str) -> float:
        values = [n for n, k in zip(self.lengths, self.kinds) if k == kind]
        return float(np.mean(values)) if values else 0.0


def pipeline_structure(run: pd.DataFrame) -> PipelineStructure:
    """The pipeline cycles of one run (see :class:`PipelineStructure`): from the end of the run's
    second host copy (the two opening copies of a popxl run) to its end; a leading segment with
    almost no compute is a prologue and left out. A run without inter-IPU exchanges is one cycle."""
    frame = _ordered(run)
    ipus = tuple(int(i) for i in sorted(frame["ipu"].unique()))
    if not ipus:
        return PipelineStructure((), (), (), ())
    first = frame[(frame["ipu"] == ipus[0]) & (frame["type"] == INTER_IPU_TYPE)]
    executed = frame[frame["type"] != WAITING_TYPE]
    start, end = int(executed["cycles_from"].min()), int(executed["cycles_to"].max())
    # the run's two opening host copies (and the host's start-of-run wait in them) precede the
    # pipeline: the first cycle starts after them
    ends = frame[(frame["ipu"] == ipus[0]) & (frame["type"] == "StreamCopyEnd")]["cycles_to"].to_numpy()
    if len(ends) > 2 and (not len(first) or ends[1] < int(first["cycles_to"].iloc[0])):
        start = int(ends[1])
    cuts = [start] + [int(c) for c in first["cycles_to"] if int(c) > start] + [end]
    cuts = sorted(set(cuts))
    busy = executed[executed["type"].isin(COMPUTE_TYPES)]
    compute: list[tuple[int, ...]] = []
    for a, b in zip(cuts[:-1], cuts[1:]):
        row = []
        for ipu in ipus:
            mine = busy[busy["ipu"] == ipu]
            lo = np.maximum(mine["cycles_from"].to_numpy(), a)
            hi = np.minimum(mine["cycles_to"].to_numpy(), b)
            row.append(int(np.clip(hi - lo, 0, None).sum()))
        compute.append(tuple(row))
    lengths = [b - a for a, b in zip(cuts[:-1], cuts[1:])]
    # back-to-back exchanges with no compute between them belong to one cycle's copies
    for k in range(len(compute) - 1, 0, -1):
        if not any(compute[k - 1]) and k - 1 > 0:
            merged = lengths.pop(k - 1)
            lengths[k - 1] += merged
            compute.pop(k - 1)
    total_median = float(np.median([sum(c) for c in compute]))
    while len(compute) > 1 and sum(compute[0]) < PROLOGUE_SHARE * total_median:
        compute.pop(0)
        lengths.pop(0)
    medians = [float(np.median([c[i] for c in compute])) for i in range(len(ipus))]
    steady = [all(abs(c[i] - medians[i]) <= STEADY_TOLERANCE * max(medians[i], 1.0) for i in range(len(ipus)))
              for c in compute]
    if any(steady):
        lo = steady.index(True)
        hi = len(steady) - 1 - steady[::-1].index(True)
        kinds = ["ramp-up"] * lo + ["steady"] * (hi - lo + 1) + ["ramp-down"] * (len(steady) - hi - 1)
    else:
        kinds = ["steady"] * len(compute)
    return PipelineStructure(ipus, tuple(lengths), tuple(compute), tuple(kinds))


def _union(starts: np.ndarray, ends: np.ndarray) -> list[tuple[int, int]]:
    order = np.argsort(starts, kind="stable")
    merged: list[list[int]] = []
    for a, b in zip(starts[order], ends[order]):
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], int(b))
        else:
            merged.append([int(a), int(b)])
    return [(a, b) for a, b in merged]


def _intersect(x: list[tuple[int, int]], y: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    i = j = 0
    while i < len(x) and j < len(y):
        a, b = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if a < b:
            out.append((a, b))
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return out


def _covered(intervals: list[tuple[int, int]]) -> int:
    return sum(b - a for a, b in intervals)


def _all_at_once(run: pd.DataFrame, types: frozenset[str]) -> float:
    """Share of the time some IPU is in a block of ``types`` during which every IPU is."""
    frame = run[run["type"].astype(str).isin(types)]
    ipus = sorted(int(i) for i in run["ipu"].unique())
    if len(ipus) < 2 or not len(frame):
        return 0.0
    per_ipu = []
    for ipu in ipus:
        mine = frame[frame["ipu"] == ipu]
        per_ipu.append(_union(mine["cycles_from"].to_numpy(dtype="int64"), mine["cycles_to"].to_numpy(dtype="int64")))
    any_ipu = _union(frame["cycles_from"].to_numpy(dtype="int64"), frame["cycles_to"].to_numpy(dtype="int64"))
    every = per_ipu[0]
    for other in per_ipu[1:]:
        every = _intersect(every, other)
    total = _covered(any_ipu)
    return _covered(every) / total if total else 0.0


@dataclass(frozen=True)
class Overlaps:
    """Shares of one run: host-copy time with every IPU in a host copy at once, compute time with
    every IPU computing at once, and waiting (SyncAns) cycles per IPU."""

    host_copies_together: float
    compute_together: float
    waiting: Mapping[int, int]


def overlaps(run: pd.DataFrame) -> Overlaps:
    """The :class:`Overlaps` of one run."""
    waits = run[run["type"].astype(str) == WAITING_TYPE]
    waiting = {int(i): int((g["cycles_to"] - g["cycles_from"]).sum()) for i, g in waits.groupby("ipu")}
    return Overlaps(_all_at_once(run, HOST_COPY_TYPES), _all_at_once(run, COMPUTE_TYPES), waiting)


@dataclass(frozen=True)
class HostCopyCosts:
    """Host stream copies of a measured run, matched across its IPUs (medians, cycles): each run
    opens with two control copies, the second waiting ``run_start_wait`` for the host; then every
    host transfer is a control copy (Mid on the first IPU) and the data copy. Begin is counted from
    the last IPU's arrival (so an IPU's wait for another is left out), End after the longest Mid."""

    control_begin: float
    control_mid: float
    control_end: float
    data_begin: float
    data_end: float
    run_start_wait: float
    copies_per_run: int


def host_copy_costs(trace: pd.DataFrame) -> HostCopyCosts:
    """The :class:`HostCopyCosts` of a measured multi-IPU trace (every IPU takes part in every copy)."""
    runs = split_runs(trace)
    control: dict[str, list[int]] = {"B": [], "M": [], "E": []}
    data: dict[str, list[int]] = {"B": [], "E": []}
    waits: list[int] = []
    per_run = 0
    for run in runs:
        lanes = []
        for _ipu, lane in run[run["type"].isin(HOST_COPY_TYPES)].groupby("ipu", sort=True):
            copies: list[dict[str, tuple[int, int]]] = []
            for kind, a, b in zip(lane["type"], lane["cycles_from"], lane["cycles_to"]):
                if kind == "StreamCopyBegin":
                    copies.append({"B": (int(a), int(b))})
                elif copies:
                    copies[-1]["M" if kind == "StreamCopy" else "E"] = (int(a), int(b))
            lanes.append(copies)
        if not lanes or len({len(c) for c in lanes}) != 1:
            raise ValueError("host_copy_costs: the IPUs do not take part in the same host copies")
        per_run = len(lanes[0])
        for k, parts in enumerate(zip(*lanes)):
            begin_end = max(p["B"][1] for p in parts)
            begin = begin_end - max(p["B"][0] for p in parts)
            mid = max((p["M"][1] - p["M"][0] for p in parts if "M" in p), default=0)
            end = max(p["E"][1] for p in parts if "E" in p) - begin_end - mid
            if k == 0:
                continue  # the run's first opening copy
            if k == 1:
                waits.append(begin)
            elif k % 2 == 0:
                control["B"].append(begin)
                control["M"].append(mid)
                control["E"].append(end)
            else:
                data["B"].append(begin)
                data["E"].append(end)
    return HostCopyCosts(float(np.median(control["B"])), float(np.median(control["M"])), float(np.median(control["E"])),
                         float(np.median(data["B"])), float(np.median(data["E"])), float(np.mean(waits)), per_run)


def relative_error(simulated: float, measured: float) -> float:
    """(simulated - measured) / measured; 0 when both are 0, inf when only the measurement is 0."""
    if measured == 0:
        return 0.0 if simulated == 0 else float("inf")
    return (simulated - measured) / measured


@dataclass(frozen=True)
class TypeRow:
    """One (IPU, block type): blocks and cycles per run, simulated and measured."""

    ipu: int
    type: str
    sim_blocks: int
    real_blocks: float
    sim_cycles: int
    real_cycles: float

    @property
    def blocks_error(self) -> float:
        return relative_error(self.sim_blocks, self.real_blocks)

    @property
    def cycles_error(self) -> float:
        return relative_error(self.sim_cycles, self.real_cycles)


@dataclass(frozen=True)
class TraceComparison:
    """A simulated run against the mean of the measured runs (see the module docstring)."""

    real_runs: int
    real_run_spans: tuple[Mapping[int, int], ...]
    sim_spans: Mapping[int, int]
    real_spans: Mapping[int, float]
    rows: tuple[TypeRow, ...]
    sim_pipeline: PipelineStructure
    real_pipeline: PipelineStructure
    sim_overlaps: Overlaps
    real_overlaps: Overlaps

    @property
    def ipus(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.sim_spans) | set(self.real_spans)))

    def span_error(self, ipu: int) -> float:
        return relative_error(self.sim_spans.get(ipu, 0), self.real_spans.get(ipu, 0.0))

    @property
    def compared_rows(self) -> tuple[TypeRow, ...]:
        """The rows the maxima cover: every type but SyncAns (the simulator has none)."""
        return tuple(r for r in self.rows if r.type != WAITING_TYPE)

    @property
    def blocks_max_error(self) -> float:
        return max((abs(r.blocks_error) for r in self.compared_rows), default=0.0)

    @property
    def cycles_max_error(self) -> float:
        return max((abs(r.cycles_error) for r in self.compared_rows), default=0.0)

    def summary_line(self) -> str:
        """``trace fidelity: span error IPU0 +x%, IPU1 +y%; block counts max error z%; cycles per
        type max error w%``."""
        spans = ", ".join(f"IPU{i} {self.span_error(i) * 100:+.1f}%" for i in self.ipus)
        return (f"trace fidelity: span error {spans}; block counts max error {self.blocks_max_error * 100:.1f}%; "
                f"cycles per type max error {self.cycles_max_error * 100:.1f}%")


def compare_traces(simulated: pd.DataFrame, measured: pd.DataFrame) -> TraceComparison:
    """The simulated trace's first run (a simulated report draws every profiled run, each the
    same; :func:`split_runs` cuts them by its ``run`` column) against the measured one (mean over
    its runs, :func:`split_runs`)."""
    if not len(simulated) or not len(measured):
        raise ValueError("compare_traces: a trace without blocks")
    sim_runs = split_runs(simulated)[:1]
    real_runs = split_runs(measured)
    sim = ipu_figures(sim_runs[0])
    reals = [ipu_figures(r) for r in real_runs]
    ipus = sorted(set(sim) | {i for f in reals for i in f})
    rows: list[TypeRow] = []
    for ipu in ipus:
        s = sim.get(ipu, IpuFigures(0, {}, {}))
        types = sorted(set(s.blocks) | {t for f in reals for t in f.get(ipu, IpuFigures(0, {}, {})).blocks})
        for t in types:
            rb = float(np.mean([f.get(ipu, IpuFigures(0, {}, {})).blocks.get(t, 0) for f in reals]))
            rc = float(np.mean([f.get(ipu, IpuFigures(0, {}, {})).cycles.get(t, 0) for f in reals]))
            rows.append(TypeRow(ipu, t, s.blocks.get(t, 0), rb, s.cycles.get(t, 0), rc))
    real_spans = {i: float(np.mean([f[i].span for f in reals if i in f])) for i in ipus if any(i in f for f in reals)}
    return TraceComparison(
        real_runs=len(real_runs),
        real_run_spans=tuple({i: f[i].span for i in f} for f in reals),
        sim_spans={i: sim[i].span for i in sim},
        real_spans=real_spans,
        rows=tuple(rows),
        sim_pipeline=pipeline_structure(sim_runs[0]),
        real_pipeline=pipeline_structure(real_runs[0]),
        sim_overlaps=overlaps(sim_runs[0]),
        real_overlaps=overlaps(real_runs[0]),
    )


__all__ = ["COMPUTE_TYPES", "HOST_COPY_TYPES", "INTER_IPU_TYPE", "HostCopyCosts", "IpuFigures", "Overlaps",
           "PipelineStructure", "TraceComparison", "TypeRow", "compare_traces", "host_copy_costs", "ipu_figures",
           "overlaps", "pipeline_structure", "relative_error", "split_runs"]
