"""Value rules of the report model: nonsense is refused naming table, column and first bad row."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from profcompare.errors import ReportValidationError
from profcompare.model import Report, ReportMeta, Target, make_frame

TARGET = Target(architecture="Mk2", num_ipus=4, tiles_per_ipu=3, bytes_per_tile=1000, clock_hz=1.33e9, num_replicas=4)


def _meta(**changes: Any) -> ReportMeta:
    meta = ReportMeta(source="", format="store", producer="test", simulated=True, target=TARGET, samples_per_step=32)
    return dataclasses.replace(meta, **changes) if changes else meta


def _tables() -> dict[str, Any]:
    return {
        "tiles": {
            "tile": [0, 1, 2],
            "ipu": [0, 0, 0],
            "bytes_including_gaps": [600, 500, 400],
            "bytes_excluding_gaps": [500, 500, 300],
            "always_live_bytes": [200, 200, 100],
            "not_always_live_peak_bytes": [300, 300, 200],
        },
        "categories": {"category": ["variable", "vertexCode"], "group": ["variables", "code"], "bytes": [900, 400]},
        "variables": {
            "name": ["w", "act"],
            "bytes": [400, 300],
            "always_live": [False, False],
            "kind": ["weight", "activation"],
            "dtype": ["float32", "float16"],
            "shape": ["[100]", "[150]"],
            "tiles": [2, 1],
            "first_step": [0, 1],
            "last_step": [2, 1],
        },
        "liveness": {
            "step": [0, 1, 2],
            "program": ["a", "b", "c"],
            "program_type": ["StreamCopy", "OnTileExecute", "DoExchange"],
            "not_always_live_bytes": [400, 700, 400],
        },
    }


def _report(edit: Any = None, **meta_changes: Any) -> Report:
    tables = _tables()
    if edit is not None:
        edit(tables)
    return Report.build(_meta(**meta_changes), **{t: make_frame(t, d) for t, d in tables.items()})


def test_a_well_formed_report_builds() -> None:
    assert _report().summary()["total_bytes"] == 1300


def _set(table: str, column: str, row: int, value: Any) -> Any:
    def edit(tables: dict[str, Any]) -> None:
        tables[table][column][row] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("tiles", "bytes_excluding_gaps", 1, -1), r"tiles\.bytes_excluding_gaps: row 1 has -1 \(must be >= 0\)"),
        (_set("tiles", "always_live_bytes", 2, 2**53 + 1), r"tiles\.always_live_bytes: row 2 has .* \(must be <= 2\*\*53\)"),
        (_set("variables", "bytes", 1, -5), r"variables\.bytes: row 1 has -5"),
        (_set("variables", "first_step", 0, -1), r"variables\.first_step: row 0 has -1"),
        (_set("liveness", "not_always_live_bytes", 2, -1), r"liveness\.not_always_live_bytes: row 2"),
        (_set("categories", "bytes", 0, -100), r"categories\.bytes: row 0 has -100"),
        (_set("tiles", "bytes_excluding_gaps", 2, 401), r"tiles: row 2 has bytes_excluding_gaps 401 > bytes_including_gaps 400"),
        (_set("tiles", "tile", 2, 1), r"tiles\.tile: row 2 repeats 1"),
        (_set("tiles", "tile", 2, 3), r"tiles\.tile: row 2 has 3 \(the target has 3 per replica\)"),
        (_set("tiles", "ipu", 0, 1), r"tiles\.ipu: row 0 has 1 \(the target has 1 per replica\)"),
        (_set("variables", "first_step", 0, 3), r"variables: row 0 has first_step 3 > last_step 2"),
        (_set("categories", "category", 1, "variable"), r"categories\.category: row 1 repeats 'variable'"),
        (_set("liveness", "step", 2, 0), r"liveness: row 2 repeats step 0 with ipu <NA>"),
    ],
)
def test_bad_values_are_refused_naming_table_column_and_row(edit: Any, message: str) -> None:
    with pytest.raises(ReportValidationError, match=message):
        _report(edit)


def test_a_tile_filled_exactly_to_the_limit_is_accepted() -> None:
    report = _report(_set("tiles", "bytes_including_gaps", 0, 2**53))
    assert report.tiles["bytes_including_gaps"].max() == 2**53


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"num_ipus": True}, r"target\.num_ipus must be a positive integer, got True"),
        ({"tiles_per_ipu": 0}, r"target\.tiles_per_ipu must be a positive integer"),
        ({"tiles_per_ipu": 10**9}, r"target\.tiles_per_ipu must be between 1 and 65536"),
        ({"bytes_per_tile": 2**40}, r"target\.bytes_per_tile must be between 1 and 4294967296"),
        ({"num_replicas": 8}, r"target\.num_ipus is 4, fewer than num_replicas x ipus_per_replica = 8 x 1"),
        ({"ipus_per_replica": 2}, r"target\.num_ipus is 4, fewer than num_replicas x ipus_per_replica = 4 x 2"),
        ({"clock_hz": math.nan}, r"target\.clock_hz must be a finite positive clock"),
        ({"clock_hz": math.inf}, r"target\.clock_hz must be a finite positive clock"),
        ({"clock_hz": -1.0}, r"target\.clock_hz must be positive"),
        ({"clock_hz": 1e15}, r"target\.clock_hz must be a finite positive clock up to 1e\+11 Hz"),
        ({"architecture": 2}, r"target\.architecture must be a string"),
    ],
)
def test_bad_targets_are_refused(changes: dict[str, Any], message: str) -> None:
    fields = dataclasses.asdict(TARGET) | changes
    with pytest.raises(ReportValidationError, match=message):
        Target(**fields)


def test_popxl_power_of_two_device_is_accepted() -> None:
    # popxl acquires the next power of two: 3 replicas run on 4 IPUs.
    assert Target("Mk2", num_ipus=4, tiles_per_ipu=1472, bytes_per_tile=638976, clock_hz=1.33e9, num_replicas=3).num_ipus == 4


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"producer": 3}, r"meta\.producer must be a string"),
        ({"workload": ["mnist"]}, r"meta\.workload must be a string"),
        ({"created": 12}, r"meta\.created must be a string"),
        ({"simulated": "yes"}, r"meta\.simulated must be true or false"),
        ({"oom": 1}, r"meta\.oom must be true or false"),
        ({"samples_per_step": 0}, r"meta\.samples_per_step must be between 1 and 2\*\*53"),
        ({"samples_per_step": True}, r"meta\.samples_per_step must be a positive integer"),
        ({"samples_per_step": 2.5}, r"meta\.samples_per_step must be a positive integer"),
        ({"config": {1: "x"}}, r"meta\.config keys must be strings"),
    ],
)
def test_bad_meta_fields_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ReportValidationError, match=message):
        _meta(**changes)


def test_deeply_nested_config_is_refused_without_recursion() -> None:
    nested: Any = "leaf"
    for _ in range(100_000):
        nested = {"k": nested}
    with pytest.raises(ReportValidationError, match="nested deeper than 32 levels"):
        _meta(config={"knobs": nested})
    assert _meta(config={"a": {"b": [1, 2, {"c": 3}]}}).config["a"]["b"][2]["c"] == 3


def test_numpy_integers_count_as_integers() -> None:
    target = Target("Mk2", num_ipus=np.int64(4), tiles_per_ipu=np.int64(3), bytes_per_tile=1000, clock_hz=1.33e9)
    assert target.tiles_per_replica == 3


@pytest.mark.parametrize(("steps", "ipus", "row"), [
    ([0, 0, 1, 1], [0, 1, 0, 1], None),  # step-major, IPUs rising: the simulator's order
    ([0, 0, 1], [None, 0, None], None),  # <NA> before a value of the same step
    ([0, 0, 1, 1], [0, 1, 1, 1], 3),  # a repeat in order
    ([0, 0], [None, None], 1),  # <NA> twice
    ([1, 0, 1], [0, 0, 0], 2),  # out of order: counted, the repeat found all the same
    ([0, 1, 0], [1, 0, 1], 2),
])
def test_liveness_pairs_repeat_in_any_order(steps: list[int], ipus: list[int | None], row: int | None) -> None:
    import pandas as pd

    from profcompare.base.report_values import check_unique_pairs

    frame = make_frame("liveness", {"step": steps, "program": ["p"] * len(steps), "program_type": ["t"] * len(steps),
                                    "not_always_live_bytes": [0] * len(steps), "ipu": pd.array(ipus, dtype="Int64")})
    if row is None:
        check_unique_pairs("liveness", frame, "step", "ipu")
        return
    with pytest.raises(ReportValidationError, match=rf"^liveness: row {row} repeats step"):
        check_unique_pairs("liveness", frame, "step", "ipu")
