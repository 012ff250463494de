"""The page's lifetime chart: each (parameter, role) of the ledger as a bar over program steps,
the base bar over the new bar (:meth:`profcompare.comparison.Comparison.lifetimes`).

One lane per (parameter, role), the largest :data:`PAGE_LIFETIME_ROWS` and one folded row; in each
lane the base bar above the new bar, each from its first to its last live step. Always-live
groups span the whole run, drawn paler and hatched, so optimizer state live over the whole run
in one layout and only around the update in the other stands out. Hovering a bar shows the
group, the report, its bytes and its steps. Names reach the chart only as data (Bokeh's tooltip
field substitution inserts text, never markup) inside the JSON item the page escapes.

Size: one Quad per bar (at most 2 x (:data:`PAGE_LIFETIME_ROWS` + 1)), whatever the programs' steps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from profcompare.render import bokeh_doc
from profcompare.render.figure_data import REPORT_COLOURS
from profcompare.render.format import format_bytes_each
from profcompare.render.interactive import InteractiveChart, _empty_chart, _json_item, _short
from profcompare.render.labels import parameter_label

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.comparison import Comparison

#: Where a side's bar sits in its lane (fractions of a lane: base above, new below).
_BARS = {"base": (-0.05, 0.40), "new": (-0.45, -0.10)}


def lifetime_label(parameter: Any, role: Any, folded: bool) -> str:
    """A lane's label: ``parameter · role`` (the folded row's own text)."""
    return str(parameter) if folded else f"{parameter_label(parameter)} · {role}"


def _steps_text(first: np.ndarray, last: np.ndarray, always: np.ndarray) -> list[str]:
    return [("whole run, always-live " if a else "") + (f"{int(f):,}" if f == la else f"{int(f):,}–{int(la):,}")
            for f, la, a in zip(first.tolist(), last.tolist(), always.tolist(), strict=True)]


#: Lanes the page draws (the largest groups; the rest folded into one more): the page's height
#: budget (the JSON's ``lifetimes`` holds every group).
PAGE_LIFETIME_ROWS = 16


def lifetime_chart(cmp: Comparison, *, chart_id: str = "chart-lifetimes", top: int = PAGE_LIFETIME_ROWS
                   ) -> InteractiveChart:
    """The interactive lifetime chart of a comparison (see the module docstring)."""
    rows = cmp.lifetimes(top)
    if rows.empty:
        return _empty_chart(chart_id, "no lifetimes: the reports attribute no tile memory")
    lanes = len(rows)
    labels = [lifetime_label(p, r, bool(f)) for p, r, f in zip(rows["parameter"], rows["role"], rows["folded"],
                                                                 strict=True)]
    steps = max(len(cmp.base.liveness_per_step()), len(cmp.new.liveness_per_step()), 1)
    fig = bokeh_doc.Figure(
        chart_id,
        height=100 + 24 * lanes,
        x_label="program step (each report's own)",
        x_range=bokeh_doc.fixed_range(0, steps, name=f"{chart_id}:x", bounds=(0, steps)),
        y_range=bokeh_doc.fixed_range(-lanes + 0.4, 0.6),
        wheel_zoom=True,
    )
    fig.ygrid.set(grid_line_color=None)
    fig.yaxis.set(ticker=bokeh_doc.Model("FixedTicker", ticks=[-float(p) for p in range(lanes)], minor_ticks=[]),
                  major_label_overrides=bokeh_doc.Map((-float(p), _short(label)) for p, label in enumerate(labels)))
    lane = -np.arange(lanes, dtype="float64")
    renderers = []
    for index, (side, report) in enumerate((("base", cmp.base), ("new", cmp.new))):
        first = rows[f"{side}_first_step"].to_numpy(dtype="float64", na_value=np.nan)
        last = rows[f"{side}_last_step"].to_numpy(dtype="float64", na_value=np.nan)
        always = rows[f"{side}_always_live"].to_numpy(dtype=bool)
        nbytes = rows[f"{side}_bytes"].to_numpy(dtype="float64")
        colour = REPORT_COLOURS[index % len(REPORT_COLOURS)]
        low, high = _BARS[side]
        for kind, mask in (("not-always-live", ~always), ("always-live", always)):
            ok = mask & ~np.isnan(first)
            if not ok.any():
                continue
            data: dict[str, Any] = {
                "left": first[ok], "right": last[ok] + 1.0,
                "bottom": lane[ok] + low, "top": lane[ok] + high,
                "group": [_short(label) for label, keep in zip(labels, ok.tolist(), strict=True) if keep],
                "report": [f"{side}: {report.label}"] * int(ok.sum()),
                "bytes": format_bytes_each(nbytes[ok]),
                "steps": _steps_text(first[ok], last[ok], always[ok]),
            }
            source = bokeh_doc.data_source(data, name=f"{chart_id}:{side}:{kind}")
            attributes: dict[str, Any] = {"fill_alpha": 0.9, "line_color": colour, "line_width": 0.5}
            if kind == "always-live":
                attributes.update(fill_alpha=0.25, hatch_pattern="/", hatch_color=colour, hatch_alpha=0.6)
            renderers.append(fig.glyph("Quad", source, legend_label=f"{side} ({kind})", left="left", right="right",
                                       bottom="bottom", top="top", fill_color=colour, **attributes))
    fig.hover(renderers, [("group", "@group"), ("report", "@report"), ("bytes", "@bytes"), ("steps", "@steps")],
              point_policy="follow_mouse")
    fig.legend_below(orientation="horizontal", click_policy="hide")
    caption = ("Lifetimes: each (parameter, role) of the ledger as a bar from the first to the last program step "
               "its tile memory is live at, the base bar above the new bar; always-live groups (pale, hatched) span "
               "the whole run. Hover a bar for its bytes and steps; drag or turn the wheel to zoom into steps.")
    shown = int((~rows["folded"]).sum())
    note = (f"The {shown:,} largest groups by bytes" + (", the rest folded into the last row" if
                                                           bool(rows["folded"].any()) else "")
            + f"; steps are each report's own (base {len(cmp.base.liveness_per_step()):,}, "
              f"new {len(cmp.new.liveness_per_step()):,}).")
    return InteractiveChart(chart_id, _json_item(fig), caption, note)


__all__ = ["PAGE_LIFETIME_ROWS", "lifetime_chart", "lifetime_label"]
