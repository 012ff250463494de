"""The ``operations`` table (one row per op): its columns and dtypes, its empty default, and the
checks made when a Report is built."""

from __future__ import annotations

import pandas as pd
import pytest

from profcompare.errors import ReportValidationError
from profcompare.model import (
    CAPABILITIES,
    UNATTRIBUTED_OPERATION,
    Report,
    ReportMeta,
    Target,
    make_frame,
    operations_from_rows,
)


def _meta() -> ReportMeta:
    return ReportMeta(source="", format="store", producer="test", simulated=False,
                      target=Target("Mk2", num_ipus=2, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=2))


ROWS = [
    ("fc1/matmul", "fc1/matmul", "MatMul", "", 1, 4096, 256, 1024, 5000, 802816, 3, "mnist.py:40"),
    ("gelu", "", "Gelu", "popart", None, 128, 0, 0, None, None, None, ""),
    (UNATTRIBUTED_OPERATION, "", "", "", None, 900, 12, 40, 77, None, None, ""),
]


def test_operations_columns_and_dtypes() -> None:
    frame = operations_from_rows(ROWS)
    assert list(frame.columns) == ["name", "debug_name", "type", "layer", "ipu", "code_bytes", "vertex_state_bytes",
                                   "exchange_code_bytes", "cycles", "flops", "tiles", "source", "parameter", "role"]
    assert [str(t) for t in frame.dtypes] == ["object", "object", "category", "object", "Int64", "int64", "int64",
                                              "int64", "Int64", "Int64", "Int64", "object", "object", "object"]
    # rows without the attribution read as unknown
    assert frame["parameter"].tolist() == ["", "", ""] and frame["role"].tolist() == ["", "", ""]
    assert frame["cycles"].tolist() == [5000, pd.NA, 77]
    assert frame["name"].tolist()[-1] == "(not attributed to an op)"
    assert "operations" in CAPABILITIES


def test_a_report_without_operations_has_an_empty_table() -> None:
    report = Report.build(_meta())
    assert report.operations.empty
    assert list(report.operations.columns) == list(make_frame("operations").columns)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (("x", "", "Add", "", 2, 0, 0, 0, 0, 0, 0, ""), r"operations\.ipu: row 3 has 2 \(the target has 2 per replica\)"),
        (("x", "", "Add", "", 0, -1, 0, 0, 0, 0, 0, ""), r"operations\.code_bytes: row 3 has -1 \(must be >= 0\)"),
        (("x", "", "Add", "", 0, 0, 0, 0, -5, 0, 0, ""), r"operations\.cycles: row 3 has -5 \(must be >= 0\)"),
    ],
)
def test_bad_operations_are_refused(row: tuple, message: str) -> None:
    with pytest.raises(ReportValidationError, match=message):
        Report.build(_meta(), operations=operations_from_rows([*ROWS, row]))
