"""Every run of a trace: which run the views draw (the first steady-state run, or --run N)."""

from __future__ import annotations

import pandas as pd
import pytest

from profcompare.analysis import trace as trace_analysis
from profcompare.model import trace_from_blocks


def _three_runs() -> pd.DataFrame:
    """Runs 0, 1, 2 of one block each on IPU 0: run 0 is longer (it loads code and weights)."""
    blocks = [(0, 0, 500, "OnTileExecute", "a", "a", "", 0), (0, 500, 600, "OnTileExecute", "a", "a", "", 0),
              (0, 600, 700, "OnTileExecute", "a", "a", "", 0)]
    return trace_from_blocks(blocks, runs=[0, 1, 2])


def test_the_views_draw_the_second_run_of_several():
    trace = _three_runs()
    choice = trace_analysis.choose_run(trace)
    assert (choice.run, choice.runs, choice.asked) == (1, (0, 1, 2), False)
    assert choice.sentence() == "Run 1 of runs 0–2 (the first steady-state run; --run N picks another)."
    blocks = trace_analysis.run_blocks(trace, choice)
    assert trace_analysis.trace_spans(blocks)["span_cycles"].tolist() == [100]


def test_a_run_asked_for_is_drawn_and_an_unknown_one_refused():
    trace = _three_runs()
    choice = trace_analysis.choose_run(trace, 0)
    assert choice.sentence() == "Run 0 of runs 0–2 (chosen with --run)."
    assert trace_analysis.trace_spans(trace_analysis.run_blocks(trace, choice))["span_cycles"].tolist() == [500]
    with pytest.raises(trace_analysis.UnknownRunError, match=r"the trace has no run 5 \(its runs are 0–2\)"):
        trace_analysis.choose_run(trace, 5)


def test_a_trace_of_one_run_says_nothing_of_runs():
    trace = trace_from_blocks([(0, 0, 10, "OnTileExecute", "a", "a", "", 0)])
    assert trace["run"].tolist() == [0]
    choice = trace_analysis.choose_run(trace)
    assert (choice.run, choice.runs) == (0, (0,)) and choice.sentence() == ""
    assert trace_analysis.steady_run(()) is None


def test_the_fidelity_split_follows_the_run_column():
    from profcompare.analysis.trace_fidelity import split_runs

    runs = split_runs(_three_runs())
    assert [run["cycles_from"].tolist() for run in runs] == [[0], [500], [600]]
