"""The ledger and its comparison views worked out by hand on tiny reports: rows without steps,
unattributed Streaming Memory, the columns of live_at_peak, and the moves of an on-chip ->
off-chip layout change (ledger_moves, ledger_by_parameter, peak_composition)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from profcompare.comparison import compare
from profcompare.analysis.ledger import LEDGER_COLUMNS, ledger_by_parameter, ledger_moves, peak_composition, peak_step
from profcompare.analysis.ledger import unattributed_bytes
from profcompare.model import Report, ReportMeta, Target, make_frame


def _report(**tables: pd.DataFrame) -> Report:
    meta = ReportMeta(source="", format="store", producer="test", simulated=True,
                      target=Target("Mk2", 1, 4, 1000, 1.33e9))
    return Report.build(meta, **tables)


def _variables(rows: list[tuple]) -> pd.DataFrame:
    """(name, bytes, always_live, first_step, last_step, parameter, role) rows."""
    names, nbytes, always, first, last, parameter, role = zip(*rows)
    return make_frame("variables", {
        "name": list(names), "bytes": list(nbytes), "always_live": list(always), "kind": ["other"] * len(rows),
        "dtype": ["float32"] * len(rows), "shape": ["[1]"] * len(rows), "tiles": [1] * len(rows),
        "first_step": pd.array(first, dtype="Int64"), "last_step": pd.array(last, dtype="Int64"),
        "parameter": list(parameter), "role": list(role),
    })


def _liveness(per_step: list[int]) -> pd.DataFrame:
    return make_frame("liveness", {
        "step": list(range(len(per_step))), "program": [f"p{i}" for i in range(len(per_step))],
        "program_type": ["OnTileExecute"] * len(per_step), "not_always_live_bytes": per_step,
    })


def _buffers(rows: list[tuple[str, int, str, str]]) -> pd.DataFrame:
    """(name, bytes, parameter, role) rows."""
    return make_frame("remote_buffers", {
        "name": [r[0] for r in rows], "entries": [1] * len(rows), "shape": ["[1]"] * len(rows),
        "dtype": ["float32"] * len(rows), "sharded": [False] * len(rows), "bytes": [r[1] for r in rows],
        "parameter": [r[2] for r in rows], "role": [r[3] for r in rows],
    })


def _frame(**columns) -> pd.DataFrame:
    frame = pd.DataFrame(columns)
    for column in ("parameter", "role", "location", "base_steps", "new_steps"):
        if column in frame:
            frame[column] = frame[column].astype(object)
    return frame


# -- one report ---------------------------------------------------------------------------------


def test_not_always_live_rows_without_steps_count_at_every_step_of_their_group() -> None:
    """A store from another producer may not record a not-always-live row's steps: the group's
    bytes then count it as live over the whole run, and its steps come from the rows that have
    them; at the peak step it is not known to be live, so it adds nothing there."""
    report = _report(
        variables=_variables([
            ("w", 400, True, None, None, "w", "weight"),
            ("g1", 50, False, 1, 2, "w", "gradient"),
            ("g2", 70, False, 2, 3, "w", "gradient"),
            ("g0", 40, False, None, None, "w", "gradient"),
            ("u", 30, False, None, None, "u", "gradient"),
        ]),
        liveness=_liveness([0, 50, 120, 70]),
    )
    expected = _frame(
        parameter=["u", "w", "w"],
        role=["gradient", "weight", "gradient"],
        location=["not_always_live", "always_live", "not_always_live"],
        # w's gradients: g1 + g2 live together at step 2 (120) plus g0 at every step = 160
        bytes=[30, 400, 160],
        bytes_at_peak=[0, 400, 120],
        first_step=pd.array([None, None, 1], dtype="Int64"),
        last_step=pd.array([None, None, 3], dtype="Int64"),
        rows=[1, 1, 3],
    )
    pd.testing.assert_frame_equal(report.ledger(), expected)
    assert list(report.ledger().columns) == list(LEDGER_COLUMNS)


def test_a_group_s_bytes_are_the_most_its_rows_hold_at_once() -> None:
    # rows listed out of step order; w's: first 0-1, mid 1-2, late 3-4 -> 100, 105, 5, 10, 10;
    # a's: 0-0 and 1-1, never together -> 50, not 80
    report = _report(
        variables=_variables([
            ("late", 10, False, 3, 4, "w", "gradient"),
            ("first", 100, False, 0, 1, "w", "gradient"),
            ("mid", 5, False, 1, 2, "w", "gradient"),
            ("a0", 30, False, 0, 0, "a", "gradient"),
            ("a1", 50, False, 1, 1, "a", "gradient"),
        ]),
        liveness=_liveness([130, 155, 5, 10, 10]),
    )
    led = report.ledger()
    assert led[["parameter", "bytes", "bytes_at_peak", "first_step", "last_step", "rows"]].values.tolist() == [
        ["a", 50, 50, 0, 1, 2], ["w", 105, 105, 0, 4, 3]]


def test_unattributed_bytes_add_streaming_memory_to_tile_memory_at_the_peak() -> None:
    report = _report(
        variables=_variables([
            ("w", 400, True, None, None, "w", "weight"),
            ("mystery_const", 12, True, None, None, "", "other"),  # always live: counts in full
            ("mystery_early", 5, False, 0, 0, "", "other"),  # dead at the peak (step 1)
            ("mystery", 7, False, 1, 2, "", "other"),
            ("act", 90, False, 0, 2, "", "activation"),  # unattributed by nature, not "unknown"
        ]),
        liveness=_liveness([95, 97, 97]),
        remote_buffers=_buffers([("w.m", 200, "w", "optimizer_state"), ("blob", 64, "", "other")]),
    )
    assert peak_step(report) == 1  # the first step with the most bytes
    assert unattributed_bytes(report.ledger()) == 12 + 7 + 64


def test_live_at_peak_has_the_variables_columns_and_a_fresh_index() -> None:
    report = _report(
        variables=_variables([
            ("w", 400, True, None, None, "w", "weight"),
            ("a", 30, False, 0, 1, "", "activation"),
            ("b", 50, False, 1, 2, "", "activation"),
            ("c", 30, False, 1, 1, "", "activation"),
        ]),
        liveness=_liveness([30, 110, 50]),
    )
    live = report.live_at_peak()
    assert list(live.columns) == list(report.variables.columns)
    assert live["name"].tolist() == ["b", "a", "c"]  # largest first, then by name
    assert live.index.tolist() == [0, 1, 2]
    assert int(live["bytes"].sum()) == report.summary()["not_always_live_peak_bytes"] == 110


# -- a comparison: optimizer state moved off chip -------------------------------------------------


@pytest.fixture(scope="module")
def moved():
    """Base: w's Adam state (500 B) always live on chip. New: the state in Streaming Memory and
    loaded into two staging tensors (50 B at steps 1-2, 70 B at 2-3); v's gradient grew 60 -> 80."""
    base = _report(
        variables=_variables([
            ("w", 400, True, None, None, "w", "weight"),
            ("w.m", 200, True, None, None, "w", "optimizer_state"),
            ("w.v", 300, True, None, None, "w", "optimizer_state"),
            ("v", 100, True, None, None, "v", "weight"),
            ("act", 90, False, 0, 2, "", "activation"),
            ("t", 60, False, 1, 3, "v", "gradient"),
            ("warm_up", 10, False, 0, 0, "", "other"),  # live at neither report's peak
        ]),
        liveness=_liveness([100, 150, 150, 60]),  # peak at step 1: act + t
    )
    new = _report(
        variables=_variables([
            ("w", 400, True, None, None, "w", "weight"),
            ("stage1", 50, False, 1, 2, "w", "remote_staging"),
            ("stage2", 70, False, 2, 3, "w", "remote_staging"),
            ("v", 100, True, None, None, "v", "weight"),
            ("act", 90, False, 0, 2, "", "activation"),
            ("t", 80, False, 1, 3, "v", "gradient"),
            ("warm_up", 10, False, 0, 0, "", "other"),
        ]),
        liveness=_liveness([100, 220, 290, 150]),  # peak at step 2: act + both stages + t
        remote_buffers=_buffers([("w.m", 200, "w", "optimizer_state"), ("w.v", 300, "w", "optimizer_state")]),
    )
    return compare(base, new)


