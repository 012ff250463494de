"""The time diff (profcompare.comparison.time_diff): a hand-worked pair of two-IPU runs, pinned
row by row, and the main job (onchip vs offchip-sharded on the simulator).

The hand-worked pair (one run, clock 1 GHz; IPU 0 and IPU 1 of one replica):

base  IPU 0: fc1/matmul 0-100 (compute), collect/GlobalExchange 100-140 (collective, writes
             fc1.weight's gathered weight, 1,200 B);
      IPU 1: fc2/matmul 140-240 (compute)
new   IPU 0: fc1/matmul 0-100, collect/GlobalExchange 100-160 (20 cycles slower),
             remote_load/Begin 160-200 and remote_load 200-210 (added: they write fc2.weight's
             first-order state, 400 B, held in a remote buffer as optimizer_state);
      IPU 1: fc2/matmul 150-250 (compute, unchanged length)

Worked by hand: the run span goes 240 -> 250 (+10). The collective is slower by 20, of which
10 lie under fc2/matmul on IPU 1 (150-160: overlapped) and 10 are exposed. The remote load's two
steps (+40, +10) lie wholly under fc2/matmul (overlapped). New's steps add up to 310 cycles in a
span of 250: the span row is -60 (IPU 1 runs beside IPU 0). 20 + 40 + 10 - 60 = +10. Bytes: the
RemoteLoad step moves 400 B in 10 cycles (40 GB/s); the GlobalExchange moves 1,200 B in 40 and
60 cycles (30 and 20 GB/s).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from compare_builders import meta

from profcompare.comparison import compare
from profcompare.comparison.time_diff import report_steps, time_causes, time_diff
from profcompare.model import Report, Target, make_frame

TARGET2 = Target(architecture="Mk2", num_ipus=2, tiles_per_ipu=8, bytes_per_tile=1000, clock_hz=1.0e9,
                 num_replicas=1, ipus_per_replica=2)


def _report(variant: str, steps: list[tuple[int, str, str, str, int, int]], variables: list[tuple[Any, ...]],
            remote: list[tuple[Any, ...]] = ()) -> Report:  # type: ignore[assignment]
    """A report of one run: ``steps`` as (ipu, program, type, phase, from, to)."""
    execution = make_frame("execution", {
        "run": [0] * len(steps), "step": list(range(len(steps))), "program": [s[1] for s in steps],
        "type": [s[2] for s in steps], "phase": [s[3] for s in steps], "cycles": [s[5] - s[4] for s in steps],
        "cycles_from": [s[4] for s in steps], "cycles_to": [s[5] for s in steps]})
    trace_type = {"StreamCopyMid": "StreamCopy"}
    trace = make_frame("trace", {
        "ipu": [s[0] for s in steps], "cycles_from": [s[4] for s in steps], "cycles_to": [s[5] for s in steps],
        "type": [trace_type.get(s[2], s[2]) for s in steps], "name": [s[1] for s in steps],
        "program": [s[1] for s in steps], "parent": [""] * len(steps), "depth": [0] * len(steps)})
    names = ("name", "bytes", "parameter", "role", "which", "first_step", "last_step")
    frame = {n: [v[i] for v in variables] for i, n in enumerate(names)}
    count = len(variables)
    frame.update({"always_live": [False] * count, "kind": ["weight"] * count, "dtype": ["float32"] * count,
                  "shape": ["[1]"] * count, "tiles": [1] * count})
    buffers = make_frame("remote_buffers", {
        "name": [r[0] for r in remote], "entries": [1] * len(remote), "shape": ["[1]"] * len(remote),
        "dtype": ["float32"] * len(remote), "sharded": [False] * len(remote), "bytes": [r[1] for r in remote],
        "parameter": [r[2] for r in remote], "role": [r[3] for r in remote], "which": [r[4] for r in remote]})
    report_meta = meta(variant).replace(target=TARGET2)
    return Report.build(report_meta, execution=execution, trace=trace, variables=make_frame("variables", frame),
                        remote_buffers=buffers)


def hand_worked_pair() -> tuple[Report, Report]:
    """The two reports of the module's docstring."""
    gathered = ("fc1.weight_gathered", 1200, "fc1.weight", "gathered_weight", "", 1, 1)
    base = _report("base", [
        (0, "fc1/matmul", "OnTileExecute", "compute", 0, 100),
        (0, "collect/GlobalExchange", "GlobalExchange", "collective", 100, 140),
        (1, "fc2/matmul", "OnTileExecute", "compute", 140, 240),
    ], [gathered])
    new = _report("new", [
        (0, "fc1/matmul", "OnTileExecute", "compute", 0, 100),
        (0, "collect/GlobalExchange", "GlobalExchange", "collective", 100, 160),
        (0, "remote_load/Begin", "StreamCopyBegin", "streaming_memory", 160, 200),
        (0, "remote_load", "RemoteLoad", "streaming_memory", 200, 210),
        (1, "fc2/matmul", "OnTileExecute", "compute", 150, 250),
    ], [gathered, ("fc2.weight/first_order_remote_load", 400, "fc2.weight", "remote_staging", "first_order", 3, 4)],
        [("adam.fc2.weight.first_order", 400, "fc2.weight", "optimizer_state", "first_order")])
    return base, new


