"""What an advise search found: one record per point, whether it fits, the Pareto front of
throughput against the fullest tile, the best layouts and the verdict's facts.

Pure functions of the evaluated points (no I/O, no wording: the sentences are written by
:mod:`profcompare.render.advise_words`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

#: Streaming Memory of the machine per IPU, in bytes: an IPU-M2000 (4 IPUs) holds "up to 450 GB"
#: of DDR in its gateway (shared/reference/ipu_facts.md section 1.2, grade C). A point fits only
#: when every replica's remote buffers together stay within this times the machine's IPUs.
STREAMING_MEMORY_BYTES_PER_IPU = 450e9 / 4

#: the fields of a point in advise.json, exactly
POINT_FIELDS: tuple[str, ...] = ("knobs", "status", "reason", "fits", "pareto", "samples_per_second",
                                 "max_tile_bytes", "run_dir")
#: statuses of a point: ok / oom / failed as the run says, pruned when never run
POINT_STATUSES: tuple[str, ...] = ("ok", "oom", "failed", "pruned")
#: the memory ledger summary of a point (bytes per replica), as the front table shows it
LEDGER_METRICS: tuple[str, ...] = ("always_live_bytes", "not_always_live_peak_bytes", "streaming_memory_bytes",
                                   "code_bytes")
#: every metric a point record carries
POINT_METRICS: tuple[str, ...] = ("samples_per_second", "max_tile_bytes", "tiles_over_budget", "bytes_per_tile",
                                  *LEDGER_METRICS, "seconds_per_step", "num_replicas")


@dataclass(frozen=True)
class Machine:
    """The machine a search is for: its IPUs and their Streaming Memory."""

    ipus: int
    streaming_memory_bytes: float

    @classmethod
    def of(cls, ipus: int) -> Machine:
        """The machine of ``ipus`` IPUs (Streaming Memory: :data:`STREAMING_MEMORY_BYTES_PER_IPU` each)."""
        return cls(ipus, ipus * STREAMING_MEMORY_BYTES_PER_IPU)


@dataclass(frozen=True)
class Evaluated:
    """One point that ran (or was reused): its knobs, label, status and summary figures."""

    knobs: Mapping[str, Any]
    label: str
    status: str  # ok | oom | failed
    error: str | None
    metrics: Mapping[str, float]  # POINT_METRICS (NaN when unknown)
    cached: bool = False


def fit_reason(status: str, metrics: Mapping[str, float], machine: Machine) -> str | None:
    """Why a point that ran does not fit (None when it fits): no report, tiles over budget, or
    Streaming Memory beyond the machine's. The reason is a fixed phrase so points can be counted."""
    if status == "failed":
        return "failed"
    over = metrics.get("tiles_over_budget", math.nan)
    if status == "oom" or (not math.isnan(over) and over > 0):
        return "tiles over budget"
    if math.isnan(metrics.get("max_tile_bytes", math.nan)):
        return "no tile figures"
    streaming = metrics.get("streaming_memory_bytes", 0.0) * max(1.0, metrics.get("num_replicas", 1.0))
    if not math.isnan(streaming) and streaming > machine.streaming_memory_bytes:
        return "Streaming Memory over the machine's"
    return None


def fits(status: str, metrics: Mapping[str, float], machine: Machine) -> bool:
    """True when the point ran and nothing is over budget (see :func:`fit_reason`)."""
    return fit_reason(status, metrics, machine) is None


def pareto_mask(throughput: Sequence[float], memory: Sequence[float], eligible: Sequence[bool]) -> np.ndarray:
    """Which points are on the Pareto front: eligible, known figures, and no other such point is at
    least as fast with at most as much memory and strictly better in one (bool array).

    Throughput is maximised, memory minimised; points with equal figures do not dominate each
    other (both are on the front).
    """
    rate = np.asarray(throughput, dtype="float64")
    mem = np.asarray(memory, dtype="float64")
    ok = np.asarray(eligible, dtype=bool) & np.isfinite(rate) & np.isfinite(mem)
    front = np.zeros(len(rate), dtype=bool)
    index = np.flatnonzero(ok)
    for i in index:
        others = index[index != i]
        dominated = ((rate[others] >= rate[i]) & (mem[others] <= mem[i])
                     & ((rate[others] > rate[i]) | (mem[others] < mem[i])))
        front[i] = not dominated.any()
    return front


