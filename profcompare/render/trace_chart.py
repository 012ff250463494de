"""The interactive execution-trace chart of the HTML page (Bokeh, as the liveness chart).

One lane per IPU (per report in a comparison: the base's lanes above the new's, on the same time
axis), each executed block a bar from its first to its last cycle, coloured by its Graph Analyser
type (:data:`TYPE_COLOURS`). SyncAns blocks (waiting, overlapping the blocks they wait for) are a
thin band at the bottom of their lane, so they never hide what runs. Drag to zoom down to single
syncs, wheel zoom (the active scroll tool), pan, reset; hovering a block shows its name, type,
cycles, program and group; clicking a legend entry hides a type.

Size: a trace of at most :data:`MAX_BLOCKS` blocks (all reports together) is drawn block by block.
A larger one is drawn as :data:`OVERVIEW_BINS` time bins per lane (each bar as high as the share
of the bin its blocks keep busy, coloured by the type busiest in it, hover: the bin's cycles per
type) with the :data:`OVERVIEW_BLOCKS` longest blocks drawn individually over it; the page says so under
the chart. Names reach the page through Bokeh's JSON and its text tooltips (never as markup).

Flame rows: above each lane, one thin row per level of the programs that enclose its blocks
(analysis/flame.py: the outermost on top, at most :data:`MAX_FLAME_DEPTH` levels), each bar one
execution of a program from its first block's start to its last block's end, in neutral tones
(:data:`FLAME_COLOURS`, by level), its name on hover. A lane whose blocks have no enclosing
program has no rows. Beyond :data:`MAX_FLAME_SPANS` bars (all lanes together), bars shorter than
one of :data:`OVERVIEW_BINS` time bins are merged per bin, and the note under the chart says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from profcompare.analysis import flame
from profcompare.analysis import trace as trace_analysis
from profcompare.render import bokeh_doc
from profcompare.render.format import format_count
from profcompare.render.interactive import InteractiveChart, _empty_chart, _json_item, _labels, _short

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.model import Report

#: Most blocks drawn one by one (the real two-IPU trace in shared/data, 4,604 blocks, is drawn whole).
MAX_BLOCKS = 5000
#: Beyond MAX_BLOCKS: time bins per lane of the overview, and how many of the longest blocks are
#: drawn over it (about 0.3 MB of the page for a 2 x 100,000-block comparison: bench_html.py).
OVERVIEW_BINS = 400
OVERVIEW_BLOCKS = 1000

#: Colour of each block type: one hue per kind of work (compute, exchange, host transfer, sync).
TYPE_COLOURS: Mapping[str, str] = MappingProxyType({
    "OnTileExecute": "#3b6fb6",
    "DoExchange": "#e39c2b",
    "GlobalExchange": "#b5651d",
    # the three StreamCopy parts: one green family, told apart by lightness (light, mid, dark)
    "StreamCopyBegin": "#a5d6a7",
    "StreamCopy": "#43a047",
    "StreamCopyEnd": "#1b5e20",
    "ExternalSync": "#c0392b",
    "InternalSync": "#e57373",
    "SyncAns": "#9e9e9e",
    "RemoteLoad": "#8e44ad",
    "RemoteStore": "#b388c9",
})
OTHER_COLOUR = "#607d8b"

#: Levels of enclosing programs drawn above a lane, and the most flame bars drawn before the short
#: ones are merged per time bin (the main job's comparison draws 763).
MAX_FLAME_DEPTH = flame.MAX_FLAME_DEPTH
MAX_FLAME_SPANS = 3000
#: Flame bars by level, outermost first: neutral tones, apart from every block type's colour.
FLAME_COLOURS = ("#cfd8dc", "#b0bec5", "#90a4ae", "#78909c")
#: Height of one flame row, in lanes (a lane is 1).
FLAME_ROW = 0.22

# where a block sits in its lane (lane centre 0, lanes 1 apart): SyncAns a band at the bottom
_BLOCK = (-0.22, 0.4)
_WAIT = (-0.42, -0.28)


def colour_of(block_type: str) -> str:
    """The colour a block of ``block_type`` is drawn in."""
    return TYPE_COLOURS.get(block_type, OTHER_COLOUR)


#: program kinds (``Report.programs``) the trace names otherwise: pva's StreamCopyMid is the
#: trace's StreamCopy (a Sync goes by its name, :func:`trace_type_of_program`)
TRACE_TYPE_OF_PROGRAM_KIND: Mapping[str, str] = MappingProxyType({"StreamCopyMid": "StreamCopy"})
#: program kinds that only group other programs and are no block of the trace
GROUPING_KINDS = frozenset({"Sequence"})


def trace_type_of_program(kind: str, name: str) -> str:
    """The trace block type of a program of ``kind`` named ``name``: a Sync is ExternalSync or
    InternalSync after the last part of its name (``matmul/Internal Sync``), as Graph Analyser
    labels it; StreamCopyMid is StreamCopy; any other kind keeps its name."""
    if kind == "Sync":
        last = name.rsplit("/", 1)[-1].strip().lower()
        return "ExternalSync" if last.startswith("external") else "InternalSync" if last.startswith("internal") else kind
    return TRACE_TYPE_OF_PROGRAM_KIND.get(kind, kind)


def program_colour(kind: str, name: str = "") -> str | None:
    """The colour the trace draws a program of ``kind`` (named ``name``) in; None for a Sequence,
    which only groups programs."""
    if kind in GROUPING_KINDS:
        return None
    return colour_of(trace_type_of_program(kind, name))


def _lanes(reports: Sequence[Report], labels: Sequence[str]) -> list[tuple[int, int, str]]:
    """(report index, ipu, lane label) top to bottom."""
    lanes = []
    for index, report in enumerate(reports):
        ipus = sorted(int(i) for i in report.trace["ipu"].unique())
        lanes += [(index, ipu, f"{labels[index]} IPU {ipu}" if len(reports) > 1 else f"IPU {ipu}") for ipu in ipus]
    return lanes


def lane_flames(reports: Sequence[Report], lanes: Sequence[tuple[int, int, str]], *, bins: int = OVERVIEW_BINS,
                max_spans: int = MAX_FLAME_SPANS) -> tuple[list[pd.DataFrame], int]:
    """The flame spans of every lane (analysis/flame.py) and the bin width in cycles their short
    spans were merged at (0 when there were at most ``max_spans`` spans and none was merged)."""
    spans = [flame.flame_spans(reports[k].trace, reports[k].programs, ipu) for k, ipu, _label in lanes]
    if sum(len(s) for s in spans) <= max_spans:
        return spans, 0
    traced = [r.trace for r in reports if len(r.trace)]
    start = min(int(t["cycles_from"].min()) for t in traced)
    end = max(int(t["cycles_to"].max()) for t in traced)
    width = max(2, -(-(end - start) // max(bins, 1)))
    return [flame.bin_small_spans(s, width, start) for s in spans], width


def lane_centres(rows: Sequence[int]) -> list[float]:
    """The y of each lane's block bars (0 for the first, lanes downwards), ``rows[i]`` flame rows
    above lane i."""
    centres: list[float] = []
    for position, count in enumerate(rows):
        centres.append(0.0 if not position else centres[-1] - 1 - count * FLAME_ROW)
    return centres


def flame_row(centre: float, rows: int, depth: int) -> tuple[float, float]:
    """(bottom, top) of the flame row of ``depth`` above a lane centred at ``centre`` with ``rows``
    rows: the outermost on top, the deepest just over the blocks."""
    bottom = centre + _BLOCK[1] + 0.06 + (rows - 1 - depth) * FLAME_ROW
    return bottom, bottom + FLAME_ROW - 0.04


def _flame_note(spans: Sequence[pd.DataFrame], width: int) -> str:
    drawn = sum(len(s) for s in spans)
    if not drawn:
        return ""
    note = (f"Above each lane, {format_count(drawn)} bars of the programs enclosing its blocks, up to "
            f"{MAX_FLAME_DEPTH} levels from the outermost (deeper levels are not drawn).")
    if width:
        note += f" Bars shorter than {width:,} cycles are merged per time bin of that width."
    return note


def _draw_flames(fig: bokeh_doc.Figure, chart_id: str, spans: Sequence[pd.DataFrame], centres: Sequence[float],
                 lanes: Sequence[tuple[int, int, str]], labels: Sequence[str]) -> None:
    """The flame bars of every lane, one data source, their name, level and cycles on hover."""
    parts = []
    for lane, part in enumerate(spans):
        if len(part):
            parts.append(part.assign(lane=lane))
    if not parts:
        return
    bars = pd.concat(parts, ignore_index=True)
    rows = {lane: flame.flame_depth(part) for lane, part in enumerate(spans)}
    depth = bars["depth"].to_numpy(dtype="int64")
    lane_of_bar = bars["lane"].to_numpy(dtype="int64")
    placed = [flame_row(centres[lane], rows[lane], d) for lane, d in zip(lane_of_bar.tolist(), depth.tolist())]
    a = bars["cycles_from"].to_numpy(dtype="int64")
    z = bars["cycles_to"].to_numpy(dtype="int64")
    source = bokeh_doc.data_source({
        "left": a.astype("float64"), "right": np.maximum(z, a + 1).astype("float64"),
        "bottom": [p[0] for p in placed], "top": [p[1] for p in placed],
        "colour": [FLAME_COLOURS[d % len(FLAME_COLOURS)] for d in depth.tolist()],
        "name": [_short(str(v)) for v in bars["name"]],
        "level": [str(d + 1) for d in depth.tolist()],
        "cycles": _cycles_text(a, z),
        "blocks": [format_count(int(n)) for n in bars["blocks"]],
        "report": [labels[lanes[lane][0]] for lane in lane_of_bar.tolist()],
    }, name=f"{chart_id}:flame")
    glyph = fig.glyph("Quad", source, legend_label="enclosing programs", left="left", right="right",
                      bottom="bottom", top="top", line_color="#ffffff", line_width=0.5,
                      fill_color=bokeh_doc.field("colour"), fill_alpha=0.95)
    fig.hover([glyph], [("program", "@name"), ("level", "@level"), ("cycles", "@cycles"), ("blocks", "@blocks"),
                        ("report", "@report")], point_policy="follow_mouse")


def _cycles_text(start: np.ndarray, end: np.ndarray) -> list[str]:
    return [f"{a:,}–{b:,} ({b - a:,} cycles)" for a, b in zip(start.tolist(), end.tolist())]


#: Outline colour of the new run's steps the time diff marks, by status.
MARK_COLOURS: Mapping[str, str] = MappingProxyType({"added": "#d81b60", "slower": "#ff6f00"})
# a marked step's outline: a little beyond its block
_MARK = (-0.3, 0.46)


def trace_chart(reports: Sequence[Report], roles: Sequence[str], *, chart_id: str = "chart-trace",
                max_blocks: int = MAX_BLOCKS, bins: int = OVERVIEW_BINS,
                overview_blocks: int = OVERVIEW_BLOCKS, max_flame_spans: int = MAX_FLAME_SPANS,
                marks: pd.DataFrame | None = None) -> InteractiveChart:
    """The interactive execution-trace chart of ``reports`` (one, or [base, new]); see the module
    docstring. ``marks`` (:func:`profcompare.comparison.time_diff.marked_steps`: ipu, cycles_from,
    cycles_to, status, program, delta_cycles) outlines the new run's added and slower steps on its
    lanes."""
    from profcompare.render.sections.trace import shown_run_report, shown_trace

    said = " ".join(f"{role.capitalize()}: {text}" if len(reports) > 1 else text
                    for role, report in zip(roles, reports, strict=True)
                    if (text := shown_trace(report)[1].sentence()))
    reports = [shown_run_report(r) for r in reports]
    labels = _labels(reports, roles)
    total = sum(len(r.trace) for r in reports)
    if total == 0:
        return _empty_chart(chart_id, "no execution trace")
    lanes = _lanes(reports, labels)
    lane_of = {(k, ipu): position for position, (k, ipu, _label) in enumerate(lanes)}
    start = min(int(r.trace["cycles_from"].min()) for r in reports if len(r.trace))
    end = max(int(r.trace["cycles_to"].max()) for r in reports if len(r.trace))
    spans, merged_width = lane_flames(reports, lanes, bins=bins, max_spans=max_flame_spans)
    rows = [flame.flame_depth(s) for s in spans]
    centres = lane_centres(rows)
    fig = _figure(chart_id, centres, rows, start, end)
    fig.yaxis.set(ticker=bokeh_doc.Model("FixedTicker", ticks=list(centres), minor_ticks=[]),
                  major_label_overrides=bokeh_doc.Map((centres[p], _short(label))
                                                      for p, (_k, _i, label) in enumerate(lanes)))
    frames = []
    for index, report in enumerate(reports):
        frame = report.trace.assign(report=index)
        frames.append(frame)
    blocks = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    overview = total > max_blocks
    notes = []
    if overview:
        lengths = (blocks["cycles_to"] - blocks["cycles_from"]).to_numpy()
        keep = np.sort(np.argsort(-lengths, kind="stable")[:min(max_blocks, overview_blocks)])
        _draw_overview(fig, chart_id, reports, lane_of, centres, bins, start, end)
        shortest = int(lengths[keep].min()) if len(keep) else 0
        blocks = blocks.iloc[keep]
        notes.append(f"{format_count(total)} blocks: too many to draw one by one, so each lane shows {bins:,} time "
                     f"bins (bar height: the share of the bin its blocks keep busy; colour: the type busiest in it; "
                     f"hover for cycles per type), with the {format_count(len(keep))} longest blocks (at least "
                     f"{shortest:,} cycles) drawn over them. Shorter blocks are in the bins only; the full trace is "
                     f"Report.trace in a notebook.")
    else:
        notes.append(f"All {format_count(total)} blocks drawn.")
    hover_renderers = []
    types = sorted(blocks["type"].astype(str).unique(), key=lambda t: (t == "SyncAns", t))
    for position, block_type in enumerate(types):
        part = blocks[(blocks["type"].astype(str) == block_type).to_numpy()]
        lane = np.array([-centres[lane_of[(int(k), int(i))]] for k, i in zip(part["report"], part["ipu"])],
                        dtype="float64")
        low, high = _WAIT if block_type == trace_analysis.WAITING_TYPE else _BLOCK
        a = part["cycles_from"].to_numpy(dtype="int64")
        z = part["cycles_to"].to_numpy(dtype="int64")
        source = bokeh_doc.data_source({
            "left": a.astype("float64"), "right": np.maximum(z, a + 1).astype("float64"),
            "bottom": -lane + low, "top": -lane + high,
            "name": [_short(str(v)) for v in part["name"]],
            "type": [block_type] * len(part),
            "cycles": _cycles_text(a, z),
            "program": [_short(str(v)) for v in part["program"]],
            "parent": [_short(str(v)) if v else "–" for v in part["parent"]],
            "report": [labels[int(k)] for k in part["report"]],
        }, name=f"{chart_id}:blocks:{position}")
        hover_renderers.append(fig.glyph("Quad", source, legend_label=block_type, left="left", right="right",
                                         bottom="bottom", top="top", line_color=None, fill_color=colour_of(block_type),
                                         fill_alpha=0.6 if block_type == trace_analysis.WAITING_TYPE else 0.95))
    _draw_flames(fig, chart_id, spans, centres, lanes, labels)
    if _flame_note(spans, merged_width):
        notes.append(_flame_note(spans, merged_width))
    marked = _draw_marks(fig, chart_id, marks, lane_of, centres, len(reports) - 1) if marks is not None else 0
    if marked:
        notes.append(f"{format_count(marked)} of the new run's steps outlined: added (magenta) and slower (orange) "
                     "than the base's, from the time diff.")
    fig.hover(hover_renderers, [
        ("block", "@name"), ("type", "@type"), ("cycles", "@cycles"), ("program", "@program"),
        ("group", "@parent"), ("report", "@report"),
    ], point_policy="follow_mouse")
    fig.legend_below(orientation="horizontal", click_policy="hide")  # location: Bokeh's default, top_right
    caption = ("Execution trace: one lane per IPU, each block a program step from its first to its last cycle, "
               "coloured by type; SyncAns (waiting for the other IPUs or the host) is the grey band under each "
               "lane. Drag to zoom down to single syncs, or turn the mouse wheel over the chart; pan and reset are "
               "in the toolbar; hover a block for its name, type, cycles and program; click a legend entry to hide "
               "a type.")
    if any(rows):
        caption += (" The grey rows above a lane are the programs enclosing its blocks, the outermost on top; "
                    "hover one for its name.")
    if len(reports) > 1:
        caption += " Both runs share the time axis, the base's lanes above the new's."
    return InteractiveChart(chart_id, _json_item(fig), caption, " ".join([*notes, said] if said else notes))


def _draw_marks(fig: bokeh_doc.Figure, chart_id: str, marks: pd.DataFrame, lane_of: Mapping[tuple[int, int], int],
                centres: Sequence[float], report: int) -> int:
    """Outline each marked step on its lane of report ``report``; returns how many were drawn."""
    drawn = 0
    for status, colour in MARK_COLOURS.items():
        part = marks[(marks["status"] == status).to_numpy() & marks["ipu"].map(lambda i: (report, int(i)) in lane_of)
                     .to_numpy(dtype=bool)]
        if not len(part):
            continue
        lane = np.array([-centres[lane_of[(report, int(i))]] for i in part["ipu"]], dtype="float64")
        a = part["cycles_from"].to_numpy(dtype="int64")
        z = part["cycles_to"].to_numpy(dtype="int64")
        source = bokeh_doc.data_source({
            "left": a.astype("float64"), "right": np.maximum(z, a + 1).astype("float64"),
            "bottom": -lane + _MARK[0], "top": -lane + _MARK[1],
            "program": [_short(str(v)) for v in part["program"]],
            "change": [f"{status}, {d:+,.0f} cycles" for d in part["delta_cycles"].tolist()],
        }, name=f"{chart_id}:marks:{status}")
        outline = fig.glyph("Quad", source, legend_label=f"{status} step (time diff)", left="left", right="right",
                            bottom="bottom", top="top", line_color=colour, line_width=2, fill_color=None)
        fig.hover([outline], [("program", "@program"), ("time diff", "@change")], point_policy="follow_mouse")
        drawn += len(part)
    return drawn


def _figure(chart_id: str, centres: Sequence[float], rows: Sequence[int], start: int, end: int) -> bokeh_doc.Figure:
    top = 0.6 + (rows[0] if rows else 0) * FLAME_ROW
    bottom = (centres[-1] if centres else 0.0) - 0.55
    fig = bokeh_doc.Figure(
        chart_id,
        height=round(140 + 46 * (top - bottom - 0.15)),
        x_label="cycles",
        x_range=bokeh_doc.fixed_range(start, max(end, start + 1), name=f"{chart_id}:x",
                                      bounds=(start, max(end, start + 1))),
        y_range=bokeh_doc.fixed_range(bottom, top),
        wheel_zoom=True,
    )
    fig.ygrid.set(grid_line_color=None)
    return fig


def _draw_overview(fig: bokeh_doc.Figure, chart_id: str, reports: Sequence[Report], lane_of: Mapping[tuple[int, int], int],
                   centres: Sequence[float], bins: int, start: int, end: int) -> None:
    """The binned view of every lane: bars as high as the busy share of their bin (SyncAns left
    out: it overlaps what runs), coloured by the busiest type, with the cycles per type on hover."""
    cols: dict[str, list[Any]] = {k: [] for k in ("left", "right", "bottom", "top", "colour", "where", "busy")}
    for index, report in enumerate(reports):
        if not len(report.trace):
            continue
        ov = trace_analysis.overview(report.trace, bins)
        width = (ov.edges[1:] - ov.edges[:-1]).astype("float64")
        working = [t for t, name in enumerate(ov.types) if name != trace_analysis.WAITING_TYPE]
        for i, ipu in enumerate(ov.ipus):
            lane = -centres[lane_of[(index, ipu)]]
            busy = ov.busy[i]
            doing = busy[working].sum(axis=0) if working else np.zeros(busy.shape[1], dtype="int64")
            share = np.minimum(doing / width, 1.0)
            for b in np.flatnonzero(busy.sum(axis=0)):
                order = np.argsort(-busy[:, b], kind="stable")
                top = [(ov.types[t], int(busy[t, b])) for t in order[:4] if busy[t, b]]
                dominant = next((ov.types[t] for t in order if ov.types[t] != trace_analysis.WAITING_TYPE and busy[t, b]),
                                trace_analysis.WAITING_TYPE)
                cols["left"].append(float(ov.edges[b]))
                cols["right"].append(float(ov.edges[b + 1]))
                cols["bottom"].append(-lane + _BLOCK[0])
                cols["top"].append(-lane + _BLOCK[0] + max(float(share[b]), 0.04) * (_BLOCK[1] - _BLOCK[0]))
                cols["colour"].append(colour_of(dominant))
                cols["where"].append(f"{int(ov.edges[b]):,}–{int(ov.edges[b + 1]):,}")
                cols["busy"].append("; ".join(f"{name} {cycles:,}" for name, cycles in top))
    source = bokeh_doc.data_source(cols, name=f"{chart_id}:overview")
    bars = fig.glyph("Quad", source, left="left", right="right", bottom="bottom", top="top", line_color=None,
                     fill_color=bokeh_doc.field("colour"), fill_alpha=0.35)
    fig.hover([bars], [("bin", "@where"), ("cycles per type", "@busy")], point_policy="follow_mouse")


__all__ = ["FLAME_COLOURS", "FLAME_ROW", "GROUPING_KINDS", "MARK_COLOURS", "MAX_BLOCKS", "MAX_FLAME_DEPTH",
           "MAX_FLAME_SPANS", "OVERVIEW_BINS", "OVERVIEW_BLOCKS", "OTHER_COLOUR", "TRACE_TYPE_OF_PROGRAM_KIND", "TYPE_COLOURS",
           "colour_of", "flame_row", "lane_centres", "lane_flames", "program_colour", "trace_chart", "trace_type_of_program"]
