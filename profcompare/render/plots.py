"""Matplotlib figures of one or more reports, and their SVG form for the HTML page.

Every function is pure: it takes reports, builds a new :class:`matplotlib.figure.Figure` with the
object API (no pyplot, so no global figure registry and no GUI backend) and returns it. Nothing
here shows a window or writes a file. Several reports are overlaid in the order given; for a
comparison that is ``[base, new]``.

Long series are reduced with :func:`downsample_max` (maximum per bucket), so a curve of
100,000 program steps or many thousand tiles still draws at most ``max_points`` points and its
peaks survive.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd
from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator
from matplotlib.transforms import offset_copy

from profcompare.analysis import views as analysis
from profcompare.model import Report
from profcompare.render.figure_data import (
    BUDGET_COLOUR,
    LOCATION_COLOURS,
    PHASE_COLOURS,
    REPORT_COLOURS,
    category_stack,
    execution_bar_text,
    hold_between_steps,
    host_seconds,
    largest_programs,
    phase_stack,
)
from profcompare.render.format import format_bytes
from profcompare.render.labels import live_label, location_label, parameter_label, phase_label

#: Most points a plotted curve keeps (see :func:`downsample_max`).
MAX_POINTS = 2000

def _text(label: str) -> str:
    """A user string made safe for matplotlib: no mathtext, and not hidden from legends."""
    label = label.replace("$", r"\$")
    return " " + label if label.startswith("_") else label


def _labels(reports: Sequence[Report]) -> list[str]:
    """The legend/axis names of ``reports``: their labels, told apart when two are equal.

    Comparing two runs of one variant gives two reports with the same label; the two reports
    of a comparison are [base, new], so they are then called ``base: X`` and ``new: X``.
    """
    labels = [r.label for r in reports]
    if len(set(labels)) < len(labels):
        if len(labels) == 2:
            labels = [f"base: {labels[0]}", f"new: {labels[1]}"]
        else:
            labels = [f"{label} #{index + 1}" for index, label in enumerate(labels)]
    return [_text(label) for label in labels]


class _BinaryLocator(MaxNLocator):
    """Ticks at round multiples of the 1024-based unit the axis is shown in (KiB, MiB, ...)."""

    def __init__(self) -> None:
        super().__init__(nbins=6, steps=[1, 2, 2.5, 5, 10])

    def tick_values(self, vmin: float, vmax: float) -> Sequence[float]:
        largest = max(abs(vmin), abs(vmax), 1.0)
        scale = 1024.0 ** int(np.floor(np.log(largest) / np.log(1024)))
        ticks = np.asarray(super().tick_values(vmin / scale, vmax / scale)) * scale
        return [float(t) for t in ticks]


def _bytes_axis(ax: Axes, axis: str = "y") -> None:
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_locator(_BinaryLocator())
    target.set_major_formatter(FuncFormatter(lambda value, _pos: format_bytes(value)))


def _figure(height: float = 3.4, width: float = 10.0) -> Figure:
    return Figure(figsize=(width, height), layout="constrained")


def _colour(index: int) -> str:
    return REPORT_COLOURS[index % len(REPORT_COLOURS)]


def _empty(ax: Axes, message: str) -> None:
    ax.text(0.5, 0.5, message, ha="center", va="center", transform=ax.transAxes, color="#777777")
    ax.set_xticks([])
    ax.set_yticks([])


def downsample_max(x: np.ndarray, y: np.ndarray, max_points: int = MAX_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """Reduce a curve to at most ``max_points`` points, keeping the maximum of each bucket.

    Returns ``(x, y)``: unchanged when short enough; otherwise the points are cut into equal
    consecutive buckets and each bucket becomes one point at its first ``x`` with its largest
    ``y``, so every peak keeps its height (its position moves by less than one bucket).
    """
    x = np.asarray(x)
    y = np.asarray(y)
    n = len(y)
    if n <= max_points:
        return x, y
    bucket = -(-n // max_points)  # ceil
    starts = np.arange(0, n, bucket)
    # fmax ignores NaN (gaps of aligned curves) unless a whole bucket is NaN
    return x[starts], np.fmax.reduceat(y, starts)


def _liveness_curve(
    report: Report, index: int, aligned: pd.DataFrame | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, bytes, step) of one report's curve: its own steps, or the aligned positions (NaN gaps)."""
    live = report.liveness_per_step()
    if aligned is None:
        steps = live["step"].to_numpy(dtype="int64")
        return steps.astype("float64"), live["not_always_live_bytes"].to_numpy(dtype="float64"), steps
    side = ("base", "new")[index]
    values = aligned[f"{side}_not_always_live_bytes"].to_numpy(dtype="float64", na_value=np.nan)
    steps = aligned[f"{side}_step"].to_numpy(dtype="float64", na_value=np.nan)
    return aligned["position"].to_numpy(dtype="float64"), hold_between_steps(values), steps


