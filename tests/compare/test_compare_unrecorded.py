"""A table a report does not record (e.g. remote buffers of a Poplar profile) is unknown, not 0."""

from __future__ import annotations

import math

from compare_builders import liveness, meta, tiles, variables

from profcompare.comparison import NOT_AVAILABLE, check_limits, compare, parse_limit
from profcompare.model import CAPABILITIES, Report, make_frame


def _poplar_like(capabilities: set[str]) -> Report:
    """A pva-like report filling (and declaring) only ``capabilities`` of tiles, variables, liveness."""
    frames = {
        "tiles": tiles([400, 500]),
        "variables": variables([("w", 100)]),
        "liveness": liveness(["a", "b"], [10, 30]),
    }
    return Report.build(
        meta("pva").replace(format="pva", simulated=False, capabilities=frozenset(capabilities)),
        **{name: frame for name, frame in frames.items() if name in capabilities},
    )


def _with_remote_buffers() -> Report:
    remote = make_frame(
        "remote_buffers",
        {"name": ["m"], "entries": [1], "shape": ["[8]"], "dtype": ["float32"], "sharded": [True], "bytes": [32]},
    )
    return Report.build(
        meta("sim"), tiles=tiles([400, 500]), variables=variables([("w", 100)]),
        liveness=liveness(["a", "b"], [10, 30]), remote_buffers=remote,
    )


def test_summary_of_unrecorded_tables_is_missing_not_zero() -> None:
    summary = _poplar_like({"tiles", "variables", "liveness"}).summary()
    assert math.isnan(summary["streaming_memory_bytes"])  # remote buffers not recorded
    assert math.isnan(summary["code_bytes"])  # memory categories not recorded
    assert summary["total_bytes"] == 900 and summary["variable_bytes"] == 100
    assert summary["peak_liveness_bytes"] == 450 + 30


def test_summary_without_liveness_has_no_liveness_peak() -> None:
    summary = _poplar_like({"tiles", "variables"}).summary()
    assert math.isnan(summary["not_always_live_peak_bytes"]) and math.isnan(summary["peak_liveness_bytes"])
    assert summary["always_live_bytes"] == 450


def test_recorded_but_empty_tables_still_read_zero() -> None:
    summary = Report.build(meta("sim").replace(capabilities=frozenset(CAPABILITIES)), tiles=tiles([400])).summary()
    assert summary["streaming_memory_bytes"] == 0 and summary["code_bytes"] == 0 and summary["variable_bytes"] == 0


def test_comparison_with_an_unrecorded_table_says_n_a_and_a_limit_cannot_pass() -> None:
    diff = compare(_poplar_like({"tiles", "variables", "liveness"}), _with_remote_buffers())
    row = diff.summary.loc["streaming_memory_bytes"]
    assert row["status"] == NOT_AVAILABLE and math.isnan(row["delta"])
    messages = check_limits(diff, [parse_limit("streaming_memory_bytes>5%")])
    assert messages and "not available in base" in messages[0]
