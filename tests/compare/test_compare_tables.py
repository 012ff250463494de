from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest
from compare_builders import liveness, report, tiles, variables

from profcompare.comparison import MATCHES, STATUSES, compare, normalise_variable_name
from profcompare.errors import ProfcompareError
from profcompare.model import METRICS, make_frame

STATUS = pd.CategoricalDtype(list(STATUSES))
MATCH = pd.CategoricalDtype(list(MATCHES))


def status(*values: str) -> pd.Categorical:
    return pd.Categorical(list(values), dtype=STATUS)


def test_variable_statuses_and_noise_threshold() -> None:
    # noise = within 64 bytes AND within 1% of base (the defaults): both measures must agree
    base = report(
        variables=variables(
            [("same", 1000), ("noise_up", 1000), ("grew", 1000), ("shrank", 1000), ("big", 1_000_000), ("gone", 300)]
        )
    )
    new = report(
        "new",
        variables=variables(
            [("same", 1000), ("noise_up", 1010), ("grew", 1065), ("shrank", 900), ("big", 1_000_064), ("fresh", 70)]
        ),
    )
    result = compare(base, new).variables
    expected = pd.DataFrame(
        {
            "name": pd.Series(["gone", "shrank", "fresh", "grew", "big", "noise_up", "same"], dtype=object),
            "match": pd.Categorical(["unmatched", "exact", "unmatched", "exact", "exact", "exact", "exact"], dtype=MATCH),
            "base_name": pd.Series(["gone", "shrank", None, "grew", "big", "noise_up", "same"], dtype=object),
            "new_name": pd.Series([None, "shrank", "fresh", "grew", "big", "noise_up", "same"], dtype=object),
            "kind": pd.Categorical(["weight"] * 7),
            "base_bytes": np.array([300, 1000, 0, 1000, 1_000_000, 1000, 1000], dtype=np.int64),
            "new_bytes": np.array([0, 900, 70, 1065, 1_000_064, 1010, 1000], dtype=np.int64),
            "delta_bytes": np.array([-300, -100, 70, 65, 64, 10, 0], dtype=np.int64),
            "delta_pct": [-100.0, -10.0, np.nan, 6.5, 0.0064, 1.0, 0.0],
            "status": status("removed", "shrank", "added", "grew", "unchanged", "unchanged", "unchanged"),
            "base_always_live": pd.array([True, True, None, True, True, True, True], dtype="boolean"),
            "new_always_live": pd.array([None, True, True, True, True, True, True], dtype="boolean"),
            "base_shape": pd.Series(["[75]", "[250]", None, "[250]", "[250000]", "[250]", "[250]"], dtype=object),
            "new_shape": pd.Series([None, "[225]", "[17]", "[266]", "[250016]", "[252]", "[250]"], dtype=object),
            "dtype": pd.Categorical(["float32"] * 7),
            # the builder's rows are unattributed (parameter "", role other)
            "base_parameter": pd.Series(["", "", None, "", "", "", ""], dtype=object),
            "new_parameter": pd.Series([None, "", "", "", "", "", ""], dtype=object),
            "base_role": pd.Series(["other", "other", None, "other", "other", "other", "other"], dtype=object),
            "new_role": pd.Series([None, "other", "other", "other", "other", "other", "other"], dtype=object),
        }
    )
    pdt.assert_frame_equal(result, expected)


def test_noise_parameters_change_status() -> None:
    base = report(variables=variables([("w", 1000)]))
    new = report("new", variables=variables([("w", 1010)]))
    assert compare(base, new).variables["status"].tolist() == ["unchanged"]
    assert compare(base, new, noise_bytes=0, noise_pct=0).variables["status"].tolist() == ["grew"]
    # noise needs both: within the bytes and within the percentage
    assert compare(base, new, noise_bytes=0, noise_pct=5.0).variables["status"].tolist() == ["grew"]
    assert compare(base, new, noise_bytes=100, noise_pct=0.5).variables["status"].tolist() == ["grew"]
    assert compare(base, new, noise_bytes=100, noise_pct=2.0).variables["status"].tolist() == ["unchanged"]


def test_a_large_relative_change_is_never_unchanged() -> None:
    # 9 B -> 25 B is only 16 bytes, but +177.8%
    base = report(variables=variables([("tiny", 9), ("big", 10_000_000)]))
    new = report("new", variables=variables([("tiny", 25), ("big", 10_000_050)]))
    rows = compare(base, new).variables.set_index("name")
    assert rows.loc["tiny", "status"] == "grew" and rows.loc["tiny", "delta_pct"] == pytest.approx(177.78, abs=0.01)
    assert rows.loc["big", "status"] == "unchanged"  # +50 B and +0.0005%: noise by both measures
    with pytest.raises(ProfcompareError, match="noise_bytes"):
        compare(base, new, noise_bytes=-1)
    with pytest.raises(ProfcompareError, match="noise_pct"):
        compare(base, new, noise_pct=float("nan"))


