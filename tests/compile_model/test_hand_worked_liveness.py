"""Liveness worked out by hand on tiny compiled programs: op temporaries, nested calls, a graph
that is both called and repeated, and the invariants of the per-tile peak computation.

Sizes used below: a [1000] float32 tensor is F = 4,000 B. The matmul example multiplies
x [4, 64] by w [64, 2] (docs/ipu-model.md section 7, "Matmul plan"):

- tiles (section 4, at least 128 B = 32 floats a tile): x 256 floats -> 8 tiles, w 128 -> 4,
  y [4, 2] 8 floats -> 1; the plan uses T = 8 tiles;
- w (512 B) is the smaller operand: copied to min(T, ceil(sqrt(8))) = 3 tile groups -> the
  ``operand_copies`` temporary is 3 x 512 = 1,536 B;
- the contraction (K = 64) splits s = min(64, ceil(8 / 1)) = 8 ways -> fp32 partials
  8 outputs x 4 B x 8 = 256 B.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.liveness import Instances, step_totals, tile_peaks
from profcompare.emulator.compile.synthetic import ProgramBuilder, mlp_inference_program, mlp_program

from .compile_stages import compile_stages

F = 1000 * 4
W, X, Y = 64 * 2 * 4, 4 * 64 * 4, 4 * 2 * 4  # 512, 1024, 32 B
COPIES = 3 * W  # 1,536 B
PARTIALS = 4 * 2 * 4 * 8  # 256 B


def _matmul_program(called: bool = False):
    """w [64, 2] (a variable) times x [4, 64] loaded from the host, stored back; with ``called``
    the matmul is in a graph called twice (two loaded x, the same w: zero-copy)."""
    b = ProgramBuilder()
    w = b.variable("w", (64, 2))
    if not called:
        (x,) = b.op("HostLoad", [], [("x", (4, 64), "float32")], attrs={"stream": "x"}, name="load_x")
        (y,) = b.op("MatMul", [x, w], [("y", (4, 2), "float32")], flops=2 * 4 * 64 * 2, name="mm")
        b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
        return b.build()
    f = b.graph("fwd")
    x_in = b.graph_input(f, "x", (4, 64))
    w_in = b.graph_input(f, "w", (64, 2), kind="weight")
    (y_out,) = b.op("MatMul", [x_in, w_in], [("y", (4, 2), "float32")], flops=2 * 4 * 64 * 2, graph=f,
                    name="fwd/mm")
    b.graph_output(f, y_out)
    (x1,) = b.op("HostLoad", [], [("x1", (4, 64), "float32")], attrs={"stream": "x1"}, name="load_x1")
    (x2,) = b.op("HostLoad", [], [("x2", (4, 64), "float32")], attrs={"stream": "x2"}, name="load_x2")
    (y1,) = b.call(f, [x1, w])
    (y2,) = b.call(f, [x2, w])
    (z,) = b.op("Add", [y1, y2], [("z", (4, 2), "float32")], flops=8, name="add")
    b.op("HostStore", [z], attrs={"stream": "z"}, name="store_z")
    return b.build()


def _steps_of(variables: pd.DataFrame, names: list[str]) -> list[tuple[int, int, int]]:
    v = variables.set_index("name")
    return [(int(v.loc[n, "bytes"]), int(v.loc[n, "first_step"]), int(v.loc[n, "last_step"])) for n in names]


# -- op temporaries -----------------------------------------------------------------------------


def test_a_matmul_s_temporaries_live_over_its_own_steps() -> None:
    report = compile_program(_matmul_program()).report
    lv = report.liveness
    assert lv["program"].tolist()[6:14] == [
        "mm/rearranged/WriteUndef", "mm/Internal Sync", "mm/weightsRearranged/OnTileCopy", "mm/Internal Sync",
        "mm/Convolve", "mm/Internal Sync", "mm/Reduce0", "mm/Internal Sync"]
    # WeightsFromHost writes w (Mid = 1) | load x 3-5 | matmul 6-13: its rearranged operand's
    # WriteUndef, then a sync before each step that receives (rearrangement, Convolve, Reduce0:
    # programs.place_syncs) and its last sync, before the store | store y 14-16.
    # w 1-16; x 3 to the matmul's last step 13; y from the matmul's first step 6 to the store;
    # operand copies from the rearrangement that writes them (8) to the Convolve that receives
    # them (10); partials from the Convolve (10) to the Reduce0 that receives them (12)
    assert _steps_of(report.variables, ["w", "x", "y", "y/operand_copies", "y/partials"]) == [
        (W, 1, 16), (X, 3, 13), (Y, 6, 16), (COPIES, 8, 10), (PARTIALS, 10, 12)]
    before = W + X
    expected = ([0, W, W] + [before] * 3 + [before + Y] * 2 + [before + Y + COPIES] * 2
                + [before + Y + COPIES + PARTIALS] + [before + Y + PARTIALS] * 2 + [before + Y] + [W + Y] * 3)
    assert lv["not_always_live_bytes"].tolist() == expected
    assert expected == [0, 512, 512, 1536, 1536, 1536, 1568, 1568, 3104, 3104, 3360, 1824, 1824, 1568, 544, 544, 544]
    assert report.summary()["not_always_live_peak_bytes"] == 3360


def test_the_ledger_of_the_matmul_adds_up_to_the_summary() -> None:
    report = compile_program(_matmul_program()).report
    led = report.ledger()
    expected = pd.DataFrame({
        "parameter": ["w", "", ""],
        "role": ["weight", "activation", "partials"],
        "location": ["not_always_live"] * 3,
        # activations: x and y are live together (6-13): 1,056 B; temporaries together at 10
        "bytes": [W, X + Y, COPIES + PARTIALS],
        "bytes_at_peak": [W, X + Y, COPIES + PARTIALS],
        "first_step": pd.array([1, 3, 8], dtype="Int64"),
        "last_step": pd.array([16, 16, 12], dtype="Int64"),
        "rows": [1, 2, 2],
    })
    for column in ("parameter", "role", "location"):
        expected[column] = expected[column].astype(object)
    pd.testing.assert_frame_equal(led, expected)
    assert int(led["bytes_at_peak"].sum()) == report.summary()["not_always_live_peak_bytes"] == 3360
    live = report.live_at_peak()
    assert list(live.columns) == list(report.variables.columns)
    assert live["name"].tolist() == ["y/operand_copies", "x", "w", "y/partials", "y"]


def test_temporaries_of_a_called_matmul_are_live_per_call_under_its_call_path() -> None:
    program = _matmul_program(called=True)
    steps, storage, inst = compile_stages(program)
    assert len(inst.path) == len(inst.row) == len(inst.first) == len(inst.last)
    calls = [op.id for op in program.ops.values() if op.type == "Call"]
    names = [storage.names[r] for r in inst.row.tolist()]
    temporaries = sorted((names[j], int(inst.first[j]), int(inst.last[j]), inst.path[j])
                         for j in range(len(names)) if names[j].endswith(("/operand_copies", "/partials")))
    # WeightsFromHost 0-2, load x1 3-5, load x2 6-8; first call: Call 9, copy-in x 10, matmul
    # 11-17 (WriteUndef 11, rearrangement 13, Convolve 15, Reduce0 17, each after a sync), copy-out
    # 18 (on tile: no sync before it); second call: Call 19, copy-in 20, matmul 21-27, copy-out 28
    y = next(t for t in program.tensors.values() if t.graph != "main" and t.name == "y").id
    assert temporaries == [
        (f"{y}/operand_copies", 13, 15, (calls[0],)), (f"{y}/operand_copies", 23, 25, (calls[1],)),
        (f"{y}/partials", 15, 17, (calls[0],)), (f"{y}/partials", 25, 27, (calls[1],))]
    report = compile_program(program).report
    assert _steps_of(report.variables, [f"{y}/partials@1", f"{y}/partials@2"]) == [
        (PARTIALS, 15, 17), (PARTIALS, 25, 27)]


def _temporaries_stay_inside_their_op(program) -> int:
    steps, storage, inst = compile_stages(program)
    temp_of_row = {row: temp for pairs in storage.temp_rows.values() for row, temp in pairs}
    op_steps: dict[str, list[range]] = {}
    for entry, (s, t) in zip(program.schedule, steps.exec_ranges):
        op_steps.setdefault(entry.op, []).append(range(s, t))
    checked = 0
    for j, row in enumerate(inst.row.tolist()):
        temp = temp_of_row.get(row)
        if temp is None:
            continue
        first, last = int(inst.first[j]), int(inst.last[j])
        inside = [r for r in op_steps[temp.op] if first in r and last in r]
        assert len(inside) == 1, (temp.name, first, last)
        assert steps.static[int(steps.exec_static[first])].role == temp.first
        assert steps.static[int(steps.exec_static[last])].role == temp.last
        checked += 1
    return checked


def test_temporaries_live_inside_their_op_s_steps() -> None:
    # the synthetic MLPs' matmuls (forward and backward graphs, called per micro-batch)
    assert _temporaries_stay_inside_their_op(mlp_program(2, grad_accum=2)) >= 8
    assert _temporaries_stay_inside_their_op(mlp_inference_program(2)) >= 2


# -- calls --------------------------------------------------------------------------------------


def test_a_graph_called_inside_a_called_graph_shares_its_caller_s_instances() -> None:
    """outer(p) calls inner(p) (its only call site: inner's input is zero-copy, the storage of
    outer's p); main calls outer with x1 then x2 (copied in)."""
    b = ProgramBuilder()
    inner = b.graph("inner")
    a = b.graph_input(inner, "a", (1000,))
    (ib,) = b.op("Neg", [a], [("b", (1000,), "float32")], flops=1000, graph=inner, name="inner/neg")
    b.graph_output(inner, ib)
    outer = b.graph("outer")
    p = b.graph_input(outer, "p", (1000,))
    (q,) = b.call(inner, [p], graph=outer)
    b.graph_output(outer, q)
    (x1,) = b.op("HostLoad", [], [("x1", (1000,), "float32")], attrs={"stream": "x1"}, name="load_x1")
    (x2,) = b.op("HostLoad", [], [("x2", (1000,), "float32")], attrs={"stream": "x2"}, name="load_x2")
    (y1,) = b.call(outer, [x1])
    (y2,) = b.call(outer, [x2])
    (z,) = b.op("Add", [y1, y2], [("z", (1000,), "float32")], flops=1000, name="add")
    b.op("HostStore", [z], attrs={"stream": "z"}, name="store_z")
    report = compile_program(b.build()).report
    lv = report.liveness
    assert lv["program_type"].astype(str).tolist() == (
        ["StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd"] * 2
        + ["Call", "OnTileExecute", "Call", "OnTileExecute", "OnTileExecute", "OnTileExecute"] * 2
        + ["Sync", "OnTileExecute", "Sync", "StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd"])
    # no sync between the neg and the copies out (each reads its own tiles' data:
    # programs.place_syncs); one before the add (it reads y1 and y2, made by different ops) and
    # the add's own before the store. x1 0-7 (to its copy-in) | x2 3-13 | p 7-9 (copy-in, read by
    # inner's neg through the alias) | inner's b 9-10 (to its copy-out) | outer's b 10-11 | y1
    # 11-20 | p 13-15 | inner b 15-16 | outer b 16-17 | y2 17-20 | z 18-23
    assert (lv["not_always_live_bytes"] // F).tolist() == [
        1, 1, 1, 2, 2, 2, 2, 3, 2, 3, 3, 3, 2, 3, 2, 3, 3, 3, 3, 3, 3, 1, 1, 1]
    v = report.variables
    assert not v["name"].str.contains("/a__").any()  # zero-copy: inner's input has no storage
    p_rows = v[v["name"].str.contains("/p__")]
    assert sorted(zip(p_rows["first_step"], p_rows["last_step"])) == [(7, 9), (13, 15)]
    inner_b = v[v["name"].str.startswith(f"{inner}/")]
    assert sorted(zip(inner_b["first_step"], inner_b["last_step"])) == [(9, 10), (15, 16)]


def test_a_modified_graph_input_and_its_caller_s_tensor_live_to_the_copy_back() -> None:
    """upd(acc by reference, d) accumulates d into acc; main calls it on p1 then p2 (copied in
    and back: CopyModified) with the same x (zero-copy)."""
    b = ProgramBuilder()
    g = b.graph("upd")
    acc = b.graph_input(g, "acc", (1000,), by_ref=True)
    d = b.graph_input(g, "d", (1000,))
    b.op("Accumulate", [acc, d], [("acc_out", (1000,), "float32")], modified=[acc], flops=1000, graph=g,
         name="upd/acc")
    (x,) = b.op("HostLoad", [], [("x", (1000,), "float32")], attrs={"stream": "x"}, name="load_x")
    (p1,) = b.op("HostLoad", [], [("p1", (1000,), "float32")], attrs={"stream": "p1"}, name="load_p1")
    (p2,) = b.op("HostLoad", [], [("p2", (1000,), "float32")], attrs={"stream": "p2"}, name="load_p2")
    b.call(g, [p1, x])
    b.call(g, [p2, x])
    report = compile_program(b.build()).report
    lv = report.liveness
    assert lv["program"].tolist()[9:19] == [
        "main/call(upd)_12", "main/call(upd)_12/copy_in/acc/OnTileCopy", "upd/acc/Internal Sync", "upd/acc",
        "main/call(upd)_12/copy_out/acc/OnTileCopy",
        "main/call(upd)_13", "main/call(upd)_13/copy_in/acc/OnTileCopy", "upd/acc/Internal Sync", "upd/acc",
        "main/call(upd)_13/copy_out/acc/OnTileCopy"]
    # loads x 0-2, p1 3-5, p2 6-8 | call 1: Call 9, copy-in acc 10, accumulate 11-12 (a sync, as it
    # reads acc and d, made apart: programs.place_syncs; none before the copy back), copy back 13
    # | call 2: 14-18. p1 lives to its copy back (13), p2 to 18; x (read through the alias) to
    # the second accumulate (17); each acc instance from its copy-in to its copy back
    assert _steps_of(report.variables, ["x", "p1", "p2", f"{acc}@1", f"{acc}@2"]) == [
        (F, 0, 17), (F, 3, 13), (F, 6, 18), (F, 10, 13), (F, 15, 18)]
    assert (lv["not_always_live_bytes"] // F).tolist() == [1] * 3 + [2] * 3 + [3] * 4 + [4] * 4 + [2] + [3] * 3 + [2]


def test_a_graph_both_called_and_repeated_keeps_its_carried_input_per_iteration() -> None:
    """body(a) -> o; main calls body on x, then repeats it 3 times on the call's output: ``a``
    is loop carried in the repeat, so it is one instance per iteration there, and the plain call
    has no iterations at all."""
    b = ProgramBuilder()
    g = b.graph("body")
    a = b.graph_input(g, "a", (1000,))
    (o,) = b.op("Neg", [a], [("o", (1000,), "float32")], flops=1000, graph=g, name="body/neg")
    b.graph_output(g, o)
    (x,) = b.op("HostLoad", [], [("x", (1000,), "float32")], attrs={"stream": "x"}, name="load_x")
    (y1,) = b.call(g, [x])
    (y2,) = b.repeat(g, 3, [y1])
    b.op("HostStore", [y2], attrs={"stream": "y"}, name="store_y")
    report = compile_program(b.build()).report
    lv = report.liveness
    # the neg and the copies after it read only their own tiles' data: no sync between them
    # (programs.place_syncs)
    assert lv["program_type"].astype(str).tolist() == (
        ["StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd", "Call", "OnTileExecute", "OnTileExecute",
         "OnTileExecute", "Repeat", "OnTileExecute"] + ["OnTileExecute", "OnTileExecute"] * 3
        + ["StreamCopyBegin", "StreamCopyMid", "StreamCopyEnd"])
    v = report.variables
    # call: a copied in at 4, read by neg at 5; o 5 to its copy-out 6. Repeat: copy-in 8, then per
    # iteration neg and the loop-carry copy (10, 12) or the copy-out (14), which ends o and writes
    # the next iteration's a
    a_rows = v[v["name"].str.startswith(f"{a}@")]
    assert sorted(zip(a_rows["first_step"], a_rows["last_step"])) == [(4, 5), (8, 9), (10, 11), (12, 13)]
    o_rows = v[v["name"].str.startswith(f"{o}@")]
    assert sorted(zip(o_rows["first_step"], o_rows["last_step"])) == [(5, 6), (9, 10), (11, 12), (13, 14)]
    assert (lv["not_always_live_bytes"] // F).tolist() == [1, 1, 1, 1] + [2] * 3 + [1] + [2] * 7 + [1, 1, 1]


# -- per-step totals and per-tile peaks ---------------------------------------------------------


def _dense(inst: Instances, tile_bytes: np.ndarray, num_steps: int) -> np.ndarray:
    """(steps, tiles) bytes live at each step: every instance added over its steps, one by one."""
    live = np.zeros((num_steps, tile_bytes.shape[1]), dtype=np.int64)
    for row, first, last in zip(inst.row.tolist(), inst.first.tolist(), inst.last.tolist()):
        live[first:last + 1] += tile_bytes[row]
    return live


@st.composite
def _instances(draw):
    num_rows = draw(st.integers(1, 5))
    num_tiles = draw(st.integers(1, 4))
    num_steps = draw(st.integers(1, 12))
    tile_bytes = np.array(draw(st.lists(st.lists(st.integers(0, 1000), min_size=num_tiles, max_size=num_tiles),
                                        min_size=num_rows, max_size=num_rows)), dtype=np.int64)
    interleaved = np.array(draw(st.lists(st.booleans(), min_size=num_rows, max_size=num_rows)), dtype=bool)
    spans = draw(st.lists(st.tuples(st.integers(0, num_rows - 1), st.integers(0, num_steps - 1),
                                    st.integers(0, num_steps - 1)), max_size=8))
    inst = Instances(row=np.array([r for r, _, _ in spans], dtype=np.int64),
                     first=np.array([min(a, b) for _, a, b in spans], dtype=np.int64),
                     last=np.array([max(a, b) for _, a, b in spans], dtype=np.int64))
    return inst, tile_bytes, interleaved, num_steps


@settings(max_examples=150, deadline=None)
@given(_instances(), st.integers(1, 5))
def test_tile_peaks_are_the_peaks_of_the_dense_live_matrix_whatever_the_block(case, block) -> None:
    inst, tile_bytes, interleaved, num_steps = case
    peak_all, peak_il, peak_flex = tile_peaks(inst, tile_bytes, interleaved, num_steps, block=block)
    il_rows = np.where(interleaved[:, None], tile_bytes, 0)
    flex_rows = tile_bytes - il_rows
    if len(inst.row):
        np.testing.assert_array_equal(peak_all, _dense(inst, tile_bytes, num_steps).max(axis=0))
        np.testing.assert_array_equal(peak_il, _dense(inst, il_rows, num_steps).max(axis=0))
        np.testing.assert_array_equal(peak_flex, _dense(inst, flex_rows, num_steps).max(axis=0))
    else:
        assert not peak_all.any() and not peak_il.any() and not peak_flex.any()
    totals = step_totals(inst, tile_bytes.sum(axis=1), num_steps)
    np.testing.assert_array_equal(totals, _dense(inst, tile_bytes, num_steps).sum(axis=1))


def test_tile_peaks_hand_worked_across_block_boundaries() -> None:
    # two rows on two tiles; row 0 (interleaved) live 0-2, row 1 live 2-5 and again 5-5
    tile_bytes = np.array([[10, 1], [3, 7]], dtype=np.int64)
    inst = Instances(row=np.array([0, 1, 1]), first=np.array([0, 2, 5]), last=np.array([2, 5, 5]))
    interleaved = np.array([True, False])
    # tile 0 per step: 10 10 13 3 3 6 0 -> 13; tile 1: 1 1 8 7 7 14 0 -> 14
    for block in (1, 2, 3, 4, 1024):
        peak_all, peak_il, peak_flex = tile_peaks(inst, tile_bytes, interleaved, 7, block=block)
        assert peak_all.tolist() == [13, 14], block
        assert peak_il.tolist() == [10, 1], block  # row 0 alone
        assert peak_flex.tolist() == [6, 14], block  # row 1: twice at step 5
    assert step_totals(inst, tile_bytes.sum(axis=1), 7).tolist() == [11, 11, 21, 10, 10, 20, 0]


def test_tile_peaks_of_a_compiled_program_do_not_depend_on_the_block_size() -> None:
    program = mlp_program(2, grad_accum=2)
    steps, storage, inst = compile_stages(program)
    n = steps.num_executed
    assert n > 64
    reference = tile_peaks(inst, storage.tile_bytes, storage.interleaved, n)
    assert int(reference[0].max()) > 0
    for block in (1, 7, 64):
        for got, want in zip(tile_peaks(inst, storage.tile_bytes, storage.interleaved, n, block=block), reference):
            np.testing.assert_array_equal(got, want)
    # the per-tile peak never exceeds the sum of the rows' bytes on that tile, nor falls below any
    # one instance
    np.testing.assert_array_equal(reference[0] >= storage.tile_bytes[inst.row].max(axis=0), True)


def test_tile_peaks_keep_per_tile_bytes_beyond_32_bits() -> None:
    # 32-bit gathering is only a fast path: 2**31 + 5 bytes on one tile are not wrapped around
    big = 2**31 + 5
    tile_bytes = np.array([[big, 0], [7, 9]], dtype=np.int64)
    inst = Instances(row=np.array([0, 1]), first=np.array([0, 1]), last=np.array([1, 2]))
    peak_all, peak_il, peak_flex = tile_peaks(inst, tile_bytes, np.array([False, False]), 3)
    assert peak_all.tolist() == [big + 7, 9] and peak_flex.tolist() == [big + 7, 9] and peak_il.tolist() == [0, 0]
