"""Pure functions over a report's execution trace (``Report.trace``): spans, totals per block
type, and the per-bin overview a zoomed-out view draws. No I/O, no plotting.

Blocks of a trace overlap (a SyncAns block covers the blocks it waits for), so the time of a
run is the span of an IPU's blocks, never the sum of their lengths; the per-type sums here are
"cycles spent in blocks of this type", which for SyncAns counts waiting that other blocks cover.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from profcompare.model import text_codes
from profcompare.perf.memo import copy_on_write

#: Graph Analyser's type of the blocks that overlap the blocks they wait for.
WAITING_TYPE = "SyncAns"


def trace_runs(trace: pd.DataFrame) -> tuple[int, ...]:
    """The profiled runs a trace holds blocks of, in order (empty without blocks)."""
    if not len(trace):
        return ()
    return tuple(int(r) for r in np.unique(trace["run"].to_numpy(dtype="int64")))


def steady_run(runs: tuple[int, ...]) -> int | None:
    """The first steady-state run of ``runs``: the second run when there are several (the first
    run includes one-time work: loading code and weights, warming the host), else the only one;
    None without runs."""
    if not runs:
        return None
    return runs[1] if len(runs) > 1 else runs[0]


@dataclass(frozen=True)
class RunChoice:
    """Which run of a trace the views draw: ``run`` (None without a trace), every run the trace
    holds (``runs``), and whether it was ``asked`` for (``--run``) or is the default."""

    run: int | None
    runs: tuple[int, ...]
    asked: bool

    def sentence(self) -> str:
        """How the views say which run they draw ("" with at most one run)."""
        if self.run is None or len(self.runs) <= 1:
            return ""
        how = "chosen with --run" if self.asked else "the first steady-state run; --run N picks another"
        return f"Run {self.run} of runs {self.runs[0]}–{self.runs[-1]} ({how})."


class UnknownRunError(ValueError):
    """A run asked for that the trace does not hold."""


def choose_run(trace: pd.DataFrame, run: int | None = None) -> RunChoice:
    """The run of ``trace`` the views draw: ``run`` when given (raises :class:`UnknownRunError`
    when the trace holds blocks but none of that run), else :func:`steady_run`."""
    runs = trace_runs(trace)
    if run is None:
        return RunChoice(steady_run(runs), runs, False)
    if runs and run not in runs:
        raise UnknownRunError(f"the trace has no run {run} (its runs are {runs[0]}–{runs[-1]})")
    return RunChoice(run if runs else None, runs, True)


def run_blocks(trace: pd.DataFrame, choice: RunChoice) -> pd.DataFrame:
    """The blocks of ``trace`` in the chosen run (all of them when it holds one run)."""
    if choice.run is None or len(choice.runs) <= 1:
        return trace
    run = trace["run"].to_numpy(dtype="int64")
    if copy_on_write() and bool(np.all(run[1:] >= run[:-1])):
        # blocks in run order (every reader writes them so): the run's rows as a slice, which
        # copy-on-write shares with the table instead of copying millions of rows
        lo, hi = np.searchsorted(run, [choice.run, choice.run + 1])
        return trace.iloc[int(lo):int(hi)]
    return trace[run == choice.run]


def trace_spans(trace: pd.DataFrame) -> pd.DataFrame:
    """Per IPU: first ``cycles_from``, last ``cycles_to``, ``span_cycles`` (their difference),
    ``blocks`` (count) -- int64 columns, one row per IPU in order; empty without blocks."""
    if not len(trace):
        return pd.DataFrame({c: pd.Series(dtype="int64") for c in ("ipu", "cycles_from", "cycles_to", "span_cycles", "blocks")})
    ipu = trace["ipu"].to_numpy(dtype="int64")
    by_ipu = np.argsort(ipu, kind="stable")
    ipu = ipu[by_ipu]
    starts = np.flatnonzero(np.r_[True, ipu[1:] != ipu[:-1]])
    first = np.minimum.reduceat(trace["cycles_from"].to_numpy(dtype="int64")[by_ipu], starts)
    last = np.maximum.reduceat(trace["cycles_to"].to_numpy(dtype="int64")[by_ipu], starts)
    return pd.DataFrame({"ipu": ipu[starts], "cycles_from": first, "cycles_to": last, "span_cycles": last - first,
                         "blocks": np.diff(np.r_[starts, len(ipu)])}).astype("int64")


def run_span(trace: pd.DataFrame) -> int:
    """Cycles from the first block's start to the last block's end over every IPU (0 when empty)."""
    if not len(trace):
        return 0
    return int(trace["cycles_to"].max() - trace["cycles_from"].min())


def type_totals(trace: pd.DataFrame, *, by_ipu: bool = True) -> pd.DataFrame:
    """Per (ipu, type) -- or per type with ``by_ipu=False`` -- ``blocks`` (int64), ``cycles``
    (int64, the sum of the blocks' lengths) and ``median_cycles`` (float64), sorted by ipu then
    cycles, largest first. Types with no blocks are left out."""
    keys = ["ipu", "type"] if by_ipu else ["type"]
    if not len(trace):
        frame = pd.DataFrame({k: pd.Series(dtype="int64" if k == "ipu" else object) for k in keys})
        frame["blocks"] = pd.Series(dtype="int64")
        frame["cycles"] = pd.Series(dtype="int64")
        frame["median_cycles"] = pd.Series(dtype="float64")
        return frame
    # the types as codes into their names while grouping (millions of blocks are not made strings)
    codes, type_names = text_codes(trace["type"])  # int64 codes
    length = (trace["cycles_to"] - trace["cycles_from"]).to_numpy(dtype="int64")
    ipu = trace["ipu"].to_numpy(dtype="int64")
    # one group per (ipu, type): the blocks sorted by group, then by length within it, so each
    # group's median is read from its middle (the mean of the two middle lengths for an even count)
    group = (ipu - ipu.min()) * len(type_names) + codes if by_ipu else codes
    by_group = np.lexsort((length, group))
    group, length_sorted = group[by_group], length[by_group]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    counts = np.diff(np.r_[starts, len(group)])
    low = length_sorted[starts + (counts - 1) // 2].astype("float64")
    high = length_sorted[starts + counts // 2].astype("float64")
    columns: dict[str, object] = {}
    if by_ipu:
        columns["ipu"] = ipu[by_group][starts]
    columns["type"] = np.asarray(type_names, dtype=object)[codes[by_group][starts]]
    columns["blocks"] = counts.astype("int64")
    columns["cycles"] = np.add.reduceat(length_sorted, starts).astype("int64")
    columns["median_cycles"] = (low + high) / 2
    out = pd.DataFrame(columns)
    order = (["ipu"] if by_ipu else []) + ["cycles", "type"]
    ascending = ([True] if by_ipu else []) + [False, True]
    return out.sort_values(order, ascending=ascending, kind="stable").reset_index(drop=True)


@dataclass(frozen=True)
class Overview:
    """A trace cut into ``bins`` equal time bins per IPU: ``busy[i, t, b]`` cycles that blocks of
    type ``types[t]`` on IPU ``ipus[i]`` cover in bin ``b`` (blocks of one type that overlap count
    each), bins ``edges[b]`` .. ``edges[b + 1]``."""

    ipus: tuple[int, ...]
    types: tuple[str, ...]
    edges: np.ndarray
    busy: np.ndarray  # (ipus, types, bins) int64


def overview(trace: pd.DataFrame, bins: int) -> Overview:
    """The per-bin busy cycles of every (IPU, type) over the trace's whole span (see :class:`Overview`)."""
    ipus = tuple(int(i) for i in sorted(trace["ipu"].unique())) if len(trace) else ()
    types = tuple(sorted(trace["type"].astype(str).unique())) if len(trace) else ()
    if not len(trace) or bins < 1:
        return Overview(ipus, types, np.zeros(1, dtype="int64"), np.zeros((len(ipus), len(types), 0), dtype="int64"))
    start = int(trace["cycles_from"].min())
    end = max(int(trace["cycles_to"].max()), start + 1)
    width = max(1, -(-(end - start) // bins))
    nbins = -(-(end - start) // width)
    edges = start + np.arange(nbins + 1, dtype="int64") * width
    a = trace["cycles_from"].to_numpy(dtype="int64") - start
    z = trace["cycles_to"].to_numpy(dtype="int64") - start
    ipu_index = np.searchsorted(np.asarray(ipus), trace["ipu"].to_numpy())
    type_index = np.searchsorted(np.asarray(types, dtype=object), trace["type"].astype(str).to_numpy(dtype=object))
    flat = (ipu_index * len(types) + type_index) * nbins
    busy = np.zeros(len(ipus) * len(types) * nbins, dtype="int64")
    first = a // width
    last = np.maximum(z - 1, a) // width
    same = first == last
    np.add.at(busy, flat[same] + first[same], (z - a)[same])
    cross = ~same
    # the partial first and last bins, then whole bins between them through a difference array
    np.add.at(busy, flat[cross] + first[cross], (first[cross] + 1) * width - a[cross])
    np.add.at(busy, flat[cross] + last[cross], z[cross] - last[cross] * width)
    diff = np.zeros(len(busy) + 1, dtype="int64")
    inner = cross & (last - first > 1)
    np.add.at(diff, flat[inner] + first[inner] + 1, width)
    np.add.at(diff, flat[inner] + last[inner], -width)
    whole = np.cumsum(diff[:-1]).reshape(len(ipus) * len(types), nbins)
    busy = busy.reshape(len(ipus) * len(types), nbins) + whole
    return Overview(ipus, types, edges, busy.reshape(len(ipus), len(types), nbins))


__all__ = ["Overview", "RunChoice", "UnknownRunError", "WAITING_TYPE", "choose_run", "overview", "run_blocks", "run_span",
           "steady_run", "trace_runs", "trace_spans", "type_totals"]
