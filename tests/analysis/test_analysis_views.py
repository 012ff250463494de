from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest
from analysis_builders import report, variable_frame

from profcompare.analysis.views import (
    OTHER_LABEL,
    category_breakdown,
    code_by_program,
    execution_by_phase,
    liveness_peak,
    tile_stats,
    variables_view,
)
from profcompare.errors import ProfcompareError
from profcompare.model import make_frame

VARIABLES = variable_frame(
    [
        ("layer0/weight", 4000, True, "weight"),
        ("layer0/weight/adam_m", 2000, True, "optimizer_state"),
        ("layer1/weight", 3000, True, "weight"),
        ("layer0/act", 500, False, "activation"),
        ("layer1/act", 700, False, "activation"),
        ("grad/layer0/weight", 4000, False, "gradient"),
    ]
)


def test_category_breakdown_orders_by_group_then_bytes() -> None:
    categories = make_frame(
        "categories",
        {
            "category": ["variable", "controlCode", "vertexCode", "stack"],
            "group": ["variables", "code", "code", "other"],
            "bytes": [600, 100, 200, 100],
        },
    )
    expected = pd.DataFrame(
        {
            "category": pd.Series(["vertexCode", "controlCode", "variable", "stack"], dtype=object),
            "group": pd.Categorical(["code", "code", "variables", "other"], categories=["code", "vertex_data", "variables", "other"]),
            "bytes": np.array([200, 100, 600, 100], dtype=np.int64),
            "pct": np.array([20.0, 10.0, 60.0, 10.0]),
        }
    )
    pdt.assert_frame_equal(category_breakdown(report(categories=categories)), expected)


def test_category_breakdown_of_empty_report() -> None:
    result = category_breakdown(report())
    assert list(result.columns) == ["category", "group", "bytes", "pct"]
    assert len(result) == 0


def test_variables_view_sorts_by_bytes_with_name_tiebreak_and_other_row() -> None:
    view = variables_view(report(variables=VARIABLES), top=3)
    assert view.rows["name"].tolist() == ["grad/layer0/weight", "layer0/weight", "layer1/weight", OTHER_LABEL]
    assert view.rows["bytes"].tolist() == [4000, 4000, 3000, 2000 + 500 + 700]
    assert (view.shown, view.total, view.cut) == (3, 6, 3)


def test_variables_view_filters_by_regex_and_liveness() -> None:
    view = variables_view(report(variables=VARIABLES), filter_regex=r"^layer0/", always_live=True)
    assert view.rows["name"].tolist() == ["layer0/weight", "layer0/weight/adam_m"]
    assert view.total == 2 and view.cut == 0
    view = variables_view(report(variables=VARIABLES), always_live=False, sort="name")
    assert view.rows["name"].tolist() == ["grad/layer0/weight", "layer0/act", "layer1/act"]


def test_variables_view_sorts_by_any_column() -> None:
    view = variables_view(report(variables=VARIABLES), sort="tiles")
    assert view.rows["tiles"].tolist() == [6, 5, 4, 3, 2, 1]
    view = variables_view(report(variables=VARIABLES), sort="kind", top=2)
    assert view.rows["kind"].astype(object).tolist()[:2] == ["activation", "activation"]
    view = variables_view(report(variables=VARIABLES), sort="bytes", ascending=True, top=1)
    assert view.rows["name"].tolist() == ["layer0/act", OTHER_LABEL]


def test_variables_view_rejects_bad_regex_and_sort() -> None:
    with pytest.raises(ProfcompareError, match="invalid filter regular expression"):
        variables_view(report(variables=VARIABLES), filter_regex="layer[")
    with pytest.raises(ProfcompareError, match="cannot sort variables by 'size'"):
        variables_view(report(variables=VARIABLES), sort="size")


def test_liveness_peak_reports_first_maximum() -> None:
    liveness = make_frame(
        "liveness",
        {
            "step": [0, 1, 2, 3],
            "program": ["load", "fwd", "bwd", "update"],
            "program_type": ["StreamCopy", "OnTileExecute", "OnTileExecute", "OnTileExecute"],
            "not_always_live_bytes": [10, 90, 90, 5],
        },
    )
    tiles = make_frame(
        "tiles",
        {
            "tile": [0, 1],
            "ipu": [0, 0],
            "bytes_including_gaps": [300, 200],
            "bytes_excluding_gaps": [300, 200],
            "always_live_bytes": [100, 50],
            "not_always_live_peak_bytes": [200, 150],
        },
    )
    assert liveness_peak(report(liveness=liveness, tiles=tiles)) == {
        "step": 1,
        "program": "fwd",
        "program_type": "OnTileExecute",
        "not_always_live_bytes": 90,
        "always_live_bytes": 150,
        "peak_liveness_bytes": 240,
    }
    assert liveness_peak(report())["step"] is None


