"""What a notebook reads as DataFrames: a report's and a comparison's program tree and operations,
and the detail of a tile (``report.tile_detail()``, ``diff.tile_detail()``)."""

from __future__ import annotations

import pandas as pd
import pytest

import profcompare as pc
from profcompare.analysis.tile_detail import TileDetailError
from profcompare.model import Report, ReportMeta, Target, make_frame, operations_from_rows, programs_from_rows


def _meta(source: str) -> ReportMeta:
    return ReportMeta(source=source, format="store", producer="test", simulated=False,
                      target=Target("Mk2", num_ipus=1, tiles_per_ipu=3, bytes_per_tile=1000, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=1))


def _tiles(used: list[int], gaps: list[int]) -> pd.DataFrame:
    return make_frame("tiles", {
        "tile": list(range(len(used))), "ipu": [0] * len(used),
        "bytes_including_gaps": [u + g for u, g in zip(used, gaps, strict=True)], "bytes_excluding_gaps": used,
        "always_live_bytes": [u // 2 for u in used], "not_always_live_peak_bytes": [u - u // 2 for u in used],
        "non_interleaved_bytes": pd.array([None] * len(used), dtype="Int64"),
        "interleaved_bytes": pd.array([None] * len(used), dtype="Int64"),
        "overflow_bytes": pd.array([None] * len(used), dtype="Int64"),
        "gap_bytes": pd.array([None] * len(used), dtype="Int64"),
    })


def _report(source: str, used: list[int], ops: list[tuple[str, int]], programs: list[str]) -> Report:
    operations = operations_from_rows([(name, name, "MatMul", "", 0, code, 0, 0, 10, None, 1, "") for name, code in ops])
    tree = programs_from_rows([(0, None, 0, "Sequence", "main", "", None)]
                              + [(i + 1, 0, 1, "OnTileExecute", name, "", 0) for i, name in enumerate(programs)])
    return Report.build(_meta(source), tiles=_tiles(used, [4] * len(used)), operations=operations, programs=tree)


BASE = _report("base", [100, 700, 300], [("fc1/matmul", 400), ("gelu", 96)], ["fc1/matmul", "gelu"])
NEW = _report("new", [900, 200, 300], [("fc1/matmul", 400), ("relu", 64)], ["fc1/matmul", "relu"])


def test_a_report_holds_its_operations_and_program_tree_as_frames() -> None:
    assert isinstance(BASE.operations, pd.DataFrame) and isinstance(BASE.programs, pd.DataFrame)
    assert BASE.operations[["name", "code_bytes"]].values.tolist() == [["fc1/matmul", 400], ["gelu", 96]]
    assert BASE.programs["name"].tolist() == ["main", "fc1/matmul", "gelu"]


def test_a_report_gives_a_tile_as_a_frame() -> None:
    frame = BASE.tile_detail()  # the fullest tile: tile 1
    assert list(frame.columns) == ["tile", "figure", "bytes"]
    assert frame["figure"].tolist()[:5] == ["bytes", "bytes_excluding_gaps", "always_live_bytes",
                                            "not_always_live_peak_bytes", "non_interleaved_bytes"]
    expected = pd.DataFrame({
        "tile": pd.Series([1] * 8, dtype="int64"),
        "figure": pd.Series(["bytes", "bytes_excluding_gaps", "always_live_bytes", "not_always_live_peak_bytes",
                             "non_interleaved_bytes", "interleaved_bytes", "overflow_bytes", "gap_bytes"], dtype=object),
        "bytes": pd.array([704, 700, 350, 350, None, None, None, 4], dtype="Int64"),
    })
    pd.testing.assert_frame_equal(frame, expected)
    assert BASE.tile_detail(2)["bytes"].tolist()[:2] == [304, 300]
    with pytest.raises(TileDetailError, match="tile 7 is not in base: its tiles are 0 to 2"):
        BASE.tile_detail(7)


def test_a_comparison_gives_operations_programs_and_tiles_as_frames() -> None:
    diff = pc.compare(BASE, NEW)
    assert isinstance(diff.operations, pd.DataFrame) and isinstance(diff.programs, pd.DataFrame)
    assert dict(zip(diff.operations["name"], diff.operations["status"], strict=True)) == {
        "fc1/matmul": "unchanged", "gelu": "removed", "relu": "added"}
    assert set(diff.programs["status"].astype(str)) >= {"added", "removed"}
    tiles = diff.tile_detail()
    assert list(tiles.columns) == ["tile", "reasons", "figure", "base", "new", "delta"]
    # base's fullest is tile 1, new's (and the largest change) tile 0
    first = tiles[tiles["figure"] == "bytes"]
    assert first[["tile", "reasons"]].values.tolist() == [[1, "fullest in base"],
                                                          [0, "fullest in new, largest change"]]
    assert first[["base", "new", "delta"]].astype("int64").values.tolist() == [[704, 204, -500], [104, 904, 800]]
    one = diff.tile_detail(2)
    assert one["reasons"].unique().tolist() == ["asked for"] and one["delta"].iloc[0] == 0
    # the plain repr names every table a notebook can read
    assert repr(diff).splitlines()[-1].endswith("operations (3 rows), programs (4 rows)")
