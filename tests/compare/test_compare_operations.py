"""Comparison.operations: ops paired by name, then by normalised name; code and cycles diffed."""

from __future__ import annotations

import pandas as pd

from profcompare.comparison import compare
from profcompare.comparison.operations import OPERATION_COLUMNS, compare_operations, normalise_operation_name
from profcompare.model import Report, ReportMeta, Target, make_frame, operations_from_rows


def _ops(*rows: tuple[str, str, int, int | None]) -> pd.DataFrame:
    return operations_from_rows([(name, name, kind, "", 0, code, 0, 0, cycles, None, 1, "")
                                 for name, kind, code, cycles in rows])


BASE = _ops(
    ("Net_subgraph(0)/fc1/matmul", "MatMul", 1000, 5000),
    ("Adam_subgraph(2)/adamupdater@1", "AdamUpdater", 200, 300),
    ("Adam_subgraph(2)/adamupdater@2", "AdamUpdater", 200, 300),
    ("gelu", "Gelu", 96, 700),
    ("remote_load:fc1.weight", "RemoteLoad", 500, 900),
    ("(not attributed to an op)", "", 3000, 400),
)
NEW = _ops(
    ("Net_subgraph(0)/fc1/matmul", "MatMul", 1000, 5002),  # within 1 %: unchanged
    ("Adam_subgraph(5)/adamupdater@1", "AdamUpdater", 100, 300),
    ("Adam_subgraph(5)/adamupdater@2", "AdamUpdater", 200, 400),
    ("gelu", "Gelu", 96, 600),
    ("replicated_all_gather:fc1.weight", "ReplicatedAllGather", 700, 800),
    ("(not attributed to an op)", "", 3500, 400),
)


def test_ops_pair_by_name_then_normalised_name() -> None:
    assert normalise_operation_name("Adam_subgraph(12)/adamupdater@3") == "Adam_subgraph(#)/adamupdater"
    diff = compare_operations(BASE, NEW)
    assert list(diff.columns) == list(OPERATION_COLUMNS)
    rows = {r.name: (r.type, r.base_code_bytes, r.new_code_bytes, r.delta_code_bytes, r.base_cycles,
                     r.new_cycles, r.delta_cycles, r.status) for r in diff.itertuples()}
    assert rows == {
        "Net_subgraph(0)/fc1/matmul": ("MatMul", 1000, 1000, 0, 5000, 5002, 2, "unchanged"),
        "Adam_subgraph(5)/adamupdater@1": ("AdamUpdater", 200, 100, -100, 300, 300, 0, "shrank"),
        "Adam_subgraph(5)/adamupdater@2": ("AdamUpdater", 200, 200, 0, 300, 400, 100, "grew"),
        "gelu": ("Gelu", 96, 96, 0, 700, 600, -100, "shrank"),
        "remote_load:fc1.weight": ("RemoteLoad", 500, 0, -500, 900, 0, -900, "removed"),
        "replicated_all_gather:fc1.weight": ("ReplicatedAllGather", 0, 700, 700, 0, 800, 800, "added"),
        "(not attributed to an op)": ("", 3000, 3500, 500, 400, 400, 0, "grew"),
    }
    # the largest code change first, then the largest cycles change
    assert diff["name"].tolist()[:3] == ["replicated_all_gather:fc1.weight", "remote_load:fc1.weight",
                                         "(not attributed to an op)"]
    assert diff["delta_code_bytes"].sum() == NEW["code_bytes"].sum() - BASE["code_bytes"].sum()


def test_cycles_a_side_does_not_record_are_unknown() -> None:
    base = _ops(("gelu", "Gelu", 96, None))
    new = _ops(("gelu", "Gelu", 96, 700))
    row = compare_operations(base, new).iloc[0]
    assert row["base_cycles"] is pd.NA and row["new_cycles"] == 700 and row["delta_cycles"] is pd.NA
    assert row["status"] == "unchanged"


def test_comparison_operations_of_two_reports() -> None:
    meta = ReportMeta(source="", format="store", producer="test", simulated=True,
                      target=Target("Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=1))
    diff = compare(Report.build(meta, operations=BASE), Report.build(meta, operations=NEW))
    pd.testing.assert_frame_equal(diff.operations, compare_operations(BASE, NEW))
    empty = compare(Report.build(meta), Report.build(meta)).operations
    assert empty.empty and list(empty.columns) == list(OPERATION_COLUMNS)
    assert make_frame("operations").empty
