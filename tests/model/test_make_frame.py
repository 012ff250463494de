"""make_frame and validate_frame refuse what does not match the Report model, with its own error."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from profcompare.errors import ReportValidationError
from profcompare.model import make_frame, validate_frame


def test_columns_of_different_lengths_are_refused() -> None:
    with pytest.raises(ReportValidationError, match=r"^categories: columns have different lengths \[1, 2\]$"):
        make_frame("categories", {"category": ["vertexCode", "stack"], "group": ["code"], "bytes": [1, 2]})


def test_columns_of_one_length_make_the_frame() -> None:
    frame = make_frame("categories", {"category": ["vertexCode"], "group": ["code"], "bytes": [100]})
    assert frame["bytes"].tolist() == [100] and str(frame["bytes"].dtype) == "int64"


def test_a_text_column_of_numbers_is_refused() -> None:
    frame = make_frame("categories", {"category": ["vertexCode"], "group": ["code"], "bytes": [100]})
    frame["category"] = pd.Series([7], dtype="int64")
    with pytest.raises(ReportValidationError, match=r"^categories\.category: dtype int64, expected object$"):
        validate_frame("categories", frame)


def test_an_adopted_frame_is_the_copied_frame_and_holds_the_arrays_given() -> None:
    def columns() -> dict:
        return {"ipu": np.array([0, 1, 1], dtype=np.int64), "cycles_from": np.array([0, 5, 9], dtype=np.int64),
                "cycles_to": np.array([5, 9, 12], dtype=np.int64),
                "type": pd.Categorical.from_codes(np.array([1, 0, 1], dtype=np.int8), categories=["b", "a"]),
                "name": np.array(["x", "y", "z"], dtype=object), "program": np.array(["p", "q", "p"], dtype=object),
                "parent": np.array(["", "", "g"], dtype=object), "depth": np.array([0, 0, 1], dtype=np.int64)}

    given = columns()
    adopted = make_frame("trace", given, adopt=True)
    pd.testing.assert_frame_equal(adopted, make_frame("trace", columns()), check_exact=True)
    assert adopted["run"].tolist() == [0, 0, 0]  # the default column, int64
    assert adopted["run"].dtype == np.int64
    # no copy: the frame's int and text columns are the arrays given
    assert np.shares_memory(adopted["cycles_to"].to_numpy(), given["cycles_to"])
    assert np.shares_memory(adopted["name"].to_numpy(), given["name"])
    # the copying frame holds its own
    copied = make_frame("trace", given)
    assert not np.shares_memory(copied["cycles_to"].to_numpy(), given["cycles_to"])