def plot_liveness(
    reports: Sequence[Report], *, aligned: pd.DataFrame | None = None, max_points: int = MAX_POINTS
) -> Figure:
    """Not-always-live bytes per program step, one step curve per report.

    Returns a Figure with one Axes: per report (in order) a step line of the not-always-live
    bytes (x: program step, y: bytes; downsampled to ``max_points`` keeping maxima), a dashed
    horizontal line at its always-live bytes and a marker at its peak, annotated with the
    report's step and program. With ``aligned`` (a ``Comparison.liveness`` frame; then
    ``reports`` is ``[base, new]``) both curves share the x axis of aligned positions, so the
    same program lines up in both; a step one side lacks holds that side's previous level and
    the shorter program's curve ends at its last step (NaN after it: nothing drawn). The legend
    is below the axes, never over the curves.
    """
    if aligned is not None and len(reports) != 2:
        raise ValueError("aligned liveness needs exactly two reports: [base, new]")
    fig = _figure()
    ax = fig.add_subplot()
    if not any(len(r.liveness) for r in reports):
        _empty(ax, "no liveness data")
        return fig
    names = _labels(reports)
    peaks = [analysis.liveness_peak(report) for report in reports]
    # every note is stacked above the highest peak (not its own), so notes of peaks at nearby
    # heights never cover each other; each keeps a line to its own peak
    notes_base = max((float(p["not_always_live_bytes"]) for p in peaks if p["step"] is not None), default=0.0)
    for index, report in enumerate(reports):
        colour = _colour(index)
        label = names[index]
        x_all, y_all, steps = _liveness_curve(report, index, aligned)
        if len(x_all):
            x, y = downsample_max(x_all, y_all, max_points)
            # repeat the last value one step on, so the last step is drawn with its width
            x = np.append(x, x[-1] + (x[-1] - x[-2] if len(x) > 1 else 1))
            y = np.append(y, y[-1])
            ax.step(x, y, where="post", color=colour, linewidth=1.4, label=f"{label}: {live_label(False)}")
            ax.fill_between(x, np.nan_to_num(y), step="post", color=colour, alpha=0.10, linewidth=0)
        always_live = float(report.tiles["always_live_bytes"].sum())
        ax.axhline(always_live, color=colour, linestyle="--", linewidth=1.0, label=f"{label}: {live_label(True)}")
        peak = peaks[index]
        if peak["step"] is not None:
            step, program, value = peak["step"], peak["program"], peak["not_always_live_bytes"]
            where = np.flatnonzero(steps == step)
            x_peak = float(x_all[where[0]]) if len(where) else float(step)
            right_half = x_peak > 0.5 * float(np.nanmax(x_all))
            ax.annotate(
                _text(f"peak {format_bytes(value)} at step {step:,} ({program})"),
                xy=(x_peak, value),
                xytext=(x_peak, notes_base),
                textcoords=offset_copy(ax.transData, fig=fig, x=-8 if right_half else 8, y=10 + 16 * index,
                                       units="points"),
                ha="right" if right_half else "left",
                fontsize=8,
                color=colour,
                bbox={"boxstyle": "round,pad=0.2", "facecolor": "white", "edgecolor": "none", "alpha": 0.85},
                arrowprops={"arrowstyle": "-", "color": colour, "linewidth": 0.8},
            )
            ax.plot([x_peak], [value], marker="o", markersize=4, color=colour, linestyle="none")
    ax.set_xlabel("program step" if aligned is None else "program step (base and new aligned by program)")
    ax.set_ylabel("bytes per replica")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    _bytes_axis(ax)
    ax.grid(True, axis="y", color="#e3e3e3", linewidth=0.6)
    ax.margins(y=0.12)
    ax.set_ylim(bottom=0)
    fig.legend(loc="outside lower center", fontsize=8, frameon=False, ncols=2 * max(len(reports), 1))
    return fig


