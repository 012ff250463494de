"""Interactive charts of the HTML page (liveness over program steps, memory per tile), drawn by Bokeh.

Why Bokeh: a chart is plain JSON (the document :func:`bokeh.embed.json_item` writes) that its
own JavaScript library draws, and that library is one file of about 1.3 MB we inline into the
page (no CDN, works offline); Plotly's is 4.8 MB, which alone nearly fills the page budget of
5 MB (``benchmarks/bench_html.py`` measures both). Bokeh gives zoom (drag a range of steps),
wheel zoom, pan, reset and hover tooltips. The JSON is written by :mod:`bokeh_doc` (the same
document, without importing Bokeh's Python models, which cost about a second per page).

Each chart is an :class:`InteractiveChart`: the Bokeh JSON item (reaching the page only through
Jinja's ``tojson``, which escapes ``<``, ``>``, ``&`` and ``'``), a caption, a note saying how the
data were reduced, and the page's own toggles (plain HTML inputs; ``page.js`` switches the
displayed column of a data source named ``<chart id>:curve:<i>``). Tooltips use Bokeh's
field substitution, which inserts values as text, so a name from a report cannot become markup.

Size: a curve is cut into at most :data:`MAX_BUCKETS` buckets of consecutive steps (tiles); each
bucket keeps its maximum (the drawn line, so every peak keeps its height) and its minimum (a
shaded band under the line), and the hover tooltip of a bucket names the program at the
maximum and the largest variables live at that step.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from markupsafe import Markup

from profcompare.analysis import views as analysis
from profcompare.render import bokeh_doc
from profcompare.render.figure_data import BUDGET_COLOUR, REPORT_COLOURS
from profcompare.render.format import format_bytes, format_bytes_each, format_count
from profcompare.render.labels import live_label
from profcompare.render.liveness_panel import panel_data

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.model import Report

#: Most buckets a curve keeps (each bucket: its maximum and minimum). The liveness chart's
#: tooltips (program and largest live variables per bucket) are most of its size, so it keeps
#: fewer: 1,000 buckets of a 100,000-step program are about 0.5 MB of the page.
MAX_BUCKETS = 2000
LIVENESS_BUCKETS = 1000

#: How many of the largest live variables a liveness tooltip lists.
TOOLTIP_VARIABLES = 3

#: Longest name shown in a tooltip (longer names end in "…").
TOOLTIP_NAME_CHARS = 80

_UNITS = ("bytes", "KiB", "MiB", "GiB", "TiB")


@dataclass(frozen=True)
class Toggle:
    """A choice between data columns of a chart: ``options`` are (column, label), first is the
    default; ``captions`` (one per option, or none) say what the chart shows with that option,
    and the page puts the chosen one in the chart's caption."""

    name: str
    label: str
    options: tuple[tuple[str, str], ...]
    captions: tuple[str, ...] = ()


@dataclass(frozen=True)
class InteractiveChart:
    """An interactive chart of the page: Bokeh's JSON item plus what the page shows around it."""

    id: str
    item: dict[str, Any]
    caption: str
    note: str
    toggles: tuple[Toggle, ...] = ()
    #: data of the panel a click on the chart fills (the liveness chart's step panel:
    #: :func:`profcompare.render.liveness_panel.panel_data`), None for other charts
    panel: dict[str, Any] | None = None

    @property
    def option_captions(self) -> dict[str, str]:
        """The caption to show per toggle option (column -> text), for the page's script."""
        return {column: caption for toggle in self.toggles
                for (column, _), caption in zip(toggle.options, toggle.captions, strict=False)}


@dataclass(frozen=True)
class Buckets:
    """A series cut into consecutive buckets: index ranges, and per bucket the max, min and the
    position of the max (NaN-aware: a bucket of only gaps has NaN max/min and position -1)."""

    start: np.ndarray
    end: np.ndarray
    high: np.ndarray
    low: np.ndarray
    argmax: np.ndarray

    @property
    def size(self) -> int:
        """Positions per bucket (1 when the series was not reduced)."""
        return int(self.end[0] - self.start[0]) if len(self.start) else 1


