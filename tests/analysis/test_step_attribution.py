"""Step attribution's whole-column pieces against small hand-worked cases: what a range of steps
is charged to (every range at once), the phase of most of a step's cycles, the bytes a step
records per run."""

from __future__ import annotations

import numpy as np
import pandas as pd

from profcompare.analysis.step_attribution import _attribution, _Attributed, _charge_all, _recorded_bytes, _top_phase

#: (first step, last step, bytes, parameter, role) of each variable
VARIABLES = [
    (2, 5, 100, "a", "weight"),
    (2, 3, 300, "b", "activation"),
    (3, 9, 50, "a", "weight"),
    (3, 4, 200, "c", "gradient"),
    (7, 8, 40, "d", "weight"),
    (7, 8, 40, "e", "weight"),
    (2, 6, 30, "a", "weight"),
]


def _attributed() -> _Attributed:
    variables = pd.DataFrame({
        "first_step": pd.array([v[0] for v in VARIABLES], dtype="Int64"),
        "last_step": pd.array([v[1] for v in VARIABLES], dtype="Int64"),
        "bytes": [v[2] for v in VARIABLES],
        "parameter": [v[3] for v in VARIABLES],
        "role": [v[4] for v in VARIABLES],
        "which": [""] * len(VARIABLES),
    })
    remote_buffers = pd.DataFrame({"parameter": pd.Series(dtype=object), "which": pd.Series(dtype=object),
                                   "role": pd.Series(dtype=object)})
    return _attribution(variables, remote_buffers)


def test_each_range_is_charged_to_what_it_writes_else_reads() -> None:
    first = np.array([2, 4, 6, 7, 2], dtype="int64")
    last = np.array([3, 5, 6, 8, 2], dtype="int64")
    parameter, role, nbytes = _charge_all(_attributed(), first, last)
    # [2, 3] writes a, b, a, c and a: the gradient comes first in ROLE_PRIORITY -> c, 200 B
    # [4, 5] writes nothing, reads a (ends at 5) and c (ends at 4): the gradient -> c, 200 B
    # [6, 6] writes nothing; a's last variable ends at 6 -> a, weight, its 30 B
    # [7, 8] writes d and e, equal role and bytes: the first in liveness order -> d, 40 B
    # [2, 2] writes a (100 B and 30 B) and b's activation: a weight, both of a's -> 130 B
    assert parameter.tolist() == ["c", "c", "a", "d", "a"]
    assert role.tolist() == ["gradient", "gradient", "weight", "weight", "weight"]
    assert nbytes.tolist() == [200, 200, 30, 40, 130]


def test_a_range_with_no_variable_is_charged_nothing() -> None:
    parameter, role, nbytes = _charge_all(_attributed(), np.array([0, 10]), np.array([1, 12]))
    assert parameter.tolist() == ["", ""] and role.tolist() == ["", ""] and nbytes.tolist() == [0, 0]


def test_top_phase_takes_most_cycles_and_breaks_ties_in_column_order() -> None:
    names = ["compute", "exchange", "compute", "sync", "exchange", "sync", "exchange"]
    step_of = np.array([0, 0, 0, 1, 1, 2, 3])
    cycles = np.array([1.0, 3.0, 2.0, 5.0, 5.0, 0.0, 7.0])
    rows = np.arange(len(names))
    # step 0: compute 3 = exchange 3; step 1: sync 5 = exchange 5; step 2: sync, 0 cycles; step 3: exchange
    as_text = _top_phase(pd.Series(names, dtype=object), rows, step_of, cycles, 4)
    assert as_text.tolist() == ["compute", "exchange", "sync", "exchange"]
    categorical = pd.Series(pd.Categorical(names, categories=["sync", "exchange", "compute"]))
    assert _top_phase(categorical, rows, step_of, cycles, 4).tolist() == ["exchange", "sync", "sync", "exchange"]


def test_recorded_bytes_are_per_run_and_missing_where_none_recorded() -> None:
    execution = pd.DataFrame({"bytes_moved": pd.array([None, 10, None, 4, 6, 8], dtype="Int64")})
    # the last row is not a device row
    out = _recorded_bytes(execution, np.arange(5), np.array([0, 0, 1, 2, 2]), 3, 2)
    assert out[0] == 5.0 and np.isnan(out[1]) and out[2] == 5.0
