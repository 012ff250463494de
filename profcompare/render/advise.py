"""The outputs of an advise run: advise.json, advise.csv, the advise page (HTML with an
interactive Bokeh chart of throughput against the fullest tile) and the terminal's front table.

Pure functions of the point table (:func:`profcompare.analysis.advise_results.point_frame`) and the
verdict's facts. Knob values come from the user and the workload: the page gets them only
through autoescaped Jinja2 text and ``tojson``; the chart's tooltips insert them as text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import pandas as pd

from profcompare.analysis.advise_results import LEDGER_METRICS, POINT_FIELDS, AdviseVerdict, front
from profcompare.backend.knobs import layout_text
from profcompare.render.format import format_bytes, format_rate


ADVISE_SCHEMA_VERSION = 1
#: the chart's colours: fitting points, points that do not fit, the front
FIT_COLOUR, NOT_FIT_COLOUR, FRONT_COLOUR = "#3b6fb6", "#c0392b", "#2e9a47"
#: what the front table's ledger columns are called
LEDGER_TITLES = {"always_live_bytes": "Always-live", "not_always_live_peak_bytes": "Not-always-live peak",
                 "streaming_memory_bytes": "Streaming Memory", "code_bytes": "Code"}


def _plain(value: Any) -> Any:
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(float(value)) else float(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def point_records(points: pd.DataFrame) -> list[dict[str, Any]]:
    """The points as advise.json lists them: exactly :data:`POINT_FIELDS` each, NaN as null."""
    return [{name: _plain(row[name]) for name in POINT_FIELDS} for row in points.to_dict(orient="records")]


def advise_document(points: pd.DataFrame, facts: AdviseVerdict, verdict: str, meta: Mapping[str, Any]) -> dict[str, Any]:
    """The advise.json document: schema_version, the search's settings (``meta``), the verdict
    text and facts, pruned counts per reason, the front (point run directories, fastest first)
    and every point (:func:`point_records`)."""
    return {
        "schema_version": ADVISE_SCHEMA_VERSION,
        **{k: _plain(v) for k, v in meta.items()},
        "verdict": verdict,
        "facts": facts.to_dict(),
        "pruned": dict(facts.pruned),
        "front": [str(label) for label in front(points)["label"]],
        "points": point_records(points),
    }


def advise_csv(points: pd.DataFrame) -> str:
    """advise.csv: one row per point (pruned ones too), one column per searched knob, then status,
    reason, fits, pareto, the figures (bytes per replica, samples/s, seconds) and run_dir."""
    from profcompare.render.control_chars import visible

    table = points.drop(columns=["knobs"])
    # as every csv export: text fields with control characters written as escapes
    table = table.map(lambda value: visible(value) if isinstance(value, str) else value)
    return table.to_csv(index=False)


def front_table(points: pd.DataFrame, headline: Sequence[str], top: int | None = None) -> Any:
    """The front as a :class:`~profcompare.render.sections.Table` for the terminal: the layout,
    samples/s, the fullest tile and the memory ledger summary, fastest first."""
    from profcompare.render.sections import Cell, Column, Table

    chosen = front(points)
    if top is not None:
        chosen = chosen.head(top)
    header = (Column("Layout"), Column("Samples/s", True), Column("Fullest tile", True),
              *(Column(LEDGER_TITLES[m], True) for m in LEDGER_METRICS))
    rows = []
    for record in chosen.to_dict(orient="records"):
        rows.append((Cell(layout_text(record["knobs"], headline)), Cell(format_rate(record["samples_per_second"])),
                     Cell(format_bytes(record["max_tile_bytes"])),
                     *(Cell(format_bytes(record[m])) for m in LEDGER_METRICS)))
    return Table.of(header, tuple(rows))


#: when every evaluated layout's fullest tile lies within this fraction of the largest, the chart
#: plots a quantity that varies (always-live + not-always-live peak) instead
FLAT_SPREAD = 0.01

#: opens the page of the first point under a click (overlapping points: one page, not one per
#: point): a report page in a new tab, the point's row of the table below on this page otherwise
_OPEN_ONE = """
const indices = cb_data.source.selected.indices;
if (!indices.length) { return; }
const url = cb_data.source.data.url[indices[0]];
if (url.charAt(0) === "#") { window.location.hash = url; } else { window.open(url, "_blank"); }
"""


@dataclass(frozen=True)
class ChartAxis:
    """What the advise chart's x axis shows: each point's value in the axis's unit, the axis
    label, the section's title, a note saying why (empty when it is the fullest tile) and whether
    it is the fullest tile (the quantity the Pareto front is drawn over)."""

    values: np.ndarray
    label: str
    title: str
    note: str
    fullest_tile: bool


def chart_axis(points: pd.DataFrame) -> ChartAxis:
    """The x axis of the advise chart for ``points`` (the ones drawn): the fullest tile, unless
    every point's lies within :data:`FLAT_SPREAD` of the largest (then the points would sit in one
    column whatever their layout) and their always-live + not-always-live peak does vary."""
    from profcompare.render.interactive import _unit

    tiles = points["max_tile_bytes"].to_numpy(dtype="float64")
    tile_axis = ChartAxis(tiles / 1024.0, "fullest tile (KiB per tile, including gaps)",
                          "Throughput against the fullest tile", "", True)
    if len(tiles) < 2 or float(tiles.max()) - float(tiles.min()) > FLAT_SPREAD * float(tiles.max()):
        return tile_axis
    memory = (points["always_live_bytes"].to_numpy(dtype="float64")
              + points["not_always_live_peak_bytes"].to_numpy(dtype="float64"))
    if not np.isfinite(memory).all() or float(memory.max()) <= float(memory.min()):
        return tile_axis
    scale, unit = _unit(float(memory.max()))
    note = (f"Every layout's fullest tile lies within {FLAT_SPREAD:.0%} ({format_bytes(tiles.min())} to "
            f"{format_bytes(tiles.max())}), so the chart plots what does vary between layouts: always-live + "
            f"not-always-live peak, per replica ({format_bytes(memory.min())} to {format_bytes(memory.max())}). "
            "The Pareto front is still the one of samples per second against the fullest tile.")
    return ChartAxis(memory / scale, f"always-live + not-always-live peak ({unit} per replica)",
                     "Throughput against always-live + not-always-live peak", note, False)


def _drawn(points: pd.DataFrame) -> pd.DataFrame:
    """The points the chart draws: evaluated ones with a fullest tile."""
    return points[(points["status"] != "pruned") & np.isfinite(points["max_tile_bytes"].to_numpy(dtype="float64"))]


def point_anchors(points: pd.DataFrame) -> dict[str, str]:
    """label -> the id of the point's row in the page's table of every evaluated layout."""
    ran = points[points["status"] != "pruned"]
    return {str(label): f"point-{i}" for i, label in enumerate(ran["label"]) if label}


def advise_chart(points: pd.DataFrame, headline: Sequence[str], pages: Mapping[str, str]) -> dict[str, Any]:
    """The Bokeh JSON item of the chart: every point with figures at (:func:`chart_axis`,
    samples/s), fitting ones as blue circles, the others as red crosses, the front's points ringed
    in green (and joined by a line when the axis is the fullest tile); the legend right of the
    plot; hover shows the layout and figures; a click opens one page: the point's report page
    when written, else its row in the table of every evaluated layout."""
    from bokeh.models import ColumnDataSource, CustomJS, DataRange1d, HoverTool, NumeralTickFormatter, TapTool
    from bokeh.models.annotations import Legend
    from bokeh.plotting import figure

    from profcompare.render.interactive import _json_item

    # a point that ran out of memory has no execution profile: it is drawn at 0 samples/s
    known = _drawn(points)
    axis = chart_axis(known)
    anchors = point_anchors(points)
    records = known.to_dict(orient="records")
    fits = [bool(r["fits"]) for r in records]
    rates = [r["samples_per_second"] if math.isfinite(r["samples_per_second"]) else 0.0 for r in records]
    data = ColumnDataSource({
        "x": axis.values.tolist(),
        "y": rates,
        "kind": ["fits" if f else "does not fit (oom, over budget)" for f in fits],
        "marker": ["circle" if f else "x" for f in fits],
        "colour": [FIT_COLOUR if f else NOT_FIT_COLOUR for f in fits],
        "size": [9 if f else 10 for f in fits],
        "layout": [layout_text(r["knobs"], headline) for r in records],
        "status": [str(r["status"]) + ("" if r["fits"] else f" ({r['reason']})") for r in records],
        "rate": [format_rate(r["samples_per_second"]) if math.isfinite(r["samples_per_second"])
                 else "not known (no execution profile)" for r in records],
        "tile": [format_bytes(r["max_tile_bytes"]) for r in records],
        "url": [pages.get(str(r["label"])) or "#" + anchors.get(str(r["label"]), "points-table") for r in records],
    })

    fig = figure(height=420, sizing_mode="stretch_width", tools="pan,wheel_zoom,box_zoom,reset,save",
                 x_axis_label=axis.label, y_axis_label="samples per second", name="advise-chart")
    fig.toolbar.logo = None
    fig.yaxis.formatter = NumeralTickFormatter(format="0,0.[00]")
    fig.xaxis.formatter = NumeralTickFormatter(format="0,0.[00]")
    cast(DataRange1d, fig.y_range).start = 0  # throughput from zero: points without an execution profile sit on the axis
    points_renderer = fig.scatter("x", "y", source=data, marker="marker", size="size", color="colour", alpha=0.8,
                                  line_width=2, nonselection_alpha=0.8, legend_field="kind")
    on_front = known["pareto"].to_numpy(dtype=bool) & np.asarray(fits, dtype=bool)
    if on_front.any():
        xs, ys = axis.values[on_front], np.asarray(rates)[on_front]
        order = np.argsort(xs, kind="stable")
        # every front point ringed, so a front of one point is marked too; the line only where
        # the axis is the front's own quantity (elsewhere it would zigzag)
        fig.scatter(xs[order], ys[order], size=17, fill_alpha=0.0, line_color=FRONT_COLOUR, line_width=2.5,
                    legend_label="Pareto front")
        if axis.fullest_tile and on_front.sum() > 1:
            fig.line(xs[order], ys[order], color=FRONT_COLOUR, line_width=2, legend_label="Pareto front")
    fig.add_tools(HoverTool(renderers=[points_renderer], tooltips=[("layout", "@layout"), ("status", "@status"),
                                                                   ("samples/s", "@rate"), ("fullest tile", "@tile")]))
    fig.add_tools(TapTool(renderers=[points_renderer], callback=CustomJS(code=_OPEN_ONE)))
    if fig.legend:
        legend = fig.legend[0]
        legend.click_policy = "hide"
        fig.center = [model for model in fig.center if not isinstance(model, Legend)]
        fig.add_layout(legend, "right")  # outside the plot: it never covers a point
    return _json_item(fig)


def render_advise_html(points: pd.DataFrame, facts: AdviseVerdict, verdict: str, meta: Mapping[str, Any], *,
                       pages: Mapping[str, str] | None = None) -> str:
    """The advise page: the verdict first, the chart, the front with each point's memory ledger
    summary and a link to its page, the best layout of each variant, the pruned counts and every
    evaluated point; one self-contained HTML file (BokehJS inlined)."""
    from profcompare._version import __version__
    from profcompare.render.interactive import bokeh_js, bokeh_version
    from profcompare.render.templates_env import environment

    from profcompare.render.advise_words import advise_sentences

    pages = dict(pages or {})
    headline = tuple(meta.get("headline") or ())
    ran = points[points["status"] != "pruned"]
    has_chart = bool(np.isfinite(ran["max_tile_bytes"].to_numpy(dtype="float64")).any())
    axis = chart_axis(_drawn(points)) if has_chart else None
    anchors = point_anchors(points)
    best = list(facts.best_by_variant)
    context = {
        "version": __version__,
        "title": f"profcompare advise: {meta.get('workload')}",
        "facts": [
            ("run", str(meta.get("name"))),
            ("machine", f"{meta.get('ipus')} IPUs, Streaming Memory {format_bytes(meta.get('streaming_memory_bytes'))} "
                        "(assumed: 450 GB per IPU-M2000 of 4 IPUs)"),
            ("global batch", f"{meta.get('global_batch')} = {meta.get('global_batch_rule')}"),
            ("search", f"{meta.get('method')}" + (f", budget {meta.get('budget')} points, seed {meta.get('seed')}"
                                                   if meta.get("method") == "nsga2" else "")),
            ("shared knobs", ", ".join(f"{k}={v}" for k, v in (meta.get("base_config") or {}).items()) or "defaults"),
        ],
        "sentences": advise_sentences(facts, headline),
        "front": _rows(front(points), headline, pages, anchors),
        "best": [{"variant": str(p.knobs.get("variant")), "layout": layout_text(p.knobs, headline),
                  "rate": format_rate(p.samples_per_second), "tile": format_bytes(p.max_tile_bytes)} for p in best],
        "pruned": list(facts.pruned.items()),
        "points": _rows(ran, headline, pages, anchors),
        "ledger_titles": [LEDGER_TITLES[m] for m in LEDGER_METRICS],
        "notes": list(meta.get("notes") or ()),
        "chart": advise_chart(points, headline, pages) if has_chart else None,
        "chart_title": axis.title if axis else "",
        "chart_note": axis.note if axis else "",
        "chart_js": bokeh_js() if has_chart else "",
        "chart_library": f"BokehJS {bokeh_version()}",
        "data": {"schema_version": ADVISE_SCHEMA_VERSION, "verdict": verdict, "points": point_records(points)},
    }
    return environment().get_template("advise.html.j2").render(**context)


def advise_notebook_html(points: pd.DataFrame, facts: AdviseVerdict, *, workload: str, directory: str,
                         headline: Sequence[str]) -> str:
    """A notebook's view of an advise result: the verdict and the Pareto front (small: no chart)."""
    from profcompare.render.advise_words import advise_sentences
    from profcompare.render.templates_env import environment

    return environment().get_template("advise_notebook.html.j2").render(
        workload=workload, directory=directory, sentences=advise_sentences(facts, headline),
        front=_rows(front(points), headline, {}), ledger_titles=[LEDGER_TITLES[m] for m in LEDGER_METRICS])


def _rows(frame: pd.DataFrame, headline: Sequence[str], pages: Mapping[str, str],
          anchors: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The table rows of ``frame``'s points: display texts, the point's report page (``link``,
    empty without one), its run directory (relative to the advise run) and its row's anchor."""
    rows = []
    for record in frame.to_dict(orient="records"):
        label = str(record["label"])
        rows.append({
            "layout": layout_text(record["knobs"], headline),
            "status": str(record["status"]),
            "fits": bool(record["fits"]),
            "pareto": bool(record["pareto"]),
            "reason": record["reason"] or "",
            "rate": format_rate(record["samples_per_second"]),
            "tile": format_bytes(record["max_tile_bytes"]),
            "ledger": [format_bytes(record[m]) for m in LEDGER_METRICS],
            # only pages that exist are links (a run directory opens as a bare listing)
            "link": pages.get(label, ""),
            "directory": f"{label}/" if label else "",
            "anchor": (anchors or {}).get(label, ""),
            "cached": bool(record["cached"]),
        })
    return rows


__all__ = ["ADVISE_SCHEMA_VERSION", "advise_chart", "advise_notebook_html", "advise_csv", "advise_document", "front_table", "point_records",
           "render_advise_html"]
