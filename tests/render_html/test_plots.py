"""Plots: pure functions returning Figures with the expected artists; SVG export."""

from __future__ import annotations

import dataclasses

import sys

import numpy as np
import pytest
from html_fixtures import MK2_BYTES_PER_TILE, build_report
from matplotlib.container import BarContainer
from matplotlib.figure import Figure

from profcompare.comparison import compare
from profcompare.model import Report, make_frame
from profcompare.render import plots


def _solid_and_dashed(fig: Figure) -> tuple[list, list]:
    ax = fig.axes[0]
    solid = [line for line in ax.lines if line.get_linestyle() == "-"]
    dashed = [line for line in ax.lines if line.get_linestyle() == "--"]
    return solid, dashed


def test_liveness_overlay_has_one_curve_and_one_always_live_line_per_report(onchip: Report, offchip: Report) -> None:
    fig = plots.plot_liveness([onchip, offchip])
    assert isinstance(fig, Figure) and len(fig.axes) == 1
    solid, dashed = _solid_and_dashed(fig)
    assert len(solid) == 2 and len(dashed) == 2
    # always-live levels are the reports' always-live totals
    levels = sorted(line.get_ydata()[0] for line in dashed)
    assert levels == sorted(float(r.tiles["always_live_bytes"].sum()) for r in (onchip, offchip))
    # each step curve carries the report's not-always-live bytes (the last value is repeated once)
    assert list(solid[0].get_ydata()[:-1]) == list(onchip.liveness["not_always_live_bytes"])
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels == [
        "onchip: not-always-live",
        "onchip: always-live",
        "offchip-sharded: not-always-live",
        "offchip-sharded: always-live",
    ]
    notes = [a.get_text() for a in fig.axes[0].texts]
    assert "peak 3.8 MiB at step 9 (opt/adam_update)" in notes
    assert "peak 8.6 MiB at step 10 (opt/adam_update)" in notes


def test_liveness_of_a_long_program_is_downsampled_and_keeps_the_peak(onchip: Report) -> None:
    steps = 50_000
    values = np.full(steps, 1000, dtype=np.int64)
    values[31_337] = 9_999_999
    liveness = make_frame(
        "liveness",
        {
            "step": np.arange(steps),
            "program": [f"p{i}" for i in range(steps)],
            "program_type": ["OnTileExecute"] * steps,
            "not_always_live_bytes": values,
        },
    )
    long_report = Report.build(onchip.meta, tiles=onchip.tiles, liveness=liveness)
    fig = plots.plot_liveness([long_report])
    solid, _ = _solid_and_dashed(fig)
    assert len(solid[0].get_ydata()) <= plots.MAX_POINTS + 1
    assert solid[0].get_ydata().max() == 9_999_999
    assert any("at step 31,337 (p31337)" in t.get_text() for t in fig.axes[0].texts)


def test_downsample_max_keeps_every_bucket_maximum() -> None:
    y = np.arange(10_000) % 97
    x, reduced = plots.downsample_max(np.arange(10_000), y, max_points=100)
    assert len(reduced) == 100 and len(x) == 100
    assert list(x[:3]) == [0, 100, 200]
    assert reduced.max() == 96
    assert all(reduced[i] == y[100 * i : 100 * (i + 1)].max() for i in range(100))
    same_x, same_y = plots.downsample_max(np.arange(5), np.arange(5), max_points=10)
    assert list(same_x) == list(same_y) == [0, 1, 2, 3, 4]


def test_categories_are_stacked_bars_one_bar_per_report(onchip: Report, offchip: Report) -> None:
    fig = plots.plot_categories([onchip, offchip])
    ax = fig.axes[0]
    containers = [c for c in ax.containers if isinstance(c, BarContainer)]
    present = set(onchip.categories["category"]) | set(offchip.categories["category"])
    nonzero = {
        c for c in present if any(r.categories.set_index("category")["bytes"].get(c, 0) > 0 for r in (onchip, offchip))
    }
    assert {c.get_label() for c in containers} == nonzero
    assert all(len(c.patches) == 2 for c in containers)
    # stacked: the right edge of the last segment is the report's total category bytes
    right_edges = [max(c.patches[i].get_x() + c.patches[i].get_width() for c in containers) for i in (0, 1)]
    assert right_edges == pytest.approx([float(r.categories["bytes"].sum()) for r in (onchip, offchip)])
    assert [t.get_text() for t in ax.get_yticklabels()] == ["onchip", "offchip-sharded"]


