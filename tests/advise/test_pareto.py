"""The Pareto front of samples per second (maximised) against the fullest tile (minimised), among
the points that fit: hand-worked sets and the defining property."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from profcompare.analysis.advise_results import dominates, pareto_mask


def test_hand_worked_front():
    #          A      B      C      D      E (does not fit)  F (same as B)
    rate = [100.0, 200.0, 150.0, 90.0, 500.0, 200.0]
    mem = [10.0, 30.0, 30.0, 40.0, 5.0, 30.0]
    fits = [True, True, True, True, False, True]
    # A: least memory; B and F: fastest (equal: neither dominates the other); C is dominated by B
    # (as much memory, slower); D by A; E is faster and leaner than all but does not fit
    assert pareto_mask(rate, mem, fits).tolist() == [True, True, False, False, False, True]


def test_unknown_figures_are_never_on_the_front():
    assert pareto_mask([math.nan, 1.0], [1.0, 2.0], [True, True]).tolist() == [False, True]
    assert pareto_mask([], [], []).tolist() == []


def test_one_point_dominating_everything():
    assert pareto_mask([5.0, 4.0, 3.0], [1.0, 2.0, 3.0], [True] * 3).tolist() == [True, False, False]


points = st.lists(st.tuples(st.integers(0, 20).map(float), st.integers(0, 20).map(float), st.booleans()),
                  min_size=0, max_size=30)


@settings(max_examples=200, deadline=None)
@given(points)
def test_no_front_point_is_dominated_and_every_other_fitting_point_is(data):
    rate = [r for r, _, _ in data]
    mem = [m for _, m, _ in data]
    fits = [f for _, _, f in data]
    front = pareto_mask(rate, mem, fits)
    fitting = [i for i, f in enumerate(fits) if f]
    for i in range(len(data)):
        dominated = any(dominates((rate[j], mem[j]), (rate[i], mem[i])) for j in fitting if j != i)
        if front[i]:
            assert fits[i] and not dominated
        elif fits[i]:
            assert dominated
    assert front.dtype == np.bool_