def test_ledger_diff_by_hand(moved) -> None:
    led = moved.ledger
    got = led[["parameter", "role", "location", "base_bytes", "new_bytes", "delta_bytes", "base_bytes_at_peak",
               "new_bytes_at_peak"]]
    expected = _frame(
        parameter=["v", "v", "w", "w", "w", "w", "", ""],
        role=["weight", "gradient", "weight", "optimizer_state", "optimizer_state", "remote_staging", "activation",
              "other"],
        location=["always_live", "not_always_live", "always_live", "always_live", "streaming_memory",
                  "not_always_live", "not_always_live", "not_always_live"],
        base_bytes=[100, 60, 400, 500, 0, 0, 90, 10],
        new_bytes=[100, 80, 400, 0, 500, 120, 90, 10],
        delta_bytes=[0, 20, 0, -500, 500, 120, 0, 0],
        base_bytes_at_peak=[100, 60, 400, 500, 0, 0, 90, 0],
        new_bytes_at_peak=[100, 80, 400, 0, 0, 120, 90, 0],
    )
    pd.testing.assert_frame_equal(got, expected)


def test_ledger_moves_by_hand(moved) -> None:
    expected = _frame(
        parameter=["w", "w", "v"],
        role=["optimizer_state", "remote_staging", "gradient"],
        base_always_live=[500, 0, 0], base_not_always_live=[0, 0, 60], base_streaming_memory=[0, 0, 0],
        new_always_live=[0, 0, 0], new_not_always_live=[0, 120, 80], new_streaming_memory=[500, 0, 0],
        base_steps=["", "", "1-3"], new_steps=["", "1-3", "1-3"],
        # |delta| summed over locations: 500 out of always-live + 500 into Streaming Memory
        moved_bytes=[1000, 120, 20],
    )
    pd.testing.assert_frame_equal(ledger_moves(moved.ledger, None), expected)
    pd.testing.assert_frame_equal(moved.ledger_moves(n=None), expected)
    pd.testing.assert_frame_equal(moved.ledger_moves(n=2), expected.head(2))
    pd.testing.assert_frame_equal(moved.ledger_moves(), expected)  # at most 8 rows


