"""Comparison.vertices / compute_sets / exchanges: rows paired by name, then by normalised name;
two figures diffed per table."""

from __future__ import annotations

import pandas as pd

from profcompare.comparison import compare
from profcompare.comparison.vertices import compare_by_name, diff_columns
from profcompare.model import Report, ReportMeta, Target, table_from_rows

BASE_VERTICES = table_from_rows("vertices", [
    ("poplin::ConvPartial1x1Out<half,float>", 96, 4608, 6400, 4, 2),
    ("popops::ScaledAdd2D<float>", 12, 192, 800, 4, 1),
    ("popops::Zero<float>", 4, 64, 200, 4, 1),
])
NEW_VERTICES = table_from_rows("vertices", [
    ("poplin::ConvPartial1x1Out<half,float>", 96, 4608, 9600, 4, 2),  # more code: grew
    ("popops::ScaledAdd2D<float>", 12, 192, 805, 4, 1),  # 5 B, 0.6 %: within the noise
    ("popnn::NonLinearity1D<float,3>", 24, 384, 1280, 4, 1),  # added
])


def test_vertex_types_pair_by_name_and_classify() -> None:
    diff = compare_by_name("vertices", BASE_VERTICES, NEW_VERTICES)
    assert list(diff.columns) == list(diff_columns("vertices")) == [
        "name", "base_code_bytes", "new_code_bytes", "delta_code_bytes",
        "base_vertex_state_bytes", "new_vertex_state_bytes", "delta_vertex_state_bytes", "status"]
    rows = [(r.name, r.base_code_bytes, r.new_code_bytes, r.delta_code_bytes, r.delta_vertex_state_bytes,
             r.status) for r in diff.itertuples()]
    # the largest code change first
    assert rows == [
        ("poplin::ConvPartial1x1Out<half,float>", 6400, 9600, 3200, 0, "grew"),
        ("popnn::NonLinearity1D<float,3>", 0, 1280, 1280, 384, "added"),
        ("popops::Zero<float>", 200, 0, -200, -64, "removed"),
        ("popops::ScaledAdd2D<float>", 800, 805, 5, 0, "unchanged"),
    ]


def test_exchanges_pair_by_normalised_name_and_diff_cycles() -> None:
    base = table_from_rows("exchanges", [
        ("Net_subgraph(0)/fc1/ExchangePre", 4, "fc1", 0, "DoExchange", 1024, 100, 4),
        ("host/copy", None, "", None, "StreamCopyMid", 40, None, 2),
    ])
    new = table_from_rows("exchanges", [
        ("Net_subgraph(3)/fc1/ExchangePre", 9, "fc1", 0, "DoExchange", 1024, 150, 4),  # cycles +50 %
        ("host/copy", None, "", None, "StreamCopyMid", 40, 30, 2),
    ])
    diff = compare_by_name("exchanges", base, new)
    rows = {r.name: (r.type, r.delta_code_bytes, r.base_cycles, r.new_cycles, r.delta_cycles, r.status)
            for r in diff.itertuples()}
    assert rows == {
        "Net_subgraph(3)/fc1/ExchangePre": ("DoExchange", 0, 100, 150, 50, "grew"),
        "host/copy": ("StreamCopyMid", 0, pd.NA, 30, pd.NA, "unchanged"),
    }


def test_comparison_of_two_reports_carries_the_three_tables() -> None:
    meta = ReportMeta(source="", format="store", producer="test", simulated=True,
                      target=Target("Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=1))
    diff = compare(Report.build(meta, vertices=BASE_VERTICES), Report.build(meta, vertices=NEW_VERTICES))
    pd.testing.assert_frame_equal(diff.vertices, compare_by_name("vertices", BASE_VERTICES, NEW_VERTICES))
    assert diff.compute_sets.empty and list(diff.compute_sets.columns) == list(diff_columns("compute_sets"))
    assert diff.exchanges.empty and list(diff.exchanges.columns) == list(diff_columns("exchanges"))
