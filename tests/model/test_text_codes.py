"""model.text_codes: a column's values as codes into their names, spelled as astype(str) spells
them, and make_frame's recoding of a categorical to the categories astype would infer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from profcompare.model import PHASES, make_frame, text_codes


@pytest.mark.parametrize("series", [
    pd.Series(pd.Categorical(["sync", None, "compute", "sync"], categories=list(PHASES))),
    pd.Series(["sync", None, "compute", "sync"], dtype=object),
    pd.Series(pd.Categorical([], categories=["a"])),
])
def test_names_of_the_codes_are_the_values_as_strings(series: pd.Series) -> None:
    codes, names = text_codes(series)
    missing = series.isna().to_numpy()
    assert [names[c] for c in codes[~missing].tolist()] == series[~missing].astype(str).tolist()
    assert not {names[c] for c in codes[missing].tolist()} & set(PHASES)  # a missing value is no phase


def test_a_categorical_column_gets_the_categories_of_its_values() -> None:
    # categories as given (unused ones, phase order) -> those astype("category") of the values gives
    phase = pd.Categorical.from_codes(np.array([3, 0, 0, 3, -1]), categories=list(PHASES))
    frame = make_frame("execution", {"run": [0] * 5, "step": [0, 1, 2, 3, 4], "program": ["p"] * 5,
                                     "type": pd.Categorical(["B", "A", "A", "B", "C"], categories=["C", "B", "A", "Z"]),
                                     "phase": phase, "cycles": [1] * 5})
    assert list(frame["phase"].cat.categories) == ["compute", "host_io"]
    assert frame["phase"].astype(object).tolist()[:4] == ["host_io", "compute", "compute", "host_io"]
    assert frame["phase"].isna().tolist() == [False] * 4 + [True]
    assert list(frame["type"].cat.categories) == ["A", "B", "C"]
    assert not frame["type"].cat.ordered
    expected = pd.Series(["B", "A", "A", "B", "C"], dtype=object).astype("category")
    pd.testing.assert_series_equal(frame["type"], expected, check_names=False)
