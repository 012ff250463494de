"""Properties of the ledger on random reports whose liveness table is what their variables
table says (as a simulated report's is): the ledger's totals equal the summary's, and every
not-always-live group's bytes are the most its rows hold at once."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from profcompare.model import Report, ReportMeta, Target, make_frame

PARAMETERS = ("", "w", "b")
ROLES = ("weight", "gradient", "activation", "other")


@st.composite
def _reports(draw):
    num_steps = draw(st.integers(1, 8))
    rows = draw(st.lists(st.tuples(
        st.integers(0, 500), st.booleans(), st.integers(0, num_steps - 1), st.integers(0, num_steps - 1),
        st.sampled_from(PARAMETERS), st.sampled_from(ROLES)), min_size=1, max_size=10))
    buffers = draw(st.lists(st.tuples(st.integers(0, 500), st.sampled_from(PARAMETERS)), max_size=3))
    always = [r[1] for r in rows]
    first = [None if r[1] else min(r[2], r[3]) for r in rows]
    last = [None if r[1] else max(r[2], r[3]) for r in rows]
    per_step = np.zeros(num_steps, dtype=np.int64)
    for (nbytes, is_always, *_), f, la in zip(rows, first, last):
        if not is_always:
            per_step[f:la + 1] += nbytes
    n = len(rows)
    variables = make_frame("variables", {
        "name": [f"v{i}" for i in range(n)], "bytes": [r[0] for r in rows], "always_live": always,
        "kind": ["other"] * n, "dtype": ["float32"] * n, "shape": ["[1]"] * n, "tiles": [1] * n,
        "first_step": pd.array(first, dtype="Int64"), "last_step": pd.array(last, dtype="Int64"),
        "parameter": [r[4] for r in rows], "role": [r[5] for r in rows],
    })
    liveness = make_frame("liveness", {
        "step": list(range(num_steps)), "program": [f"p{i}" for i in range(num_steps)],
        "program_type": ["OnTileExecute"] * num_steps, "not_always_live_bytes": per_step,
    })
    remote = make_frame("remote_buffers", {
        "name": [f"buf{i}" for i in range(len(buffers))], "entries": [1] * len(buffers),
        "shape": ["[1]"] * len(buffers), "dtype": ["float32"] * len(buffers), "sharded": [False] * len(buffers),
        "bytes": [b[0] for b in buffers], "parameter": [b[1] for b in buffers],
        "role": ["optimizer_state" if b[1] else "other" for b in buffers],
    })
    meta = ReportMeta(source="", format="store", producer="test", simulated=True,
                      target=Target("Mk2", 1, 4, 1000, 1.33e9))
    return Report.build(meta, variables=variables, liveness=liveness, remote_buffers=remote)


@settings(max_examples=40, deadline=None)
@given(_reports())
def test_ledger_totals_equal_the_summary(report: Report) -> None:
    led = report.ledger()
    v = report.variables
    summary = report.summary()
    nal = led[led["location"] == "not_always_live"]
    assert int(nal["bytes_at_peak"].sum()) == summary["not_always_live_peak_bytes"]
    sm = led[led["location"] == "streaming_memory"]
    assert int(sm["bytes"].sum()) == summary["streaming_memory_bytes"] == int(report.remote_buffers["bytes"].sum())
    assert (sm["bytes_at_peak"] == 0).all()
    al = led[led["location"] == "always_live"]
    assert int(al["bytes"].sum()) == int(al["bytes_at_peak"].sum()) == int(v.loc[v["always_live"], "bytes"].sum())
    assert int(led["rows"].sum()) == len(v) + len(report.remote_buffers)
    assert int(report.live_at_peak()["bytes"].sum()) == summary["not_always_live_peak_bytes"]


@settings(max_examples=40, deadline=None)
@given(_reports())
def test_a_not_always_live_group_holds_its_peak_over_its_rows_steps(report: Report) -> None:
    led = report.ledger()
    v = report.variables
    steps = len(report.liveness)
    for row in led[led["location"] == "not_always_live"].itertuples():
        rows = v[(v["parameter"] == row.parameter) & (v["role"].astype(str) == row.role) & ~v["always_live"]]
        live = np.zeros(steps, dtype=np.int64)
        for nbytes, f, la in zip(rows["bytes"], rows["first_step"], rows["last_step"]):
            live[int(f):int(la) + 1] += int(nbytes)
        assert row.bytes == live.max()
        assert (row.first_step, row.last_step) == (rows["first_step"].min(), rows["last_step"].max())
        assert row.rows == len(rows)
        assert row.bytes_at_peak == live[int(np.argmax(report.liveness["not_always_live_bytes"].to_numpy()))]
