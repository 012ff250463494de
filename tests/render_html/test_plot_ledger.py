"""Comparison.plot_ledger(): a stacked bar per parameter, base vs new, coloured by location."""

from __future__ import annotations

import pandas as pd

from profcompare.comparison import compare
from profcompare.model import Report, ReportMeta, Target, make_frame


def _report(label: str, state_location: str) -> Report:
    meta = ReportMeta(source="", format="store", producer="test", simulated=True, variant=label,
                      target=Target("Mk2", 1, 4, 10_000, 1.33e9))
    variables = make_frame("variables", {
        "name": ["w", "w.m"], "bytes": [400, 600 if state_location == "always_live" else 0],
        "always_live": [True, True], "kind": ["weight", "optimizer_state"], "dtype": ["float32"] * 2,
        "shape": ["[100]", "[150]"], "tiles": [1, 1], "first_step": pd.array([None, None], dtype="Int64"),
        "last_step": pd.array([None, None], dtype="Int64"), "parameter": ["w", "w"],
        "role": ["weight", "optimizer_state"], "which": ["", "first_order"],
    })
    remote = make_frame("remote_buffers", {
        "name": ["w.m"], "entries": [1], "shape": ["[150]"], "dtype": ["float32"], "sharded": [False],
        "bytes": [600], "parameter": ["w"], "role": ["optimizer_state"], "which": ["first_order"],
    }) if state_location == "streaming_memory" else make_frame("remote_buffers")
    return Report.build(meta, variables=variables, remote_buffers=remote)


def test_plot_ledger_stacks_locations_for_base_and_new() -> None:
    diff = compare(_report("onchip", "always_live"), _report("offchip", "streaming_memory"))
    fig = diff.plot_ledger()
    ax = fig.axes[0]
    widths = [[bar.get_width() for bar in c] for c in ax.containers]
    # base bars then new bars, one container per location (always, not-always, streaming)
    assert widths == [[1000.0], [0.0], [0.0], [400.0], [0.0], [600.0]]
    assert [c.get_label() for c in ax.containers[:3]] == ["always-live", "not-always-live", "Streaming Memory"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["w (base)", "w (new)"]
