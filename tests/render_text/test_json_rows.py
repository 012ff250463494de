"""Large tables in the JSON export: written column by column with the same characters as the row
dictionaries, and ``--top N`` bounding the step series as it bounds the variables."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render import json_rows
from profcompare.render.json_out import JsonRenderer, comparison_json, frame_records, report_json
from profcompare.render.json_rows import Rows, records
from profcompare.render.json_text import dumps_indented, indented_parts


def _every_kind() -> pd.DataFrame:
    return pd.DataFrame({
        "int": [1, -2, 3, 0, 2**40],
        "nullable": pd.array([1, None, 3, None, 5], dtype="Int64"),
        "float": [1.5, math.nan, math.inf, 0.1, -2.0],
        "float32": np.array([0.1, 2, 3, 4, 5], dtype="float32"),
        "text": ["x", 'é"quoted"%s', None, "x", "\u2028"],
        "str": pd.Series(["a", "b", None, "a", "%d"], dtype="str"),
        "category": pd.Categorical(["p", "q", "p", None, "q"]),
        "flag": [True, False, True, True, False],
        "maybe": pd.array([True, None, False, None, True], dtype="boolean"),
        "small": np.array([1, 2, 3, 4, 5], dtype="uint16"),
        "per%cent": [0, 0, 0, 0, 0],
    })


@pytest.mark.parametrize("chunk", [1, 2, 65536])
@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_rows_write_the_characters_of_their_dictionaries(monkeypatch: pytest.MonkeyPatch, chunk: int,
                                                         ensure_ascii: bool) -> None:
    monkeypatch.setattr(json_rows, "_CHUNK", chunk)
    frame = _every_kind()
    rows = Rows.of(frame)
    assert rows is not None
    for document, plain in (({"a": {"b": [rows]}}, {"a": {"b": [frame_records(frame)]}}), (rows, frame_records(frame))):
        expected = json.dumps(plain, indent=2, allow_nan=False, ensure_ascii=ensure_ascii)
        assert dumps_indented(document, ensure_ascii=ensure_ascii) == expected
        assert "".join(indented_parts(document, ensure_ascii=ensure_ascii)) == expected


def test_rows_of_no_rows_and_of_no_columns() -> None:
    assert dumps_indented({"t": Rows.of(_every_kind().iloc[:0])}) == json.dumps({"t": []}, indent=2)
    empty = pd.DataFrame(index=range(3))
    assert dumps_indented({"t": Rows.of(empty)}) == json.dumps({"t": [{}, {}, {}]}, indent=2)


def test_rows_read_as_the_row_dictionaries() -> None:
    frame = _every_kind()
    rows = Rows.of(frame)
    assert rows is not None
    assert len(rows) == 5 and rows[1] == frame_records(frame)[1] and list(rows) == frame_records(frame)
    assert rows == frame_records(frame)
    assert rows[1]["nullable"] is None and rows[1]["maybe"] is None and rows[2]["text"] is None


def test_columns_without_a_column_form_keep_the_dictionaries(monkeypatch: pytest.MonkeyPatch) -> None:
    # 1, 1.0 and True are one key to factorize: a mixed column is written value by value
    mixed = pd.DataFrame({"m": pd.Series([1, 1.0, True, "a"], dtype=object)})
    assert Rows.of(mixed) is None
    assert Rows.of(pd.DataFrame({"u": np.array([2**63], dtype="uint64")})) is None
    assert Rows.of(pd.DataFrame([[1, 2]], columns=[1, "1"])) is None  # two columns named "1"
    monkeypatch.setattr(json_rows, "ROWS_AS_TEXT", 3)
    assert isinstance(records(_every_kind()), Rows)
    assert isinstance(records(_every_kind().iloc[:3]), list)
    assert records(mixed.iloc[:4]) == [{"m": 1}, {"m": 1.0}, {"m": True}, {"m": "a"}]


def test_a_large_export_is_the_same_text_as_a_small_one(monkeypatch: pytest.MonkeyPatch, onchip: Report,
                                                          comparison: Comparison) -> None:
    small = (JsonRenderer().render(onchip), JsonRenderer().render(comparison))
    monkeypatch.setattr(json_rows, "ROWS_AS_TEXT", 0)  # every table written column by column
    monkeypatch.setattr(json_rows, "_CHUNK", 3)
    assert (JsonRenderer().render(onchip), JsonRenderer().render(comparison)) == small


def test_top_bounds_the_liveness_steps(onchip: Report) -> None:
    complete = report_json(onchip)
    assert len(complete["liveness"]) == 16 and complete["cut"]["liveness"] == {"shown": 16, "total": 16, "cut": 0}
    # the samples' two highest not-always-live steps: 8 (219,472 B) and 5 (219,152 B), in step order
    two = report_json(onchip, top=2)
    assert [(r["step"], r["not_always_live_bytes"]) for r in two["liveness"]] == [(5, 219_152), (8, 219_472)]
    assert two["cut"]["liveness"] == {"shown": 2, "total": 16, "cut": 14}
    assert [r["step"] for r in report_json(onchip, top=1)["liveness"]] == [8]  # the peak is never cut


def test_top_keeps_the_earlier_step_on_a_tie(onchip: Report) -> None:
    import dataclasses

    liveness = onchip.liveness.copy()
    liveness["not_always_live_bytes"] = [5, 1, 9, 9, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]
    flat = dataclasses.replace(onchip, liveness=liveness)
    assert [r["step"] for r in report_json(flat, top=2)["liveness"]] == [2, 3]


def test_top_bounds_a_comparisons_step_series(comparison: Comparison) -> None:
    complete = comparison_json(comparison)
    changed = comparison.time_diff[comparison.time_diff["delta_cycles"] != 0]
    assert len(complete["time_diff"]["steps"]) == len(changed) == 3
    assert complete["cut"]["time_diff_steps"] == {"shown": 3, "total": 3, "cut": 0}
    one = comparison_json(comparison, top=1)
    # the samples' changed steps: +30,000, -60,000 and +95,050 cycles (new step 5, none in the base)
    assert [(r["new_step"], r["delta_cycles"]) for r in one["time_diff"]["steps"]] == [(5, 95_050.0)]
    two = comparison_json(comparison, top=2)
    assert [r["delta_cycles"] for r in two["time_diff"]["steps"]] == [-60_000.0, 95_050.0]  # in step order
    assert one["cut"]["time_diff_steps"] == {"shown": 1, "total": 3, "cut": 2}
    # liveness: the aligned position whose not-always-live bytes change most
    aligned = comparison.liveness
    change = (aligned["new_not_always_live_bytes"].astype("float64").fillna(0)
              - aligned["base_not_always_live_bytes"].astype("float64").fillna(0)).abs()
    assert [r["position"] for r in one["liveness"]] == [int(aligned["position"][change.idxmax()])]
    assert one["cut"]["liveness"] == {"shown": 1, "total": len(aligned), "cut": len(aligned) - 1}
    assert len(one["variables"]) == 1


def test_the_public_documents_are_plain_json_data(monkeypatch: pytest.MonkeyPatch, onchip: Report,
                                                  comparison: Comparison) -> None:
    # tables over the threshold become Rows for writing; the functions a notebook calls give
    # lists of dictionaries that json.dumps takes, equal to the written text
    monkeypatch.setattr(json_rows, "ROWS_AS_TEXT", 2)
    document = report_json(onchip)
    assert isinstance(document["variables"], list) and not isinstance(document["variables"], Rows)
    assert json.loads(json.dumps(document)) == json.loads(JsonRenderer().render(onchip))
    assert json.loads(json.dumps(comparison_json(comparison))) == json.loads(JsonRenderer().render(comparison))
