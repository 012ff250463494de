"""Flame spans of a trace: hand-computed spans and depths of a small program tree, the union
rule (a span covers the spans nested in it), name clashes resolved by the run before, traces
without groups, and the binning of short spans."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pandas.testing as pdt

from profcompare.analysis.flame import FLAME_COLUMNS, bin_small_spans, flame_spans
from profcompare.model import make_frame, programs_from_rows, trace_from_blocks

# main (Sequence) > loop (Repeat) > first, second (Sequences) > two steps each
TREE = programs_from_rows([
    (0, None, 0, "Sequence", "main", "", 0),
    (1, 0, 1, "Repeat", "loop", "", 0),
    (2, 1, 2, "Sequence", "first", "first", 0),
    (3, 2, 3, "OnTileExecute", "first/a", "first", 0),
    (4, 2, 3, "DoExchange", "first/b", "first", 0),
    (5, 1, 2, "Sequence", "second", "second", 0),
    (6, 5, 3, "OnTileExecute", "second/a", "second", 0),
    (7, 5, 3, "InternalSync", "second/b", "second", 0),
])


def _loop_trace() -> pd.DataFrame:
    """Two iterations of the loop on IPU 0 (its blocks' groups as the simulator writes them), a
    SyncAns covering the first iteration, and one block of IPU 1."""
    blocks = []
    t = 10
    for _ in range(2):
        for group, step, length, kind in (("first", "a", 100, "OnTileExecute"), ("first", "b", 20, "DoExchange"),
                                          ("second", "a", 50, "OnTileExecute"), ("second", "b", 5, "InternalSync")):
            blocks.append((0, t, t + length, kind, step, f"{group}/{step}", group, 1))
            t += length + 1  # a cycle between blocks
    blocks.append((0, 10, 190, "SyncAns", "SyncAns", "SyncAns", "", 0))
    blocks.append((1, 0, 30, "OnTileExecute", "x", "x", "", 0))
    return trace_from_blocks(sorted(blocks, key=lambda b: (b[0], b[1])))


def _frame(rows: list[tuple[int, int, int, str, int]]) -> pd.DataFrame:
    out = pd.DataFrame(rows, columns=list(FLAME_COLUMNS))
    return out.astype({c: "int64" for c in FLAME_COLUMNS if c != "name"}).astype({"name": object})


def test_a_repeat_of_two_sequences_gives_hand_computed_spans() -> None:
    # iteration 1: first/a 10-110, first/b 111-131, second/a 132-182, second/b 183-188;
    # iteration 2 starts at 189: first/a 189-289, first/b 290-310, second/a 311-361, second/b 362-367
    spans = flame_spans(_loop_trace(), TREE, 0)
    expected = _frame([
        (0, 10, 367, "main", 8),
        (1, 10, 367, "loop", 8),
        (2, 10, 131, "first", 2), (2, 132, 188, "second", 2),
        (2, 189, 310, "first", 2), (2, 311, 367, "second", 2),
    ])
    pdt.assert_frame_equal(spans, expected)


def test_a_span_covers_the_spans_nested_in_it() -> None:
    spans = flame_spans(_loop_trace(), TREE, 0)
    for depth in range(1, int(spans["depth"].max()) + 1):
        outer = spans[spans["depth"] == depth - 1]
        for a, z in spans.loc[spans["depth"] == depth, ["cycles_from", "cycles_to"]].itertuples(index=False):
            assert ((outer["cycles_from"] <= a) & (outer["cycles_to"] >= z)).any()


def test_the_depth_is_capped_from_the_outermost() -> None:
    spans = flame_spans(_loop_trace(), TREE, 0, max_depth=2)
    assert spans["name"].tolist() == ["main", "loop"]


def test_a_trace_without_a_tree_has_one_level_of_its_groups() -> None:
    spans = flame_spans(_loop_trace(), make_frame("programs"), 0)
    assert spans.values.tolist() == [[0, 10, 131, "first", 2], [0, 132, 188, "second", 2],
                                     [0, 189, 310, "first", 2], [0, 311, 367, "second", 2]]


def test_blocks_without_a_group_or_a_program_in_the_tree_give_no_spans() -> None:
    assert flame_spans(_loop_trace(), TREE, 1).empty
    assert flame_spans(_loop_trace(), make_frame("programs"), 1).empty
    assert flame_spans(make_frame("trace"), TREE, 0).columns.tolist() == list(FLAME_COLUMNS)


def test_blocks_without_a_group_are_placed_by_their_program() -> None:
    # pva's trace: no groups, each block named after its program
    trace = trace_from_blocks([(0, 0, 10, "OnTileExecute", "first/a", "first/a", "", 0),
                               (0, 10, 15, "DoExchange", "first/b", "first/b", "", 0),
                               (0, 15, 40, "OnTileExecute", "second/a", "second/a", "", 0)])
    spans = flame_spans(trace, TREE, 0)
    assert spans.values.tolist() == [[0, 0, 40, "main", 3], [1, 0, 40, "loop", 3],
                                     [2, 0, 15, "first", 2], [2, 15, 40, "second", 1]]


def test_a_name_in_several_places_follows_the_run_before_it() -> None:
    # "add" is an op in two called graphs; each call's copy runs just before the graph's ops
    tree = programs_from_rows([
        (0, None, 0, "Sequence", "main", "", None),
        (1, 0, 1, "Sequence", "call_a", "call_a", None), (2, 1, 2, "Call", "call_a/call", "call_a", None),
        (3, 2, 3, "Sequence", "add", "add", None), (4, 3, 4, "OnTileExecute", "add/x", "add", None),
        (5, 0, 1, "Sequence", "call_b", "call_b", None), (6, 5, 2, "Call", "call_b/call", "call_b", None),
        (7, 6, 3, "Sequence", "add", "add", None), (8, 7, 4, "OnTileExecute", "add/x", "add", None),
    ])
    trace = trace_from_blocks([(0, 0, 5, "OnTileExecute", "copy", "call_b/copy", "call_b", 1),
                               (0, 5, 20, "OnTileExecute", "x", "add/x", "add", 1),
                               (0, 20, 25, "OnTileExecute", "copy", "call_a/copy", "call_a", 1),
                               (0, 25, 30, "OnTileExecute", "x", "add/x", "add", 1)])
    spans = flame_spans(trace, tree, 0)
    assert spans.values.tolist() == [[0, 0, 30, "main", 4], [1, 0, 20, "call_b", 2], [1, 20, 30, "call_a", 2],
                                     [2, 5, 20, "call_b/call", 1], [2, 25, 30, "call_a/call", 1],
                                     [3, 5, 20, "add", 1], [3, 25, 30, "add", 1]]


def test_a_program_named_as_its_enclosing_one_is_one_level_with_it() -> None:
    # the simulator's tree: an op's group holds the op's Call step of the same name
    tree = programs_from_rows([
        (0, None, 0, "Sequence", "main", "", None),
        (1, 0, 1, "Sequence", "call", "call", None), (2, 1, 2, "Call", "call", "call", None),
        (3, 2, 3, "Sequence", "add", "add", None), (4, 3, 4, "OnTileExecute", "add/x", "add", None),
    ])
    trace = trace_from_blocks([(0, 0, 5, "OnTileExecute", "x", "add/x", "add", 1)])
    assert flame_spans(trace, tree, 0).values.tolist() == [[0, 0, 5, "main", 1], [1, 0, 5, "call", 1],
                                                           [2, 0, 5, "add", 1]]


def test_short_spans_are_merged_per_time_bin() -> None:
    spans = _frame([(0, 0, 1000, "main", 9), (1, 0, 10, "a", 1), (1, 12, 20, "b", 2), (1, 30, 200, "c", 3),
                    (1, 210, 215, "d", 3)])
    binned = bin_small_spans(spans, 100)
    # a and b (both under 100 cycles, starting in bin 0) become one; d alone in bin 2 keeps its name
    assert binned.values.tolist() == [[0, 0, 1000, "main", 9], [1, 0, 20, "2 groups under 100 cycles", 3],
                                      [1, 30, 200, "c", 3], [1, 210, 215, "d", 3]]
    assert bin_small_spans(spans, 1) is spans


def test_a_large_trace_is_grouped_without_a_loop_per_block() -> None:
    # 200,000 blocks in 20,000 groups of 10: the result is exact and built in well under a second
    n = 200_000
    start = np.arange(n, dtype="int64") * 10
    group = np.array([f"g{i // 10 % 2}" for i in range(n)], dtype=object)
    trace = make_frame("trace", {"ipu": np.zeros(n, dtype="int64"), "cycles_from": start, "cycles_to": start + 10,
                                 "type": ["OnTileExecute"] * n, "name": ["s"] * n, "program": ["s"] * n,
                                 "parent": group, "depth": np.ones(n, dtype="int64")})
    spans = flame_spans(trace, make_frame("programs"), 0)
    assert len(spans) == 20_000 and spans["blocks"].eq(10).all()
    assert spans["name"].iloc[:2].tolist() == ["g0", "g1"] and spans["cycles_to"].iloc[-1] == n * 10
