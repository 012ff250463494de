"""The per-op detail of the Operations table: the figures and program steps each shown row
carries (embedded in the page as JSON), in a report and in a comparison."""

from __future__ import annotations

import json
import re

from op_detail_fixtures import HOSTILE_OP, op_report

from profcompare.comparison import compare
from profcompare.render.html import HtmlRenderer
from profcompare.render.sections.operation_detail import MAX_STEPS, report_operation_details
from profcompare.render.sections.operations import comparison_operations_section, report_operations_section


def test_the_detail_of_an_op_holds_its_figures_and_steps_in_tree_order() -> None:
    (detail,) = report_operation_details(op_report(), ["matmul/1"])
    assert detail["name"] == "matmul/1"
    assert detail["present"] == [True]
    assert detail["figures"] == [
        ["Code", ["1000 B"], ""],
        ["Vertex state", ["300 B"], ""],
        ["Exchange code", ["200 B"], ""],
        ["Cycles per run", ["500"], ""],
        ["FLOPs", ["2,048"], ""],
        ["Tiles", ["4"], ""],
    ]
    assert detail["facts"] == [
        ["Type", ["MatMul"]], ["IPU", ["0"]], ["Parameter", ["fc.weight"]], ["Role", ["forward"]],
        ["Source", ["model.py:12"]], ["Debug name", ["model/matmul"]], ["Layer", ["popxl"]],
    ]
    assert detail["steps"] == [{"rows": [["OnTileExecute", "matmul/1/Conv"], ["DoExchange", "matmul/1/exchange"],
                                         ["OnTileExecute", "matmul/1/Reduce"]], "more": 0}]


def test_the_steps_of_an_op_are_cut_with_how_many_more() -> None:
    from profcompare.model import Report, programs_from_rows

    report = op_report()
    many = programs_from_rows([(i, None, 0, "OnTileExecute", f"step{i}", "matmul/1", 0) for i in range(MAX_STEPS + 7)])
    report = Report.build(report.meta, operations=report.operations, programs=many)
    (detail,) = report_operation_details(report, ["matmul/1"])
    assert len(detail["steps"][0]["rows"]) == MAX_STEPS
    assert detail["steps"][0]["rows"][-1] == ["OnTileExecute", f"step{MAX_STEPS - 1}"]
    assert detail["steps"][0]["more"] == 7


def test_the_table_carries_a_detail_per_shown_row_and_hides_the_code_breakdown() -> None:
    section = report_operations_section(op_report(), top=1)
    table = section.tables[0]
    assert table.column_chooser
    assert [c.header for c in table.columns if c.hidden] == ["Vertex state", "Exchange code"]
    assert [row.detail["name"] for row in table.rows if row.detail] == ["matmul/1"]
    assert [row.detail for row in table.footer] == [None, None]


def test_a_comparison_detail_has_both_sides_and_the_deltas() -> None:
    cmp = compare(op_report(), op_report(code=1500, cycles=450, source="new.pop"))
    table = comparison_operations_section(cmp).tables[0]
    detail = next(row.detail for row in table.rows if row.detail and row.detail["name"] == "matmul/1")
    assert detail["labels"] == [f"base: {cmp.base.label}", f"new: {cmp.new.label}"]
    assert detail["figures"][0] == ["Code", ["1000 B", "1.5 KiB (1,500 B)"], "+500 B"]
    assert detail["figures"][3] == ["Cycles per run", ["500", "450"], "-50"]
    assert detail["figures"][4] == ["FLOPs", ["2,048", "2,048"], "0"]
    assert len(detail["steps"]) == 2 and detail["steps"][1]["rows"][0] == ["OnTileExecute", "matmul/1/Conv"]
    assert [c.header for c in table.columns if c.hidden] == ["Type"]


def test_the_page_embeds_the_details_as_escaped_json() -> None:
    html = HtmlRenderer().render(op_report())
    block = re.search(r'<script type="application/json" class="row-details" id="operations-table-details">(.*?)</script>',
                      html, re.S)
    assert block is not None
    assert "</script><b>" not in block.group(1)
    details = json.loads(block.group(1))
    assert [d["name"] for d in details] == ["matmul/1", HOSTILE_OP]
    assert 'data-row="0"' in html and "data-column-chooser" in html
    assert "<b>x</b>" not in html


def test_a_comparison_detail_of_an_op_one_side_lacks_says_so() -> None:
    from profcompare.model import Report

    new = op_report(source="new.pop")
    renamed = new.operations.assign(name=new.operations["name"].replace({"matmul/1": "conv"}))
    cmp = compare(op_report(), Report.build(new.meta, operations=renamed, programs=new.programs))
    table = comparison_operations_section(cmp).tables[0]
    detail = next(row.detail for row in table.rows if row.detail and row.detail["name"] == "conv")
    assert detail["present"] == [False, True]
    assert detail["figures"][0] == ["Code", ["n/a", "1000 B"], ""]
    assert detail["steps"] == [{"rows": [], "more": 0}, {"rows": [], "more": 0}]


def test_only_the_first_ops_of_a_long_table_carry_a_detail() -> None:
    from profcompare.model import Report, operations_from_rows
    from profcompare.render.sections.operation_detail import MAX_DETAILED_OPS

    ops = operations_from_rows([(f"op{i}", "", "Add", "", 0, 1000 - i, 0, 0, 1, None, 1, "")
                                for i in range(MAX_DETAILED_OPS + 5)])
    report = Report.build(op_report().meta, operations=ops)
    details = report_operation_details(report, [f"op{i}" for i in range(MAX_DETAILED_OPS + 5)])
    assert [d is None for d in details] == [False] * MAX_DETAILED_OPS + [True] * 5
    assert details[MAX_DETAILED_OPS - 1] is not None and details[MAX_DETAILED_OPS - 1]["name"] == f"op{MAX_DETAILED_OPS - 1}"
