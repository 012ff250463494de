"""make_frame refuses columns it cannot line up with the Report model's own error."""

from __future__ import annotations

import pytest

from profcompare.errors import ReportValidationError
from profcompare.model import make_frame


def test_columns_of_different_lengths_are_refused() -> None:
    with pytest.raises(ReportValidationError, match=r"^categories: columns have different lengths \[1, 2\]$"):
        make_frame("categories", {"category": ["vertexCode", "stack"], "group": ["code"], "bytes": [1, 2]})


def test_columns_of_one_length_make_the_frame() -> None:
    frame = make_frame("categories", {"category": ["vertexCode"], "group": ["code"], "bytes": [100]})
    assert frame["bytes"].tolist() == [100] and str(frame["bytes"].dtype) == "int64"