def test_tiles_have_a_line_per_report_and_the_budget_line(onchip: Report, offchip: Report) -> None:
    fig = plots.plot_tiles([onchip, offchip])
    solid, dashed = _solid_and_dashed(fig)
    assert len(solid) == 2
    assert len(dashed) == 1 and dashed[0].get_ydata()[0] == MK2_BYTES_PER_TILE
    assert list(solid[1].get_ydata()) == list(offchip.tiles["bytes_including_gaps"])
    assert "tile budget 624.0 KiB" in [t.get_text() for t in fig.legends[0].get_texts()]


def test_code_and_execution_plots(onchip: Report, offchip: Report) -> None:
    code = plots.plot_code([onchip, offchip], top=5)
    bars = [c for c in code.axes[0].containers if isinstance(c, BarContainer)]
    assert [c.get_label() for c in bars] == ["onchip", "offchip-sharded"]
    assert all(len(c.patches) == 5 for c in bars)
    execution = plots.plot_execution([onchip, offchip])
    phases = [c.get_label() for c in execution.axes[0].containers]
    assert phases == ["compute", "exchange", "sync", "host I/O", "Streaming Memory", "collective"]
    # onchip has no streaming-memory phase: its bar segment is zero wide
    streaming = execution.axes[0].containers[phases.index("Streaming Memory")]
    assert streaming.patches[0].get_width() == 0 and streaming.patches[1].get_width() > 0


def test_plots_of_an_empty_report_say_so(onchip: Report) -> None:
    empty = Report.build(onchip.meta)
    for function in (
        plots.plot_liveness,
        plots.plot_categories,
        plots.plot_tiles,
        plots.plot_code,
        plots.plot_execution,
    ):
        fig = function([empty])
        assert fig.axes[0].texts and fig.axes[0].texts[0].get_text().startswith("no ")


def test_user_text_is_not_mathtext_and_svg_keeps_text(onchip: Report) -> None:
    meta = onchip.meta.replace(variant="$x$_variant")
    odd = Report.build(meta, tiles=onchip.tiles, liveness=onchip.liveness, categories=onchip.categories)
    svg = plots.figure_to_svg(plots.plot_liveness([odd]))
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "$x$_variant: always-live" in svg  # shown literally, not typeset
    assert "<text" in svg  # svg.fonttype none: text stays text (small files)
    assert "<?xml" not in svg and "DOCTYPE" not in svg and "<metadata" not in svg


def test_figure_to_svg_is_reproducible_and_salted(onchip: Report) -> None:
    first = plots.figure_to_svg(plots.plot_tiles([onchip]), id_salt="a")
    again = plots.figure_to_svg(plots.plot_tiles([onchip]), id_salt="a")
    other = plots.figure_to_svg(plots.plot_tiles([onchip]), id_salt="b")
    assert first == again
    assert first != other  # clip-path ids differ, so two inlined figures never share an id


def test_plotting_leaves_no_global_matplotlib_state(onchip: Report, offchip: Report) -> None:
    import matplotlib

    before = dict(matplotlib.rcParams)
    comparison = compare(onchip, offchip)
    figures = [
        comparison.plot_liveness(),
        comparison.plot_memory_by_category(),
        comparison.plot_tiles(),
        onchip.plot_liveness(),
    ]
    plots.figure_to_svg(figures[0])
    assert all(isinstance(f, Figure) for f in figures)
    assert dict(matplotlib.rcParams) == before
    if "matplotlib.pyplot" in sys.modules:  # imported by someone else: we still registered nothing
        assert sys.modules["matplotlib.pyplot"].get_fignums() == []


