"""The execution trace as a static matplotlib Figure (``Report.plot_trace()``,
``Comparison.plot_trace()`` in a notebook): one lane per IPU, blocks coloured by type as on the
HTML page (trace_chart.TYPE_COLOURS), SyncAns as a band under each lane, in a comparison the
base's lanes above the new's on the same time axis. Every block is drawn (matplotlib's
``broken_barh`` per lane and type), so zooming the figure in a notebook reaches single syncs.
Above each lane, the flame rows of the HTML chart (the programs enclosing its blocks, the
outermost on top, in the same tones and with the same merging of short bars in a large trace);
bars wide enough for it carry their program's name.
"""

from __future__ import annotations

from collections.abc import Sequence

from matplotlib.figure import Figure
from matplotlib.patches import Patch

from profcompare.analysis import trace as trace_analysis
from profcompare.model import Report
from profcompare.analysis import flame
from profcompare.render.trace_chart import FLAME_COLOURS, FLAME_ROW, colour_of, flame_row, lane_centres, lane_flames

#: A flame bar is named in the figure when at least this share of the time axis wide.
LABELLED_SHARE = 0.08


def plot_trace(reports: Sequence[Report], roles: Sequence[str] | None = None) -> Figure:
    """The execution trace of ``reports`` (one, or [base, new]) as a Figure; a figure saying
    "no execution trace" when none has one."""
    roles = list(roles or (["report"] if len(reports) == 1 else ["base", "new"][: len(reports)]))
    from profcompare.render.sections.trace import shown_run_report

    reports = [shown_run_report(report) for report in reports]  # the run the views draw
    lanes = []
    indexed = []
    for index, (report, role) in enumerate(zip(reports, roles, strict=True)):
        name = report.label if role == "report" else f"{role}: {report.label}"
        for ipu in sorted(int(i) for i in report.trace["ipu"].unique()):
            lanes.append((report, ipu, f"{name} IPU {ipu}" if len(reports) > 1 else f"IPU {ipu}"))
            indexed.append((index, ipu, lanes[-1][2]))
    spans, _width = lane_flames(reports, indexed)
    rows = [flame.flame_depth(s) for s in spans]
    centres = lane_centres(rows)
    fig = Figure(figsize=(11, 1.2 + 0.7 * max(len(lanes), 1) + 0.7 * FLAME_ROW * sum(rows)), layout="constrained")
    ax = fig.add_subplot()
    if not lanes:
        ax.text(0.5, 0.5, "no execution trace", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return fig
    first = min(int(r.trace["cycles_from"].min()) for r in reports if len(r.trace))
    run = max(max(int(r.trace["cycles_to"].max()) for r in reports if len(r.trace)) - first, 1)
    for position, part in enumerate(spans):
        for depth, level in part.groupby("depth", sort=True):
            low, high = flame_row(centres[position], rows[position], int(depth))
            starts = level["cycles_from"].to_numpy()
            widths = (level["cycles_to"] - level["cycles_from"]).to_numpy()
            ax.broken_barh(list(zip(starts, widths)), (low, high - low), linewidth=0.4, edgecolor="white",
                           facecolors=FLAME_COLOURS[int(depth) % len(FLAME_COLOURS)])
            for a, w, name in zip(starts.tolist(), widths.tolist(), level["name"].tolist()):
                if w >= LABELLED_SHARE * run:
                    ax.text(a + w / 2, (low + high) / 2, str(name), ha="center", va="center", fontsize="xx-small",
                            clip_on=True, parse_math=False)
    seen: dict[str, str] = {}
    for position, (report, ipu, _label) in enumerate(lanes):
        y = centres[position]
        lane = report.trace[report.trace["ipu"].to_numpy() == ipu]
        for block_type, part in lane.groupby(lane["type"].astype(str), sort=True):
            starts = part["cycles_from"].to_numpy()
            widths = (part["cycles_to"] - part["cycles_from"]).to_numpy()
            waiting = block_type == trace_analysis.WAITING_TYPE
            low, height = (y - 0.42, 0.14) if waiting else (y - 0.22, 0.62)
            colour = colour_of(block_type)
            ax.broken_barh(list(zip(starts, widths)), (low, height), facecolors=colour, linewidth=0,
                           alpha=0.6 if waiting else 0.95)
            seen[block_type] = colour
    ax.set_yticks(centres, [label for *_r, label in lanes])
    ax.set_ylim(centres[-1] - 0.55, 0.6 + rows[0] * FLAME_ROW)
    ax.set_xlabel("cycles")
    ax.ticklabel_format(axis="x", style="plain")
    ax.set_title("Execution trace")
    handles = [Patch(color=c, label=t) for t, c in sorted(seen.items())]
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=min(len(handles), 6),
              frameon=False, fontsize="small")
    return fig


__all__ = ["plot_trace"]
