from __future__ import annotations

import numpy as np
import pandas as pd
from compare_builders import liveness, report, tiles, variables
from hypothesis import given, settings
from hypothesis import strategies as st

from profcompare.comparison import compare

NAMES = ["w", "w__t1", "main/w", "b", "b_1", "b_2", "m_rts", "m", "x.0", "<g>/x"]
VALUE_COLUMNS = {
    "categories": "bytes",
    "variables": "bytes",
    "tiles": "bytes",
    "code": "code_bytes",
    "execution": "cycles",
    "remote_buffers": "bytes",
}

variable_rows = st.lists(
    st.tuples(st.sampled_from(NAMES), st.integers(min_value=0, max_value=10**9)), max_size=12
)
tile_bytes = st.lists(st.integers(min_value=0, max_value=2000), max_size=6)
programs = st.lists(st.sampled_from(["a", "b", "c"]), max_size=12)


def build(variant: str, rows: list[tuple[str, int]], used: list[int], steps: list[str]):
    return report(
        variant,
        variables=variables(rows),
        tiles=tiles(used),
        liveness=liveness(steps, list(range(len(steps)))),
    )


@settings(max_examples=50, deadline=None)
@given(
    base_rows=variable_rows,
    new_rows=variable_rows,
    base_tiles=tile_bytes,
    new_tiles=tile_bytes,
    base_steps=programs,
    new_steps=programs,
    noise_bytes=st.integers(min_value=0, max_value=100),
    noise_pct=st.floats(min_value=0, max_value=50),
)
def test_joined_tables_are_consistent(
    base_rows, new_rows, base_tiles, new_tiles, base_steps, new_steps, noise_bytes, noise_pct
) -> None:
    base = build("base", base_rows, base_tiles, base_steps)
    new = build("new", new_rows, new_tiles, new_steps)
    diff = compare(base, new, noise_bytes=noise_bytes, noise_pct=noise_pct)
    for table, value in VALUE_COLUMNS.items():
        frame = getattr(diff, table)
        base_col, new_col, delta_col = frame[f"base_{value}"], frame[f"new_{value}"], frame[f"delta_{value}"]
        assert (base_col + delta_col == new_col).all(), table
        status = frame["status"].astype(str)
        assert ((status == "grew") == ((delta_col > 0) & status.isin(["grew"]))).all()
        assert (delta_col[status == "grew"] > 0).all() and (delta_col[status == "shrank"] < 0).all()
        threshold = np.minimum(noise_bytes if table != "execution" else np.inf, noise_pct / 100 * base_col.abs())
        changed = status.isin(["grew", "shrank"])
        assert (delta_col[changed].abs() > threshold[changed]).all(), table
        assert (delta_col[status == "unchanged"].abs() <= threshold[status == "unchanged"]).all(), table
    variables_diff = diff.variables
    # Every variable of each side appears exactly once, bytes are conserved.
    assert sorted(variables_diff["base_name"].dropna()) == sorted(r[0] for r in base_rows)
    assert sorted(variables_diff["new_name"].dropna()) == sorted(r[0] for r in new_rows)
    assert variables_diff["base_bytes"].sum() == sum(r[1] for r in base_rows)
    assert variables_diff["new_bytes"].sum() == sum(r[1] for r in new_rows)
    only_one_side = variables_diff["base_name"].isna() | variables_diff["new_name"].isna()
    assert (variables_diff["match"].astype(str)[only_one_side] == "unmatched").all()
    assert variables_diff["status"].astype(str)[variables_diff["base_name"].isna()].eq("added").all()
    assert variables_diff["status"].astype(str)[variables_diff["new_name"].isna()].eq("removed").all()
    exact = variables_diff["match"].astype(str) == "exact"
    assert (variables_diff.loc[exact, "base_name"] == variables_diff.loc[exact, "new_name"]).all()
    # Liveness keeps every step of both curves, in order.
    assert diff.liveness["base_step"].dropna().tolist() == list(range(len(base_steps)))
    assert diff.liveness["new_step"].dropna().tolist() == list(range(len(new_steps)))
    # The summary's delta is new - base for every metric.
    summary = diff.summary
    pd.testing.assert_series_equal(summary["new"] - summary["base"], summary["delta"], check_names=False)


@settings(max_examples=40, deadline=None)
@given(rows=variable_rows, used=tile_bytes, steps=programs)
def test_a_report_compared_with_itself_is_unchanged(rows, used, steps) -> None:
    one = build("one", rows, used, steps)
    diff = compare(one, one)
    for table in VALUE_COLUMNS:
        assert getattr(diff, table)["status"].astype(str).eq("unchanged").all()
    assert diff.variables["match"].astype(str).eq("exact").all()
    assert diff.summary["status"].isin(["unchanged", "n/a"]).all()
    assert diff.liveness["base_step"].tolist() == diff.liveness["new_step"].tolist()