def buckets(values: np.ndarray, max_buckets: int = MAX_BUCKETS) -> Buckets:
    """Cut ``values`` (float, NaN = gap) into at most ``max_buckets`` equal consecutive buckets.

    Returns :class:`Buckets` whose ``start``/``end`` are positions (end exclusive), ``high`` and
    ``low`` the largest and smallest non-NaN value of each bucket and ``argmax`` the position of
    the (first) largest. A series no longer than ``max_buckets`` keeps one position per bucket.
    """
    values = np.asarray(values, dtype="float64")
    n = len(values)
    if n == 0:
        empty = np.zeros(0, dtype="int64")
        return Buckets(empty, empty, np.zeros(0), np.zeros(0), empty)
    size = max(1, -(-n // max(1, max_buckets)))
    start = np.arange(0, n, size, dtype="int64")
    end = np.minimum(start + size, n)
    padded = np.full(len(start) * size, np.nan)
    padded[:n] = values
    grid = padded.reshape(len(start), size)
    gaps = np.isnan(grid)
    all_gap = gaps.all(axis=1)
    high = np.where(all_gap, np.nan, np.nanmax(np.where(gaps, -np.inf, grid), axis=1))
    low = np.where(all_gap, np.nan, np.nanmin(np.where(gaps, np.inf, grid), axis=1))
    argmax = np.where(all_gap, -1, start + np.argmax(np.where(gaps, -np.inf, grid), axis=1))
    return Buckets(start, end, high, low, argmax.astype("int64"))


def _unit(largest: float) -> tuple[float, str]:
    """The 1024-based unit the axis is drawn in (so ticks fall on round numbers of it)."""
    index = int(np.floor(np.log(max(largest, 1.0)) / np.log(1024)))
    index = min(max(index, 0), len(_UNITS) - 1)
    return 1024.0**index, _UNITS[index]


def _short(text: str) -> str:
    return text if len(text) <= TOOLTIP_NAME_CHARS else text[: TOOLTIP_NAME_CHARS - 1] + "…"


def _labels(reports: Sequence[Report], roles: Sequence[str]) -> list[str]:
    return [r.label if role == "report" else f"{role}: {r.label}" for r, role in zip(reports, roles, strict=True)]


@cache
def bokeh_js() -> Markup:
    """BokehJS (the core library only: no widgets, tables or MathJax), to inline in a ``<script>``:
    the text ``bokeh.resources.Resources(mode="inline", components=["bokeh"]).js_raw`` joins,
    read from Bokeh's static directory without importing its model classes
    (:func:`bokeh_doc.inline_js`).

    The statement that sets BokehJS's log level is left out: ``Bokeh.set_log_level`` writes a
    line to the browser console each time it is called, and page.js sets the level quietly
    (``Bokeh.logger.set_level``), so a page opens with an empty console.

    Raises RuntimeError if the library text could end the script element early.
    """
    text = _without_log_level(bokeh_doc.inline_js())
    lowered = text.lower()
    if "</script" in lowered or "<!--" in lowered:
        raise RuntimeError("BokehJS contains '</script' or '<!--'; it cannot be inlined")
    return Markup(text)


def _without_log_level(text: str) -> str:
    """``text`` without its trailing ``Bokeh.set_log_level("...");`` statements."""
    lines = text.split("\n")
    return "\n".join(line for line in lines if not line.startswith("Bokeh.set_log_level("))


def bokeh_version() -> str:
    """The Bokeh version whose JavaScript the page inlines (JSON items must match it)."""
    return bokeh_doc.bokeh_version()


def _figure(chart_id: str, x_label: str, y_label: str, *, wheel_zoom: bool = False) -> bokeh_doc.Figure:
    fig = bokeh_doc.Figure(
        chart_id,
        height=360,
        x_label=x_label,
        y_label=y_label,
        wheel_zoom=wheel_zoom,
        x_range=bokeh_doc.data_range(f"{chart_id}:x", range_padding=0.01),
        y_range=bokeh_doc.data_range(f"{chart_id}:y", start=0, range_padding=0.08, only_visible=True),
    )
    fig.xgrid.set(grid_line_color=None)
    fig.ygrid.set(grid_line_color="#e3e3e3")
    return fig


def _json_item(fig: Any, **extra: Any) -> dict[str, Any]:
    """Bokeh's JSON item of ``fig``, its model ids ``<chart id>-<n>`` in order of first
    appearance (the same chart gives the same page every time; two charts never share an id).

    ``fig`` is a :class:`bokeh_doc.Figure` (the page's charts: ``extra`` goes to its Figure
    model), or a figure built from Bokeh's own models (``bokeh.plotting.figure``), written by
    ``bokeh.embed.json_item`` with its ids renamed the same way.
    """
    if isinstance(fig, bokeh_doc.Figure):
        return bokeh_doc.json_item(fig.model(**extra))
    from bokeh.embed import json_item

    item = dict(json_item(fig))
    prefix = str(fig.name)
    ids: dict[str, str] = {}

    def rename(value: Any) -> Any:
        if isinstance(value, dict):
            out = {}
            for key, inner in value.items():
                if key in ("id", "root_id") and isinstance(inner, str):
                    out[key] = ids.setdefault(inner, f"{prefix}-{len(ids) + 1}")
                else:
                    out[key] = rename(inner)
            return out
        if isinstance(value, list):
            return [rename(inner) for inner in value]
        return value

    return rename(item)  # type: ignore[no-any-return]


def _step_xy(x_start: np.ndarray, x_end: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Step-curve points: each bucket drawn from its start, plus one point at the last end."""
    if not len(x_start):
        return x_start.astype("float64"), values
    return np.append(x_start, x_end[-1]).astype("float64"), np.append(values, values[-1])


def _add_curves(
    fig: bokeh_doc.Figure,
    chart_id: str,
    index: int,
    label: str,
    x: tuple[np.ndarray, np.ndarray],
    series: dict[str, tuple[np.ndarray, np.ndarray]],
    default: str,
    banded: bool,
) -> list[bokeh_doc.Model]:
    """One report's step line (bucket maxima) and min band; ``series`` maps toggle column ->
    (high, low) already in axis units. The source named ``<chart>:curve:<index>`` holds
    ``y``/``lo`` (shown) and ``y_<column>``/``lo_<column>`` per option, for page.js to switch."""
    data: dict[str, Any] = {}
    for column, (high, low) in series.items():
        xs, ys = _step_xy(x[0], x[1], high)
        _, los = _step_xy(x[0], x[1], low)
        data[f"y_{column}"], data[f"lo_{column}"] = ys, los
    data["x"] = xs
    data["y"], data["lo"] = data[f"y_{default}"], data[f"lo_{default}"]
    source = bokeh_doc.data_source(data, name=f"{chart_id}:curve:{index}")
    colour = REPORT_COLOURS[index % len(REPORT_COLOURS)]
    renderers = []
    if banded:
        renderers.append(fig.glyph("VAreaStep", source, x="x", y1="lo", y2="y", step_mode="after",
                                   fill_color=colour, fill_alpha=0.15))
    renderers.append(fig.glyph("Step", source, legend_label=label, x="x", y="y", line_color=colour,
                               line_width=1.6, mode="after"))
    return renderers


def _hover_bars(fig: bokeh_doc.Figure, x_start: np.ndarray, x_end: np.ndarray, fields: dict[str, list[str]],
                tooltips: list[tuple[str, str]]) -> None:
    """Invisible bars, one per bucket, spanning its x range: hovering anywhere over a bucket
    (whatever the height) shows its tooltip, once."""
    source = bokeh_doc.data_source(
        {"x": (x_start + x_end) / 2.0, "width": (x_end - x_start).astype("float64"), **fields}
    )
    bars = fig.glyph("VBar", source, x="x", width="width", top=1.0, line_color=bokeh_doc.DEFAULT_COLOUR,
                     line_alpha=0.0, fill_color=bokeh_doc.DEFAULT_COLOUR, fill_alpha=0.0)
    fig.hover([bars], tooltips, mode="vline", point_policy="follow_mouse")


def _steps_text(steps: np.ndarray, start: int, end: int) -> str:
    """``1,200`` or ``1,200–1,219`` for the non-missing steps of positions start..end-1."""
    part = steps[start:end]
    part = part[part >= 0]
    if not len(part):
        return "–"
    lo, hi = int(part.min()), int(part.max())
    return f"{lo:,}" if lo == hi else f"{lo:,}–{hi:,}"


def liveness_chart(
    reports: Sequence[Report],
    roles: Sequence[str],
    *,
    aligned: pd.DataFrame | None = None,
    chart_id: str = "chart-liveness",
    max_buckets: int = LIVENESS_BUCKETS,
) -> InteractiveChart:
    """The interactive liveness chart: not-always-live bytes per program step, one curve per report.

    With ``aligned`` (a ``Comparison.liveness`` frame; ``reports`` are then [base, new]) the x
    axis is the aligned position, so the same program lines up in both curves. A toggle switches
    the curves to always-live + not-always-live (total liveness). Hovering a bucket shows, per
    report, the step(s), the program at the bucket's maximum, its not-always-live bytes and the
    largest variables live at that step (:func:`profcompare.analysis.views.largest_live_variables`).
    """
    if aligned is not None and len(reports) != 2:
        raise ValueError("aligned liveness needs exactly two reports: [base, new]")
    labels = _labels(reports, roles)
    sides = []
    for index, report in enumerate(reports):
        live = report.liveness_per_step()
        if aligned is None:
            values = live["not_always_live_bytes"].to_numpy(dtype="float64")
            steps = live["step"].to_numpy(dtype="int64")
            programs = live["program"].astype(str).to_numpy(dtype=object)
        else:
            side = ("base", "new")[index]
            from profcompare.render.figure_data import hold_between_steps

            # as the static figure: a step only the other side has holds this side's level; the
            # shorter side's curve ends at its last step
            values = hold_between_steps(aligned[f"{side}_not_always_live_bytes"].to_numpy(dtype="float64", na_value=np.nan))
            steps = aligned[f"{side}_step"].to_numpy(dtype="int64", na_value=-1)
            by_step = dict(zip(live["step"].to_numpy(dtype="int64").tolist(),
                               live["program"].astype(str).to_numpy(dtype=object).tolist()))
            programs = np.array([by_step.get(s, "") if s >= 0 else "" for s in steps.tolist()], dtype=object)
        always = float(report.tiles["always_live_bytes"].sum())
        sides.append((values, steps, programs, always))
    length = max((len(s[0]) for s in sides), default=0)
    if length == 0:
        return _empty_chart(chart_id, "no liveness data")
    reduced = [buckets(np.pad(s[0], (0, length - len(s[0])), constant_values=np.nan), max_buckets) for s in sides]
    shape = reduced[0]
    largest = max(float(np.nanmax(np.r_[r.high, 0.0]) + s[3]) for r, s in zip(reduced, sides, strict=True))
    scale, unit = _unit(largest)
    curves: list[bokeh_doc.Model] = []
    fig = _figure(
        chart_id,
        "program step" if aligned is None else "program step (base and new aligned by program)",
        f"{unit} per replica",
        wheel_zoom=True,  # program steps are time: the wheel zooms into them, as on the trace
    )
    fields: dict[str, list[str]] = {}
    tooltips: list[tuple[str, str]] = [("position" if aligned is not None else "steps", "@where")]
    fields["where"] = [f"{int(a):,}" if b - a == 1 else f"{int(a):,}–{int(b) - 1:,}" for a, b in zip(shape.start, shape.end)]
    for index, ((_values, steps, programs, always), red) in enumerate(zip(sides, reduced, strict=True)):
        banded = red.size > 1
        series = {
            "nal": (red.high / scale, red.low / scale),
            "total": ((red.high + always) / scale, (red.low + always) / scale),
        }
        curves += _add_curves(fig, chart_id, index, labels[index], (red.start, red.end), series, "nal", banded)
        at = red.argmax
        peak_steps = np.where(at >= 0, steps[np.clip(at, 0, max(len(steps) - 1, 0))] if len(steps) else -1, -1)
        tops = analysis.largest_live_variables(reports[index], peak_steps[peak_steps >= 0], k=TOOLTIP_VARIABLES)
        # rows come sorted by step, then rank: one text per step, its variables largest first
        top_parts: dict[int, list[str]] = {}
        sizes = format_bytes_each(tops["bytes"].to_numpy(dtype="float64"))
        for step, name, size in zip(tops["step"].tolist(), tops["name"].tolist(), sizes, strict=True):
            top_parts.setdefault(int(step), []).append(f"{_short(str(name))} ({size})")
        top_text = {step: "; ".join(parts) for step, parts in top_parts.items()}
        key = f"r{index}"
        fields[f"{key}_steps"] = [_steps_text(steps, int(a), int(b)) for a, b in zip(red.start, red.end)]
        fields[f"{key}_program"] = [
            _short(str(programs[p])) if p >= 0 and p < len(programs) and programs[p] else "–" for p in at
        ]
        highs, lows = format_bytes_each(red.high, missing="–"), format_bytes_each(red.low)
        fields[f"{key}_nal"] = [
            high if h != h else high + (f" (max; min {low})" if banded and lo != h else "")  # noqa: PLR0124 -- NaN
            for high, low, h, lo in zip(highs, lows, red.high.tolist(), red.low.tolist())
        ]
        fields[f"{key}_top"] = [top_text.get(int(s), "–") if s >= 0 else "–" for s in peak_steps]
        tooltips += [
            (labels[index], f"@{key}_program"),
            ("  step", f"@{key}_steps"),
            (f"  {live_label(False)}", f"@{key}_nal"),
            (f"  {live_label(True)}", format_bytes(always)),
            ("  largest live", f"@{key}_top"),
        ]
    ipu_lines = _ipu_curves(fig, chart_id, reports, labels, [s[1] for s in sides], length, max_buckets, scale,
                            aligned is not None)
    fig.y_range.set(renderers=curves)  # the invisible hover bars do not stretch the axis
    _hover_bars(fig, shape.start.astype("float64"), shape.end.astype("float64"), fields, tooltips)
    _legend_below(fig)
    if ipu_lines:
        note_ipus = (f" Thin lines: each IPU's not-always-live bytes ({ipu_lines}; the bold curve is their sum; "
                     "click a legend entry to hide one).")
    else:
        note_ipus = ""
    if shape.size > 1:
        note = (f"{length:,} steps drawn as {len(shape.start):,} buckets of {shape.size:,}: the line is each "
                "bucket's maximum (peaks keep their height), the band goes down to its minimum; the tooltip "
                "names the program and variables at the bucket's maximum.")
    else:
        note = f"All {length:,} program steps drawn."
    note += note_ipus
    how = (" Drag to zoom into a range of steps, or turn the mouse wheel over the chart; pan and reset are in the "
           "toolbar; click a legend entry to hide a curve; hover for the program and the largest live variables.")
    captions = ("Not-always-live bytes per program step." + how,
                "Always-live + not-always-live bytes per program step (each report's always-live bytes added to "
                "its curve: the total live memory)." + how)
    toggle = Toggle("liveness", "Show", (("nal", "not-always-live bytes"), ("total", "always-live + not-always-live")),
                    captions)
    panel = panel_data(reports, labels, np.arange(length, dtype="float64"), [s[0] for s in sides],
                       [s[1] for s in sides], [s[2] for s in sides])
    return InteractiveChart(chart_id, _json_item(fig, js_event_callbacks=_tap_callback(chart_id)), captions[0],
                            note + " Click the chart to list what is live at that step below it.", (toggle,), panel)


#: Most IPUs of a report drawn as curves of their own (more would hide the curves under them).
MAX_IPU_CURVES = 8


def _ipu_curves(fig: bokeh_doc.Figure, chart_id: str, reports: Sequence[Report], labels: Sequence[str],
                steps: Sequence[np.ndarray], length: int, max_buckets: int, scale: float, aligned: bool) -> str:
    """Thin step lines of each IPU's not-always-live bytes, for the reports whose liveness has
    per-IPU rows (2 to :data:`MAX_IPU_CURVES` IPUs), at the chart's positions (``steps``: each
    report's step per position, -1 where none). Returns what the note says of them ("" for none)."""
    from profcompare.model import liveness_ipus
    from profcompare.render.figure_data import hold_between_steps

    said = []
    for index, report in enumerate(reports):
        ipus = liveness_ipus(report.liveness)
        if not 2 <= len(ipus) <= MAX_IPU_CURVES:
            continue
        live = report.liveness
        step_of = live["step"].to_numpy(dtype="int64")
        ipu_of = live["ipu"].to_numpy(dtype="int64", na_value=-1)
        nbytes = live["not_always_live_bytes"].to_numpy(dtype="float64")
        count = int(step_of.max()) + 1
        at = steps[index]
        for ipu in ipus:
            per_step = np.full(count, np.nan)
            mine = ipu_of == ipu
            per_step[step_of[mine]] = nbytes[mine]
            values = np.where(at >= 0, per_step[np.clip(at, 0, count - 1)], np.nan)
            if aligned:
                values = hold_between_steps(values)
            red = buckets(np.pad(values, (0, length - len(values)), constant_values=np.nan), max_buckets)
            xs, ys = _step_xy(red.start, red.end, red.high / scale)
            source = bokeh_doc.data_source({"x": xs, "y": ys}, name=f"{chart_id}:ipu:{index}:{ipu}")
            fig.glyph("Step", source, legend_label=f"{labels[index]} IPU {ipu}", x="x", y="y",
                      line_color=IPU_COLOURS[ipu % len(IPU_COLOURS)], line_alpha=0.7, line_width=1.0, mode="after")
        said.append(f"{labels[index]}: {len(ipus)} IPUs")
    return "; ".join(said)


#: Colours of the per-IPU curves (IPU number modulo their count).
IPU_COLOURS = ("#e08a1e", "#8e44ad", "#16a085", "#c0392b", "#7f8c8d", "#d35400", "#2c3e50", "#27ae60")


def _tap_callback(chart_id: str) -> bokeh_doc.Map:
    """The chart's tap event, handed to the page's script (page.js fills the step panel): our
    own fixed code, the chart id written as a JSON string."""
    code = ("document.dispatchEvent(new CustomEvent('profcompare-tap', "
            f"{{detail: {{chart: {json.dumps(chart_id)}, x: cb_obj.x}}}}));")
    return bokeh_doc.Map([("tap", [bokeh_doc.Model("CustomJS", code=code)])])


def tiles_chart(
    reports: Sequence[Report], roles: Sequence[str], *, chart_id: str = "chart-tiles", max_buckets: int = MAX_BUCKETS
) -> InteractiveChart:
    """The interactive per-tile memory chart: bytes per tile (excluding gaps by default, a toggle
    switches to including gaps, which is what decides whether a tile fits), one curve per
    report, with the tile budget. Hovering a tile (bucket) shows each report's bytes both ways.
    """
    labels = _labels(reports, roles)
    length = max((len(r.tiles) for r in reports), default=0)
    if length == 0:
        return _empty_chart(chart_id, "no per-tile data")
    budgets = sorted({r.meta.target.bytes_per_tile for r in reports})
    frames = []
    for report in reports:
        tiles = report.tiles.sort_values("tile", kind="stable")
        excl = tiles["bytes_excluding_gaps"].to_numpy(dtype="float64")
        incl = tiles["bytes_including_gaps"].to_numpy(dtype="float64")
        pad = length - len(tiles)
        frames.append((np.pad(excl, (0, pad), constant_values=np.nan), np.pad(incl, (0, pad), constant_values=np.nan),
                       np.pad(tiles["tile"].to_numpy(dtype="int64"), (0, pad), constant_values=-1)))
    largest = max(max(float(np.nanmax(np.r_[f[1], 0.0])) for f in frames), float(budgets[-1]))
    scale, unit = _unit(largest)
    curves: list[bokeh_doc.Model] = []
    fig = _figure(chart_id, "tile", f"{unit} per tile")
    fields: dict[str, list[str]] = {}
    tooltips: list[tuple[str, str]] = [("tiles", "@where")]
    shape = None
    for index, (excl, incl, _tile_ids) in enumerate(frames):
        red_excl, red_incl = buckets(excl, max_buckets), buckets(incl, max_buckets)
        shape = red_excl
        banded = red_excl.size > 1
        series = {"excl": (red_excl.high / scale, red_excl.low / scale), "incl": (red_incl.high / scale, red_incl.low / scale)}
        curves += _add_curves(fig, chart_id, index, labels[index], (red_excl.start, red_excl.end), series, "excl", banded)
        key = f"r{index}"
        fields[f"{key}_excl"] = format_bytes_each(red_excl.high, missing="–")
        fields[f"{key}_incl"] = format_bytes_each(red_incl.high, missing="–")
        tooltips += [(labels[index], f"@{key}_excl excluding gaps, @{key}_incl including gaps"
                      + (" (max of the bucket)" if banded else ""))]
    assert shape is not None
    fields["where"] = [f"{int(a):,}" if b - a == 1 else f"{int(a):,}–{int(b) - 1:,}" for a, b in zip(shape.start, shape.end)]
    for index, budget in enumerate(budgets):
        level = bokeh_doc.data_source({"x": [0.0, float(length)], "y": [budget / scale] * 2},
                                      name=f"{chart_id}:level:{index}")
        curves.append(
            fig.glyph("Line", level, legend_label=f"tile budget {format_bytes(budget)}", x="x", y="y",
                      line_color=BUDGET_COLOUR, line_width=1.2, line_dash=bokeh_doc.DASHES["dashed"])
        )
    fig.y_range.set(renderers=curves)
    _hover_bars(fig, shape.start.astype("float64"), shape.end.astype("float64"), fields, tooltips)
    _legend_below(fig)
    note = (f"{format_count(length)} tiles drawn as {len(shape.start):,} buckets of {shape.size:,} (line: bucket "
            "maximum, band: minimum)." if shape.size > 1 else f"All {format_count(length)} tiles drawn.")
    captions = ("Memory per tile, excluding gaps: what the tile's data occupy (PopVision's default view). "
                "Switch to including gaps for what decides whether the tile fits its budget.",
                "Memory per tile, including gaps: what decides whether the tile fits its budget. Excluding gaps "
                "is what the tile's data occupy (PopVision's default view).")
    toggle = Toggle("tiles", "Bytes", (("excl", "excluding gaps"), ("incl", "including gaps")), captions)
    return InteractiveChart(chart_id, _json_item(fig), captions[0], note, (toggle,))


def _legend_below(fig: bokeh_doc.Figure) -> None:
    """Move the chart's legend under the plot area, in one row, so it never covers a curve."""
    fig.legend_below(location="center", orientation="horizontal", click_policy="hide")


def _empty_chart(chart_id: str, message: str) -> InteractiveChart:
    # fixed ranges (Range1d, 0 to 1 by default): data ranges over no data make BokehJS warn
    # "could not set initial ranges"
    fig = bokeh_doc.Figure(chart_id, height=120, x_range=bokeh_doc.Model("Range1d"), y_range=bokeh_doc.Model("Range1d"),
                           tools=False)
    fig.hide_axes()
    fig.center.append(bokeh_doc.Model("Label", text=message, text_color="#777777", x=10, y=40,
                                      x_units="screen", y_units="screen"))
    return InteractiveChart(chart_id, _json_item(fig, toolbar_location=None), "", message)


__all__ = [
    "LIVENESS_BUCKETS",
    "MAX_BUCKETS",
    "Buckets",
    "InteractiveChart",
    "Toggle",
    "bokeh_js",
    "bokeh_version",
    "buckets",
    "liveness_chart",
    "tiles_chart",
]
