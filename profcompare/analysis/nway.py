"""Several reports side by side: the N-way table of a run (one column per variant) or a sweep
(one column per point).

Pure data, no rendering: :func:`nway_table` turns reports (and, for variants without a report,
their status) into an :class:`NWayTable` whose frames have one row per summary metric and one
column per variant, the first (or the named) variant being the base every delta is taken from.
Renderers (:mod:`profcompare.render.nway`) draw it for the terminal, as JSON and as the run's
``index.html``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from profcompare.errors import ProfcompareError
from profcompare.model import HIGHER_IS_BETTER, METRIC_UNITS, METRICS, UNATTRIBUTED_OPERATION

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.model import Report, ReportMeta

#: version of the N-way JSON document (``index.json``; version 2 added its ``headline``, version
#: 3 its ``details``)
NWAY_SCHEMA_VERSION = 3

#: the detail figures an N-way table holds beside the summary metrics, each only when every
#: variant's report records what it needs: the operations' total code and how many operations
#: (the ``operations`` table), the fullest tile and its bytes including gaps (``tiles``)
DETAILS: tuple[str, ...] = ("operations_code_bytes", "operations", "fullest_tile", "fullest_tile_bytes")


@dataclass(frozen=True, eq=False)
class NWayTable:
    """Summary metrics of several variants side by side.

    ``values``: float64 DataFrame, index = metrics (units in :data:`profcompare.model.METRIC_UNITS`),
    one column per label in order (NaN where a variant has no report or the report cannot say).
    ``confidence``: same shape, ``exact`` | ``modelled`` | ``measured`` ('' without a report).
    ``delta_pct``: same shape, 100 * (value - base) / base (NaN for the base column, a missing
    value or a zero base). ``statuses``: label -> ok | oom | failed (``ok`` when not given).
    ``extra``: label -> {name: value} shown above the metrics (e.g. a sweep point's knobs).
    ``ledger``: the memory ledger side by side (:meth:`profcompare.model.Report.ledger`): index
    (parameter, role, location), one float64 bytes column per label (0 where the variant has no
    such row, NaN without a report), rows sorted by parameter, role, location; empty when not known.
    ``metas``: label -> the report's meta, for the variants with a report (what differs in their
    configuration from the base's; empty when the table was built from values).
    ``details``: float64 DataFrame, index = some of :data:`DETAILS` (``operations_code_bytes``:
    bytes, the sum of the operations' ``code_bytes``; ``operations``: how many operations; both
    without the row of code no op claims, ``UNATTRIBUTED_OPERATION``;
    ``fullest_tile``: the tile number of the fullest tile; ``fullest_tile_bytes``: its bytes
    including gaps), one column per label; a row only when every variant has a report recording
    it (empty otherwise).
    """

    labels: tuple[str, ...]
    base: str
    values: pd.DataFrame
    confidence: pd.DataFrame
    delta_pct: pd.DataFrame
    statuses: Mapping[str, str] = field(default_factory=dict)
    extra: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    ledger: pd.DataFrame = field(default_factory=pd.DataFrame)
    metas: Mapping[str, ReportMeta] = field(default_factory=dict)
    details: pd.DataFrame = field(default_factory=pd.DataFrame)

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics (rows), in display order."""
        return tuple(str(m) for m in self.values.index)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict: schema_version, base, variants (label, status, extra, and per metric
        value / confidence / delta_pct), units and which metrics are better when higher."""
        variants = []
        for label in self.labels:
            metrics = {}
            for metric in self.metrics:
                value = self.values.at[metric, label]
                pct = self.delta_pct.at[metric, label]
                metrics[metric] = {
                    "value": None if _missing(value) else float(value),
                    "confidence": str(self.confidence.at[metric, label]) or None,
                    "delta_pct": None if _missing(pct) else float(pct),
                }
            variants.append(
                {
                    "label": label,
                    "base": label == self.base,
                    "status": self.statuses.get(label, "ok"),
                    **({"extra": dict(self.extra[label])} if label in self.extra else {}),
                    "metrics": metrics,
                }
            )
        ledger = [
            {"parameter": str(key[0]), "role": str(key[1]), "location": str(key[2]),
             "bytes": {label: None if _missing(row[label]) else int(row[label]) for label in self.labels}}
            for key, row in self.ledger.iterrows()
        ]
        details = {str(name): {label: None if _missing(row[label]) else int(row[label]) for label in self.labels}
                   for name, row in self.details.iterrows()}
        return {
            "schema_version": NWAY_SCHEMA_VERSION,
            "base": self.base,
            "units": {m: METRIC_UNITS.get(m, "") for m in self.metrics},
            "higher_is_better": sorted(m for m in self.metrics if m in HIGHER_IS_BETTER),
            "variants": variants,
            "ledger": ledger,
            "details": details,
        }


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NA


def _delta_pct(values: pd.DataFrame, base: str) -> pd.DataFrame:
    reference = values[base]
    usable = reference.where(reference != 0)
    pct = values.sub(usable, axis=0).div(usable, axis=0) * 100.0
    pct[base] = math.nan
    return pct.astype("float64")


def nway_table(
    reports: Mapping[str, Report | None] | Sequence[tuple[str, Report | None]],
    *,
    base: str | None = None,
    statuses: Mapping[str, str] | None = None,
    extra: Mapping[str, Mapping[str, Any]] | None = None,
    metrics: Sequence[str] = METRICS,
) -> NWayTable:
    """The N-way table of ``reports`` (label -> Report, or None for a variant without a report),
    in the given order.

    ``base`` defaults to the first label. Returns an :class:`NWayTable` over ``metrics``
    (default every summary metric). Raises ProfcompareError for no reports, a repeated label or
    a ``base`` that is not one of the labels.
    """
    items = list(reports.items()) if isinstance(reports, Mapping) else list(reports)
    labels = [str(label) for label, _ in items]
    if not labels:
        raise ProfcompareError("nothing to tabulate: no variants")
    if len(set(labels)) != len(labels):
        raise ProfcompareError(f"variant labels must be unique: {labels}")
    base = labels[0] if base is None else base
    if base not in labels:
        raise ProfcompareError(f"base {base!r} is not one of the variants {labels}")
    metric_list = list(metrics)
    values = pd.DataFrame(index=pd.Index(metric_list, name="metric"), columns=labels, dtype="float64")
    confidence = pd.DataFrame("", index=values.index, columns=labels, dtype=object)
    for label, report in items:
        if report is None:
            continue
        summary, levels = report.summary(), report.confidence()
        values[label] = [float(summary.get(m, math.nan)) for m in metric_list]
        confidence[label] = [str(levels.get(m, "")) for m in metric_list]
    return NWayTable(
        labels=tuple(labels),
        base=base,
        values=values,
        confidence=confidence,
        delta_pct=_delta_pct(values, base),
        statuses=dict(statuses or {}),
        extra={k: dict(v) for k, v in (extra or {}).items()},
        ledger=_ledger_side_by_side(items, labels),
        metas={label: report.meta for label, report in items if report is not None},
        details=_details(items, labels),
    )


def _details(items: Sequence[tuple[str, Report | None]], labels: Sequence[str]) -> pd.DataFrame:
    """The :data:`DETAILS` rows every variant's report can fill, one float64 column per label."""
    reports = [report for _, report in items]
    rows: dict[str, list[float]] = {}
    if all(r is not None and len(r.operations) for r in reports):
        # the ops themselves: the remainder row (code no op claims) is not an op
        ops = [r.operations[r.operations["name"].astype(str) != UNATTRIBUTED_OPERATION] for r in reports if r is not None]
        rows["operations_code_bytes"] = [float(o["code_bytes"].sum()) for o in ops]
        rows["operations"] = [float(len(o)) for o in ops]
    if all(r is not None and len(r.tiles) for r in reports):
        fullest = [r.tiles.loc[r.tiles["bytes_including_gaps"].idxmax()] for r in reports if r is not None]
        rows["fullest_tile"] = [float(t["tile"]) for t in fullest]
        rows["fullest_tile_bytes"] = [float(t["bytes_including_gaps"]) for t in fullest]
    return pd.DataFrame.from_dict(rows, orient="index", columns=list(labels), dtype="float64")


_LEDGER_KEY = ["parameter", "role", "location"]


def _ledger_side_by_side(items: Sequence[tuple[str, Report | None]], labels: Sequence[str]) -> pd.DataFrame:
    """Each report's ledger bytes by (parameter, role, location), one column per label."""
    columns = {}
    for label, report in items:
        if report is None or not hasattr(report, "ledger"):
            continue
        led = report.ledger()
        if not len(led):
            columns[label] = pd.Series(dtype="float64")
            continue
        columns[label] = led.groupby(_LEDGER_KEY, sort=False, observed=True)["bytes"].sum().astype("float64")
    if not columns:
        return pd.DataFrame(columns=list(labels), dtype="float64")
    frame = pd.DataFrame(columns).fillna(0.0)
    frame = frame.reindex(columns=list(labels))  # variants without a report: NaN
    if len(frame):
        frame.index.names = _LEDGER_KEY
        frame = frame.sort_index(kind="stable")
    return frame


def nway_from_values(
    values: pd.DataFrame,
    *,
    base: str | None = None,
    statuses: Mapping[str, str] | None = None,
    extra: Mapping[str, Mapping[str, Any]] | None = None,
    confidence: pd.DataFrame | None = None,
) -> NWayTable:
    """An :class:`NWayTable` from a ready ``values`` frame (index metrics, one column per label),
    e.g. a sweep table turned on its side; ``confidence`` defaults to unknown ('')."""
    labels = [str(c) for c in values.columns]
    if not labels:
        raise ProfcompareError("nothing to tabulate: no variants")
    frame = values.astype("float64").copy()
    frame.columns = labels
    base = labels[0] if base is None else base
    if base not in labels:
        raise ProfcompareError(f"base {base!r} is not one of the variants {labels}")
    levels = confidence if confidence is not None else pd.DataFrame("", index=frame.index, columns=labels, dtype=object)
    return NWayTable(tuple(labels), base, frame, levels, _delta_pct(frame, base), dict(statuses or {}),
                     {k: dict(v) for k, v in (extra or {}).items()})


__all__ = ["DETAILS", "NWAY_SCHEMA_VERSION", "NWayTable", "nway_from_values", "nway_table"]
