"""The verdict of a comparison as structured facts: what moved where, what it did to peak tile
memory and to time, and whether each side fits in tile memory.

Pure functions of a :class:`~profcompare.comparison.Comparison` (or, for several variants, of an
:class:`~profcompare.analysis.nway.NWayTable`); no wording here. The render layer turns the facts into
the two or three sentences every comparison opens with (:mod:`profcompare.render.verdict_words`),
so the sentences change exactly when the figures do and nothing is written per workload.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from profcompare.model import HIGHER_IS_BETTER, LOCATIONS, Report

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.comparison.comparison import Comparison
    from profcompare.analysis.nway import NWayTable

#: Summary metrics the verdict reads for tile memory, in the order the sentence names them: peak
#: liveness is always-live + the not-always-live peak, so the sentence names both terms (and code,
#: the usual reason always-live memory moves) before it.
MEMORY_METRICS: tuple[str, ...] = ("not_always_live_peak_bytes", "always_live_bytes", "code_bytes",
                                   "peak_liveness_bytes", "max_tile_bytes")
#: Summary metrics the verdict reads for time, in the order the sentence names them.
TIME_METRICS: tuple[str, ...] = ("seconds_per_step", "samples_per_second", "cycles_per_step", "host_seconds_per_step")
#: How many roles the verdict names as the largest moves.
MOVES_NAMED = 2


@dataclass(frozen=True)
class Change:
    """One summary metric, base against new (delta = new - base; ``delta_pct`` NaN for a zero or
    missing base; ``status`` grew | shrank | unchanged | n/a with the comparison's noise rule)."""

    metric: str
    base: float
    new: float
    delta: float
    delta_pct: float
    status: str
    confidence: str

    @property
    def known(self) -> bool:
        """True when both sides have the figure."""
        return not (math.isnan(self.base) or math.isnan(self.new))

    @property
    def better(self) -> bool | None:
        """True when the change is an improvement, False when it costs, None when unchanged."""
        if self.status not in ("grew", "shrank"):
            return None
        grew = self.status == "grew"
        return grew if self.metric in HIGHER_IS_BETTER else not grew


@dataclass(frozen=True)
class RoleMove:
    """The bytes of one role (summed over parameters) per ledger location, base and new.

    ``base`` / ``new`` map each of :data:`profcompare.model.LOCATIONS` to bytes per replica (the
    ledger's figures: not-always-live is what each parameter holds at once, summed);
    ``moved_bytes`` is the sum of |new - base| over locations; ``parameters`` how many parameters
    of this role changed."""

    role: str
    base: Mapping[str, int]
    new: Mapping[str, int]
    moved_bytes: int
    parameters: int
    #: bytes of the role's Streaming Memory in replica-sharded buffers, base and new (0 when unknown)
    sharded: tuple[int, int] = (0, 0)


@dataclass(frozen=True)
class TimeCause:
    """One of the largest causes of the device-time change (rows of the time diff summed per role
    and kind, a remote load and a remote store together as ``remote load/store``): the parameters
    charged (largest change first; none for a kind alone), the change of cycles per run and the
    part of it that is exposed."""

    role: str
    kind: str
    parameters: tuple[str, ...]
    delta_cycles: float
    exposed_cycles: float


#: How many causes the verdict's time sentence names.
TIME_CAUSES_NAMED = 2


def time_causes_named(causes: pd.DataFrame, delta_cycles: float, n: int = TIME_CAUSES_NAMED) -> tuple[TimeCause, ...]:
    """The ``n`` largest causes of a device-time change of ``delta_cycles`` from ``causes`` (the
    time diff per parameter, role and kind: :meth:`Comparison.time_causes`), summed per role and
    kind family; only causes moving the same way as the change itself, and never the run span
    outside the steps. Empty when nothing changed."""
    from profcompare.comparison.time_diff import SPAN_KIND

    if not len(causes) or not delta_cycles or math.isnan(delta_cycles):
        return ()
    families: dict[tuple[str, str], list[Any]] = {}
    for parameter, role, kind, delta, exposed in zip(causes["parameter"].astype(str), causes["role"].astype(str),
                                                      causes["kind"].astype(str), causes["delta_cycles"],
                                                      causes["delta_exposed_cycles"]):
        if kind == SPAN_KIND:
            continue
        family = "remote load/store" if kind in ("remote load", "remote store") else kind
        entry = families.setdefault((role, family), [0.0, 0.0, {}])
        entry[0] += float(delta)
        entry[1] += float(exposed)
        if parameter:
            entry[2][parameter] = entry[2].get(parameter, 0.0) + float(delta)
    sign = 1.0 if delta_cycles > 0 else -1.0
    ranked = sorted(((key, value) for key, value in families.items() if value[0] * sign > 0),
                    key=lambda item: (-abs(item[1][0]), item[0]))
    return tuple(TimeCause(role, family, tuple(p for p, _ in sorted(value[2].items(), key=lambda pv: (-abs(pv[1]), pv[0]))),
                           value[0], value[1]) for (role, family), value in ranked[:n])


@dataclass(frozen=True)
class Fit:
    """Whether one report's program fits in tile memory."""

    label: str
    oom: bool
    tiles_over_budget: float
    max_tile_bytes: float
    bytes_per_tile: int

    @property
    def fits(self) -> bool:
        """False when the report is flagged out of memory or a tile is over its budget."""
        return not self.oom and not (self.tiles_over_budget > 0)


@dataclass(frozen=True)
class ComparisonVerdict:
    """The facts the verdict of one comparison is written from."""

    base_label: str
    new_label: str
    moves: tuple[RoleMove, ...]
    memory: tuple[Change, ...]
    time: tuple[Change, ...]
    base_fit: Fit
    new_fit: Fit
    clock_hz: tuple[float, float]
    #: the largest causes of the device-time change (:func:`time_causes_named`)
    time_causes: tuple[TimeCause, ...] = ()

    def change(self, metric: str) -> Change:
        """The :class:`Change` of one of :data:`MEMORY_METRICS` or :data:`TIME_METRICS`."""
        for item in (*self.memory, *self.time):
            if item.metric == metric:
                return item
        raise KeyError(metric)

    def to_dict(self) -> dict[str, Any]:
        """The facts as plain data (for the json output)."""
        def change(c: Change) -> dict[str, Any]:
            return {"metric": c.metric, "base": _plain(c.base), "new": _plain(c.new), "delta": _plain(c.delta),
                    "delta_pct": _plain(c.delta_pct), "status": c.status, "confidence": c.confidence}

        def fit(f: Fit) -> dict[str, Any]:
            return {"label": f.label, "fits": f.fits, "oom": f.oom, "tiles_over_budget": _plain(f.tiles_over_budget),
                    "max_tile_bytes": _plain(f.max_tile_bytes), "bytes_per_tile": f.bytes_per_tile}

        return {
            "base": self.base_label,
            "new": self.new_label,
            "moves": [{"role": m.role, "base": dict(m.base), "new": dict(m.new), "moved_bytes": m.moved_bytes,
                       "parameters": m.parameters, "sharded_streaming_memory": list(m.sharded)} for m in self.moves],
            "memory": [change(c) for c in self.memory],
            "time": [change(c) for c in self.time],
            "fit": {"base": fit(self.base_fit), "new": fit(self.new_fit)},
            "time_causes": [{"role": c.role, "kind": c.kind, "parameters": list(c.parameters),
                             "delta_cycles": _plain(c.delta_cycles), "exposed_cycles": _plain(c.exposed_cycles)}
                            for c in self.time_causes],
        }


def _plain(value: float) -> float | None:
    return None if value is None or math.isnan(float(value)) else float(value)


def role_moves(ledger_diff: pd.DataFrame, n: int | None = MOVES_NAMED) -> tuple[RoleMove, ...]:
    """The ledger diff summed per role and location, the roles whose bytes moved most first.

    ``ledger_diff`` is :attr:`Comparison.ledger`. Roles whose bytes did not change anywhere are
    left out; ties are broken by role name. ``n`` roles at most (None: all).
    """
    if not len(ledger_diff):
        return ()
    # plain arrays: a few roles, each summed per location (pandas indexing per role and location
    # cost more than the sums)
    roles = ledger_diff["role"].astype(str).to_numpy(dtype=object)
    location = ledger_diff["location"].astype(str).to_numpy(dtype=object)
    parameter = ledger_diff["parameter"].astype(str).to_numpy(dtype=object)
    base_bytes = ledger_diff["base_bytes"].to_numpy(dtype=np.int64)
    new_bytes = ledger_diff["new_bytes"].to_numpy(dtype=np.int64)
    delta = ledger_diff["delta_bytes"].to_numpy(dtype=np.int64)
    at = {loc: location == loc for loc in LOCATIONS}
    moves = []
    for role in sorted(set(roles.tolist())):
        mine = roles == role
        moved = int(np.abs(delta[mine]).sum())
        if not moved:
            continue
        base = {loc: int(base_bytes[mine & at[loc]].sum()) for loc in LOCATIONS}
        new = {loc: int(new_bytes[mine & at[loc]].sum()) for loc in LOCATIONS}
        changed = len(set(parameter[mine & (delta != 0)].tolist()))
        moves.append(RoleMove(str(role), base, new, moved, int(changed)))
    moves.sort(key=lambda m: (-m.moved_bytes, m.role))
    return tuple(moves if n is None else moves[:n])


def _change(summary: pd.DataFrame, metric: str) -> Change:
    row = summary.loc[metric]
    return Change(metric, float(row["base"]), float(row["new"]), float(row["delta"]), float(row["delta_pct"]),
                  str(row["status"]), str(row["confidence"]))


def _fit(report: Report, summary: pd.DataFrame, side: str) -> Fit:
    return Fit(report.label, bool(report.meta.oom), float(summary.loc["tiles_over_budget", side]),
               float(summary.loc["max_tile_bytes", side]), int(report.meta.target.bytes_per_tile))


def _sharded_bytes(report: Report, role: str) -> int:
    buffers = report.remote_buffers
    if not len(buffers):
        return 0
    mask = (buffers["role"].astype(str) == role).to_numpy() & buffers["sharded"].to_numpy(dtype=bool)
    return int(buffers["bytes"].to_numpy(dtype=np.int64)[mask].sum())


def comparison_verdict(cmp: Comparison) -> ComparisonVerdict:
    """The verdict facts of ``cmp``: the :data:`MOVES_NAMED` roles whose bytes moved most
    (:func:`role_moves`), the changes of :data:`MEMORY_METRICS` and :data:`TIME_METRICS` (rows of
    ``cmp.summary``) and whether each side fits in tile memory."""
    moves = tuple(dataclasses.replace(m, sharded=(_sharded_bytes(cmp.base, m.role), _sharded_bytes(cmp.new, m.role)))
                  for m in role_moves(cmp.ledger))
    return ComparisonVerdict(
        base_label=cmp.base.label,
        new_label=cmp.new.label,
        moves=moves,
        memory=tuple(_change(cmp.summary, m) for m in MEMORY_METRICS),
        time=tuple(_change(cmp.summary, m) for m in TIME_METRICS),
        base_fit=_fit(cmp.base, cmp.summary, "base"),
        new_fit=_fit(cmp.new, cmp.summary, "new"),
        clock_hz=(float(cmp.base.meta.target.clock_hz), float(cmp.new.meta.target.clock_hz)),
        time_causes=_time_causes(cmp),
    )


def _time_causes(cmp: Comparison) -> tuple[TimeCause, ...]:
    """The largest causes of the device-time change, when both reports have an execution profile."""
    if not len(cmp.base.execution) or not len(cmp.new.execution):
        return ()
    return time_causes_named(cmp.time_causes(), cmp.time_diff_summary().delta_cycles)


# --------------------------------------------------------------------------- several variants


@dataclass(frozen=True)
class VariantVerdict:
    """One variant of an N-way view against the base: its changes (``delta_pct`` from the base),
    its largest role move and whether it fits."""

    label: str
    status: str
    memory: tuple[Change, ...]
    time: tuple[Change, ...]
    move: RoleMove | None
    fits: bool | None


@dataclass(frozen=True)
class NWayVerdict:
    """The facts of an N-way verdict: each variant against the base, which fit in tile memory
    and which is fastest (most samples per second; None without throughput figures)."""

    base: str
    variants: tuple[VariantVerdict, ...]
    fitting: tuple[str, ...]
    not_fitting: tuple[str, ...]
    fastest: str | None
    fastest_samples_per_second: float

    def to_dict(self) -> dict[str, Any]:
        """The facts as plain data (for index.json)."""
        return {
            "base": self.base,
            "fitting": list(self.fitting),
            "not_fitting": list(self.not_fitting),
            "fastest": self.fastest,
            "fastest_samples_per_second": _plain(self.fastest_samples_per_second),
            "variants": [
                {"label": v.label, "status": v.status, "fits": v.fits,
                 "changes": {c.metric: {"base": _plain(c.base), "new": _plain(c.new), "delta_pct": _plain(c.delta_pct)}
                             for c in (*v.memory, *v.time)},
                 "largest_move": None if v.move is None else {"role": v.move.role, "base": dict(v.move.base),
                                                              "new": dict(v.move.new),
                                                              "moved_bytes": v.move.moved_bytes}}
                for v in self.variants
            ],
        }


def _nway_status(metric: str, base: float, new: float) -> str:
    """grew | shrank | unchanged | n/a with the comparison's default noise rule (64 B and 1%)."""
    if math.isnan(base) or math.isnan(new):
        return "n/a"
    delta = new - base
    noise_abs = 64.0 if metric.endswith("_bytes") else math.inf
    threshold = min(noise_abs, 0.01 * abs(base))
    return "grew" if delta > threshold else "shrank" if delta < -threshold else "unchanged"


def _nway_change(table: NWayTable, metric: str, label: str) -> Change:
    if metric not in table.values.index:
        nan = math.nan
        return Change(metric, nan, nan, nan, nan, "n/a", "")
    base = float(table.values.at[metric, table.base])
    new = float(table.values.at[metric, label])
    return Change(metric, base, new, new - base, float(table.delta_pct.at[metric, label]),
                  _nway_status(metric, base, new), str(table.confidence.at[metric, label]))


def _nway_moves(table: NWayTable, label: str) -> RoleMove | None:
    ledger = table.ledger
    if not len(ledger) or label not in ledger.columns or table.base not in ledger.columns:
        return None
    frame = ledger[[table.base, label]].reset_index()
    if frame[[table.base, label]].isna().any().any():
        return None
    frame = pd.DataFrame({
        "parameter": frame["parameter"].astype(str), "role": frame["role"].astype(str),
        "location": frame["location"].astype(str),
        "base_bytes": frame[table.base].to_numpy(dtype=np.int64), "new_bytes": frame[label].to_numpy(dtype=np.int64),
    })
    frame["delta_bytes"] = frame["new_bytes"] - frame["base_bytes"]
    moves = role_moves(frame, 1)
    return moves[0] if moves else None


def _nway_fits(table: NWayTable, label: str) -> bool | None:
    status = table.statuses.get(label, "ok")
    if status == "oom":
        return False
    over = float(table.values.at["tiles_over_budget", label]) if "tiles_over_budget" in table.values.index else math.nan
    if math.isnan(over):
        return None
    return not over > 0


def nway_verdict(table: NWayTable) -> NWayVerdict:
    """The verdict facts of an N-way table: every non-base variant against the base (the
    changes of :data:`MEMORY_METRICS` and :data:`TIME_METRICS`, its largest role move from the
    side-by-side ledger), which variants fit in tile memory (no tile over budget and not oom;
    variants without a report are in neither list) and which has the most samples per second."""
    variants = []
    for label in table.labels:
        if label == table.base:
            continue
        variants.append(VariantVerdict(
            label, table.statuses.get(label, "ok"),
            tuple(_nway_change(table, m, label) for m in MEMORY_METRICS),
            tuple(_nway_change(table, m, label) for m in TIME_METRICS),
            _nway_moves(table, label), _nway_fits(table, label),
        ))
    fits = {label: _nway_fits(table, label) for label in table.labels}
    fastest, best = None, math.nan
    if "samples_per_second" in table.values.index:
        rates = table.values.loc["samples_per_second"].astype("float64")
        if rates.notna().any():
            fastest = str(rates.idxmax())
            best = float(rates.max())
    return NWayVerdict(
        base=table.base,
        variants=tuple(variants),
        fitting=tuple(label for label in table.labels if fits[label] is True),
        not_fitting=tuple(label for label in table.labels if fits[label] is False),
        fastest=fastest,
        fastest_samples_per_second=best,
    )


__all__ = [
    "MEMORY_METRICS",
    "MOVES_NAMED",
    "TIME_METRICS",
    "Change",
    "ComparisonVerdict",
    "Fit",
    "NWayVerdict",
    "RoleMove",
    "TIME_CAUSES_NAMED",
    "TimeCause",
    "VariantVerdict",
    "comparison_verdict",
    "nway_verdict",
    "role_moves",
    "time_causes_named",
]