def test_hand_worked_rows() -> None:
    base, new = hand_worked_pair()
    diff = time_diff(base, new)
    shown = diff[["ipu", "program", "status", "kind", "parameter", "role", "base_cycles", "new_cycles",
                  "delta_cycles", "delta_exposed_cycles", "delta_overlapped_cycles", "base_bytes_moved",
                  "new_bytes_moved"]]
    expected = pd.DataFrame({
        "ipu": [0, 0, 0, 0, 1, -1],
        "program": ["fc1/matmul", "collect/GlobalExchange", "remote_load/Begin", "remote_load", "fc2/matmul",
                    "(run span outside the steps: overlap or idle)"],
        "status": ["unchanged", "slower", "added", "added", "unchanged", "span"],
        "kind": ["compute", "collective", "remote load", "remote load", "compute", "not in a step"],
        "parameter": ["", "fc1.weight", "fc2.weight", "fc2.weight", "", ""],
        "role": ["", "gathered_weight", "optimizer_state", "optimizer_state", "", ""],
        "base_cycles": [100.0, 40.0, 0.0, 0.0, 100.0, 0.0],
        "new_cycles": [100.0, 60.0, 40.0, 10.0, 100.0, -60.0],
        "delta_cycles": [0.0, 20.0, 40.0, 10.0, 0.0, -60.0],
        "delta_exposed_cycles": [0.0, 10.0, 0.0, 0.0, 0.0, -60.0],
        "delta_overlapped_cycles": [0.0, 10.0, 40.0, 10.0, 0.0, 0.0],
        "base_bytes_moved": [0.0, 1200.0, 0.0, 0.0, 0.0, 0.0],
        "new_bytes_moved": [0.0, 1200.0, 0.0, 400.0, 0.0, 0.0],
    })
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), expected, check_dtype=False)
    assert list(diff["base_step"].astype("object").where(diff["base_step"].notna(), None)) == [0, 1, None, None, 2,
                                                                                                None]
    assert diff.loc[3, "new_bytes_per_second"] == pytest.approx(4.0e10)
    assert diff.loc[1, "base_bytes_per_second"] == pytest.approx(3.0e10)
    assert diff.loc[1, "new_bytes_per_second"] == pytest.approx(2.0e10)
    assert math.isnan(diff.loc[0, "new_bytes_per_second"])


def test_hand_worked_rows_sum_to_the_span_change_and_summary() -> None:
    base, new = hand_worked_pair()
    cmp = compare(base, new)
    diff = cmp.time_diff
    assert diff["delta_cycles"].sum() == pytest.approx(10.0)
    assert cmp.summary.loc["cycles_per_step", "delta"] == pytest.approx(10.0)
    summary = cmp.time_diff_summary()
    assert (summary.base_cycles, summary.new_cycles, summary.delta_cycles) == (240.0, 250.0, 10.0)
    assert summary.gross_cycles == 130.0
    assert summary.attributed_share == pytest.approx(70 / 130)
    assert summary.parameter_share == pytest.approx(70 / 130)
    assert (summary.delta_exposed_cycles, summary.delta_overlapped_cycles) == (-50.0, 60.0)


def test_hand_worked_causes() -> None:
    base, new = hand_worked_pair()
    causes = time_causes(time_diff(base, new), 1.0e9)
    assert causes[["parameter", "role", "kind", "steps", "delta_cycles"]].to_dict("records") == [
        {"parameter": "", "role": "", "kind": "not in a step", "steps": 1, "delta_cycles": -60.0},
        {"parameter": "fc2.weight", "role": "optimizer_state", "kind": "remote load", "steps": 2, "delta_cycles": 50.0},
        {"parameter": "fc1.weight", "role": "gathered_weight", "kind": "collective", "steps": 1, "delta_cycles": 20.0},
    ]
    # the remote load's bandwidth: 400 B over its RemoteLoad step's 10 cycles
    assert causes.loc[1, "new_bytes_per_second"] == pytest.approx(4.0e10)


