"""The page's bar charts (memory by category, code by program, device cycles by phase, the
memory ledger), drawn by BokehJS as the liveness chart is (:mod:`profcompare.render.interactive`).

Each is one horizontal bar (or a pair, or a group) per report, stacked by category, phase or
location, with the same data, colours and labels as the notebook's matplotlib figures
(:mod:`profcompare.render.plots`); the legend is right of the plot, never over a bar. Hovering a
bar segment shows what it is and its figure; clicking a legend entry hides it. The chart's note
says the key figures in words (the text alternative), and the table under the chart has them all.

Why not matplotlib's SVG: drawing four static figures (and importing matplotlib's axes stack to
do so) was about 0.7 CPU seconds of a comparison page; this JSON is a few milliseconds
(``benchmarks/bench_run.py``). Names reach the page only through Bokeh's JSON (``tojson``) and
its text tooltips, never as markup.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from profcompare.model import LOCATIONS
from profcompare.render import bokeh_doc
from profcompare.render.figure_data import (
    LOCATION_COLOURS,
    PHASE_COLOURS,
    REPORT_COLOURS,
    category_stack,
    execution_bar_text,
    host_seconds,
    largest_programs,
    phase_stack,
)
from profcompare.render.format import format_bytes
from profcompare.render.interactive import InteractiveChart, _empty_chart, _json_item, _labels, _short, _unit
from profcompare.render.labels import location_label, parameter_label, phase_label

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.comparison import Comparison
    from profcompare.model import Report

#: Programs the code chart shows at most (the largest; the table under it has the rest).
CODE_PROGRAMS = 15
#: Parameters the ledger chart shows at most (largest |delta| of tile memory first).
LEDGER_PARAMETERS = 12

_TEXT_COLOUR = "#333333"
_HOW = " Hover a bar for its figures; click a legend entry to hide it."


def _bar_figure(chart_id: str, positions: Sequence[float] | np.ndarray, labels: Sequence[str], x_end: float,
                x_label: str, legend_entries: int) -> bokeh_doc.Figure:
    """A figure of horizontal bars centred on ``positions`` (y, top row 0, going down), each
    named by its label on the y axis, the x axis from 0 to ``x_end``."""
    low, high = min(positions, default=0.0), max(positions, default=0.0)
    rows = high - low + 1
    fig = bokeh_doc.Figure(
        chart_id,
        height=int(max(90 + 22 * rows, 50 + 22 * legend_entries)),  # 22 px per bar row: compact, legible
        x_label=x_label,
        x_range=bokeh_doc.fixed_range(0.0, x_end, bounds=(0.0, x_end)),
        y_range=bokeh_doc.fixed_range(low - 0.6, high + 0.6),
    )
    fig.ygrid.set(grid_line_color=None)
    fig.xgrid.set(grid_line_color="#e3e3e3")
    fig.yaxis.set(ticker=bokeh_doc.Model("FixedTicker", ticks=[float(p) for p in positions], minor_ticks=[]),
                  major_label_overrides=bokeh_doc.Map((float(p), _short(text)) for p, text in zip(positions, labels,
                                                                                                   strict=True)))
    return fig


def _segments(fig: bokeh_doc.Figure, chart_id: str, name: str, left: np.ndarray, right: np.ndarray,
              centre: np.ndarray, half: float, fields: dict[str, list[str]], colour: str, label: str,
              **style: Any) -> bokeh_doc.Model:
    """One legend entry's bars: from ``left`` to ``right`` (axis units) around ``centre``."""
    keep = right > left  # a zero segment draws nothing and would only catch the hover
    source = bokeh_doc.data_source({
        "left": left[keep].astype("float64"), "right": right[keep].astype("float64"),
        "bottom": (centre[keep] - half).astype("float64"), "top": (centre[keep] + half).astype("float64"),
        **{key: [v for v, k in zip(values, keep, strict=True) if k] for key, values in fields.items()},
    }, name=f"{chart_id}:{name}")
    return fig.glyph("Quad", source, legend_label=label, left="left", right="right", bottom="bottom", top="top",
                     line_color="white", line_width=0.5, fill_color=colour, **style)


def _totals(fig: bokeh_doc.Figure, positions: np.ndarray, ends: np.ndarray, texts: Sequence[str]) -> None:
    """The text written after each bar."""
    source = bokeh_doc.data_source({"x": ends.astype("float64"), "y": positions.astype("float64"), "text": list(texts)})
    fig.glyph("Text", source, x="x", y="y", text="text", x_offset=4, text_color=_TEXT_COLOUR, text_font_size="8pt",
              text_baseline="middle")


