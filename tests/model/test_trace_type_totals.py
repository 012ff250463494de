"""trace_analysis.type_totals: blocks, cycles and median cycles per (ipu, type) or per type, the
figures a pandas group-by gives (median of an even count: the mean of the two middle lengths),
sorted by ipu, then cycles largest first, then type; trace_spans: each IPU's first start, last
end and block count, as the group-by gives them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from profcompare.analysis import trace as trace_analysis
from profcompare.model import make_frame

TYPES = ["OnTileExecute", "SyncAns", "GlobalExchange", "StreamCopyBegin", "DoExchange", "InternalSync"]


def _trace(rng: np.random.Generator, rows: int, ipus: int) -> pd.DataFrame:
    start = rng.integers(0, 10**9, rows)
    return make_frame("trace", {
        "ipu": rng.integers(0, ipus, rows), "cycles_from": start,
        "cycles_to": start + rng.integers(0, 5_000, rows) * rng.integers(1, 3, rows),
        "type": rng.choice(TYPES[: rng.integers(1, len(TYPES) + 1)], rows),
        "name": ["n"] * rows, "program": ["p"] * rows, "parent": [""] * rows, "depth": [0] * rows,
    })


def _grouped(trace: pd.DataFrame, by_ipu: bool) -> pd.DataFrame:
    """The reference: pandas' group-by of the blocks' lengths."""
    keys = ["ipu", "type"] if by_ipu else ["type"]
    frame = pd.DataFrame({"ipu": trace["ipu"].to_numpy(), "type": trace["type"].astype(str).to_numpy(dtype=object),
                          "length": (trace["cycles_to"] - trace["cycles_from"]).to_numpy(dtype="int64")})
    out = frame.groupby(keys, sort=False).agg(blocks=("length", "size"), cycles=("length", "sum"),
                                              median_cycles=("length", "median")).reset_index()
    out = out.astype({"blocks": "int64", "cycles": "int64", "median_cycles": "float64"})
    order = (["ipu"] if by_ipu else []) + ["cycles", "type"]
    return out.sort_values(order, ascending=([True] if by_ipu else []) + [False, True],
                           kind="stable").reset_index(drop=True)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("by_ipu", [True, False])
def test_totals_are_the_group_by_figures(seed: int, by_ipu: bool) -> None:
    rng = np.random.default_rng(seed)
    trace = _trace(rng, int(rng.integers(1, 400)), int(rng.integers(1, 5)))
    pd.testing.assert_frame_equal(trace_analysis.type_totals(trace, by_ipu=by_ipu), _grouped(trace, by_ipu))


def test_medians_worked_by_hand() -> None:
    trace = make_frame("trace", {
        "ipu": [0, 0, 0, 0, 1], "cycles_from": [0, 0, 0, 0, 0], "cycles_to": [10, 30, 7, 5, 4],
        "type": ["SyncAns", "SyncAns", "OnTileExecute", "SyncAns", "SyncAns"],
        "name": ["a"] * 5, "program": ["p"] * 5, "parent": [""] * 5, "depth": [0] * 5,
    })
    totals = trace_analysis.type_totals(trace)
    assert totals.to_dict("records") == [
        {"ipu": 0, "type": "SyncAns", "blocks": 3, "cycles": 45, "median_cycles": 10.0},
        {"ipu": 0, "type": "OnTileExecute", "blocks": 1, "cycles": 7, "median_cycles": 7.0},
        {"ipu": 1, "type": "SyncAns", "blocks": 1, "cycles": 4, "median_cycles": 4.0},
    ]
    per_type = trace_analysis.type_totals(trace, by_ipu=False)
    assert per_type["median_cycles"].tolist() == [7.5, 7.0]  # SyncAns: 4, 5, 10, 30


@pytest.mark.parametrize("seed", range(8))
def test_spans_are_the_group_by_figures(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    trace = _trace(rng, int(rng.integers(1, 300)), int(rng.integers(1, 5)))
    grouped = trace.groupby("ipu", sort=True).agg(cycles_from=("cycles_from", "min"), cycles_to=("cycles_to", "max"),
                                                  blocks=("cycles_from", "size")).reset_index()
    grouped["span_cycles"] = grouped["cycles_to"] - grouped["cycles_from"]
    expected = grouped[["ipu", "cycles_from", "cycles_to", "span_cycles", "blocks"]].astype("int64")
    pd.testing.assert_frame_equal(trace_analysis.trace_spans(trace), expected)


def test_spans_worked_by_hand() -> None:
    trace = make_frame("trace", {
        "ipu": [1, 0, 1, 0], "cycles_from": [5, 10, 0, 2], "cycles_to": [9, 30, 4, 12],
        "type": ["SyncAns"] * 4, "name": ["a"] * 4, "program": ["p"] * 4, "parent": [""] * 4, "depth": [0] * 4,
    })
    assert trace_analysis.trace_spans(trace).to_dict("records") == [
        {"ipu": 0, "cycles_from": 2, "cycles_to": 30, "span_cycles": 28, "blocks": 2},
        {"ipu": 1, "cycles_from": 0, "cycles_to": 9, "span_cycles": 9, "blocks": 2},
    ]