def test_equal_moves_are_ordered_by_parameter_then_role() -> None:
    base = _report(variables=_variables([("x", 1, True, None, None, "", "other")]))
    new = _report(variables=_variables([
        ("x", 1, True, None, None, "", "other"),
        ("gb", 40, True, None, None, "b", "gradient"),
        ("wa", 40, True, None, None, "a", "weight"),
        ("ga", 40, True, None, None, "a", "gradient"),
    ]))
    moves = compare(base, new).ledger_moves(n=None)
    assert list(zip(moves["parameter"], moves["role"], moves["moved_bytes"])) == [
        ("a", "gradient", 40), ("a", "weight", 40), ("b", "gradient", 40)]


def test_a_one_byte_change_of_the_only_row_is_a_move() -> None:
    base = _report(variables=_variables([("a", 10, True, None, None, "a", "weight")]))
    new = _report(variables=_variables([("a", 11, True, None, None, "a", "weight")]))
    moves = compare(base, new).ledger_moves()
    assert moves[["parameter", "role", "base_always_live", "new_always_live", "moved_bytes"]].values.tolist() == [
        ["a", "weight", 10, 11, 1]]


def test_ledger_moves_of_two_equal_ledgers_is_empty_with_its_columns(moved) -> None:
    unchanged = moved.ledger[moved.ledger["delta_bytes"] == 0]
    moves = ledger_moves(unchanged, None)
    assert len(moves) == 0
    assert list(moves.columns) == [
        "parameter", "role", "base_always_live", "base_not_always_live", "base_streaming_memory",
        "new_always_live", "new_not_always_live", "new_streaming_memory", "base_steps", "new_steps", "moved_bytes"]
    assert moves["parameter"].dtype == object and moves["moved_bytes"].dtype == np.int64


def test_ledger_by_parameter_by_hand(moved) -> None:
    expected = pd.DataFrame({
        "parameter": pd.Series(["w", "v", ""], dtype=object),
        "base_always_live": [900, 100, 0], "new_always_live": [400, 100, 0], "delta_always_live": [-500, 0, 0],
        "base_not_always_live": [0, 60, 100], "new_not_always_live": [120, 80, 100],
        "delta_not_always_live": [120, 20, 0],
        "base_streaming_memory": [0, 0, 0], "new_streaming_memory": [500, 0, 0],
        "delta_streaming_memory": [500, 0, 0],
        # tile memory = always-live + not-always-live; Streaming Memory is off chip, not in it
        "base_tile_memory": [900, 160, 100], "new_tile_memory": [400 + 120, 180, 100],
        "delta_tile_memory": [520 - 900, 20, 0],
    })
    got = ledger_by_parameter(moved.ledger)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    assert all(got[c].dtype == np.int64 for c in expected.columns if c != "parameter")
    empty = ledger_by_parameter(moved.ledger.iloc[:0])
    assert list(empty.columns) == list(expected.columns) and len(empty) == 0
    assert empty["parameter"].dtype == object and all(empty[c].dtype == np.int64 for c in expected.columns[1:])


def test_peak_composition_by_hand(moved) -> None:
    # warm_up is live at neither peak: no row
    expected = _frame(
        parameter=["w", "v", ""],
        role=["remote_staging", "gradient", "activation"],
        base_bytes=[0, 60, 90],
        new_bytes=[120, 80, 90],
        delta_bytes=[120, 20, 0],
    )
    got = peak_composition(moved.ledger)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    assert all(got[c].dtype == np.int64 for c in ("base_bytes", "new_bytes", "delta_bytes"))
    # the deltas explain the change of the peak: 290 - 150
    assert int(got["delta_bytes"].sum()) == moved.summary.loc["not_always_live_peak_bytes", "delta"] == 140