def _stacked(fig: bokeh_doc.Figure, chart_id: str, values: np.ndarray, positions: np.ndarray, labels: list[str],
             names: list[str], colours: list[str], value_text: Callable[[float], str],
             scale: float = 1.0) -> list[bokeh_doc.Model]:
    """One horizontal bar per report at ``positions``, stacked from ``values`` (one row per
    segment, one column per report; drawn divided by ``scale``): each segment named, coloured and
    shown in the legend as ``names`` and ``colours`` say, its hover value ``value_text``."""
    left = np.zeros(values.shape[1])
    renderers = []
    for index, (name, row, colour) in enumerate(zip(names, values, colours, strict=True)):
        fields = {"segment": [name] * len(labels), "bar": labels, "value": [value_text(v) for v in row.tolist()]}
        renderers.append(_segments(fig, chart_id, f"segment:{index}", left / scale, (left + row) / scale, positions,
                                   0.3, fields, colour, name))
        left = left + row
    return renderers


def _finish(fig: bokeh_doc.Figure, renderers: list[bokeh_doc.Model], tooltips: list[tuple[str, str]]) -> None:
    fig.hover(renderers, tooltips, point_policy="follow_mouse")
    fig.legend_right(location="top_left", click_policy="hide")


def categories_chart(reports: Sequence[Report], roles: Sequence[str], *,
                     chart_id: str = "chart-categories") -> InteractiveChart:
    """Memory by category: one horizontal bar per report (top: the first), stacked by category
    (:func:`profcompare.render.figure_data.category_stack`: grouped, coloured by group), each
    bar's total after it; bytes summed over the tiles of one replica."""
    table = category_stack(reports)
    if table.empty:
        return _empty_chart(chart_id, "no memory category data")
    labels = _labels(reports, roles)
    values = table[list(range(len(reports)))].to_numpy(dtype="float64")
    totals = values.sum(axis=0)
    scale, unit = _unit(float(totals.max()))
    positions = -np.arange(len(reports), dtype="float64")
    fig = _bar_figure(chart_id, positions, labels, float(totals.max()) * 1.12 / scale, f"{unit} per replica",
                      len(table))
    renderers = _stacked(fig, chart_id, values, positions, labels, [str(c) for c in table.index],
                         [str(c) for c in table["colour"]], format_bytes, scale)
    _totals(fig, positions, totals / scale, [format_bytes(t) for t in totals.tolist()])
    _finish(fig, renderers, [("category", "@segment"), ("report", "@bar"), ("bytes", "@value")])
    note = "Totals: " + "; ".join(f"{label} {format_bytes(t)}" for label, t in zip(labels, totals.tolist(),
                                                                                    strict=True)) + "."
    return InteractiveChart(chart_id, _json_item(fig), "Memory by category, summed over the tiles of one replica." + _HOW,
                            note)


def code_chart(reports: Sequence[Report], roles: Sequence[str], *, top: int = CODE_PROGRAMS,
               chart_id: str = "chart-code") -> InteractiveChart:
    """Code bytes by program: per program (the ``top`` largest over the reports, largest at the
    top) one bar per report, side by side; code bytes per replica summed over code categories."""
    table = largest_programs(reports, top)
    if table.empty:
        return _empty_chart(chart_id, "no code data")
    labels = _labels(reports, roles)
    n = len(reports)
    values = table[list(range(n))].to_numpy(dtype="float64")
    scale, unit = _unit(float(values.max()))
    rows = -np.arange(len(table), dtype="float64")
    names = [str(name) for name in table.index]
    fig = _bar_figure(chart_id, rows, names, float(values.max()) * 1.05 / scale, f"code, {unit} per replica", n)
    height = 0.8 / n
    renderers = []
    for index, label in enumerate(labels):
        centre = rows + (n - 1 - 2 * index) * height / 2
        fields = {"segment": [_short(name) for name in names], "bar": [label] * len(names),
                  "value": [format_bytes(v) for v in values[:, index].tolist()]}
        renderers.append(_segments(fig, chart_id, f"report:{index}", np.zeros(len(names)), values[:, index] / scale,
                                   centre, height / 2, fields, REPORT_COLOURS[index % len(REPORT_COLOURS)], label))
    _finish(fig, renderers, [("program", "@segment"), ("report", "@bar"), ("code bytes", "@value")])
    largest = names[0]
    note = (f"The {len(names):,} programs with the most code; the largest, {_short(largest)}: "
            + ", ".join(f"{label} {format_bytes(v)}" for label, v in zip(labels, values[0].tolist(), strict=True))
            + ".")
    return InteractiveChart(chart_id, _json_item(fig), "Code bytes by program (summed over code categories), largest "
                            "programs." + _HOW, note)