def plot_categories(reports: Sequence[Report]) -> Figure:
    """Memory by category: one horizontal stacked bar per report.

    Returns a Figure with one Axes whose bar containers are the categories (legend order: by
    group, then by largest bytes), each with one bar per report (bytes summed over the tiles of
    one replica). Categories that are zero in every report are left out.
    """
    fig = _figure(height=1.2 + 0.55 * max(len(reports), 1))
    ax = fig.add_subplot()
    table = category_stack(reports)
    if table.empty:
        _empty(ax, "no memory category data")
        return fig
    labels = _labels(reports)
    positions = np.arange(len(reports))[::-1]
    left = np.zeros(len(reports))
    for category, row in table.iterrows():
        values = row[list(range(len(reports)))].to_numpy(dtype=float)
        ax.barh(
            positions,
            values,
            left=left,
            color=row["colour"],
            height=0.6,
            label=_text(str(category)),
            edgecolor="white",
            linewidth=0.4,
        )
        left += values
    for pos, total in zip(positions, left, strict=True):
        ax.text(total, pos, " " + format_bytes(total), va="center", fontsize=8)
    ax.set_yticks(positions, labels)
    ax.set_xlim(0, left.max() * 1.12)
    _bytes_axis(ax, "x")
    ax.set_xlabel("bytes per replica")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return fig


def plot_tiles(reports: Sequence[Report], *, max_points: int = MAX_POINTS) -> Figure:
    """Memory per tile (bytes including gaps), one line per report, with the tile budget.

    Returns a Figure with one Axes: per report a line over tile index (downsampled to
    ``max_points`` keeping maxima), then one dashed horizontal line per distinct
    ``target.bytes_per_tile`` (the tile budget), labelled.
    """
    fig = _figure()
    ax = fig.add_subplot()
    if not any(len(r.tiles) for r in reports):
        _empty(ax, "no per-tile data")
        return fig
    for index, report in enumerate(reports):
        tiles = report.tiles
        if not len(tiles):
            continue
        x, y = downsample_max(tiles["tile"].to_numpy(), tiles["bytes_including_gaps"].to_numpy(), max_points)
        ax.plot(x, y, color=_colour(index), linewidth=0.9, label=_labels(reports)[index])
    for budget in sorted({r.meta.target.bytes_per_tile for r in reports}):
        ax.axhline(
            budget, color=BUDGET_COLOUR, linestyle="--", linewidth=1.0, label=f"tile budget {format_bytes(budget)}"
        )
    ax.set_xlabel("tile")
    ax.set_ylabel("bytes (incl. gaps)")
    ax.set_ylim(bottom=0)
    ax.set_xlim(left=0)
    _bytes_axis(ax)
    ax.grid(True, axis="y", color="#e3e3e3", linewidth=0.6)
    fig.legend(loc="outside lower center", fontsize=8, frameon=False, ncols=len(reports) + 1)
    return fig


def plot_code(reports: Sequence[Report], *, top: int = 15) -> Figure:
    """Code bytes by program: grouped horizontal bars, one bar per report for each program.

    Returns a Figure with one Axes holding one bar container per report; the programs are the
    ``top`` largest by their largest code bytes over the reports (summed over code categories).
    """
    table = largest_programs(reports, top)
    fig = _figure(height=1.0 + 0.28 * min(len(table), top) * max(len(reports), 1) ** 0.5)
    ax = fig.add_subplot()
    if table.empty:
        _empty(ax, "no code data")
        return fig
    n = len(reports)
    height = 0.8 / n
    positions = np.arange(len(table))[::-1]
    for index, label in enumerate(_labels(reports)):
        ax.barh(
            positions + (n - 1 - 2 * index) * height / 2,
            table[index].to_numpy(dtype=float),
            height=height,
            color=_colour(index),
            label=label,
        )
    ax.set_yticks(positions, [_text(str(name)) for name in table.index], fontsize=8)
    _bytes_axis(ax, "x")
    ax.set_xlabel("code bytes per replica")
    # beside the axes: inside, it would cover the bars of the smallest programs
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.grid(True, axis="x", color="#e3e3e3", linewidth=0.6)
    return fig


