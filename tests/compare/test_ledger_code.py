"""The memory ledger's code and cycles: ops rolled up per (parameter, role), compared, drawn.

A hand-made pair pins the figures; the MNIST main job on the simulator (``profcompare run onchip
offchip-sharded``) shows the rows reconcile with the reports and name the ops of the layout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from profcompare.analysis.ledger_code import ledger_code
from profcompare.cli import cli
from profcompare.comparison import Comparison, compare
from profcompare.model import UNATTRIBUTED_OPERATION, Report, ReportMeta, Target, make_frame, operations_from_rows
from profcompare.readers import open_report
from profcompare.render.sections.ledger import comparison_ledger_section, comparison_moves_section
from profcompare.render.sections.ledger_code import comparison_ledger_code_table, report_ledger_code_table

META = ReportMeta(source="", format="store", producer="test", simulated=True,
                  target=Target("Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                num_replicas=1, ipus_per_replica=1))


def _op(name: str, code: int, cycles: int | None, parameter: str = "", role: str = "activation") -> tuple:
    return (name, name, "Op", "", 0, code, 0, 0, cycles, None, 1, "", parameter, role)


#: base: p's weight is read by a matmul; an activation op; what no op is given
BASE_OPS = operations_from_rows([
    _op("p/matmul", 2_000, 1_200, "p", "weight"),
    _op("gelu", 300, 40),
    (UNATTRIBUTED_OPERATION, "", "", "", None, 5_000, 0, 0, 700, None, None, "", "", ""),
])
#: new: the same, plus op X -- 1,000 B of code, 500 cycles -- acting on p's optimizer state, and an
#: op moving two parameters' data
NEW_OPS = operations_from_rows([
    _op("p/matmul", 2_000, 1_200, "p", "weight"),
    _op("gelu", 300, 40),
    _op("X", 1_000, 500, "p", "optimizer_state"),
    _op("call", 64, 10, "", "shared"),
    (UNATTRIBUTED_OPERATION, "", "", "", None, 5_000, 0, 0, 700, None, None, "", "", ""),
])


def _pair() -> Comparison:
    return compare(Report.build(META, operations=BASE_OPS), Report.build(META, operations=NEW_OPS))


def test_a_report_rolls_its_ops_up_per_parameter_and_role() -> None:
    frame = ledger_code(Report.build(META, operations=NEW_OPS))
    assert [tuple(r) for r in frame.itertuples(index=False)] == [
        ("p", "weight", 2_000, 1_200, 1, pd.NA),
        ("p", "optimizer_state", 1_000, 500, 1, pd.NA),
        ("(activations)", "", 300, 40, 1, pd.NA),
        ("(several parameters)", "", 64, 10, 1, pd.NA),
        (UNATTRIBUTED_OPERATION, "", 5_000, 700, 0, pd.NA),
    ]  # no execution profile: the bytes moved are unknown
    # every row plus the named ones: the operations' totals
    assert frame["code_bytes"].sum() == NEW_OPS["code_bytes"].sum() == 8_364
    assert frame["cycles"].sum() == NEW_OPS["cycles"].sum() == 2_450


def test_op_x_on_the_optimizer_state_shows_in_its_ledger_row() -> None:
    diff = _pair().ledger_code()
    row = diff[(diff["parameter"] == "p") & (diff["role"] == "optimizer_state")].iloc[0]
    assert (row["base_code_bytes"], row["new_code_bytes"], row["delta_code_bytes"]) == (0, 1_000, 1_000)
    assert (row["base_cycles"], row["new_cycles"], row["delta_cycles"]) == (0, 500, 500)
    assert (row["base_ops"], row["new_ops"], row["status"]) == (0, 1, "added")
    assert (row["largest_op"], row["largest_op_delta_code_bytes"]) == ("X", 1_000)
    weight = diff[(diff["parameter"] == "p") & (diff["role"] == "weight")].iloc[0]
    assert (weight["delta_code_bytes"], weight["delta_cycles"], weight["status"], weight["largest_op"]) == (
        0, 0, "unchanged", "")
    assert diff["delta_code_bytes"].sum() == 1_064 and diff["delta_cycles"].sum() == 510


def test_the_ledger_code_table_pins_what_a_reader_sees() -> None:
    table = comparison_ledger_code_table(_pair(), None)
    assert [c.header for c in table.columns] == ["Parameter", "Role", "Base code", "New code", "Delta code",
                                                 "Base cycles", "New cycles", "Delta cycles",
                                                 "Base bytes moved", "New bytes moved", "Delta bytes moved",
                                                 "Largest code change"]
    rows = [[c.text for c in r.cells] for r in table.rows]
    assert rows[0] == ["p", "optimizer_state", "0 B", "1000 B", "+1000 B", "0", "500", "+500", "", "", "",
                       "X (+1000 B)"]
    assert rows[1][:3] == ["(several parameters)", "", "0 B"] and rows[1][4] == "+64 B"
    total = [c.text for c in table.footer[-1].cells]
    assert total == ["total", "", "7.1 KiB", "8.2 KiB", "+1.0 KiB", "1,940", "2,450", "+510", "", "", "", ""]
    assert table.id == "ledger-code"
    # a single report: code, cycles per run and ops per row, and the total
    single = report_ledger_code_table(Report.build(META, operations=NEW_OPS), None)
    assert [c.text for c in single.rows[0].cells] == [UNATTRIBUTED_OPERATION, "", "4.9 KiB", "700", "0", ""]
    assert [c.text for c in single.footer[-1].cells] == ["total", "", "8.2 KiB", "2,450", "4", ""]


def _moving(recorded: bool) -> Report:
    """NEW_OPS with an execution profile: p's matmul (step 0), then op X loading p's [512, 512]
    fp32 optimizer state from Streaming Memory (step 1), the bytes recorded by the profile or not."""
    execution = make_frame("execution", {
        "run": [0, 0], "step": [0, 1], "program": ["p/matmul", "X"], "type": ["OnTileExecute", "RemoteLoad"],
        "phase": ["compute", "streaming_memory"], "cycles": [1_000, 2_000],
        "bytes_moved": pd.array([None, 1_048_576 if recorded else None], dtype="Int64")})
    variables = make_frame("variables", {
        "name": ["p/state"], "bytes": [512 * 512 * 4], "always_live": [False], "kind": ["optimizer_state"],
        "dtype": ["float32"], "shape": ["[512, 512]"], "tiles": [4], "first_step": [1], "last_step": [1],
        "parameter": ["p"], "role": ["optimizer_state"], "which": ["first_order"]})
    return Report.build(META, operations=NEW_OPS, execution=execution, variables=variables)


def _base_with_execution() -> Report:
    execution = make_frame("execution", {"run": [0], "step": [0], "program": ["p/matmul"], "type": ["OnTileExecute"],
                                         "phase": ["compute"], "cycles": [1_000]})
    return Report.build(META, operations=BASE_OPS, execution=execution)


@pytest.mark.parametrize("recorded", [True, False])
def test_a_remote_load_of_the_state_moves_its_bytes_in_the_ledger_row(recorded: bool) -> None:
    # 512 x 512 x 4 bytes = 1,048,576, recorded by the profile or, where not, from the variable X writes
    diff = compare(_base_with_execution(), _moving(recorded)).ledger_code()
    row = _row(diff, "p", "optimizer_state")
    assert (row["base_bytes_moved"], row["new_bytes_moved"], row["delta_bytes_moved"]) == (0, 1_048_576, 1_048_576)
    weight = _row(diff, "p", "weight")
    assert (weight["base_bytes_moved"], weight["new_bytes_moved"], weight["delta_bytes_moved"]) == (0, 0, 0)
    table = comparison_ledger_code_table(compare(_base_with_execution(), _moving(recorded)), None)
    assert [c.text for c in table.rows[0].cells][8:11] == ["0 B", "1.0 MiB", "+1.0 MiB"]
    assert [c.text for c in table.footer[-1].cells][8:11] == ["0 B", "1.0 MiB", "+1.0 MiB"]
    single = ledger_code(_moving(recorded))
    assert single["bytes_moved"].tolist() == [0, 1_048_576, 0, 0, 0]
    # every medium: CSV, JSON, Markdown, the page
    import json

    from profcompare.render.base import get_renderer
    from profcompare.render.csv_out import page_table_csv

    cmp = compare(_base_with_execution(), _moving(recorded))
    csv = page_table_csv(cmp, "ledger-code").splitlines()
    assert csv[0].split(",")[8:11] == ["Base bytes moved", "New bytes moved", "Delta bytes moved"]
    assert csv[1].startswith("p,optimizer_state,0,1000,1000,0,500,500,0,1048576,1048576,X")
    rows = json.loads(get_renderer("json").render(cmp))["ledger_code"]
    assert [(r["parameter"], r["role"], r["base_bytes_moved"], r["new_bytes_moved"], r["delta_bytes_moved"])
            for r in rows][:2] == [("p", "weight", 0, 0, 0), ("p", "optimizer_state", 0, 1_048_576, 1_048_576)]
    assert "| 0 B | 1.0 MiB | **+1.0 MiB** |" in get_renderer("markdown").render(cmp)
    assert "Delta bytes moved" in get_renderer("html").render(cmp)
    assert [c.text for c in report_ledger_code_table(_moving(recorded), None).footer[-1].cells][-1] == "1.0 MiB"


def test_the_time_diff_says_where_its_bytes_come_from() -> None:
    from profcompare.comparison.time_diff import bytes_source
    from profcompare.render.sections.time_diff import comparison_time_diff_section

    assert bytes_source(_moving(True)) == "recorded by the profile"
    assert bytes_source(_moving(False)) == bytes_source(_base_with_execution()) == "from the variables moved"
    for recorded in (True, False):
        causes = compare(_base_with_execution(), _moving(recorded)).time_causes()
        load = causes[causes["kind"] == "remote load"].iloc[0]
        assert (load["parameter"], load["role"], load["new_bytes_moved"]) == ("p", "optimizer_state", 1_048_576)
    same = comparison_time_diff_section(compare(_moving(True), _moving(True)), None)
    assert same is not None and ("Bytes moved per replica: recorded by the profile (the bytes each data step "
                                 "moves, in plus out); bandwidth") in same.tables[0].note
    mixed = comparison_time_diff_section(compare(_moving(False), _moving(True)), None)
    assert mixed is not None and ("Bytes moved per replica: base from the variables moved (those the transfer, "
                                  "the parameter's where it moves one, writes or reads), new recorded by the "
                                  "profile (the bytes each data step moves, in plus out); bandwidth") in mixed.tables[0].note


def test_a_comparison_without_operations_has_no_code_table() -> None:
    empty = compare(Report.build(META), Report.build(META))
    assert len(comparison_ledger_section(empty, None).tables) == 2
    assert empty.ledger_code().empty
    assert len(comparison_ledger_section(_pair(), None).tables) == 3


# --------------------------------------------------------------------------------------------
# the MNIST main job on the simulator


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> Comparison:
    """``profcompare run onchip offchip-sharded`` with the default knobs, on the simulator."""
    out = tmp_path_factory.mktemp("main-job-ledger-code")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
        patch.delenv("PROFCOMPARE_BACKEND", raising=False)
        run = CliRunner().invoke(cli, ["run", "onchip", "offchip-sharded", "--out", str(out), "--name", "t1",
                                       "--backend", "sim", "-q"])
    assert run.exit_code == 0, run.output + repr(run.exception)
    run_dir = Path(out) / "t1"
    return compare(open_report(run_dir / "onchip"), open_report(run_dir / "offchip-sharded"))


def _row(diff: pd.DataFrame, parameter: str, role: str) -> Any:
    return diff[(diff["parameter"] == parameter) & (diff["role"] == role)].iloc[0]


def test_the_main_job_rows_reconcile_with_each_report(main_job: Comparison) -> None:
    diff = main_job.ledger_code()
    for side, report in (("base", main_job.base), ("new", main_job.new)):
        summary = report.summary()
        assert int(diff[f"{side}_code_bytes"].sum()) == int(summary["code_bytes"])
        assert int(diff[f"{side}_cycles"].sum()) == int(summary["cycles_per_step"])
        rolled = ledger_code(report)
        assert int(rolled["code_bytes"].sum()) == int(report.operations["code_bytes"].sum())
        assert int(rolled["ops"].sum()) == len(report.operations) - 1  # all but the remainder row


def test_the_main_job_rows_name_the_remote_transfers_and_collectives(main_job: Comparison) -> None:
    diff = main_job.ledger_code()
    state = _row(diff, "fc1.weight", "optimizer_state")
    # the Adam state now goes to and from Streaming Memory: its remote loads and stores
    assert state["status"] == "grew" and (state["base_ops"], state["new_ops"]) == (4, 15)
    # (its load graph's 3 loads share one Begin and one End, as do its store graph's 3 stores: a
    # merged exchange, so 8 steps' control code fewer than 6 separate transfers would have)
    assert state["delta_code_bytes"] == 814_392
    assert "/remote_load:" in state["largest_op"] and state["largest_op_delta_code_bytes"] > 0
    new_ops = main_job.new.operations
    state_ops = new_ops[(new_ops["parameter"] == "fc1.weight") & (new_ops["role"] == "optimizer_state")]
    assert {"RemoteLoad", "RemoteStore"} <= set(state_ops["type"].astype(str))
    # the sharded weight is gathered back after its update
    weight = _row(diff, "fc1.weight", "weight")
    assert weight["largest_op"] == "replicated_all_gathered:fc1.weight_sharded_slice_all_gathered"
    assert weight["delta_code_bytes"] > 0
    # the gradient is reduce-scattered instead of all-reduced: the all-reduce's code is gone
    gradient = _row(diff, "fc1.weight", "gradient")
    assert gradient["largest_op"] == "replicated_all_reduce_inplace:accum.fc1.weight_all_reduce"
    assert gradient["largest_op_delta_code_bytes"] < 0 and gradient["delta_code_bytes"] < 0
    grad_ops = new_ops[(new_ops["parameter"] == "fc1.weight") & (new_ops["role"] == "gradient")]
    assert any(t.startswith("ReplicatedReduceScatter") for t in grad_ops["type"].astype(str))


def test_the_main_job_top_move_names_its_code_change(main_job: Comparison) -> None:
    section = comparison_moves_section(main_job)
    top = main_job.ledger_moves(1).iloc[0]
    row = _row(main_job.ledger_code(), top["parameter"], top["role"])
    assert f"; its ops' code +{row['delta_code_bytes'] / 1024:.1f} KiB, cycles +{row['delta_cycles']:,} per run" \
        in section.items[0]
    assert f"(most: {row['largest_op']} +" in section.items[0]
    assert all("its ops' code" not in item for item in section.items[1:])


def test_every_medium_carries_the_table_and_escapes_op_names() -> None:
    import json

    from profcompare.render.base import get_renderer
    from profcompare.render.csv_out import page_table_csv

    hostile = operations_from_rows(list(NEW_OPS.itertuples(index=False, name=None))[:-1] + [
        _op("<b>y</b></script>", 2_000, 9, "p", "optimizer_state"),
        (UNATTRIBUTED_OPERATION, "", "", "", None, 5_000, 0, 0, 700, None, None, "", "", "")])
    cmp = compare(Report.build(META, operations=BASE_OPS), Report.build(META, operations=hostile))
    page = get_renderer("html").render(cmp)
    assert 'id="ledger-code"' in page
    assert "&lt;b&gt;y&lt;/b&gt;&lt;/script&gt; (+2.0 KiB)" in page and "<b>y</b></script>" not in page
    data = json.loads(get_renderer("json").render(cmp))
    ledger = next(s for s in data["sections"] if s["id"] == "ledger")
    table = next(t for t in ledger["tables"] if t["id"] == "ledger-code")
    assert table["rows"][0][:8] == ["p", "optimizer_state", 0, 3_000, 3_000, 0, 509, 509]
    assert table["footer"][-1][:8] == ["total", "", 7_300, 10_364, 3_064, 1_940, 2_459, 519]
    text = get_renderer("text").render(cmp)
    assert "Largest code change" in text and "<b>y</b></script> (+2.0 KiB)" in text
    assert "| p | optimizer\\_state | 0 B | 2.9 KiB | **+2.9 KiB** |" in get_renderer("markdown").render(cmp)
    assert page_table_csv(cmp, "ledger-code").splitlines()[1].startswith("p,optimizer_state,0,3000,3000,0,509,509,")


def test_ops_of_a_report_that_does_not_say_go_to_their_own_row() -> None:
    # a Poplar profile or a store before version 9: no op records its parameter
    unknown = operations_from_rows([
        ("fc1/matmul", "fc1/matmul", "MatMul", "", 0, 4_096, 0, 0, None, None, 4, ""),
        (UNATTRIBUTED_OPERATION, "", "", "", None, 900, 0, 0, None, None, None, ""),
    ])
    frame = ledger_code(Report.build(META, operations=unknown))
    assert [tuple(r) for r in frame.itertuples(index=False)] == [
        ("(parameter not recorded)", "", 4_096, pd.NA, 1, pd.NA), (UNATTRIBUTED_OPERATION, "", 900, pd.NA, 0, pd.NA)]
