"""Per-tile not-always-live peaks: the same figures as a dense steps x tiles walk, from memory
that grows with instances and distinct mappings, not with steps x tiles."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from profcompare.emulator.compile.liveness import Instances, tile_peaks
from profcompare.emulator.compile.tile_bytes import TileBytes


def _dense_peaks(inst: Instances, dense: np.ndarray, interleaved: np.ndarray, num_steps: int) -> tuple:
    """The definition: bytes of every tile at every step, then the maxima over steps."""
    live = np.zeros((num_steps, dense.shape[1]), dtype=np.int64)
    live_il = np.zeros_like(live)
    for r, f, la in zip(inst.row.tolist(), inst.first.tolist(), inst.last.tolist()):
        live[f:la + 1] += dense[r]
        if interleaved[r]:
            live_il[f:la + 1] += dense[r]
    return live.max(axis=0), live_il.max(axis=0), (live - live_il).max(axis=0)


@pytest.mark.parametrize("seed", range(6))
def test_peaks_equal_the_dense_definition(seed: int) -> None:
    rng = np.random.default_rng(seed)
    tiles, rows, steps = 23, 40, 60
    # few distinct mappings, as in a real program; some rows share one
    patterns = rng.integers(0, 500, size=(7, tiles)) * (rng.random((7, tiles)) < 0.6)
    tb = TileBytes(patterns.astype(np.int64), rng.integers(0, 7, size=rows).astype(np.int64))
    interleaved = rng.random(rows) < 0.4
    n = 90
    first = rng.integers(0, steps, size=n)
    last = np.minimum(steps - 1, first + rng.integers(0, 15, size=n))
    inst = Instances(row=rng.integers(0, rows, size=n).astype(np.int64), first=first.astype(np.int64),
                     last=last.astype(np.int64))
    got = tile_peaks(inst, tb, interleaved, steps)
    want = _dense_peaks(inst, tb.dense(), interleaved, steps)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def test_hand_worked_peaks() -> None:
    # two tiles; row 0 puts 100 bytes on tile 0, row 1 puts 10 on tile 0 and 50 on tile 1
    tb = TileBytes(np.array([[100, 0], [10, 50]], dtype=np.int64), np.array([0, 1, 1], dtype=np.int64))
    interleaved = np.array([True, False, False])
    # steps 0-1: row 0; steps 1-3: row 1; step 3: row 2 (same mapping as row 1)
    inst = Instances(row=np.array([0, 1, 2]), first=np.array([0, 1, 3]), last=np.array([1, 3, 3]))
    peak_all, peak_il, peak_flex = tile_peaks(inst, tb, interleaved, 5)
    assert peak_all.tolist() == [110, 100]  # tile 0 at step 1 (100 + 10); tile 1 at step 3 (50 + 50)
    assert peak_il.tolist() == [100, 0]
    assert peak_flex.tolist() == [20, 100]  # rows 1 and 2 together at step 3


def test_memory_grows_with_instances_not_steps_times_tiles() -> None:
    # 200,000 steps x 1,472 tiles: a dense int64 walk would need 2.2 GiB per array
    tiles, steps, layers = 1472, 200_000, 2_000
    rng = np.random.default_rng(0)
    patterns = rng.integers(0, 4096, size=(12, tiles)).astype(np.int64)
    # a stack of identical layers: each layer's 12 tensors live over its 100 steps
    rows = np.arange(12 * layers, dtype=np.int64)
    tb = TileBytes(patterns, rows % 12)
    first = (rows // 12) * 100 + (rows % 12)
    inst = Instances(row=rows, first=first, last=first + 50)
    tracemalloc.start()
    try:
        peak_all, _, _ = tile_peaks(inst, tb, np.zeros(len(rows), dtype=bool), steps)
        _, peak_bytes = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # every layer's 12 tensors are live together at its step 11; layers never overlap
    np.testing.assert_array_equal(peak_all, patterns.sum(axis=0))
    assert peak_bytes < 64 * 2**20, peak_bytes


def test_tile_bytes_compression_and_sums() -> None:
    dense = np.array([[1, 2, 0], [5, 0, 0], [1, 2, 0], [0, 0, 7]], dtype=np.int64)
    tb = TileBytes.from_dense(dense)
    assert len(tb.patterns) == 3 and tb.shape == (4, 3)
    np.testing.assert_array_equal(tb.dense(), dense)
    np.testing.assert_array_equal(tb[2], [1, 2, 0])
    assert tb.row_sums().tolist() == [3, 5, 3, 7]
    assert tb.tiles_used().tolist() == [2, 1, 2, 1]
    assert tb.sum_rows(np.array([True, False, True, True])).tolist() == [2, 4, 7]
    grown = tb.append(np.array([[9, 9, 9]]))
    assert grown.shape == (5, 3) and grown[4].tolist() == [9, 9, 9]
    keyed = TileBytes.from_keys(np.array([[3, 1], [4, 1], [3, 1]]),
                                lambda uniq, first: np.array([[int(k[0]), 0] for k in uniq]))
    assert len(keyed.patterns) == 2 and keyed.dense().tolist() == [[3, 0], [4, 0], [3, 0]]
