"""The sweep page: memory and throughput against the swept knob(s), plus the table, as one HTML file.

The figure is a pure function of the sweep table (see :func:`profcompare.runner.sweep.sweep_table`);
the page is a Jinja2 template with autoescaping, the figure inlined as SVG and the table's data
embedded through ``tojson`` only, so the file opens offline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullLocator

from profcompare.render.plots import thin_tick_labels

from profcompare.render.json_values import frame_records
from profcompare.render.format import (
    SWEEP_METRIC_FORMATS,
    format_knob_value,
    format_rate,
)

#: memory series of the left panel: metric -> legend text
MEMORY_SERIES: tuple[tuple[str, str], ...] = (
    ("always_live_bytes", "always-live"),
    ("not_always_live_peak_bytes", "not-always-live peak"),
    ("code_bytes", "code"),
    ("streaming_memory_bytes", "Streaming Memory (off-chip)"),
)
_COLOURS = ("#3b6fb6", "#e08a1e", "#8e44ad", "#2e9a47")
_THROUGHPUT_COLOUR = "#c0392b"
_BYTE_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB")


def _x_labels(table: pd.DataFrame, swept: Sequence[str]) -> list[str]:
    if len(swept) == 1:

        return [format_knob_value(v) for v in table[swept[0]]]
    return [str(p) for p in table["point"]]


def _numeric_axis(table: pd.DataFrame, swept: Sequence[str]) -> tuple[np.ndarray, bool] | None:
    """(x values, log scale?) when one numeric knob is swept over at least two values, else None.

    A log axis is used when every value is positive and they span at least two decades (the
    tutorial's sharded_threshold study goes from 512 to 1e10).
    """
    if len(swept) != 1:
        return None
    column = table[swept[0]]
    if not pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
        return None
    xs = column.to_numpy(dtype="float64")
    if len(np.unique(xs)) < 2 or not np.isfinite(xs).all():
        return None
    log = bool((xs > 0).all() and xs.max() / xs.min() >= 100.0)
    return xs, log


def _tick_text(value: float) -> str:
    """``512``, ``262145``, ``1e10``, ``0.001``: short labels for knob values on a numeric axis."""
    text = f"{value:.6g}"
    return text.replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def plot_sweep(table: pd.DataFrame, swept: Sequence[str]) -> Figure:
    """Memory and throughput per sweep point.

    Returns a Figure with two Axes: left, always-live, not-always-live peak, code and Streaming
    Memory bytes per point (y in 1024-based byte units); right, samples per second per point.
    When one numeric knob is swept, x is that knob's value (log scale when the values span two
    decades or more) and each series is a line with markers; otherwise the points are in grid
    order along x with grouped bars, and the throughput line is broken where the slowest knob
    of a grid changes. Points without a report have no bar and no marker; oom points are marked
    "oom" above their bars or markers.
    """
    labels = _x_labels(table, swept)
    numeric = _numeric_axis(table, swept)
    x = numeric[0] if numeric is not None else np.arange(len(labels), dtype="float64")
    order = np.argsort(x, kind="stable")
    fig = Figure(figsize=(11.0, 4.0), layout="constrained")
    mem_ax, rate_ax = fig.subplots(1, 2, width_ratios=[3, 2])
    width = 0.8 / len(MEMORY_SERIES)
    tops = table[[m for m, _ in MEMORY_SERIES]].max(axis=1).fillna(0).to_numpy()
    # plot in the 1024-based unit of the largest bar so that the ticks fall on round numbers
    unit_index = int(np.floor(np.log(max(float(tops.max(initial=0.0)), 1.0)) / np.log(1024)))
    unit_index = min(unit_index, len(_BYTE_UNITS) - 1)
    scale = 1024.0**unit_index
    for i, (metric, text) in enumerate(MEMORY_SERIES):
        values = table[metric].to_numpy(dtype="float64") / scale
        if numeric is not None:
            mem_ax.plot(x[order], values[order], marker="o", label=text, color=_COLOURS[i])
        else:
            offset = (i - (len(MEMORY_SERIES) - 1) / 2) * width
            mem_ax.bar(x + offset, np.nan_to_num(values), width, label=text, color=_COLOURS[i])
    mem_ax.set_ylim(bottom=0)
    mem_ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: f"{value:g}"))
    mem_ax.set_ylabel(f"{_BYTE_UNITS[unit_index]} per replica")
    mem_ax.set_title("Memory")
    tops = tops / scale
    for xi, status, top in zip(x, table["status"], tops):
        if status != "ok":
            mem_ax.annotate(status, (xi, top), ha="center", va="bottom", color=_THROUGHPUT_COLOUR, fontsize=8)
    fig.legend(*mem_ax.get_legend_handles_labels(), loc="outside lower left", ncols=len(MEMORY_SERIES), fontsize=8, frameon=False)
    rates = table["samples_per_second"].to_numpy(dtype="float64")
    if np.isfinite(rates).any():
        if numeric is not None or len(swept) < 2:
            rate_ax.plot(x[order], rates[order], marker="o", color=_THROUGHPUT_COLOUR)
        else:  # one line per value of the slowest-varying knob: do not join unrelated points
            groups = table[swept[0]].ne(table[swept[0]].shift()).cumsum().to_numpy()
            for group in np.unique(groups):
                mask = groups == group
                rate_ax.plot(x[mask], rates[mask], marker="o", color=_THROUGHPUT_COLOUR)
        rate_ax.set_ylim(bottom=0, top=float(np.nanmax(rates)) * 1.15 or 1.0)
        rate_ax.yaxis.set_major_formatter(FuncFormatter(lambda value, _pos: format_rate(value).split(".")[0]))
    else:
        rate_ax.text(0.5, 0.5, "no execution profile", ha="center", va="center", transform=rate_ax.transAxes, color="#777777")
    rate_ax.set_ylabel("samples per second")
    rate_ax.set_title("Throughput")
    xlabel = swept[0] if len(swept) == 1 else "point"
    if numeric is not None:
        ticks = np.unique(x)
        tick_labels = [_tick_text(v) for v in ticks]
        xlabel += " (log scale)" if numeric[1] else ""
    else:
        ticks, tick_labels = x, [label.replace("$", r"\$") for label in labels]
    for ax in (mem_ax, rate_ax):
        if numeric is not None and numeric[1]:
            ax.set_xscale("log")
            ax.xaxis.set_minor_locator(NullLocator())
        ax.set_xticks(ticks, tick_labels, fontsize=8)
        ax.set_xlabel(xlabel.replace("$", r"\$"))
        ax.grid(axis="y", color="#e5e5e5")
        ax.set_axisbelow(True)
    # level labels when they have room, else upright, else every label that has room
    return thin_tick_labels(fig)


def _cell(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


def sweep_nway(table: pd.DataFrame, swept: Sequence[str], reports: Mapping[str, Any] | None = None) -> Any:
    """The sweep as an N-way table: one column per point (the first point is the base).

    With ``reports`` (point label -> Report for the points that have one) every summary metric
    with its confidence; without, the sweep table's metrics (confidence unknown).
    """
    from profcompare.analysis.nway import nway_from_values, nway_table

    labels = [str(p) for p in table["point"]]
    statuses = dict(zip(labels, (str(s) for s in table["status"]), strict=True))
    extra = {label: {k: record[k] for k in swept} for label, record in zip(labels, table.to_dict("records"), strict=True)}
    if reports is not None:
        return nway_table([(label, reports.get(label)) for label in labels], statuses=statuses, extra=extra)
    metrics = [m for m, _ in SWEEP_METRIC_FORMATS if m in table.columns]  # tables written before a metric existed
    values = table.set_index("point")[metrics].T
    return nway_from_values(values, statuses=statuses, extra=extra)


def render_sweep_html(
    table: pd.DataFrame, swept: Sequence[str], meta: Mapping[str, Any], *, reports: Mapping[str, Any] | None = None
) -> str:
    """Return the sweep page (one self-contained HTML document): the memory and throughput
    figure above the N-way view of the points (a column per point, the first being the base;
    see :mod:`profcompare.render.nway`).

    ``table`` is a sweep table, ``swept`` the knob names that vary, ``meta`` holds name,
    workload, variant, backend and fixed_config (as written to sweep.json); ``reports`` (point
    label -> Report) gives the view every summary metric with its confidence.
    """
    from profcompare.render.nway import render_nway_html
    from profcompare.render.plots import figure_to_svg

    svg = figure_to_svg(plot_sweep(table, swept))
    data = {
        "schema_version": 1,
        **{k: meta.get(k) for k in ("name", "workload", "variant", "backend", "swept", "fixed_config")},
        "points": frame_records(table),
    }
    fixed = {k: (v if v != "" else "''") for k, v in (meta.get("fixed_config") or {}).items()}
    facts = [
        ("run", str(meta.get("name"))),
        ("workload", f"{meta.get('workload')}, variant {meta.get('variant')}, backend {meta.get('backend')}"),
    ]
    if fixed:
        facts.append(("fixed knobs", ", ".join(f"{k}={v}" for k, v in fixed.items())))
    nway = sweep_nway(table, swept, reports)
    extra_rows = [(knob, [_cell(nway.extra[label].get(knob)) for label in nway.labels]) for knob in swept]
    errors = {str(p): _cell(e) for p, e in zip(table["point"], table["error"], strict=True)}
    return render_nway_html(
        nway,
        title=f"profcompare sweep: {meta.get('variant')} over {', '.join(swept)}",
        facts=facts,
        simulated=meta.get("backend") == "sim",
        compile_only=meta.get("execution") == "compile-only",
        figure=Markup(svg),  # produced by matplotlib from numbers and escaped labels
        figure_title="Memory and throughput",
        figure_note="Bytes are per replica. Streaming Memory is off-chip and not part of tile memory.",
        extra_rows=extra_rows,
        errors=errors,
        data=data,
        data_id="sweep-data",
    )


__all__ = ["MEMORY_SERIES", "plot_sweep", "render_sweep_html", "sweep_nway"]
