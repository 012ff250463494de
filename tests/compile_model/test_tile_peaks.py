"""Per-tile peaks of not-always-live bytes (liveness.tile_peaks): worked by hand, and against a
step-by-step sum for intervals whose events fall on a few of many steps and across blocks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profcompare.emulator.compile.liveness import Instances, tile_peaks

# three storage rows on two tiles: bytes per (row, tile)
TILE_BYTES = np.array([[10, 0], [5, 7], [1, 1]], dtype=np.int64)
INTERLEAVED = np.array([False, True, False])


def _instances(rows: list[int], first: list[int], last: list[int]) -> Instances:
    return Instances(row=np.array(rows, dtype=np.int64), first=np.array(first, dtype=np.int64),
                     last=np.array(last, dtype=np.int64))


@pytest.mark.parametrize("block", [1024, 2, 1])
def test_peaks_worked_by_hand(block: int) -> None:
    # row 0 live at steps 1-2, row 1 at 2-4, row 2 at 4-5 (the last step: its end is past the run)
    # step:        0      1       2        3       4       5
    # tile 0:      0     10    10+5=15     5     5+1=6     1
    # tile 1:      0      0      7         7     7+1=8     1
    # interleaved (row 1) alone peaks at [5, 7]; the rest (rows 0, 2) at [10, 1]
    inst = _instances([0, 1, 2], [1, 2, 4], [2, 4, 5])
    peak_all, peak_il, peak_flex = tile_peaks(inst, TILE_BYTES, INTERLEAVED, 6, block=block)
    assert peak_all.tolist() == [15, 8]
    assert peak_il.tolist() == [5, 7]
    assert peak_flex.tolist() == [10, 1]


def test_no_instances_give_zero_peaks() -> None:
    peaks = tile_peaks(_instances([], [], []), TILE_BYTES, INTERLEAVED, 6)
    assert [p.tolist() for p in peaks] == [[0, 0], [0, 0], [0, 0]]


def _dense_peaks(inst: Instances, tile_bytes: np.ndarray, interleaved: np.ndarray, num_steps: int
                 ) -> tuple[list[int], list[int], list[int]]:
    """The peaks summed step by step, tile by tile: the definition."""
    live = np.zeros((num_steps, tile_bytes.shape[1]), dtype=np.int64)
    live_il = np.zeros_like(live)
    for row, first, last in zip(inst.row, inst.first, inst.last):
        for step in range(first, min(last, num_steps - 1) + 1):
            live[step] += tile_bytes[row]
            if interleaved[row]:
                live_il[step] += tile_bytes[row]
    zero = np.zeros(tile_bytes.shape[1], dtype=np.int64)
    peaks = (np.maximum(zero, live.max(axis=0)), np.maximum(zero, live_il.max(axis=0)),
             np.maximum(zero, (live - live_il).max(axis=0)))
    return tuple(p.tolist() for p in peaks)  # type: ignore[return-value]


@settings(max_examples=60, deadline=None)
@given(
    num_steps=st.integers(1, 40),
    intervals=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 39), st.integers(0, 12)), max_size=12),
    block=st.sampled_from([1, 3, 1024]),
)
def test_peaks_equal_the_step_by_step_sum(num_steps: int, intervals: list[tuple[int, int, int]], block: int) -> None:
    rng = np.random.default_rng(len(intervals) * 41 + num_steps)
    tile_bytes = rng.integers(0, 100, size=(5, 3)).astype(np.int64)
    interleaved = np.array([True, False, True, False, False])
    rows = [r for r, f, _ in intervals if f < num_steps]
    first = [f for _, f, _ in intervals if f < num_steps]
    last = [f + n for _, f, n in intervals if f < num_steps]
    inst = _instances(rows, first, last)
    got = tuple(p.tolist() for p in tile_peaks(inst, tile_bytes, interleaved, num_steps, block=block))
    assert got == _dense_peaks(inst, tile_bytes, interleaved, num_steps)
