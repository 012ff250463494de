"""Formatting of numbers shared by every renderer (text, markdown, csv labels, html).

One place decides how a byte count, a percentage or a cycle count reads, so that the terminal,
a PR comment and the HTML page say "3.6 MiB" for the same value. Bytes use 1024-based (IEC)
units: B, KiB, MiB, GiB, TiB. A missing value (None or NaN) reads :data:`MISSING`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from profcompare.backend.knobs import format_knob_value
from profcompare.model import HIGHER_IS_BETTER as _model_higher_is_better
from profcompare.model import METRIC_UNITS, ReportMeta

#: How a missing value (None, NaN, <NA>) is shown.
MISSING = "n/a"

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")

#: Human names of the summary metrics (keys are :data:`profcompare.model.METRICS`).
METRIC_LABELS: Mapping[str, str] = MappingProxyType(
    {
        "total_bytes": "Total memory (excl. gaps)",
        "always_live_bytes": "Always-live memory",
        "not_always_live_peak_bytes": "Not-always-live peak",
        "peak_liveness_bytes": "Peak liveness",
        "code_bytes": "Code",
        "variable_bytes": "Model state in tile memory",
        "max_tile_bytes": "Max tile memory",
        "tiles_over_budget": "Tiles over budget",
        "streaming_memory_bytes": "Streaming Memory (remote buffers)",
        "cycles_per_step": "Device cycles per step",
        "host_seconds_per_step": "Host/runtime time per step",
        "seconds_per_step": "Time per session.run (device + host)",
        "samples_per_second": "Samples per second",
    }
)

#: Metrics where a larger value is an improvement (for every other metric, growth is a cost).
HIGHER_IS_BETTER = _model_higher_is_better  # the metrics' own declaration (profcompare.model)


def is_missing(value: Any) -> bool:
    """Return True for None, NaN and pandas' <NA>."""
    if value is None:
        return True
    try:
        return bool(value != value)  # noqa: PLR0124 -- NaN and pd.NA compare unequal to themselves
    except TypeError:  # pd.NA raises on bool()
        return True


def _sign(value: float, signed: bool) -> str:
    if not signed:
        return "-" if value < 0 else ""
    if value > 0:
        return "+"
    if value < 0:
        return "-"
    return ""


def format_bytes(value: Any, *, signed: bool = False) -> str:
    """Return a byte count in 1024-based units: ``"512 B"``, ``"3.6 MiB"``.

    With ``signed=True`` a positive value gets a ``+`` (for deltas); zero never has a sign.
    Values below 1 KiB are exact integers; larger values have one decimal.
    """
    if is_missing(value):
        return MISSING
    number = float(value)
    sign = _sign(number, signed)
    magnitude = abs(number)
    if magnitude < 1024:
        return f"{sign}{magnitude:.0f} B"
    unit = 0
    while magnitude >= 1024 and unit < len(_BYTE_UNITS) - 1:
        magnitude /= 1024
        unit += 1
    # 1023.96 KiB would read "1024.0 KiB": move to the next unit instead
    if round(magnitude, 1) >= 1024 and unit < len(_BYTE_UNITS) - 1:
        magnitude /= 1024
        unit += 1
    return f"{sign}{magnitude:.1f} {_BYTE_UNITS[unit]}"


