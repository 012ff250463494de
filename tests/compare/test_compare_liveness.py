from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as pdt
from compare_builders import liveness, report

from profcompare.comparison import compare


def aligned(base_programs: list[str], new_programs: list[str]) -> pd.DataFrame:
    base = report(liveness=liveness(base_programs, [10 * (i + 1) for i in range(len(base_programs))]))
    new = report("new", liveness=liveness(new_programs, [100 * (i + 1) for i in range(len(new_programs))]))
    return compare(base, new).liveness


def int_array(values: list[int | None]) -> pd.arrays.IntegerArray:
    return pd.array(values, dtype="Int64")


def test_curves_of_different_lengths_align_by_program_name() -> None:
    result = aligned(["load", "fwd", "bwd", "update"], ["load", "remote_load", "fwd", "bwd", "update", "remote_store"])
    expected = pd.DataFrame(
        {
            "position": np.arange(6, dtype=np.int64),
            "program": pd.Series(["load", "remote_load", "fwd", "bwd", "update", "remote_store"], dtype=object),
            "base_step": int_array([0, None, 1, 2, 3, None]),
            "new_step": int_array([0, 1, 2, 3, 4, 5]),
            "base_not_always_live_bytes": int_array([10, None, 20, 30, 40, None]),
            "new_not_always_live_bytes": int_array([100, 200, 300, 400, 500, 600]),
        }
    )
    pdt.assert_frame_equal(result, expected)
    assert result.attrs["alignment"] == "program"


def test_replaced_steps_pair_by_position_inside_the_gap() -> None:
    result = aligned(["a", "x", "y", "b", "c"], ["a", "p", "b", "c"])
    assert result["program"].tolist() == ["a", "x", "y", "b", "c"]
    assert result["base_step"].tolist() == [0, 1, 2, 3, 4]
    assert result["new_step"].tolist() == [0, 1, pd.NA, 2, 3]
    assert result.attrs["alignment"] == "program"


def test_repeated_loop_bodies_align_optimally() -> None:
    body = ["fwd", "bwd", "acc"]
    base_programs = body * 20
    new_programs = body * 10 + ["remote_load"] + body * 10
    result = aligned(base_programs, new_programs)
    assert len(result) == 61
    paired = result.dropna(subset=["base_step", "new_step"])
    assert len(paired) == 60
    inserted = result[result["base_step"].isna()]
    assert inserted["program"].tolist() == ["remote_load"]
    assert inserted["position"].tolist() == [30]


def test_too_different_curves_align_by_position() -> None:
    result = aligned(["a", "b", "c", "d"], ["w", "x", "y", "z", "q", "d"])
    assert result.attrs["alignment"] == "position"
    assert result["base_step"].tolist() == [0, 1, 2, 3, pd.NA, pd.NA]
    assert result["new_step"].tolist() == [0, 1, 2, 3, 4, 5]
    assert result["program"].tolist() == ["a", "b", "c", "d", "q", "d"]


def test_large_different_curves_fall_back_to_position_quickly() -> None:
    rng = np.random.default_rng(3)
    base_programs = [f"p{v}" for v in rng.integers(0, 4, 20_000)]
    new_programs = [f"p{v}" for v in rng.integers(0, 4, 15_000)]
    result = aligned(base_programs, new_programs)
    assert result.attrs["alignment"] == "position"
    assert len(result) == 20_000
    assert result["new_step"].isna().sum() == 5_000


def test_each_step_appears_once_in_order() -> None:
    rng = np.random.default_rng(7)
    for _ in range(30):
        base_programs = [f"p{v}" for v in rng.integers(0, 3, rng.integers(0, 15))]
        new_programs = [f"p{v}" for v in rng.integers(0, 3, rng.integers(0, 15))]
        result = aligned(base_programs, new_programs)
        assert result["base_step"].dropna().tolist() == list(range(len(base_programs)))
        assert result["new_step"].dropna().tolist() == list(range(len(new_programs)))
        assert len(result) >= max(len(base_programs), len(new_programs))


def _lcs_length(a: list[int], b: list[int]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        previous_diagonal = 0
        for j, y in enumerate(b, start=1):
            previous_diagonal, row[j] = row[j], previous_diagonal + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def test_the_difference_algorithm_pairs_a_longest_common_subsequence_up_to_both_ends() -> None:
    from profcompare.comparison.liveness import _myers_matches

    rng = np.random.default_rng(11)
    for _ in range(300):
        a = rng.integers(0, int(rng.integers(1, 5)), int(rng.integers(0, 25))).tolist()
        b = rng.integers(0, int(rng.integers(1, 5)), int(rng.integers(0, 25))).tolist()
        matches = _myers_matches(a, b, 2_000_000)
        assert matches is not None
        base_pairs, new_pairs = matches
        assert len(base_pairs) == _lcs_length(a, b)
        assert all(a[i] == b[j] for i, j in zip(base_pairs.tolist(), new_pairs.tolist(), strict=True))
        assert (np.diff(base_pairs) > 0).all() and (np.diff(new_pairs) > 0).all()
    # equal last steps on both sides pair up (the walk reaches both ends), and a pinned pairing
    assert [p.tolist() for p in _myers_matches([1, 2, 3, 4], [2, 9, 3, 4], 100)] == [[1, 2, 3], [0, 2, 3]]
    assert [p.tolist() for p in _myers_matches([5, 5], [5], 100)] == [[0], [0]]
    assert _myers_matches(list(range(50)), list(range(50, 100)), 100) is None  # beyond the work budget
