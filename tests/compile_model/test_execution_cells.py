"""The execution table's cells (executed step, phase, cycles) found per static step and repeated per
execution are exactly the non-zero cells of the dense executed-steps x phases matrix, in its order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from profcompare.emulator.compile.cycles import RunOpening
from profcompare.emulator.compile.report import _nonzero_cycles
from profcompare.model import PHASES, runtime_rows


def _dense(ex: np.ndarray, static_cycles: np.ndarray, setup: int, opening: RunOpening | None):
    cyc = static_cycles[ex].copy()
    if opening is not None:
        for phase, value in opening.phases:
            cyc[opening.step - setup, PHASES.index(phase)] += value
    step_idx, phase_idx = np.nonzero(cyc)
    return step_idx, phase_idx, cyc[step_idx, phase_idx].astype(np.int64)


@pytest.mark.parametrize("opening", [None, RunOpening(5, 7, (("host_io", 7),)),
                                     RunOpening(3, 1010, (("host_io", 1000), ("sync", 4), ("exchange", 6)))])
def test_cells_match_the_dense_matrix(opening: RunOpening | None) -> None:
    rng = np.random.default_rng(3)
    # 40 static steps, most phases zero; one static step with no cycles at all
    static_cycles = rng.integers(1, 50, size=(40, len(PHASES))) * (rng.random((40, len(PHASES))) < 0.3)
    static_cycles[7] = 0
    setup = 3
    ex = np.r_[rng.integers(0, 40, size=500), 7, 7].astype(np.int64)
    got = _nonzero_cycles(ex, static_cycles, setup, opening)
    want = _dense(ex, static_cycles, setup, opening)
    for g, w in zip(got, want):
        assert g.dtype == np.int64
        np.testing.assert_array_equal(g, w)


def test_opening_on_a_step_without_host_io_makes_a_cell() -> None:
    static_cycles = np.zeros((2, len(PHASES)), dtype=np.int64)
    static_cycles[0, PHASES.index("compute")] = 10
    ex = np.array([0, 1, 0], dtype=np.int64)
    opening = RunOpening(1, 37, (("host_io", 25), ("sync", 12)))
    step_idx, phase_idx, values = _nonzero_cycles(ex, static_cycles, 0, opening)
    assert step_idx.tolist() == [0, 1, 1, 2]
    assert [PHASES[p] for p in phase_idx] == ["compute", "sync", "host_io", "compute"]
    assert values.tolist() == [10, 12, 25, 10]


def test_runtime_rows_by_codes_or_strings() -> None:
    phases = ["compute", "runtime", "sync", "runtime"]
    categorical = pd.Series(pd.Categorical(phases, categories=list(PHASES)))
    assert runtime_rows(categorical).tolist() == [False, True, False, True]
    assert runtime_rows(pd.Series(phases, dtype=object)).tolist() == [False, True, False, True]
    assert runtime_rows(pd.Series(pd.Categorical(["compute"]))).tolist() == [False]
