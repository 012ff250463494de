"""make_frame and validate_frame refuse what does not match the Report model, with its own error."""

from __future__ import annotations

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