def test_code_by_program_sums_categories() -> None:
    code = make_frame(
        "code",
        {
            "name": ["fwd", "fwd", "bwd", "copy"],
            "type": ["OnTileExecute", "OnTileExecute", "OnTileExecute", "DoExchange"],
            "category": ["vertexCode", "controlCode", "vertexCode", "internalExchangeCode"],
            "code_bytes": [100, 20, 200, 120],
        },
    )
    result = code_by_program(report(code=code))
    expected = pd.DataFrame(
        {
            "name": pd.Series(["bwd", "copy", "fwd"], dtype=object),
            "type": pd.Categorical(["OnTileExecute", "DoExchange", "OnTileExecute"], categories=["DoExchange", "OnTileExecute"]),
            "code_bytes": np.array([200, 120, 120], dtype=np.int64),
        }
    )
    pdt.assert_frame_equal(result, expected)
    assert len(code_by_program(report())) == 0


def test_execution_by_phase_averages_over_runs() -> None:
    execution = make_frame(
        "execution",
        {
            "run": [0, 0, 0, 1, 1],
            "step": [0, 0, 1, 0, 1],
            "program": ["fwd", "fwd", "sync", "fwd", "sync"],
            "type": ["OnTileExecute"] * 5,
            "phase": ["exchange", "compute", "sync", "compute", "sync"],
            "cycles": [100, 600, 50, 600, 50],
        },
    )
    expected = pd.DataFrame(
        {
            "phase": pd.Series(["compute", "exchange", "sync"], dtype=object),
            "cycles": [600.0, 50.0, 50.0],
            "pct": [100 * 600 / 700, 100 * 50 / 700, 100 * 50 / 700],
        }
    )
    pdt.assert_frame_equal(execution_by_phase(report(execution=execution)), expected)
    assert len(execution_by_phase(report())) == 0


def test_tile_stats() -> None:
    used = [100, 1200, 500, 1001]
    tiles = make_frame(
        "tiles",
        {
            "tile": [0, 1, 2, 3],
            "ipu": [0, 0, 0, 0],
            "bytes_including_gaps": used,
            "bytes_excluding_gaps": used,
            "always_live_bytes": [10, 20, 30, 40],
            "not_always_live_peak_bytes": [1, 2, 3, 4],
        },
    )
    stats = tile_stats(report(tiles=tiles), worst=2)
    worst = stats.pop("worst_tiles")
    assert stats == {
        "tiles": 4,
        "bytes_per_tile": 1000,
        "min_bytes": 100,
        "max_bytes": 1200,
        "median_bytes": 750.5,
        "mean_bytes": 700.25,
        "tiles_over_budget": 2,
    }
    expected = pd.DataFrame(
        {
            "tile": np.array([1, 3], dtype=np.int64),
            "ipu": np.array([0, 0], dtype=np.int64),
            "bytes": np.array([1200, 1001], dtype=np.int64),
            "always_live_bytes": np.array([20, 40], dtype=np.int64),
            "not_always_live_peak_bytes": np.array([2, 4], dtype=np.int64),
            "pct_of_budget": [120.0, 100.1],
        }
    )
    pdt.assert_frame_equal(worst, expected)
    assert tile_stats(report())["tiles"] == 0


def test_variable_bytes_count_model_state_whatever_its_liveness() -> None:
    from profcompare.model import variables_convention

    frame = variable_frame([("w", 400, True, "weight"), ("adam.w.first_order", 200, False, "optimizer_state"),
                            ("accum.w", 400, False, "accumulator"), ("act", 999, False, "activation"),
                            ("const", 50, True, "constant")])
    rep = report(variables=frame)
    assert rep.summary()["variable_bytes"] == 400 + 200 + 400  # not the activation, not the constant
    assert variables_convention(frame) == "written_from_host"
    all_live = variable_frame([("w", 400, True, "weight"), ("m", 200, True, "optimizer_state")])
    assert variables_convention(all_live) == "always_live"
    assert variables_convention(variable_frame([("act", 5, False, "activation")])) == "unknown"


