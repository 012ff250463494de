from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from profcompare.analysis.views import OTHER_LABEL, TopN, top_n
from profcompare.errors import ProfcompareError


def frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "name": pd.Series(["a", "b", "c", "d", "e"], dtype=object),
            "bytes": np.array([5, -10, 3, 3, 1], dtype=np.int64),
            "tiles": np.array([1, 2, 3, 4, 5], dtype=np.int64),
            "always_live": [True, False, True, False, True],
        }
    )


def test_top_n_keeps_largest_and_sums_the_rest_into_other() -> None:
    result = top_n(frame(), 2, "bytes", label_column="name", sum_columns=("bytes",))
    expected = pd.DataFrame(
        {
            "name": pd.Series(["a", "c", OTHER_LABEL], dtype=object),
            "bytes": np.array([5, 3, -6], dtype=np.int64),
            "tiles": pd.array([1, 3, None], dtype="Int64"),
            "always_live": pd.array([True, True, None], dtype="boolean"),
        }
    )
    pdt.assert_frame_equal(result.rows, expected)
    assert (result.shown, result.total, result.cut) == (2, 5, 3)
    assert result.has_other
    assert result.other is not None and result.other["bytes"] == -6
    pdt.assert_frame_equal(result.shown_rows, expected.iloc[:2])


def test_top_n_with_abs_key_ranks_by_magnitude_and_breaks_ties_by_label() -> None:
    result = top_n(frame(), 3, "bytes", label_column="name", sum_columns=("bytes", "tiles"), key=abs)
    assert result.rows["name"].tolist() == ["b", "a", "c", OTHER_LABEL]
    # "c" and "d" tie on 3: the label decides, and "d" goes to other.
    assert result.rows["tiles"].tolist() == [2, 1, 3, 4 + 5]
    assert result.rows["tiles"].dtype == np.dtype("int64")


def test_top_n_ascending_and_text_sort() -> None:
    result = top_n(frame(), 2, "name", label_column="name", ascending=True)
    assert result.rows["name"].tolist() == ["a", "b", OTHER_LABEL]
    result = top_n(frame(), 2, "bytes", label_column="name", ascending=True)
    assert result.rows["name"].tolist() == ["b", "e", OTHER_LABEL]


def test_top_n_without_cut_has_no_other_row() -> None:
    for n in (None, 5, 50):
        result = top_n(frame(), n, "bytes", label_column="name", sum_columns=("bytes",))
        assert (result.shown, result.total, result.cut) == (5, 5, 0)
        assert result.rows["name"].tolist() == ["a", "c", "d", "e", "b"]
        assert result.other is None
        assert result.note("variables") == "all 5 variables shown"


def test_top_n_zero_rows_puts_everything_in_other() -> None:
    result = top_n(frame(), 0, "bytes", label_column="name", sum_columns=("bytes",))
    assert result.rows["name"].tolist() == [OTHER_LABEL]
    assert result.rows["bytes"].tolist() == [2]
    assert result.note() == "top 0 of 5 rows shown; 5 in other"


def test_top_n_on_empty_frame() -> None:
    empty = frame().iloc[:0]
    result = top_n(empty, 3, "bytes", label_column="name", sum_columns=("bytes",))
    assert (result.shown, result.total, result.cut) == (0, 0, 0)
    assert list(result.rows.columns) == list(empty.columns)


def test_top_n_missing_values_sort_last() -> None:
    data = pd.DataFrame({"name": pd.Series(["x", "y", "z"], dtype=object), "pct": [np.nan, 1.0, -2.0]})
    assert top_n(data, None, "pct", label_column="name").rows["name"].tolist() == ["y", "z", "x"]
    assert top_n(data, None, "pct", label_column="name", ascending=True).rows["name"].tolist() == ["z", "y", "x"]


def test_top_n_note_formats_large_counts() -> None:
    result = TopN(rows=pd.DataFrame(), shown=20, total=1_000_000, cut=999_980)
    assert result.note() == "top 20 of 1,000,000 rows shown; 999,980 in other"


def test_top_n_numeric_label_column_becomes_text_for_other() -> None:
    data = pd.DataFrame({"tile": np.arange(4, dtype=np.int64), "bytes": np.array([4, 9, 1, 7], dtype=np.int64)})
    result = top_n(data, 2, "bytes", label_column="tile", sum_columns=("bytes",))
    assert result.rows["tile"].tolist() == [1, 3, OTHER_LABEL]
    assert result.rows["bytes"].tolist() == [9, 7, 5]


@pytest.mark.parametrize("kwargs", [{"by": "nope"}, {"label_column": "nope"}, {"sum_columns": ("nope",)}])
def test_top_n_rejects_unknown_columns(kwargs: dict) -> None:
    args = {"by": "bytes", "label_column": "name", **kwargs}
    with pytest.raises(ProfcompareError, match="unknown column"):
        top_n(frame(), 2, **args)


def test_top_n_rejects_negative_n() -> None:
    with pytest.raises(ProfcompareError, match="non-negative"):
        top_n(frame(), -1, "bytes", label_column="name")


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.integers(min_value=-(10**12), max_value=10**12), max_size=40),
    n=st.integers(min_value=0, max_value=45),
    use_abs=st.booleans(),
)
def test_top_n_preserves_totals_and_order(values: list[int], n: int, use_abs: bool) -> None:
    data = pd.DataFrame(
        {
            "name": pd.Series([f"v{i:03d}" for i in range(len(values))], dtype=object),
            "bytes": np.array(values, dtype=np.int64),
        }
    )
    result = top_n(data, n, "bytes", label_column="name", sum_columns=("bytes",), key=abs if use_abs else None)
    assert result.shown == min(n, len(values))
    assert result.shown + result.cut == result.total == len(values)
    assert len(result.rows) == result.shown + (1 if result.cut else 0)
    assert int(result.rows["bytes"].sum()) == sum(values)
    shown = result.shown_rows["bytes"].to_numpy()
    ranks = np.abs(shown) if use_abs else shown
    assert (np.diff(ranks) <= 0).all()
    if result.cut:
        rest = sorted(set(data["name"]) - set(result.shown_rows["name"]))
        cut_values = data.set_index("name").loc[rest, "bytes"].to_numpy()
        cut_ranks = np.abs(cut_values) if use_abs else cut_values
        assert ranks.min(initial=np.iinfo(np.int64).max) >= cut_ranks.max()