def plot_execution(reports: Sequence[Report]) -> Figure:
    """Device cycles per step by device phase: one horizontal stacked bar per report.

    Returns a Figure with one Axes whose bar containers are the device phases present
    (DEVICE_PHASES order), each with one bar per report (device cycles per run of the main
    program). Host/runtime time is not device time: it is not stacked, only written after each
    bar beside its device cycles.
    """
    fig = _figure(height=1.2 + 0.55 * max(len(reports), 1))
    ax = fig.add_subplot()
    table = phase_stack(reports)
    if table.empty:
        _empty(ax, "no execution profile")
        return fig
    positions = np.arange(len(reports))[::-1]
    left = np.zeros(len(reports))
    for phase, row in table.iterrows():
        values = row.to_numpy(dtype=float)
        ax.barh(
            positions,
            values,
            left=left,
            height=0.6,
            color=PHASE_COLOURS[str(phase)],
            label=phase_label(phase),
            edgecolor="white",
            linewidth=0.4,
        )
        left += values
    for pos, total, report in zip(positions, left, reports, strict=True):
        ax.text(total, pos, " " + execution_bar_text(total, host_seconds(report)), va="center", fontsize=8)
    ax.set_yticks(positions, _labels(reports))
    ax.set_xlim(0, max(left.max(), 1) * 1.6)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: f"{v:,.0f}"))
    ax.set_xlabel("device cycles per step")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return fig


def thin_tick_labels(fig: Figure) -> Figure:
    """Lay ``fig`` out and hide x tick labels that would overlap the label before them; returns
    ``fig``. Labels are first tried level, then upright (rotated 90 degrees) when level ones
    collide; what still collides (values close together on a log axis) is thinned, keeping the
    first and every label that has room."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if not isinstance(fig.canvas, FigureCanvasAgg):
        FigureCanvasAgg(fig)
    for rotation in (0, 90):
        for ax in fig.axes:
            for label in ax.get_xticklabels():
                label.set_rotation(rotation)
                label.set_horizontalalignment("center")
                label.set_visible(True)
        fig.draw_without_rendering()
        if not any(_colliding(ax) for ax in fig.axes):
            return fig
    for ax in fig.axes:
        last = None
        for label in ax.get_xticklabels():
            if not label.get_text():
                continue
            box = label.get_window_extent()
            if last is not None and box.x0 < last.x1 + 2:
                label.set_visible(False)
            else:
                last = box
    fig.draw_without_rendering()
    return fig


def _colliding(ax: Axes) -> bool:
    """True when two of the axes' visible x tick labels overlap (or touch)."""
    boxes = sorted((label.get_window_extent() for label in ax.get_xticklabels()
                    if label.get_visible() and label.get_text()), key=lambda b: b.x0)
    return any(b.x0 < a.x1 + 2 for a, b in zip(boxes, boxes[1:]))


#: No date/creator/format metadata: smaller, byte-for-byte reproducible SVG.
_NO_METADATA: dict[str, None] = {"Date": None, "Creator": None, "Format": None, "Type": None}
_XML_PROLOGUE = re.compile(r"\A.*?(?=<svg\b)", re.DOTALL)


def figure_to_svg(fig: Figure, *, id_salt: str = "") -> str:
    """The figure as an SVG element ready to inline in HTML (no XML prologue or DOCTYPE).

    Text stays text (``svg.fonttype: none``) to keep the file small; no date or creator
    metadata, so the same figure gives the same SVG. ``id_salt`` (e.g. the figure's element id
    in the page) keeps the generated clip-path ids of several figures inlined in one page
    apart. Rendering settings apply only to this call (no global state changes). Returns the
    ``<svg ...>...</svg>`` markup.
    """
    buffer = io.StringIO()
    salt = id_salt or fig.get_label() or "profcompare"
    with rc_context({"svg.fonttype": "none", "svg.hashsalt": salt, "font.sans-serif": ["DejaVu Sans", "Arial"]}):
        fig.savefig(buffer, format="svg", metadata=_NO_METADATA)
    svg = _XML_PROLOGUE.sub("", buffer.getvalue(), count=1)
    return svg.strip()


__all__ = [
    "MAX_POINTS",
    "REPORT_COLOURS",
    "downsample_max",
    "figure_to_svg",
    "plot_categories",
    "plot_code",
    "plot_execution",
    "plot_lifetimes",
    "plot_liveness",
    "plot_tiles",
    "thin_tick_labels",
]