def format_bytes_each(values: Any, *, missing: str = MISSING) -> list[str]:
    """:func:`format_bytes` of every value of a float array (unsigned), ``missing`` for NaN: the
    same texts, the units chosen for the whole array at once (dividing by a power of 1024 is
    exact, so each magnitude is the one :func:`format_bytes` reaches). Values within a tenth of
    a unit's boundary, where Python's decimal rounding decides the unit, go through
    :func:`format_bytes` itself."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError("format_bytes_each takes a one-dimensional array")
    magnitude = np.abs(array)
    finite = np.isfinite(magnitude)
    unit = np.zeros(len(array), dtype=np.int64)
    if finite.any():
        with np.errstate(divide="ignore"):
            unit[finite] = np.clip(np.floor(np.log2(np.maximum(magnitude[finite], 1.0)) / 10), 0, len(_BYTE_UNITS) - 1)
    scaled = np.where(finite, magnitude / np.power(1024.0, unit), np.nan)
    # log2 may land one unit off near a power of 1024; the rounding rule moves 1023.96 up
    near = finite & ((scaled < 1) & (unit > 0) | (scaled >= 1023.9) | (magnitude < 1024) & (unit > 0))
    negative = array < 0
    out: list[str] = []
    for value, mag, u, is_near, neg in zip(array.tolist(), scaled.tolist(), unit.tolist(), near.tolist(),
                                           negative.tolist()):
        if value != value:  # noqa: PLR0124 -- NaN
            out.append(missing)
        elif is_near or mag != mag:  # noqa: PLR0124 -- infinities keep format_bytes' own text
            out.append(format_bytes(value))
        elif u == 0:
            out.append(f"{'-' if neg else ''}{mag:.0f} B")
        else:
            out.append(f"{'-' if neg else ''}{mag:.1f} {_BYTE_UNITS[u]}")
    return out


def format_pct(value: Any, *, signed: bool = True) -> str:
    """Return a percentage with one decimal: ``"+12.3%"``, ``"-0.5%"``, ``"0.0%"``.

    A non-zero value that would round to zero reads ``"+<0.1%"`` / ``"-<0.1%"`` so that a
    small change is never shown as no change.
    """
    if is_missing(value):
        return MISSING
    number = float(value)
    if math.isinf(number):
        return ("+" if number > 0 and signed else "-" if number < 0 else "") + "inf%"
    sign = _sign(number, signed)
    magnitude = abs(number)
    if 0 < magnitude < 0.05:
        return f"{sign}<0.1%"
    return f"{sign}{magnitude:.1f}%"


def format_count(value: Any, *, signed: bool = False) -> str:
    """Return an integer count with thousands separators: ``"1,234,567"`` (rounded)."""
    if is_missing(value):
        return MISSING
    number = round(float(value))
    sign = _sign(number, signed)
    return f"{sign}{abs(number):,d}"


def format_cycles(value: Any, *, signed: bool = False) -> str:
    """Return a cycle count with thousands separators: ``"1,234,567"``."""
    return format_count(value, signed=signed)


def format_rate(value: Any, *, signed: bool = False) -> str:
    """Return a rate (samples per second) with one decimal and separators: ``"12,345.6"``."""
    if is_missing(value):
        return MISSING
    number = float(value)
    sign = _sign(number, signed)
    return f"{sign}{abs(number):,.1f}"


def format_seconds(value: Any, *, signed: bool = False) -> str:
    """Return a duration in milliseconds with three decimals: ``"3.369 ms"``."""
    if is_missing(value):
        return MISSING
    number = float(value)
    sign = _sign(number, signed)
    return f"{sign}{abs(number) * 1e3:,.3f} ms"


def format_value(value: Any, unit: str, *, signed: bool = False) -> str:
    """Return ``value`` formatted for ``unit`` (``bytes``, ``cycles``, ``tiles``, ``samples/s``)."""
    if unit == "bytes":
        return format_bytes(value, signed=signed)
    if unit in ("cycles", "tiles", ""):
        return format_count(value, signed=signed)
    if unit == "samples/s":
        return format_rate(value, signed=signed)
    if unit == "s":
        return format_seconds(value, signed=signed)
    return format_rate(value, signed=signed)


def format_metric(metric: str, value: Any, *, signed: bool = False) -> str:
    """Return a summary metric's value formatted by its unit (see :data:`METRIC_UNITS`)."""
    return format_value(value, METRIC_UNITS.get(metric, ""), signed=signed)


def metric_label(metric: str) -> str:
    """Return the human name of a summary metric (the metric key itself when unknown)."""
    return METRIC_LABELS.get(metric, metric)


def status_tone(status: str, *, higher_is_better: bool = False) -> str | None:
    """Return how a comparison status should be coloured: ``"bad"``, ``"good"`` or None.

    For memory and cycles, growth (``grew``, ``added``) is ``"bad"`` and shrinking
    (``shrank``, ``removed``) is ``"good"``; ``higher_is_better`` swaps them (throughput).
    """
    worse = {"grew", "added"}
    better = {"shrank", "removed"}
    if higher_is_better:
        worse, better = better, worse
    if status in worse:
        return "bad"
    if status in better:
        return "good"
    return None


