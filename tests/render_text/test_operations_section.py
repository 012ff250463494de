"""The Operations section builders: title, ids, columns, the remainder note, and the word of a
report that does not record operations."""

from __future__ import annotations

from profcompare.comparison import compare
from profcompare.model import Report, ReportMeta, Target, operations_from_rows
from profcompare.render.sections.operations import (
    comparison_operations_section,
    operations_document,
    report_operations_section,
)


def _report(rows: list[tuple], capabilities: frozenset[str] = frozenset({"operations"})) -> Report:
    meta = ReportMeta(source="", format="store", producer="test", simulated=False, capabilities=capabilities,
                      target=Target("Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=1))
    return Report.build(meta, operations=operations_from_rows(rows))


BASE = [("fc1/matmul", "fc1/matmul", "MatMul", "", 0, 4096, 256, 1024, 5000, 802816, 4, "model.py:12"),
        ("gelu", "gelu", "Gelu", "", 0, 96, 384, 0, 720, 3072, 4, ""),
        ("(not attributed to an op)", "", "", "", None, 3136, 0, 0, 100, None, None, "")]


def test_report_section() -> None:
    section = report_operations_section(_report(BASE), top=1)
    (table,) = section.tables
    assert (section.title, section.id, table.id) == ("Operations", "operations", "operations-table")
    assert [c.title for c in table.columns] == ["Op", "Type", "Code bytes", "Vertex state", "Exchange code", "Cycles",
                                                "FLOPs", "Tiles"]
    assert [c.text for c in table.rows[0]] == ["fc1/matmul", "MatMul", "4.0 KiB", "256 B", "1.0 KiB", "5,000",
                                               "802,816", "4"]
    assert [c.text for c in table.footer[0]][:3] == ["other (2 ops)", "", "3.2 KiB"]
    assert [c.text for c in table.footer[1]][:6] == ["total", "", "7.2 KiB", "640 B", "1.0 KiB", "5,820"]
    assert section.notes[0] == "Top 1 of 3 ops shown; 2 more in the 'other' row."
    assert section.notes[1].startswith("'(not attributed to an op)' holds what no op is given")


def test_a_report_without_operations_says_so() -> None:
    section = report_operations_section(_report([], frozenset()))
    assert section.tables[0].empty == "this report does not record operations"
    document = operations_document(_report([], frozenset()))
    assert document.title == "profcompare ops: report"


def test_comparison_section() -> None:
    new = [("fc1/matmul", "fc1/matmul", "MatMul", "", 0, 8192, 256, 1024, 9000, 802816, 4, ""), BASE[2]]
    cmp = compare(_report(BASE), _report(new))
    section = comparison_operations_section(cmp)
    (table,) = section.tables
    assert [c.title for c in table.columns] == ["Op", "Type", "Base code", "New code", "Delta code", "Base cycles",
                                                "New cycles", "Delta cycles", "Status"]
    assert [[c.text for c in row] for row in table.rows] == [
        ["fc1/matmul", "MatMul", "4.0 KiB", "8.0 KiB", "+4.0 KiB", "5,000", "9,000", "+4,000", "grew"],
        ["gelu", "Gelu", "96 B", "0 B", "-96 B", "720", "0", "-720", "removed"],
        ["(not attributed to an op)", "", "3.1 KiB", "3.1 KiB", "0 B", "100", "100", "0", "unchanged"],
    ]
    assert section.notes == ("All 3 ops shown.",)