@pytest.mark.parametrize(
    ("name", "normalised"),
    [
        ("main/layer0/w", "layer0/w"),
        ("load_remote/main/w__t3", "w"),
        ("<graph>/w", "w"),
        ("Net_subgraph(0)/fc1/weight", "fc1/weight"),
        ("w__shard0", "w"),
        ("w/shard", "w"),
        ("adam_m_rts", "adam_m"),
        ("w.0", "w"),
        ("w_1", "w"),
        ("w_remote_loaded", "w"),
        ("layer0/w", "layer0/w"),
        ("_1", "_1"),
    ],
)
def test_normalise_variable_name(name: str, normalised: str) -> None:
    assert normalise_variable_name(name) == normalised


def test_normalised_matching_pairs_unique_renames_only() -> None:
    base = report(
        variables=variables(
            [("main/fc/w", 4096), ("x", 10), ("opt/m_1", 100), ("opt/m_2", 100), ("layer.0", 50), ("h", 8)]
        )
    )
    new = report(
        "new",
        variables=variables(
            [("fc/w__shard0", 1024), ("x", 10), ("opt/m", 100), ("layer", 50), ("h_rts", 8), ("h__t1", 8)]
        ),
    )
    result = compare(base, new).variables
    expected = pd.DataFrame(
        {
            "name": pd.Series(["fc/w__shard0", "opt/m", "opt/m_1", "opt/m_2", "h", "h__t1", "h_rts", "layer", "x"], dtype=object),
            "match": pd.Categorical(
                ["normalised", "unmatched", "unmatched", "unmatched", "unmatched", "unmatched", "unmatched", "normalised", "exact"],
                dtype=MATCH,
            ),
            "base_name": pd.Series(["main/fc/w", None, "opt/m_1", "opt/m_2", "h", None, None, "layer.0", "x"], dtype=object),
            "new_name": pd.Series(["fc/w__shard0", "opt/m", None, None, None, "h__t1", "h_rts", "layer", "x"], dtype=object),
            "delta_bytes": np.array([-3072, 100, -100, -100, -8, 8, 8, 0, 0], dtype=np.int64),
            "status": status("shrank", "added", "removed", "removed", "removed", "added", "added", "unchanged", "unchanged"),
        }
    )
    pdt.assert_frame_equal(result[list(expected.columns)], expected)


def test_repeated_names_pair_by_occurrence() -> None:
    base = report(variables=variables([("t", 10), ("t", 20), ("u", 5)]))
    new = report("new", variables=variables([("t", 11), ("t", 21), ("t", 30)]))
    result = compare(base, new, noise_bytes=0, noise_pct=0).variables
    assert list(zip(result["name"], result["base_bytes"], result["new_bytes"], result["status"])) == [
        ("t", 0, 30, "added"),
        ("u", 5, 0, "removed"),
        ("t", 10, 11, "grew"),
        ("t", 20, 21, "grew"),
    ]


def test_summary_deltas_and_missing_metrics() -> None:
    execution = make_frame(
        "execution",
        {"run": [0, 1], "step": [0, 0], "program": ["p", "p"], "type": ["OnTileExecute"] * 2, "phase": ["compute"] * 2, "cycles": [1000, 1000]},
    )
    base = report(tiles=tiles([400, 1200]), variables=variables([("w", 800)]), liveness=liveness(["a"], [100]), samples_per_step=10)
    new = report(
        "new",
        tiles=tiles([400, 1300, 1100]),
        variables=variables([("w", 800)]),
        liveness=liveness(["a"], [90]),
        execution=execution,
        samples_per_step=10,
    )
    summary = compare(base, new).summary
    assert list(summary.index) == list(METRICS)
    assert summary.index.name == "metric"
    assert list(summary.columns) == ["unit", "base", "new", "delta", "delta_pct", "status", "confidence"]
    assert summary.loc["variable_bytes", "confidence"] == "exact" and summary.loc["code_bytes", "confidence"] == "modelled"
    total = summary.loc["total_bytes"]
    assert (total["unit"], total["base"], total["new"], total["delta"], total["status"]) == ("bytes", 1600.0, 2800.0, 1200.0, "grew")
    assert total["delta_pct"] == pytest.approx(75.0)
    over = summary.loc["tiles_over_budget"]
    assert (over["base"], over["new"], over["delta"], over["delta_pct"], over["status"]) == (1.0, 2.0, 1.0, 100.0, "grew")
    nal = summary.loc["not_always_live_peak_bytes"]
    assert (nal["delta"], nal["status"]) == (-10.0, "shrank")  # 10 bytes, but -10% of base: not noise
    cycles = summary.loc["cycles_per_step"]
    assert math.isnan(cycles["base"]) and cycles["new"] == 1000.0
    assert math.isnan(cycles["delta"]) and math.isnan(cycles["delta_pct"])
    assert cycles["status"] == "n/a"
    streaming = summary.loc["streaming_memory_bytes"]
    assert streaming["status"] == "unchanged" and math.isnan(streaming["delta_pct"])