def test_many_tiles_are_downsampled(onchip: Report) -> None:
    report = build_report("onchip")
    n = 4 * 1472
    rng = np.random.default_rng(0)
    used = rng.integers(1000, 2000, n)
    used[4000] = 700_000
    tiles = make_frame(
        "tiles",
        {
            "tile": np.arange(n),
            "ipu": np.arange(n) // 1472,
            "bytes_including_gaps": used,
            "bytes_excluding_gaps": used,
            "always_live_bytes": used // 2,
            "not_always_live_peak_bytes": used // 2,
        },
    )
    target = dataclasses.replace(report.meta.target, ipus_per_replica=4, num_ipus=4 * report.meta.target.num_replicas)
    big = Report.build(report.meta.replace(target=target), tiles=tiles)
    solid, _ = _solid_and_dashed(plots.plot_tiles([big]))
    assert len(solid[0].get_ydata()) <= plots.MAX_POINTS
    assert solid[0].get_ydata().max() == 700_000


def test_aligned_liveness_lines_up_programs_and_ends_the_shorter_curve(onchip: Report, offchip: Report) -> None:
    comparison = compare(onchip, offchip)
    fig = plots.plot_liveness([onchip, offchip], aligned=comparison.liveness)
    solid, dashed = _solid_and_dashed(fig)
    assert len(solid) == 2 and len(dashed) == 2
    aligned = comparison.liveness
    base_y = solid[0].get_ydata()[:-1]
    # base has no remote load/store steps (positions 9 and 11): at 9, between its steps 8 and
    # 9, its curve holds step 8's 2,273,290 bytes (no break into dashes); after its last step
    # (position 10) the curve ends: position 11 is NaN, nothing is drawn there
    assert list(aligned["base_step"].isna().to_numpy().nonzero()[0]) == [9, 11]
    assert base_y[9] == base_y[8] == 2_273_290 and base_y[10] == 4_000_000
    assert np.isnan(base_y[11]) and not np.isnan(base_y[:11]).any()
    assert not np.isnan(solid[1].get_ydata()).any()
    # both peaks (the optimizer update) sit at the same aligned position
    markers = [line for line in fig.axes[0].lines if line.get_marker() == "o"]
    adam = int(aligned.index[aligned["program"] == "opt/adam_update"][0])
    assert [m.get_xdata()[0] for m in markers] == [adam, adam]
    # the annotation still names each report's own step
    notes = [a.get_text() for a in fig.axes[0].texts]
    assert "peak 3.8 MiB at step 9 (opt/adam_update)" in notes
    assert "peak 8.6 MiB at step 10 (opt/adam_update)" in notes
    with pytest.raises(ValueError):
        plots.plot_liveness([onchip], aligned=aligned)


def test_two_reports_with_the_same_label_are_told_apart_as_base_and_new(onchip: Report) -> None:
    # comparing two runs of one variant: both reports are called "onchip"
    again = Report.build(
        onchip.meta.replace(source="reports/r2/onchip/profile.sqlite"),
        **{t: getattr(onchip, t) for t in ("tiles", "categories", "variables", "liveness", "code", "execution")},
    )
    diff = compare(onchip, again)
    liveness = [t.get_text() for t in diff.plot_liveness().legends[0].get_texts()]
    assert liveness[:4] == [
        "base: onchip: not-always-live",
        "base: onchip: always-live",
        "new: onchip: not-always-live",
        "new: onchip: always-live",
    ]
    tiles = [t.get_text() for t in diff.plot_tiles().legends[0].get_texts()]
    assert tiles[:2] == ["base: onchip", "new: onchip"]
    categories = diff.plot_memory_by_category().axes[0]
    assert [t.get_text() for t in categories.get_yticklabels()] == ["base: onchip", "new: onchip"]
    code = plots.plot_code([onchip, again], top=3)
    assert [c.get_label() for c in code.axes[0].containers if isinstance(c, BarContainer)] == [
        "base: onchip",
        "new: onchip",
    ]
    execution = plots.plot_execution([onchip, again]).axes[0]
    assert [t.get_text() for t in execution.get_yticklabels()] == ["base: onchip", "new: onchip"]