def test_execution_by_phase_shares_are_of_device_cycles_not_host_time() -> None:
    execution = make_frame(
        "execution",
        {
            "run": [0, 0, 0],
            "step": [0, 1, 2],
            "program": ["fwd", "fwd", "session.run (host)"],
            "type": ["OnTileExecute", "OnTileExecute", "Host"],
            "phase": ["compute", "exchange", "runtime"],
            "cycles": [300, 100, 600],
            "cycles_from": [0, 300, 400],
            "cycles_to": [300, 400, 1000],
        },
    )
    result = execution_by_phase(report(execution=execution))
    # device cycles per step: the 400-cycle span of compute and exchange; the runtime phase is
    # host/runtime time, listed with its cycles but no share of the device's
    assert list(result["phase"]) == ["compute", "exchange", "runtime"]
    assert list(result["cycles"]) == [300.0, 100.0, 600.0]
    assert result["pct"].iloc[0] == 75.0 and result["pct"].iloc[1] == 25.0 and math.isnan(result["pct"].iloc[2])


def test_variable_bytes_count_each_weight_once_not_its_copies() -> None:
    from profcompare.model import make_frame

    # fc1: the weight (400 B), its sharded optimizer state (100 B), the slice the optimizer updates
    # (shard, 100 B), the shard all-gathered back (gathered_weight, 400 B) and a called graph's input
    # copy (weight_copy, 400 B); fc2 is held only as a shard (50 B): that shard is its state
    rows = [("fc1.weight", 400, "weight", "weight", "fc1.weight"),
            ("adam.fc1.weight.first_order", 100, "optimizer_state", "optimizer_state", "fc1.weight"),
            ("fc1.weight_sharded_slice", 100, "weight", "shard", "fc1.weight"),
            ("fc1.weight_sharded_slice_all_gathered", 400, "weight", "gathered_weight", "fc1.weight"),
            ("Net/fc1.weight", 400, "weight", "weight_copy", "fc1.weight"),
            ("fc2.weight_shard", 50, "weight", "shard", "fc2.weight")]
    frame = make_frame("variables", {
        "name": [r[0] for r in rows], "bytes": [r[1] for r in rows], "always_live": [False] * len(rows),
        "kind": [r[2] for r in rows], "role": [r[3] for r in rows], "parameter": [r[4] for r in rows],
        "dtype": ["float32"] * len(rows), "shape": ["[1]"] * len(rows), "tiles": [1] * len(rows),
        "first_step": list(range(len(rows))), "last_step": list(range(1, len(rows) + 1)),
    })
    assert report(variables=frame).summary()["variable_bytes"] == 400 + 100 + 50


def test_execution_by_phase_and_code_by_program_are_computed_once_per_report(monkeypatch) -> None:
    # a page's table and its chart, the json export and the comparison's table all ask for them
    import profcompare.analysis.views as analysis

    execution = make_frame(
        "execution",
        {"run": [0, 0], "step": [0, 1], "program": ["fwd", "bwd"], "type": ["OnTileExecute"] * 2,
         "phase": ["compute", "exchange"], "cycles": [600, 100]},
    )
    code = make_frame("code", {"name": ["fwd", "bwd"], "type": ["OnTileExecute"] * 2,
                               "category": ["vertexCode"] * 2, "code_bytes": [40, 20]})
    calls: list[str] = []
    for name in ("_execution_by_phase", "_code_by_program"):
        original = getattr(analysis, name)
        monkeypatch.setattr(analysis, name, lambda r, f=original, n=name: (calls.append(n), f(r))[1])
    r = report(execution=execution, code=code)
    first = analysis.execution_by_phase(r)
    first.loc[0, "cycles"] = -1.0  # a caller changing what it got
    assert analysis.execution_by_phase(r)["cycles"].tolist() == [600.0, 100.0]
    assert analysis.code_by_program(r)["code_bytes"].tolist() == analysis.code_by_program(r)["code_bytes"].tolist() == [40, 20]
    assert calls == ["_execution_by_phase", "_code_by_program"]
    assert analysis.execution_by_phase(report(execution=execution))["cycles"].tolist() == [600.0, 100.0]  # its own
    assert calls.count("_execution_by_phase") == 2
