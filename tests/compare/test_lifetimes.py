"""Lifetimes of (parameter, role), base over new, and the at-step views, worked by hand.

Both reports run eight steps (p0..p7). Variables (bytes, live steps):

=========  =====================  ================  ================
variable   parameter/role         base              new
=========  =====================  ================  ================
w          fc.weight/weight       400 always-live   400 always-live
v          fc.weight/gradient     200, 2-3          200, 2-7 (lives longer)
m          fc.weight/opt. state   300 always-live   300, 6-7 (only around the update)
a          -/activation           50, 0-1           50, 0-1
=========  =====================  ================  ================

At step 5 base holds nothing not-always-live; new holds v (200).
"""

from __future__ import annotations

import pandas as pd
import pandas.testing as pdt
from compare_builders import liveness, report, tiles, variables

from profcompare.analysis.lifetimes import LIFETIME_COLUMNS, lifetimes
from profcompare.comparison import compare
from profcompare.comparison.at_step import compare_at

PROGRAMS = [f"p{i}" for i in range(8)]


def _pair():
    base = report("base", variables=variables(
        [("w", 400, True), ("v", 200, False), ("m", 300, True), ("a", 50, False)],
        parameter=["fc.weight", "fc.weight", "fc.weight", ""],
        role=["weight", "gradient", "optimizer_state", "activation"],
        first_step=[None, 2, None, 0], last_step=[None, 3, None, 1]),
        liveness=liveness(PROGRAMS, [50, 50, 200, 200, 0, 0, 0, 0]), tiles=tiles([800], [700]))
    new = report("new", variables=variables(
        [("w", 400, True), ("v", 200, False), ("m", 300, False), ("a", 50, False)],
        parameter=["fc.weight", "fc.weight", "fc.weight", ""],
        role=["weight", "gradient", "optimizer_state", "activation"],
        first_step=[None, 2, 6, 0], last_step=[None, 7, 7, 1]),
        liveness=liveness(PROGRAMS, [50, 50, 200, 200, 200, 200, 500, 500]), tiles=tiles([900], [400]))
    return compare(base, new)


def test_each_parameter_role_is_a_span_of_steps_base_and_new():
    rows = _pair().lifetimes()
    assert tuple(rows.columns) == LIFETIME_COLUMNS
    expected = pd.DataFrame({
        "parameter": pd.Series(["fc.weight", "fc.weight", "fc.weight", ""], dtype=object),
        "role": pd.Series(["weight", "optimizer_state", "gradient", "activation"], dtype=object),
        "base_bytes": [400, 300, 200, 50], "new_bytes": [400, 300, 200, 50],
        "base_first_step": pd.array([0, 0, 2, 0], dtype="Int64"),
        "base_last_step": pd.array([7, 7, 3, 1], dtype="Int64"),
        "base_always_live": [True, True, False, False],
        "new_first_step": pd.array([0, 6, 2, 0], dtype="Int64"),
        "new_last_step": pd.array([7, 7, 7, 1], dtype="Int64"),
        "new_always_live": [True, False, False, False],
        "folded": [False] * 4,
    })
    pdt.assert_frame_equal(rows, expected)


def test_past_n_rows_the_rest_fold_into_one():
    rows = _pair().lifetimes(n=2)
    assert rows["parameter"].tolist() == ["fc.weight", "fc.weight", "other (2 groups)"]
    last = rows.iloc[-1]
    assert (last["base_bytes"], last["new_bytes"], last["folded"]) == (250, 250, True)
    assert (last["base_first_step"], last["base_last_step"], last["new_first_step"], last["new_last_step"]) == (0, 3, 0, 7)


def test_the_at_step_view_at_step_5_holds_v_in_new_only():
    at = compare_at(_pair(), "5")
    assert (at.base.choice.step, at.new.choice.step) == (5, 5)
    by_name = at.variables.set_index("name")
    assert by_name.loc["v", "base_bytes"] == 0 or pd.isna(by_name.loc["v", "base_bytes"])
    assert by_name.loc["v", "new_bytes"] == 200
    assert by_name.loc["v", "status"] == "added"
    assert list(by_name.index) == ["v"]


def test_no_ledger_gives_no_rows():
    empty = lifetimes(_pair().ledger.iloc[0:0], 8, 8)
    assert tuple(empty.columns) == LIFETIME_COLUMNS and empty.empty


def test_the_figure_draws_a_base_bar_over_a_new_bar_per_row():
    import profcompare  # noqa: F401 -- registers the presenters

    fig = _pair().plot_lifetimes()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["fc.weight · weight", "fc.weight · optimizer_state", "fc.weight · gradient",
                      "(no parameter) · activation"]
    spans = sorted((round(c.get_paths()[0].vertices[:, 0].min()), round(c.get_paths()[0].vertices[:, 0].max()),
                    c.get_hatch() or "") for c in ax.collections)
    # v: base 2..3 (x 2 to 4), new 2..7 (x 2 to 8); m: base always-live 0..7 hatched, new 6..7
    assert (2, 4, "") in spans and (2, 8, "") in spans and (0, 8, "//") in spans and (6, 8, "") in spans


def test_the_chart_panel_at_step_5_lists_v_in_new_only():
    from profcompare.render.interactive import liveness_chart

    cmp = _pair()
    panel = liveness_chart([cmp.base, cmp.new], ["base", "new"], aligned=cmp.liveness).panel
    assert panel is not None
    assert panel["labels"] == ["base: base", "new: new"]
    assert panel["edges"] == [float(i) for i in range(9)]
    base, new = panel["buckets"][5]
    assert base == [5, panel["names"].index("p5"), 0, [], []]
    gradient = panel["groups"].index("fc.weight · gradient")
    assert new == [5, panel["names"].index("p5"), 200, [[gradient, 200]], [[panel["names"].index("v"), gradient, 200]]]
    # the top peaks of each report, as [report, rank, bucket, step, bytes]
    assert panel["peaks"] == [[0, 1, 2, 2, 200], [1, 1, 6, 6, 500]]
