"""Two program trees aligned: pairs by (kind, normalised name) path, subtrees marked added,
removed, changed or unchanged -- worked out by hand on small trees."""

from __future__ import annotations

import pandas as pd

from profcompare.comparison import PROGRAM_STATUSES, compare, compare_programs
from profcompare.comparison.programs import normalise_program_name
from profcompare.model import Report, ReportMeta, Target, make_frame, programs_from_rows

from tests.compare.program_trees import BASE, NEW


def test_two_small_trees_aligned_by_hand() -> None:
    out = compare_programs(BASE, NEW)
    shown = list(zip(out["depth"], out["kind"], out["name"], out["status"].astype(str),
                     out["base_programs"], out["new_programs"], out["delta_programs"]))
    assert shown == [
        (0, "Sequence", "main", "changed", 7, 8, 1),
        (1, "Sequence", "matmul/102", "changed", 3, 4, 1),
        (2, "OnTileExecute", "matmul/102/Convolve", "unchanged", 1, 1, 0),
        (2, "Sync", "matmul/102/Internal Sync", "unchanged", 1, 1, 0),
        (2, "OnTileExecute", "matmul/102/Reduce", "added", 0, 1, 1),
        # relu was where gelu is: the removed subtree stays before the program that followed it
        (1, "Sequence", "relu", "removed", 2, 0, -2),
        (2, "OnTileExecute", "relu", "removed", 1, 0, -1),
        (1, "Sequence", "gelu", "added", 0, 2, 2),
        (2, "OnTileExecute", "gelu", "added", 0, 1, 1),
        (1, "StreamCopyBegin", "copy/Begin", "unchanged", 1, 1, 0),
        (0, "Sequence", "WeightsFromHost", "added", 0, 1, 1),
    ]
    assert out["base_name"].tolist()[:2] == ["main", "matmul/100"]
    assert out["base_id"].tolist()[:5] == [0, 1, 2, 3, pd.NA]
    assert out["new_id"].tolist()[5:7] == [pd.NA, pd.NA]
    assert out["op"].tolist()[5] == "relu"
    assert list(out["status"].cat.categories) == list(PROGRAM_STATUSES)
    assert [str(t) for t in out.dtypes] == ["int64", "object", "object", "object", "object", "object", "Int64",
                                            "Int64", "int64", "int64", "int64", "category"]


def test_the_same_tree_is_unchanged_and_a_kind_change_is_a_new_program() -> None:
    same = compare_programs(BASE, BASE)
    assert set(same["status"].astype(str)) == {"unchanged"} and len(same) == len(BASE)
    # the copy's kind changed: the base one removed, the new one added (kind is part of the path)
    other = NEW.copy()
    other["kind"] = other["kind"].astype(str).replace({"StreamCopyBegin": "StreamCopyMid"}).astype("category")
    out = compare_programs(NEW, other)
    copies = out[out["name"] == "copy/Begin"]
    assert copies["kind"].tolist() == ["StreamCopyBegin", "StreamCopyMid"]
    assert copies["status"].astype(str).tolist() == ["removed", "added"]
    assert out["status"].astype(str).tolist()[0] == "changed"


def test_repeated_siblings_pair_in_order() -> None:
    # two ring steps whose names differ only by digits pair first with first, second with second
    base = programs_from_rows([(0, None, 0, "Sequence", "ar", "", None),
                               (1, 0, 1, "GlobalExchange", "ar/step0", "", None),
                               (2, 0, 1, "GlobalExchange", "ar/step1", "", None)])
    new = programs_from_rows([(0, None, 0, "Sequence", "ar", "", None),
                              (1, 0, 1, "GlobalExchange", "ar/step0", "", None),
                              (2, 0, 1, "GlobalExchange", "ar/step1", "", None),
                              (3, 0, 1, "GlobalExchange", "ar/step2", "", None)])
    out = compare_programs(base, new)
    assert list(zip(out["name"], out["status"].astype(str))) == [
        ("ar", "changed"), ("ar/step0", "unchanged"), ("ar/step1", "unchanged"), ("ar/step2", "added")]
    assert normalise_program_name("matmul/100/Conv_1") == "matmul/#/Conv_#"


def test_empty_trees_and_the_comparison_object() -> None:
    empty = compare_programs(make_frame("programs"), make_frame("programs"))
    assert empty.empty and list(empty.columns) == ["depth", "kind", "name", "op", "base_name", "new_name", "base_id",
                                                   "new_id", "base_programs", "new_programs", "delta_programs",
                                                   "status"]
    meta = ReportMeta(source="", format="store", producer="test", simulated=False,
                      target=Target("Mk2", num_ipus=1, tiles_per_ipu=4, bytes_per_tile=638976, clock_hz=1.33e9,
                                    num_replicas=1, ipus_per_replica=1))
    cmp = compare(Report.build(meta, programs=BASE), Report.build(meta.replace(source="new"), programs=NEW))
    pd.testing.assert_frame_equal(cmp.programs, compare_programs(BASE, NEW))
    # a side without a tree: everything the other has is added
    one_sided = compare(Report.build(meta), Report.build(meta.replace(source="new"), programs=NEW)).programs
    assert set(one_sided["status"].astype(str)) == {"added"} and len(one_sided) == len(NEW)