def execution_chart(reports: Sequence[Report], roles: Sequence[str], *,
                    chart_id: str = "chart-execution") -> InteractiveChart:
    """Device cycles per step by device phase: one horizontal bar per report, stacked by phase
    (:data:`profcompare.model.DEVICE_PHASES` order). Host/runtime time is not device time: it is
    not stacked, only written after the bar beside the device cycles."""
    table = phase_stack(reports)
    if table.empty:
        return _empty_chart(chart_id, "no execution profile")
    labels = _labels(reports, roles)
    values = table[list(range(len(reports)))].to_numpy(dtype="float64")
    totals = values.sum(axis=0)
    positions = -np.arange(len(reports), dtype="float64")
    fig = _bar_figure(chart_id, positions, labels, max(float(totals.max()), 1.0) * 1.6, "device cycles per step",
                      len(table))
    renderers = _stacked(fig, chart_id, values, positions, labels, [phase_label(p) for p in table.index],
                         [PHASE_COLOURS[str(p)] for p in table.index], lambda v: f"{v:,.0f}")
    texts = [execution_bar_text(total, host_seconds(report)) for total, report in zip(totals.tolist(), reports,
                                                                                        strict=True)]
    _totals(fig, positions, totals, texts)
    _finish(fig, renderers, [("phase", "@segment"), ("report", "@bar"), ("device cycles", "@value")])
    note = "Per step: " + "; ".join(f"{label} {text}" for label, text in zip(labels, texts, strict=True)) + "."
    caption = ("Device cycles per step (one run of the main program) by device phase; host/runtime time is not "
               "device time, so it is not stacked: it is written after each bar." + _HOW)
    return InteractiveChart(chart_id, _json_item(fig), caption, note)


def ledger_chart(cmp: Comparison, *, top: int = LEDGER_PARAMETERS, chart_id: str = "chart-ledger") -> InteractiveChart:
    """The memory ledger of a comparison: per parameter (the ``top`` with the largest |delta| of
    tile memory, then of Streaming Memory) a base bar and a new bar (hatched), each stacked by
    location (always-live, not-always-live as the most the group holds at once, Streaming
    Memory); bytes per replica."""
    table = cmp.ledger_by_parameter().head(top)
    if table.empty:
        return _empty_chart(chart_id, "no ledger: the reports attribute no memory")
    names = [parameter_label(p) for p in table["parameter"]]
    count = len(names)
    base_pos = -np.arange(count, dtype="float64") * 2.6
    new_pos = base_pos - 1.0
    sides = {side: table[[f"{side}_{loc}" for loc in LOCATIONS]].to_numpy(dtype="float64") for side in ("base", "new")}
    largest = max(float(v.sum(axis=1).max()) for v in sides.values())
    scale, unit = _unit(largest)
    positions = np.ravel(np.column_stack([base_pos, new_pos]))
    labels = [f"{name} ({side})" for name in names for side in ("base", "new")]
    fig = _bar_figure(chart_id, positions, labels, max(largest, 1.0) * 1.05 / scale,
                      f"{unit} per replica: base {cmp.base.label}, new {cmp.new.label}", len(LOCATIONS))
    renderers = []
    for side, centre in (("base", base_pos), ("new", new_pos)):
        values = sides[side]
        left = np.zeros(count)
        report = cmp.base.label if side == "base" else cmp.new.label
        for index, loc in enumerate(LOCATIONS):
            fields = {"segment": [_short(name) for name in names], "bar": [f"{side}: {report}"] * count,
                      "where": [location_label(loc)] * count,
                      "value": [format_bytes(v) for v in values[:, index].tolist()]}
            style = {} if side == "base" else {"hatch_color": "white", "hatch_pattern": "/"}
            renderers.append(_segments(fig, chart_id, f"{side}:{loc}", left / scale, (left + values[:, index]) / scale,
                                       centre, 0.45, fields, LOCATION_COLOURS[loc], location_label(loc), **style))
            left = left + values[:, index]
    _finish(fig, renderers, [("parameter", "@segment"), ("report", "@bar"), ("location", "@where"),
                             ("bytes", "@value")])
    note = (f"{count:,} parameter{'s' if count != 1 else ''} drawn; every parameter is in the Memory ledger "
            "below.")
    caption = ("Per parameter, base and new (hatched) bars stacked by location; the parameters whose total "
               "changed most." + _HOW)
    return InteractiveChart(chart_id, _json_item(fig), caption, note)


__all__ = ["CODE_PROGRAMS", "LEDGER_PARAMETERS", "categories_chart", "code_chart", "execution_chart", "ledger_chart"]
