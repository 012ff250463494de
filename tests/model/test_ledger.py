"""Report.ledger(): one row per (parameter, role, location), worked out by hand on a tiny report."""

from __future__ import annotations

import pandas as pd
import pytest

from profcompare.errors import ReportValidationError
from profcompare.analysis.ledger import peak_step, unattributed_bytes
from profcompare.model import Report, ReportMeta, Target, make_frame


def _report(**tables: pd.DataFrame) -> Report:
    meta = ReportMeta(source="", format="store", producer="test", simulated=True,
                      target=Target("Mk2", 1, 4, 1000, 1.33e9))
    return Report.build(meta, **tables)


def _variables(rows: list[tuple]) -> pd.DataFrame:
    names, nbytes, always, first, last, parameter, role, which = zip(*rows)
    return make_frame("variables", {
        "name": list(names), "bytes": list(nbytes), "always_live": list(always), "kind": ["other"] * len(rows),
        "dtype": ["float32"] * len(rows), "shape": ["[1]"] * len(rows), "tiles": [1] * len(rows),
        "first_step": pd.array(first, dtype="Int64"), "last_step": pd.array(last, dtype="Int64"),
        "parameter": list(parameter), "role": list(role), "which": list(which),
    })


@pytest.fixture
def report() -> Report:
    variables = _variables([
        ("w", 400, True, None, None, "w", "weight", ""),
        ("w.m", 200, True, None, None, "w", "optimizer_state", "first_order"),
        ("w.v", 300, True, None, None, "w", "optimizer_state", "second_order"),
        # two staging copies of w's state: live at steps 1-2 and 2-3 -> at most 50 + 70 at once
        ("stage1", 50, False, 1, 2, "w", "remote_staging", ""),
        ("stage2", 70, False, 2, 3, "w", "remote_staging", ""),
        ("stage3", 10, False, 4, 4, "w", "remote_staging", ""),
        ("act", 90, False, 0, 2, "", "activation", ""),
        ("mystery", 5, False, 2, 2, "", "other", ""),
    ])
    liveness = make_frame("liveness", {
        "step": [0, 1, 2, 3, 4], "program": ["a", "b", "c", "d", "e"], "program_type": ["OnTileExecute"] * 5,
        "not_always_live_bytes": [90, 140, 215, 70, 10],
    })
    remote = make_frame("remote_buffers", {
        "name": ["w.m", "w.v"], "entries": [1, 1], "shape": ["[1]", "[1]"], "dtype": ["float32", "float32"],
        "sharded": [False, False], "bytes": [200, 300], "parameter": ["w", "w"],
        "role": ["optimizer_state", "optimizer_state"], "which": ["first_order", "second_order"],
    })
    return _report(variables=variables, liveness=liveness, remote_buffers=remote)


def test_ledger_rows_by_hand(report: Report) -> None:
    ledger = report.ledger()
    expected = pd.DataFrame({
        "parameter": ["w", "w", "w", "w", "", ""],
        "role": ["weight", "optimizer_state", "optimizer_state", "remote_staging", "activation", "other"],
        "location": ["always_live", "always_live", "streaming_memory", "not_always_live", "not_always_live",
                     "not_always_live"],
        "bytes": [400, 500, 500, 120, 90, 5],
        "bytes_at_peak": [400, 500, 0, 120, 90, 5],
        "first_step": pd.array([None, None, None, 1, 0, 2], dtype="Int64"),
        "last_step": pd.array([None, None, None, 4, 2, 2], dtype="Int64"),
        "rows": [1, 2, 2, 3, 1, 1],
    })
    for column in ("parameter", "role", "location"):
        expected[column] = expected[column].astype(object)
    pd.testing.assert_frame_equal(ledger, expected)


def test_ledger_reconciles_with_the_summary(report: Report) -> None:
    ledger = report.ledger()
    summary = report.summary()
    nal = ledger[ledger["location"] == "not_always_live"]
    assert nal["bytes_at_peak"].sum() == summary["not_always_live_peak_bytes"] == 215
    sm = ledger[ledger["location"] == "streaming_memory"]
    assert sm["bytes"].sum() == summary["streaming_memory_bytes"] == 500


def test_live_at_peak_lists_the_rows_of_the_peak_step(report: Report) -> None:
    assert peak_step(report) == 2
    live = report.live_at_peak()
    assert live["name"].tolist() == ["act", "stage2", "stage1", "mystery"]
    assert live["bytes"].sum() == 215


def test_unattributed_bytes_count_only_parameterless_other_rows(report: Report) -> None:
    assert unattributed_bytes(report.ledger()) == 5


def test_empty_report_has_an_empty_ledger() -> None:
    ledger = _report().ledger()
    assert list(ledger.columns) == ["parameter", "role", "location", "bytes", "bytes_at_peak", "first_step",
                                    "last_step", "rows"]
    assert len(ledger) == 0 and peak_step(_report()) is None


def test_unknown_role_is_refused() -> None:
    with pytest.raises(ReportValidationError, match="variables.role: unknown role"):
        _report(variables=_variables([("x", 1, True, None, None, "x", "wieght", "")]))
    with pytest.raises(ReportValidationError, match="variables.which"):
        _report(variables=_variables([("x", 1, True, None, None, "x", "optimizer_state", "third")]))


def test_readers_that_do_not_attribute_get_unattributed_defaults() -> None:
    frame = make_frame("variables", {
        "name": ["a"], "bytes": [1], "always_live": [True], "kind": ["weight"], "dtype": ["float32"],
        "shape": ["[1]"], "tiles": [1],
    })
    assert frame[["parameter", "which"]].iloc[0].tolist() == ["", ""]
    assert str(frame["role"].iloc[0]) == "other"