def test_summary_cycles_use_percentage_noise_only() -> None:
    def with_cycles(cycles: int, variant: str):
        execution = make_frame(
            "execution",
            {"run": [0], "step": [0], "program": ["p"], "type": ["OnTileExecute"], "phase": ["compute"], "cycles": [cycles]},
        )
        return report(variant, execution=execution)

    # cycles have no absolute noise: only the percentage (1% by default) decides
    summary = compare(with_cycles(1000, "a"), with_cycles(1020, "b")).summary
    assert summary.loc["cycles_per_step", "status"] == "grew"
    summary = compare(with_cycles(100_000, "a"), with_cycles(100_900, "b")).summary
    assert summary.loc["cycles_per_step", "status"] == "unchanged"  # +900 cycles is +0.9%
    assert summary.loc["samples_per_second", "status"] == "n/a"  # no samples_per_step


def test_categories_tiles_code_execution_remote_buffers() -> None:
    base = report(
        categories=make_frame("categories", {"category": ["variable", "vertexCode", "stack"], "group": ["variables", "code", "other"], "bytes": [1000, 500, 100]}),
        tiles=tiles([100, 200]),
        code=make_frame(
            "code",
            {"name": ["fwd", "fwd", "bwd"], "type": ["OnTileExecute"] * 3, "category": ["vertexCode", "controlCode", "vertexCode"], "code_bytes": [300, 100, 100]},
        ),
        execution=make_frame(
            "execution",
            {"run": [0, 0, 1, 1], "step": [0, 1, 0, 1], "program": ["f", "x"] * 2, "type": ["OnTileExecute"] * 4, "phase": ["compute", "exchange"] * 2, "cycles": [1000, 200, 1000, 200]},
        ),
        remote_buffers=make_frame(
            "remote_buffers", {"name": ["m"], "entries": [1], "shape": ["[10]"], "dtype": ["float32"], "sharded": [False], "bytes": [40000]}
        ),
    )
    new = report(
        "new",
        categories=make_frame("categories", {"category": ["vertexCode", "variable", "controlCode"], "group": ["code", "variables", "code"], "bytes": [500, 2000, 80]}),
        tiles=tiles([100, 300, 50]),
        code=make_frame(
            "code",
            {"name": ["fwd", "load"], "type": ["OnTileExecute", "RemoteLoad"], "category": ["vertexCode", "hostExchangeCode"], "code_bytes": [400, 120]},
        ),
        execution=make_frame(
            "execution",
            {"run": [0, 0], "step": [0, 1], "program": ["f", "r"], "type": ["OnTileExecute", "RemoteLoad"], "phase": ["compute", "streaming_memory"], "cycles": [1000, 500]},
        ),
        remote_buffers=make_frame(
            "remote_buffers", {"name": ["m"], "entries": [2], "shape": ["[10]"], "dtype": ["float32"], "sharded": [True], "bytes": [10000]}
        ),
    )
    diff = compare(base, new)
    pdt.assert_frame_equal(
        diff.categories,
        pd.DataFrame(
            {
                "category": pd.Series(["vertexCode", "controlCode", "variable", "stack"], dtype=object),
                "group": pd.Categorical(["code", "code", "variables", "other"], categories=["code", "vertex_data", "variables", "other"]),
                "base_bytes": np.array([500, 0, 1000, 100], dtype=np.int64),
                "new_bytes": np.array([500, 80, 2000, 0], dtype=np.int64),
                "delta_bytes": np.array([0, 80, 1000, -100], dtype=np.int64),
                "delta_pct": [0.0, np.nan, 100.0, -100.0],
                "status": status("unchanged", "added", "grew", "removed"),
            }
        ),
    )
    pdt.assert_frame_equal(
        diff.tiles,
        pd.DataFrame(
            {
                "tile": np.array([0, 1, 2], dtype=np.int64),
                "ipu": np.array([0, 0, 0], dtype=np.int64),
                "base_bytes": np.array([100, 200, 0], dtype=np.int64),
                "new_bytes": np.array([100, 300, 50], dtype=np.int64),
                "delta_bytes": np.array([0, 100, 50], dtype=np.int64),
                "delta_pct": [0.0, 50.0, np.nan],
                "status": status("unchanged", "grew", "added"),
                "base_always_live_bytes": np.array([50, 100, 0], dtype=np.int64),
                "new_always_live_bytes": np.array([50, 150, 25], dtype=np.int64),
            }
        ),
    )
    pdt.assert_frame_equal(
        diff.code,
        pd.DataFrame(
            {
                "name": pd.Series(["load", "bwd", "fwd"], dtype=object),
                "type": pd.Categorical(["RemoteLoad", "OnTileExecute", "OnTileExecute"], categories=["OnTileExecute", "RemoteLoad"]),
                "base_code_bytes": np.array([0, 100, 400], dtype=np.int64),
                "new_code_bytes": np.array([120, 0, 400], dtype=np.int64),
                "delta_code_bytes": np.array([120, -100, 0], dtype=np.int64),
                "delta_pct": [np.nan, -100.0, 0.0],
                "status": status("added", "removed", "unchanged"),
            }
        ),
    )
    pdt.assert_frame_equal(
        diff.execution,
        pd.DataFrame(
            {
                "phase": pd.Series(["compute", "exchange", "streaming_memory"], dtype=object),
                "base_cycles": [1000.0, 200.0, 0.0],
                "new_cycles": [1000.0, 0.0, 500.0],
                "delta_cycles": [0.0, -200.0, 500.0],
                "delta_pct": [0.0, -100.0, np.nan],
                "status": status("unchanged", "removed", "added"),
            }
        ),
    )
    pdt.assert_frame_equal(
        diff.remote_buffers,
        pd.DataFrame(
            {
                "name": pd.Series(["m"], dtype=object),
                "base_bytes": np.array([40000], dtype=np.int64),
                "new_bytes": np.array([10000], dtype=np.int64),
                "delta_bytes": np.array([-30000], dtype=np.int64),
                "delta_pct": [-75.0],
                "status": status("shrank"),
                "base_entries": np.array([1], dtype=np.int64),
                "new_entries": np.array([2], dtype=np.int64),
                "base_sharded": pd.array([False], dtype="boolean"),
                "new_sharded": pd.array([True], dtype="boolean"),
            }
        ),
    )