def dominates(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """True when point ``a`` = (throughput, memory) dominates ``b``."""
    return a[0] >= b[0] and a[1] <= b[1] and (a[0] > b[0] or a[1] < b[1])


def point_frame(searched: Sequence[str], evaluated: Sequence[Evaluated], pruned: Sequence[tuple[Mapping[str, Any], str]],
                machine: Machine) -> pd.DataFrame:
    """Every point of the search: the evaluated ones in evaluation order, then the pruned ones.

    Columns: label (str; "" for pruned), knobs (dict), one column per searched knob, status
    (:data:`POINT_STATUSES`), reason (str or None: why it was pruned, failed or does not fit),
    fits (bool), pareto (bool), then :data:`POINT_METRICS` (float64: samples/s, bytes per replica,
    seconds; NaN when unknown), cached (bool), run_dir (str or None: the point's directory,
    relative to the advise run).
    """
    rows: list[dict[str, Any]] = []
    for point in evaluated:
        reason = fit_reason(point.status, point.metrics, machine)
        if point.status == "failed" and point.error:
            reason = f"failed: {point.error}"
        row = {"label": point.label, "knobs": dict(point.knobs), **{k: point.knobs.get(k) for k in searched},
               "status": point.status, "reason": reason, "fits": reason is None, "pareto": False}
        row.update({m: float(point.metrics.get(m, math.nan)) for m in POINT_METRICS})
        row.update({"cached": point.cached, "run_dir": point.label})
        rows.append(row)
    for knobs, why in pruned:
        row = {"label": "", "knobs": dict(knobs), **{k: knobs.get(k) for k in searched}, "status": "pruned",
               "reason": why, "fits": False, "pareto": False}
        row.update({m: math.nan for m in POINT_METRICS})
        row.update({"cached": False, "run_dir": None})
        rows.append(row)
    columns = ["label", "knobs", *searched, "status", "reason", "fits", "pareto", *POINT_METRICS, "cached", "run_dir"]
    frame = pd.DataFrame(rows, columns=columns)
    for metric in POINT_METRICS:
        frame[metric] = frame[metric].astype("float64")
    for text in ("reason", "run_dir"):  # None, not NaN, where there is none
        frame[text] = frame[text].astype(object).where(frame[text].notna(), None)
    for flag in ("fits", "pareto", "cached"):
        frame[flag] = frame[flag].astype(bool)
    frame["pareto"] = pareto_mask(frame["samples_per_second"], frame["max_tile_bytes"], frame["fits"])
    return frame


def front(points: pd.DataFrame) -> pd.DataFrame:
    """The Pareto front, fastest first (ties: less memory first)."""
    chosen = points[points["pareto"]]
    return chosen.sort_values(["samples_per_second", "max_tile_bytes"], ascending=[False, True], kind="stable")


@dataclass(frozen=True)
class PointFact:
    """A point as the verdict names it."""

    label: str
    knobs: Mapping[str, Any]
    samples_per_second: float
    max_tile_bytes: float
    bytes_per_tile: float
    tiles_over_budget: float
    reason: str | None

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> PointFact:
        """The fact of one row of :func:`point_frame`."""
        return cls(str(row["label"]), dict(row["knobs"]), float(row["samples_per_second"]),
                   float(row["max_tile_bytes"]), float(row["bytes_per_tile"]), float(row["tiles_over_budget"]),
                   row["reason"])


@dataclass(frozen=True)
class AskedLayout:
    """A layout the user asked about (knob values, e.g. from ``--fail-if-not-fits``): how many
    evaluated points have those values, the fastest of them that fits, and whether any of them is
    on the Pareto front. ``first`` is the first match (to say why none fits)."""

    wanted: Mapping[str, str]
    matches: int
    best: PointFact | None
    on_front: bool
    first: PointFact | None

    @property
    def fits(self) -> bool:
        """True when some matching point fits."""
        return self.best is not None


@dataclass(frozen=True)
class AdviseVerdict:
    """The facts the advise verdict is written from."""

    workload: str
    ipus: int
    global_batch: int
    method: str  # exhaustive | nsga2
    valid_points: int  # points the space holds after pruning
    evaluated: int
    new: int
    cached: int
    fitting: int
    pruned: Mapping[str, int]  # reason -> count
    front: tuple[PointFact, ...]  # fastest first
    fastest: PointFact | None  # the fastest layout that fits
    runner_up: PointFact | None  # the next fitting layout by throughput
    fastest_overall: PointFact | None  # the fastest layout of all, when it does not fit
    smallest: PointFact | None  # the fitting layout with the least memory on its fullest tile
    closest: PointFact | None = None  # when none fits: the layout with the least memory on its fullest tile
    best_by_variant: tuple[PointFact, ...] = field(default=())  # the fastest fitting layout of each variant
    asked: tuple[AskedLayout, ...] = field(default=())  # the best layout under each layout the user named

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (NaN as None)."""
        import dataclasses

        def clean(value: Any) -> Any:
            if isinstance(value, float) and math.isnan(value):
                return None
            if isinstance(value, Mapping):
                return {k: clean(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [clean(v) for v in value]
            return value

        return clean(dataclasses.asdict(self))  # type: ignore[no-any-return]


def _fastest(rows: pd.DataFrame) -> pd.DataFrame:
    known = rows[np.isfinite(rows["samples_per_second"].to_numpy(dtype="float64"))]
    return known.sort_values(["samples_per_second", "max_tile_bytes"], ascending=[False, True], kind="stable")


def asked_layout(points: pd.DataFrame, wanted: Mapping[str, str]) -> AskedLayout:
    """What the search found for the layouts with the knob values ``wanted``."""
    matches = match_layout(points, wanted)
    fitting = _fastest(matches[matches["fits"]])
    return AskedLayout(dict(wanted), len(matches), PointFact.of(fitting.iloc[0]) if len(fitting) else None,
                       bool(matches["pareto"].any()), PointFact.of(matches.iloc[0]) if len(matches) else None)


def advise_verdict(points: pd.DataFrame, *, workload: str, ipus: int, global_batch: int, method: str,
                   valid_points: int, pruned: Mapping[str, int],
                   asked: Sequence[Mapping[str, str]] = ()) -> AdviseVerdict:
    """The verdict's facts of a :func:`point_frame`; ``asked``: layouts (knob values) the user
    named, each answered by :func:`asked_layout`."""
    ran = points[points["status"] != "pruned"]
    fitting = _fastest(ran[ran["fits"]])
    everything = _fastest(ran)
    fastest = PointFact.of(fitting.iloc[0]) if len(fitting) else None
    runner_up = PointFact.of(fitting.iloc[1]) if len(fitting) > 1 else None
    overall = None
    if len(everything) and not bool(everything.iloc[0]["fits"]):
        overall = PointFact.of(everything.iloc[0])
    smallest = None
    if len(fitting):
        by_memory = fitting.sort_values(["max_tile_bytes", "samples_per_second"], ascending=[True, False], kind="stable")
        smallest = PointFact.of(by_memory.iloc[0])
    closest = None
    known_memory = ran[np.isfinite(ran["max_tile_bytes"].to_numpy(dtype="float64"))]
    if fastest is None and len(known_memory):
        closest = PointFact.of(known_memory.sort_values("max_tile_bytes", kind="stable").iloc[0])
    by_variant = []
    variants = [k.get("variant") for k in fitting["knobs"]] if len(fitting) else []
    for variant in dict.fromkeys(variants):
        chosen = fitting[[k.get("variant") == variant for k in fitting["knobs"]]]
        by_variant.append(PointFact.of(chosen.iloc[0]))
    return AdviseVerdict(
        workload=workload, ipus=ipus, global_batch=global_batch, method=method, valid_points=valid_points,
        evaluated=len(ran), new=int((~ran["cached"]).sum()), cached=int(ran["cached"].sum()),
        fitting=int(ran["fits"].sum()), pruned=dict(pruned),
        front=tuple(PointFact.of(row) for _, row in front(points).iterrows()),
        fastest=fastest, runner_up=runner_up, fastest_overall=overall, smallest=smallest, closest=closest,
        best_by_variant=tuple(by_variant), asked=tuple(asked_layout(points, wanted) for wanted in asked),
    )


def match_layout(points: pd.DataFrame, wanted: Mapping[str, Any]) -> pd.DataFrame:
    """The evaluated points whose knobs equal every ``wanted`` value (compared as text, so
    ``replicas=4`` matches the int 4)."""
    ran = points[points["status"] != "pruned"]
    keep = [all(str(knobs.get(k)) == str(v) for k, v in wanted.items()) for knobs in ran["knobs"]]
    return ran[keep]


__all__ = [
    "AdviseVerdict",
    "AskedLayout",
    "Evaluated",
    "LEDGER_METRICS",
    "Machine",
    "POINT_FIELDS",
    "POINT_METRICS",
    "POINT_STATUSES",
    "PointFact",
    "STREAMING_MEMORY_BYTES_PER_IPU",
    "advise_verdict",
    "asked_layout",
    "dominates",
    "fit_reason",
    "fits",
    "front",
    "match_layout",
    "pareto_mask",
    "point_frame",
]
