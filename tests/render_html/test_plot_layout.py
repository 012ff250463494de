"""Figures lay out without covering their data: legends outside the axes, tick labels apart."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Text

from profcompare.comparison import compare
from profcompare.model import Report
from profcompare.render import plots
from profcompare.render.sweep import plot_sweep


def _drawn(fig: Figure) -> Figure:
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig


def _legends(fig: Figure) -> list:
    return [*fig.legends, *(ax.get_legend() for ax in fig.axes if ax.get_legend() is not None)]


def _figures(onchip: Report, offchip: Report) -> dict[str, Figure]:
    diff = compare(onchip, offchip)
    return {
        "report liveness": onchip.plot_liveness(),
        "comparison liveness": diff.plot_liveness(),
        "categories": plots.plot_categories([onchip, offchip]),
        "tiles": plots.plot_tiles([onchip, offchip]),
        "code": plots.plot_code([onchip, offchip]),
        "execution": plots.plot_execution([onchip, offchip]),
        "ledger": plots.plot_ledger(diff),
        "sweep": plot_sweep(_sweep_table({"hidden": [128, 256, 512]}), ["hidden"]),
    }


def test_every_legend_is_outside_every_axes_and_inside_the_figure(onchip: Report, offchip: Report) -> None:
    for name, fig in _figures(onchip, offchip).items():
        _drawn(fig)
        legends = _legends(fig)
        assert legends, name
        page = fig.bbox
        for legend in legends:
            box = legend.get_window_extent()
            for ax in fig.axes:
                assert not box.overlaps(ax.get_window_extent()), name
            assert page.x0 - 1 <= box.x0 and box.x1 <= page.x1 + 1 and page.y0 - 1 <= box.y0 and box.y1 <= page.y1 + 1, name


def _sweep_table(knobs: dict[str, list]) -> pd.DataFrame:
    n = len(next(iter(knobs.values())))
    rows = np.arange(n, dtype="float64")
    return pd.DataFrame({
        "point": [f"p{i}" for i in range(n)], **knobs, "status": ["ok"] * n,
        "always_live_bytes": 2**20 * (1 + rows), "not_always_live_peak_bytes": 2**21 * (1 + rows),
        "code_bytes": 2**19 * (1 + rows), "streaming_memory_bytes": 2**18 * rows,
        "cycles_per_step": 1e5 * (1 + rows), "samples_per_second": 1e4 * (1 + rows), "error": [None] * n,
    })


def _visible_labels(ax) -> list:
    return [label for label in ax.get_xticklabels() if label.get_visible() and label.get_text()]


def _grid() -> pd.DataFrame:
    hidden = [128] * 6 + [256] * 6 + [512] * 6
    replicas = [1, 2, 4, 8, 16, 32] * 3
    table = _sweep_table({"hidden": hidden, "replicas": replicas})
    table["point"] = [f"hidden={h},replicas={r}" for h, r in zip(hidden, replicas)]
    return table


@pytest.mark.parametrize("case", ["close values on a log axis", "a grid of 18 long labels", "three short values"])
def test_sweep_tick_labels_never_overlap(case: str) -> None:
    if case == "close values on a log axis":
        fig = plot_sweep(_sweep_table({"sharded_threshold": [10**10, 262145, 1024, 512, 600, 2048]}),
                         ["sharded_threshold"])
    elif case == "a grid of 18 long labels":
        fig = plot_sweep(_grid(), ["hidden", "replicas"])
    else:
        fig = plot_sweep(_sweep_table({"hidden": [128, 256, 512]}), ["hidden"])
    _drawn(fig)
    for ax in fig.axes[:2]:
        boxes = sorted((label.get_window_extent() for label in _visible_labels(ax)), key=lambda b: b.x0)
        assert all(not a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:]), case
        texts = [label.get_text() for label in _visible_labels(ax)]
        if case == "close values on a log axis":
            # 512 and 600 sit closer than a label's height: the first stays, the other goes
            assert texts[0] == "512" and "600" not in texts and {"262145", "1e10"} <= set(texts)
        elif case == "a grid of 18 long labels":
            assert len(texts) == 18 and all(label.get_rotation() == 90 for label in _visible_labels(ax))
        else:
            assert texts == ["128", "256", "512"] and all(label.get_rotation() == 0 for label in _visible_labels(ax))


def test_the_peak_notes_of_a_comparison_do_not_cover_each_other(onchip: Report) -> None:
    # two runs of one program: both peaks at the same step and height, the notes stacked apart
    again = Report.build(
        onchip.meta.replace(source="reports/r2/onchip/profile.sqlite"),
        **{t: getattr(onchip, t) for t in ("tiles", "categories", "variables", "liveness", "code", "execution")},
    )
    fig = _drawn(compare(onchip, again).plot_liveness())
    notes = [text for text in fig.axes[0].texts if text.get_text().startswith("peak")]
    assert len(notes) == 2
    # the text of each note (Text's extent: without the arrow to its peak)
    first, second = (Text.get_window_extent(note) for note in notes)
    assert not first.overlaps(second)


@pytest.mark.parametrize("scale", [0.9, 0.8, 0.7, 0.6])
def test_the_peak_notes_of_peaks_at_nearby_heights_do_not_cover_each_other(onchip: Report, scale: float) -> None:
    # the new run's peak a little lower than the base's (as moving optimizer state off chip does)
    liveness = onchip.liveness.copy()
    liveness["not_always_live_bytes"] = (liveness["not_always_live_bytes"] * scale).astype("int64")
    lower = Report.build(
        onchip.meta.replace(source="reports/r2/onchip/profile.sqlite"), liveness=liveness,
        **{t: getattr(onchip, t) for t in ("tiles", "categories", "variables", "code", "execution")},
    )
    fig = _drawn(compare(onchip, lower).plot_liveness())
    notes = [text for text in fig.axes[0].texts if text.get_text().startswith("peak")]
    assert len(notes) == 2
    first, second = (Text.get_window_extent(note) for note in notes)
    assert not first.overlaps(second), scale