def plot_ledger(comparison, *, top: int = 12) -> Figure:  # comparison: profcompare.comparison.Comparison
    """The memory ledger of a comparison: per parameter, a base bar and a new bar, each stacked by
    location (always-live, not-always-live, Streaming Memory).

    Returns a Figure with one Axes; bar containers are the locations (label = location), each with
    two bars per parameter (base above new). The ``top`` parameters with the largest |delta| are
    shown (the unattributed "" as "(no parameter)"); bytes per replica, not-always-live bytes as
    the most the group holds at once.
    """
    from profcompare.model import LOCATIONS

    table = comparison.ledger_by_parameter().head(top)
    fig = _figure(height=1.0 + 0.5 * max(len(table), 1))
    ax = fig.add_subplot()
    if table.empty:
        _empty(ax, "no ledger: the reports attribute no memory")
        return fig
    names = [parameter_label(p) for p in table["parameter"]]
    count = len(names)
    base_pos = np.arange(count)[::-1] * 2.6 + 1.0
    new_pos = base_pos - 1.0
    for side, positions in (("base", base_pos), ("new", new_pos)):
        left = np.zeros(count)
        for loc in LOCATIONS:
            values = table[f"{side}_{loc}"].to_numpy(dtype=float)
            ax.barh(positions, values, left=left, height=0.9, color=LOCATION_COLOURS[loc],
                    label=location_label(loc) if side == "base" else None, edgecolor="white", linewidth=0.4,
                    hatch=None if side == "base" else "//")
            left += values
    labels = [_text(f"{name} ({side})") for name in names for side in ("base", "new")]
    ax.set_yticks(np.ravel(np.column_stack([base_pos, new_pos])), labels, fontsize=7)
    _bytes_axis(ax, "x")
    ax.set_xlabel(_text(f"bytes per replica: base {comparison.base.label}, new {comparison.new.label}"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return fig


def _lifetime_label(parameter: str, role: str, folded: bool) -> str:
    """The row label of a lifetime: ``parameter · role`` (the folded row's own text)."""
    return parameter if folded else f"{parameter_label(parameter)} · {role}"


def plot_lifetimes(comparison, *, top: int = 24) -> Figure:  # comparison: profcompare.comparison.Comparison
    """The lifetimes of a comparison (:meth:`Comparison.lifetimes`): per (parameter, role) a base
    bar over a new bar spanning the program steps its tile memory is live over.

    Returns a Figure with one Axes: ``broken_barh`` collections, one per side and kind (the label
    names the side; always-live groups are hatched and span the whole run). x: each report's own
    program steps; rows are the ``top`` largest groups, the rest folded into one row.
    """
    rows = comparison.lifetimes(top)
    fig = _figure(height=1.0 + 0.42 * max(len(rows), 1))
    ax = fig.add_subplot()
    if rows.empty:
        _empty(ax, "no lifetimes: the reports attribute no tile memory")
        return fig
    count = len(rows)
    base_y = np.arange(count)[::-1] * 2.6 + 1.0
    for side, offset, index in (("base", 0.0, 0), ("new", -1.0, 1)):
        first = rows[f"{side}_first_step"].to_numpy(dtype="float64", na_value=np.nan)
        last = rows[f"{side}_last_step"].to_numpy(dtype="float64", na_value=np.nan)
        always = rows[f"{side}_always_live"].to_numpy(dtype=bool)
        colour = _colour(index)
        for kind, mask in (("not-always-live", ~always), ("always-live", always)):
            ok = mask & ~np.isnan(first)
            spans = [(float(f), float(la - f + 1)) for f, la in zip(first[ok], last[ok], strict=True)]
            for (start, width), y in zip(spans, base_y[ok] + offset, strict=True):
                ax.broken_barh([(start, width)], (y - 0.45, 0.9), facecolors=colour,
                               alpha=0.35 if kind == "always-live" else 0.9,
                               hatch="//" if kind == "always-live" else None, edgecolor=colour, linewidth=0.4)
        ax.plot([], [], color=colour, linewidth=6, label=_text(f"{side}: {getattr(comparison, side).label}"))
    labels = [_text(_lifetime_label(str(p), str(r), bool(f)))
              for p, r, f in zip(rows["parameter"], rows["role"], rows["folded"], strict=True)]
    ax.set_yticks(base_y - 0.5, labels, fontsize=7)
    ax.set_xlabel("program step (each report's own; hatched: always-live, over the whole run)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return fig