#: Metrics whose change is never coloured: Streaming Memory is off chip, so more of it costs no
#: tile memory (its price, the transfer time, shows in the time metrics).
UNTONED_METRICS = frozenset({"streaming_memory_bytes"})


def metric_tone(metric: str, status: str) -> str | None:
    """Return the tone of a summary row (:func:`status_tone` with the metric's direction; None
    for :data:`UNTONED_METRICS`)."""
    if metric in UNTONED_METRICS:
        return None
    return status_tone(status, higher_is_better=metric in HIGHER_IS_BETTER)


def describe_origin(meta: ReportMeta) -> str:
    """Return what produced a report, e.g. ``"simulated, profcompare-sim 0.1.0"`` or ``"Poplar 3.3.0"``."""
    producer = meta.producer or "unknown producer"
    addons = f", popxl-addons {meta.addons_generation}" if meta.addons_generation else ""
    addons += ", compile only" if meta.execution == "compile-only" else ""
    return f"simulated, {producer}{addons}" if meta.simulated else f"{producer}{addons}"


def describe_report(meta: ReportMeta) -> str:
    """Return a one-line name of a report: ``"onchip (simulated, profcompare-sim 0.1.0)"``.

    Out-of-memory reports end with ``", OUT OF MEMORY"`` inside the parentheses.
    """
    extra = ", OUT OF MEMORY" if meta.oom else ""
    return f"{meta.label} ({describe_origin(meta)}{extra})"


def replica_scope(meta: ReportMeta) -> str:
    """Which replica the figures of a report are for, in words (the target line's parenthesis).

    ``"figures per replica"`` for one replica or when the report does not record its groupings;
    else replica 0, its group in each grouping, and that every replica holds the same layout."""
    count = int(meta.target.num_replicas or 1)
    entries = meta.replication.get("replica_groupings") if meta.replication else None
    if count <= 1 or entries is None:
        return "figures per replica"
    if not entries:
        return (f"figures per replica: replica 0; all {count} replicas run the same program on the same layout, "
                "with no collective between them")
    return (f"figures per replica: replica 0, in group 0 of each replica grouping; all {count} replicas run "
            "the same program on the same layout")


def describe_target(meta: ReportMeta) -> str:
    """Return the device a report was compiled for, in one line.

    Example: ``"Mk2: 4 replicas x 1 IPU, 1472 tiles per IPU x 624.0 KiB (figures per replica)"``.
    """
    t = meta.target
    replicas = f"{t.num_replicas} replica{'s' if t.num_replicas != 1 else ''}"
    ipus = f"{t.ipus_per_replica} IPU{'s' if t.ipus_per_replica != 1 else ''}"
    return (
        f"{t.architecture}: {replicas} x {ipus}, {t.tiles_per_ipu} tiles per IPU x "
        f"{format_bytes(t.bytes_per_tile)} ({replica_scope(meta)})"
    )



#: the metrics a sweep tabulates after its knobs, in order, each with its formatter (the terminal
#: table, sweep.html and the sweep figure)
SWEEP_METRIC_FORMATS = (
    ("always_live_bytes", format_bytes),
    ("not_always_live_peak_bytes", format_bytes),
    ("code_bytes", format_bytes),
    ("streaming_memory_bytes", format_bytes),
    ("cycles_per_step", format_cycles),
    ("host_seconds_per_step", format_seconds),
    ("seconds_per_step", format_seconds),
    ("samples_per_second", format_rate),
)

__all__ = [
    "SWEEP_METRIC_FORMATS",
    "HIGHER_IS_BETTER",
    "METRIC_LABELS",
    "MISSING",
    "UNTONED_METRICS",
    "describe_origin",
    "describe_report",
    "describe_target",
    "format_bytes",
    "format_count",
    "format_cycles",
    "format_metric",
    "format_pct",
    "format_rate",
    "format_value",
    "is_missing",
    "metric_label",
    "metric_tone",
    "status_tone",
    "format_knob_value",
    "replica_scope",
]
