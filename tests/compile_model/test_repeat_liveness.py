"""Liveness of repeat bodies: a body's tensors are live within each iteration (the body is
outlined; PopART LoopOp / Poplar Repeat), loop-carried values across the loop-carry copies.
Exact not-always-live bytes per step of small hand-checked programs."""

from __future__ import annotations

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops

F = 1000 * 4  # bytes of a [1000] float32 tensor
BIG = 10 * F  # bytes of a [10000] float32 tensor


def _repeat_of_two_big_intermediates(count: int):
    """x -> repeat(count) of body a -> big1 [10000] -> m [1000] -> big2 [10000] -> o [1000] -> y."""
    b = ProgramBuilder()
    g = b.graph("body")
    a = b.graph_input(g, "a", (1000,))
    (big1,) = b.op("Neg", [a], [("big1", (10000,), "float32")], flops=10000, graph=g, name="body/big1")
    (m,) = b.op("Neg", [big1], [("m", (1000,), "float32")], flops=1000, graph=g, name="body/m")
    (big2,) = b.op("Neg", [m], [("big2", (10000,), "float32")], flops=10000, graph=g, name="body/big2")
    (o,) = b.op("Neg", [big2], [("o", (1000,), "float32")], flops=1000, graph=g, name="body/o")
    b.graph_output(g, o)
    (x,) = b.op("HostLoad", [], [("x", (1000,), "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.repeat(g, count, [x])
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    return compile_program(b.build()).report


def test_repeat_body_intermediates_are_live_per_iteration() -> None:
    lv = _repeat_of_two_big_intermediates(3).liveness
    # steps: load x (0-2) | Repeat (3) | copy-in a (4) | per iteration: a Sync, then big1 =
    # OnTileExecute (receiving its broadcast input itself); m = OnTileExecute (its own tiles' data:
    # no sync before it, programs.place_syncs); a Sync, big2, o | loop-carry copy o -> a between
    # iterations | copy-out o -> y | store y (3 steps)
    body = ["Sync", "OnTileExecute", "OnTileExecute"] * 2
    assert lv["program_type"].astype(str).tolist() == (
        ["StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd", "Repeat", "OnTileExecute"]
        + body + ["OnTileExecute"] + body + ["OnTileExecute"] + body + ["OnTileExecute"]
        + ["StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd"])
    # x lives 0-4 (to the copy-in). In each iteration: a (from its copy) with big1, big1 with m,
    # m with big2, big2 with o: one big and one small tensor at every body step = 11 F. At a
    # loop-carry copy only o (read) and the next iteration's a (written) are live = 2 F; the
    # copy-out holds o and y.
    per_iteration = [11] * 6
    expected = [1, 1, 1, 1, 2] + per_iteration + [2] + per_iteration + [2] + per_iteration + [2] + [1, 1, 1]
    assert (lv["not_always_live_bytes"] // F).tolist() == expected
    assert int(lv["not_always_live_bytes"].max()) == BIG + F  # 44,000 B; live for the whole loop it would be 22 F


def test_repeat_peak_does_not_grow_with_the_count() -> None:
    peaks = {n: int(_repeat_of_two_big_intermediates(n).liveness["not_always_live_bytes"].max()) for n in (1, 2, 6)}
    assert peaks == {1: BIG + F, 2: BIG + F, 6: BIG + F}


def test_a_copied_loop_invariant_input_lives_across_the_whole_loop() -> None:
    """A body input that is not loop carried holds the same value in every iteration: fed
    different tensors at two repeat sites it is copied in once per site and lives to its last read
    in the last iteration."""
    b = ProgramBuilder()
    g = b.graph("body")
    a = b.graph_input(g, "a", (1000,))
    w = b.graph_input(g, "w", (1000,))
    (o,) = b.op("Add", [a, w], [("o", (1000,), "float32")], flops=1000, graph=g, name="body/add")
    b.graph_output(g, o)
    (x,) = b.op("HostLoad", [], [("x", (1000,), "float32")], attrs={"stream": "x"}, name="load_x")
    (v1,) = b.op("HostLoad", [], [("v1", (1000,), "float32")], attrs={"stream": "v1"}, name="load_v1")
    (v2,) = b.op("HostLoad", [], [("v2", (1000,), "float32")], attrs={"stream": "v2"}, name="load_v2")
    (y1,) = b.repeat(g, 2, [x, v1])
    (y2,) = b.repeat(g, 2, [y1, v2])
    b.op("HostStore", [y2], attrs={"stream": "y"}, name="store_y")
    lv = compile_program(b.build()).report.liveness
    # first repeat at steps 9-: Repeat, copy-in a, copy-in w, add (2 steps: a sync, as it reads a
    # and w, made apart; programs.place_syncs), carry, add (2), copy-out
    assert lv["program_type"].astype(str).tolist()[9:18] == [
        "Repeat", "OnTileExecute", "OnTileExecute", "Sync", "OnTileExecute", "OnTileExecute",
        "Sync", "OnTileExecute", "OnTileExecute"]
    got = (lv["not_always_live_bytes"] // F).tolist()[9:18]
    # live: x (to copy-in 10), v1 (to copy-in 11), v2 (whole), a0 10-12, w 11-16, o0 12-14, a1 14-16, o1 15-17, y1 17-
    assert got == [3, 4, 4, 4, 4, 4, 4, 4, 3]


def _popxl_repeat(count: int) -> int:
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        x = popxl.variable(np.ones((64, 64), np.float32), name="x")
        w = popxl.variable(np.full((64, 64), 0.01, np.float32), name="w")
        body = ir.create_graph(lambda a, b: ops.gelu(ops.exp(a @ b) * 0.5), x, w)
        (y,) = ops.repeat(body, count, x, w)
        ops.host_store(popxl.d2h_stream(y.shape, y.dtype, "y"), y)
    return int(compile_program(lower(ir)).report.liveness["not_always_live_bytes"].max())


def test_popxl_repeat_peak_is_that_of_one_iteration() -> None:
    assert _popxl_repeat(1) == _popxl_repeat(4) == _popxl_repeat(9)


def _repeat_without_carried_values(count: int):
    """repeat(count) of a body with no inputs or outputs: host load a [1000], big [10000] = -a,
    host store -big (a training micro-batch loop reading and writing streams only)."""
    b = ProgramBuilder()
    g = b.graph("body")
    (a,) = b.op("HostLoad", [], [("a", (1000,), "float32")], attrs={"stream": "x"}, graph=g, name="body/load")
    (big,) = b.op("Neg", [a], [("big", (10000,), "float32")], flops=10000, graph=g, name="body/big")
    (o,) = b.op("Neg", [big], [("o", (1000,), "float32")], flops=1000, graph=g, name="body/o")
    b.op("HostStore", [o], attrs={"stream": "y"}, graph=g, name="body/store")
    b.repeat(g, count, [])
    return compile_program(b.build()).report


def test_a_repeat_with_nothing_loop_carried_keeps_one_iteration_live() -> None:
    # each iteration's a, big and o are new instances even though no loop-carry copy separates
    # the iterations: the peak is one iteration's big + o (or a + big), whatever the count
    peaks = {n: int(_repeat_without_carried_values(n).liveness["not_always_live_bytes"].max()) for n in (1, 3, 8)}
    assert peaks == {1: BIG + F, 3: BIG + F, 8: BIG + F}


def test_nested_repeats_with_nothing_loop_carried_keep_one_instance_per_iteration() -> None:
    """repeat(2) of an outer body that repeats(3) an inner body with no inputs or outputs: host
    load a [1000], big [10000] = -a, o [1000] = -big, host store o. Every one of the 6 inner
    iterations has its own big, live from its write to its read."""
    b = ProgramBuilder()
    inner = b.graph("inner")
    (a,) = b.op("HostLoad", [], [("a", (1000,), "float32")], attrs={"stream": "x"}, graph=inner, name="inner/load")
    (big,) = b.op("Neg", [a], [("big", (10000,), "float32")], flops=10000, graph=inner, name="inner/big")
    (o,) = b.op("Neg", [big], [("o", (1000,), "float32")], flops=1000, graph=inner, name="inner/o")
    b.op("HostStore", [o], attrs={"stream": "y"}, graph=inner, name="inner/store")
    outer = b.graph("outer")
    b.repeat(inner, 3, [], graph=outer)
    b.repeat(outer, 2, [])
    report = compile_program(b.build()).report
    v = report.variables
    rows = v[v["name"].str.startswith(f"{big}@")]
    # 10 steps an inner iteration, 11 between the outer iterations' first inner ones (the repeat);
    # big from the sync before it (it receives its broadcast input: programs.place_syncs) to o,
    # which reads it, and o's sync before the store
    assert sorted(zip(rows["first_step"].tolist(), rows["last_step"].tolist())) == [
        (5, 8), (15, 18), (25, 28), (36, 39), (46, 49), (56, 59)]
    assert int(report.liveness["not_always_live_bytes"].max()) == BIG + F
