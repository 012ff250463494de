"""The ``programs`` table (the program tree): its columns, and the tree rules checked when a
Report is built."""

from __future__ import annotations

import pandas as pd
import pytest

from profcompare.errors import ReportValidationError
from profcompare.model import CAPABILITIES, Report, ReportMeta, Target, make_frame, programs_from_rows


def _meta() -> ReportMeta:
    return ReportMeta(source="", format="store", producer="test", simulated=False,
                      target=Target("Mk2", num_ipus=2, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=2))


ROWS = [
    (0, None, 0, "Sequence", "main", "", None),
    (1, 0, 1, "Sequence", "matmul", "matmul", 1),
    (2, 1, 2, "OnTileExecute", "matmul/Convolve", "matmul", 1),
    (3, 0, 1, "Sync", "main/Internal Sync", "", 0),
]


def test_programs_columns_and_dtypes() -> None:
    frame = programs_from_rows(ROWS)
    assert list(frame.columns) == ["id", "parent", "depth", "kind", "name", "op", "ipu"]
    assert [str(t) for t in frame.dtypes] == ["int64", "Int64", "int64", "category", "object", "object", "Int64"]
    assert frame["parent"].tolist() == [pd.NA, 0, 1, 0]
    assert "programs" in CAPABILITIES


def test_a_report_without_programs_has_an_empty_tree() -> None:
    report = Report.build(_meta())
    assert report.programs.empty and list(report.programs.columns) == list(make_frame("programs").columns)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ((4, 9, 1, "Sync", "x", "", None), r"programs\.parent: row 4 has 9, not the id of an earlier row"),
        ((4, 1, 1, "Sync", "x", "", None), r"programs\.depth: row 4 has 1, expected 2"),
        ((2, 0, 1, "Sync", "x", "", None), r"programs\.id: row 4 repeats 2"),
        ((4, 0, 1, "Sync", "x", "", 2), r"programs\.ipu: row 4 has 2 \(the target has 2 per replica\)"),
    ],
)
def test_a_broken_tree_is_refused(row: tuple, message: str) -> None:
    with pytest.raises(ReportValidationError, match=message):
        Report.build(_meta(), programs=programs_from_rows([*ROWS, row]))