@pytest.mark.parametrize("empty_side", ["base", "new", "both"])
def test_empty_tables_on_either_side(empty_side: str) -> None:
    full = report(
        "full",
        variables=variables([("a", 100), ("b", 200)]),
        tiles=tiles([10, 20]),
        liveness=liveness(["p", "q"], [1, 2]),
    )
    empty = report("empty")
    base, new = {"base": (empty, full), "new": (full, empty), "both": (empty, empty)}[empty_side]
    diff = compare(base, new)
    for table in ("categories", "variables", "tiles", "code", "liveness", "execution", "remote_buffers"):
        frame = getattr(diff, table)
        assert frame.index.equals(pd.RangeIndex(len(frame)))
    if empty_side == "both":
        assert all(len(getattr(diff, t)) == 0 for t in ("variables", "tiles", "liveness", "code"))
        assert diff.summary["status"].isin(["unchanged", "n/a"]).all()
        return
    expected_status = "added" if empty_side == "base" else "removed"
    assert diff.variables["status"].tolist() == [expected_status] * 2
    assert diff.variables["match"].tolist() == ["unmatched"] * 2
    assert diff.tiles["status"].tolist() == [expected_status] * 2
    assert len(diff.liveness) == 2
    assert diff.liveness.attrs["alignment"] == "position"


def test_top_variables_other_row_recomputes_delta_pct() -> None:
    base = report(variables=variables([("a", 1000), ("b", 500), ("c", 100), ("d", 100)]))
    new = report("new", variables=variables([("a", 3000), ("b", 400), ("c", 300), ("e", 50)]))
    top = compare(base, new).top_variables(2)
    assert (top.shown, top.total, top.cut) == (2, 5, 3)
    rows = top.rows
    assert rows["name"].tolist() == ["a", "c", "other"]
    assert rows[["base_bytes", "new_bytes", "delta_bytes"]].iloc[-1].tolist() == [600, 450, -150]
    assert rows["delta_pct"].iloc[-1] == pytest.approx(-25.0)
    assert pd.isna(rows["status"].iloc[-1])
    with pytest.raises(ProfcompareError, match="no joined table"):
        compare(base, new).top("summary")


def test_compare_rejects_non_reports() -> None:
    with pytest.raises(ProfcompareError, match="two Report objects"):
        compare("a", "b")  # type: ignore[arg-type]