def test_a_wrong_attribution_fails() -> None:
    """Renaming the staging variable's step moves the charge: the test pins the edge rule."""
    base, new = hand_worked_pair()
    steps = report_steps(new)
    assert steps.loc[steps["program"] == "remote_load", "parameter"].tolist() == ["fc2.weight"]
    assert steps.loc[steps["program"] == "fc2/matmul", "parameter"].tolist() == [""]
    assert np.isclose(steps["exposed_cycles"].to_numpy(), [100.0, 50.0, 0.0, 0.0, 100.0]).all()


def test_no_execution_gives_an_empty_diff() -> None:
    base, new = hand_worked_pair()
    empty = Report.build(base.meta)
    diff = time_diff(empty, empty)
    assert len(diff) == 0
    assert "delta_cycles" in diff.columns
    only_new = time_diff(empty, new)
    assert set(only_new["status"]) <= {"added", "span"}


def test_gates_on_the_hand_worked_pair() -> None:
    from profcompare.comparison import check_limits, parse_limit

    cmp = compare(*hand_worked_pair())
    # attributed: 70 of 130 changed cycles = 53.85%; exposed: 240 -> 190 cycles (-20.83%)
    assert check_limits(cmp, [parse_limit("time_diff_attributed<60%")]) == [
        "time_diff_attributed<60%: the time diff charges 53.85% of the changed cycles to parameters, roles or "
        "named kinds, below the 60% limit"]
    assert check_limits(cmp, [parse_limit("time_diff_attributed<50%"), parse_limit("exposed_cycles>0%")]) == []
    assert check_limits(cmp, [parse_limit("exposed_cycles<-10%")]) == [
        "exposed_cycles<-10%: exposed_cycles better by 20.83% (dropped 240 cycles -> 190 cycles), below the -10% "
        "limit"]


def test_section_text_on_the_hand_worked_pair() -> None:
    from profcompare.render.sections.time_diff import comparison_time_diff_section
    from profcompare.render.text import render_document
    from profcompare.render.sections import Document

    section = comparison_time_diff_section(compare(*hand_worked_pair()), 20)
    assert section is not None and section.title == "Time diff"
    assert section.text == (
        "Device cycles per run 240 → 250 (+10, +0.000 ms); 53.8% of the changed cycles charged to parameters, "
        "roles or named kinds (53.8% to parameters); exposed -50, overlapped +60 cycles. The rows add up to the "
        "change. Simulated: the cycles are modelled, the bytes moved exact (shape x dtype).")
    causes, steps = section.tables
    assert [[c.text for c in row.cells] for row in causes.rows] == [
        ["–", "–", "not in a step", "1", "-60", "-0.000 ms", "-60", "0", "", ""],
        ["fc2.weight", "optimizer_state", "remote load", "2", "+50", "+0.000 ms", "0", "+50", "- → 400 B",
         "40.00 GB/s"],
        ["fc1.weight", "gathered_weight", "collective", "1", "+20", "+0.000 ms", "+10", "+10", "1.2 KiB → 1.2 KiB",
         "20.00 GB/s"],
    ]
    assert [row.cells[2].text for row in steps.rows] == ["span", "added", "slower", "added"]
    text = render_document(Document("t", (), (), (section,)))
    assert "Time diff" in text and "remote load" in text


def test_section_says_why_there_is_no_time_diff_without_one_sides_execution() -> None:
    from profcompare.render.sections.time_diff import comparison_time_diff_section

    base, new = hand_worked_pair()
    empty = Report.build(base.meta)
    section = comparison_time_diff_section(compare(empty, new), 20)
    assert section is not None and section.tables == ()
    assert section.notes == ("The base report has no execution profile, so there is no time diff: it needs the "
                             "steps of both runs.",)
    assert comparison_time_diff_section(compare(empty, empty), 20) is None


def test_step_attribution_runs_once_per_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """The time diff and both ledger-code tables ask for each report's steps: worked out once per
    report, and each caller gets its own copy."""
    from profcompare.analysis import step_attribution

    base, new = hand_worked_pair()
    calls: list[str] = []
    work = step_attribution._report_steps
    monkeypatch.setattr(step_attribution, "_report_steps", lambda report: calls.append(report.label) or work(report))
    diff = compare(base, new)
    diff.time_diff  # noqa: B018 -- a property that computes
    diff.ledger_code()
    mine = step_attribution.report_steps(base)
    mine["kind"] = "changed by the caller"
    assert set(mine["kind"]) == {"changed by the caller"}
    assert sorted(calls) == sorted([base.label, new.label])
    assert "changed by the caller" not in set(report_steps(base)["kind"])
    pd.testing.assert_frame_equal(report_steps(new), work(new))
