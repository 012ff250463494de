"""The simulated program tree (Report.programs), counted by hand from the lowering's rules
(profcompare/emulator/compile/programs.py: which steps each op becomes)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.model import programs_from_rows

from .test_multi_ipu import MK2, _copy_program


def _load_matmul_store():
    """y = host_load(x) @ w, stored to the host: one IPU, no call."""
    ir = popxl.Ir()
    with ir.main_graph:
        xs = popxl.h2d_stream((4, 16), popxl.float32, "x")
        ys = popxl.d2h_stream((4, 8), popxl.float32, "y")
        w = popxl.variable(np.ones((16, 8), np.float32), popxl.float32, name="w")
        with popxl.in_sequence(True):
            x = ops.host_load(xs, "x")
            ops.host_store(ys, ops.matmul(x, w))
    return ir


def _called_twice():
    """gelu(x @ w) in a graph called twice with the same tensors."""
    ir = popxl.Ir()
    with ir.main_graph:
        xs = popxl.h2d_stream((4, 16), popxl.float32, "x")
        w = popxl.variable(np.ones((16, 8), np.float32), popxl.float32, name="w")
        sub = ir.create_graph(lambda a, b: ops.gelu(ops.matmul(a, b)), popxl.TensorSpec((4, 16), popxl.float32),
                              popxl.TensorSpec((16, 8), popxl.float32))
        with popxl.in_sequence(True):
            x = ops.host_load(xs, "x")
            ops.call(sub, x, w)
            ops.call(sub, x, w)
    return ir


def test_a_host_load_matmul_and_store_program_tree_by_hand():
    # WeightsFromHost: w's host copy (Begin, Mid, End); main: the load's undefined placeholder
    # (WriteUndef), the load (StreamCopyBegin / Mid / End), the matmul (its rearranged operand's
    # WriteUndef, weights rearranged, Convolve, Reduce0, each with its Internal Sync; the Convolve
    # and the Reduce0 each after the exchange it opens with, a DoExchange row <compute set>/ExchangePre
    # as in program_tree.png's cs0_m4/Conv_1/Convolve/ExchangePre), the store (Begin / Mid / End);
    # each op a Sequence
    cp = compile_program(lower(_load_matmul_store()))
    mm = "matmul"
    expected = programs_from_rows([
        (0, None, 0, "Sequence", "WeightsFromHost", "", 0),
        (1, 0, 1, "StreamCopyBegin", "WeightsFromHost/w/Begin", "", 0),
        (2, 0, 1, "StreamCopyMid", "WeightsFromHost/w/Mid", "", 0),
        (3, 0, 1, "StreamCopyEnd", "WeightsFromHost/w/End", "", 0),
        (4, None, 0, "Sequence", "main", "", 0),
        (5, 4, 1, "Sequence", "init", "init", 0),
        (6, 5, 2, "WriteUndef", "init", "init", 0),
        (7, 4, 1, "Sequence", "host_load", "host_load", 0),
        (8, 7, 2, "StreamCopyBegin", "host_load/Begin", "host_load", 0),
        (9, 7, 2, "StreamCopyMid", "host_load/Mid", "host_load", 0),
        (10, 7, 2, "StreamCopyEnd", "host_load/End", "host_load", 0),
        (11, 4, 1, "Sequence", mm, mm, 0),
        (12, 11, 2, "WriteUndef", "matmul/rearranged/WriteUndef", mm, 0),
        (13, 11, 2, "OnTileExecute", "matmul/weightsRearranged/OnTileCopy", mm, 0),
        (14, 11, 2, "Sync", "matmul/Internal Sync", mm, 0),
        (15, 11, 2, "DoExchange", "matmul/Convolve/ExchangePre", mm, 0),
        (16, 11, 2, "OnTileExecute", "matmul/Convolve", mm, 0),
        (17, 11, 2, "Sync", "matmul/Internal Sync", mm, 0),
        (18, 11, 2, "DoExchange", "matmul/Reduce0/ExchangePre", mm, 0),
        (19, 11, 2, "OnTileExecute", "matmul/Reduce0", mm, 0),
        (20, 11, 2, "Sync", "matmul/Internal Sync", mm, 0),
        (21, 4, 1, "Sequence", "host_store", "host_store", 0),
        (22, 21, 2, "StreamCopyBegin", "host_store/Begin", "host_store", 0),
        (23, 21, 2, "StreamCopyMid", "host_store/Mid", "host_store", 0),
        (24, 21, 2, "StreamCopyEnd", "host_store/End", "host_store", 0),
    ])
    programs = cp.report.programs
    pd.testing.assert_frame_equal(programs, expected)
    # every step the lowering knows is one row; the Sequences around them and the matmul compute
    # sets' exchanges (rows of the tree only: the executed step keeps its exchange) are the only others
    assert (programs["kind"].astype(str) != "Sequence").sum() == len(cp.steps.static) + 2 == 19
    assert not any(s.name.endswith("/ExchangePre") for s in cp.steps.static)
    assert "programs" in cp.report.meta.capabilities
    # the execution profile does not change the tree
    pd.testing.assert_frame_equal(cp.with_execution(2).programs, expected)


def test_a_graph_called_twice_is_nested_once_under_its_first_call():
    programs = compile_program(lower(_called_twice())).report.programs
    call = "--call--_called_twice.<lambda>_subgraph(0)"
    shown = [(int(d), str(k), n) for d, k, n in zip(programs["depth"], programs["kind"], programs["name"])]
    assert shown[4:] == [
        (0, "Sequence", "main"),
        (1, "Sequence", "init"), (2, "WriteUndef", "init"),
        (1, "Sequence", "host_load"), (2, "StreamCopyBegin", "host_load/Begin"), (2, "StreamCopyMid", "host_load/Mid"),
        (2, "StreamCopyEnd", "host_load/End"),
        # the first call site: its Call step holds the called graph's ops, then its copy out
        (1, "Sequence", call), (2, "Call", call),
        (3, "Sequence", "matmul"), (4, "WriteUndef", "matmul/rearranged/WriteUndef"),
        (4, "OnTileExecute", "matmul/weightsRearranged/OnTileCopy"), (4, "Sync", "matmul/Internal Sync"),
        (4, "DoExchange", "matmul/Convolve/ExchangePre"), (4, "OnTileExecute", "matmul/Convolve"),
        (4, "Sync", "matmul/Internal Sync"),
        (4, "DoExchange", "matmul/Reduce0/ExchangePre"), (4, "OnTileExecute", "matmul/Reduce0"),
        (4, "Sync", "matmul/Internal Sync"),
        (3, "Sequence", "gelu"), (4, "OnTileExecute", "gelu"), (4, "Sync", "gelu/Internal Sync"),
        (2, "OnTileExecute", f"{call}/copy_out/gelu_out/OnTileCopy"),
        # the second: the body's code exists once, so its Call step is a leaf
        (1, "Sequence", call), (2, "Call", call), (2, "OnTileExecute", f"{call}/copy_out/gelu_out/OnTileCopy"),
    ]
    call_rows = programs[programs["kind"].astype(str) == "Call"]
    assert call_rows["id"].tolist() == [12, 28]
    assert (programs["parent"] == 12).sum() == 2  # matmul and gelu


def test_a_two_ipu_program_places_steps_and_sequences_on_their_ipus():
    # a * 2 on IPU 0, copied to IPU 1 and stored from there: the copy's sync and global exchange
    # and the host copy's Begin / End run on both IPUs (<NA>), so do the Sequences holding them
    programs = compile_program(lower(_copy_program()), MK2).report.programs.set_index("name")
    ipu = {name: (None if pd.isna(v) else int(v)) for name, v in programs["ipu"].items()}
    assert ipu["main"] is None and ipu["mul"] == 0 and ipu["mul/Internal Sync"] == 0
    assert ipu["ipucopy"] is None and ipu["ipucopy/ExchangePre"] == 0 and ipu["ipucopy/ExchangePost"] == 1
    assert ipu["ipucopy/IpuCopy"] is None and ipu["host_store/Mid"] == 1 and ipu["host_store/Begin"] is None


def test_repeat_if_and_code_load_programs_give_every_step_one_row():
    from .test_repeat_conditional import _code_load_program, _conditional_program, _repeat_program

    for made in (_repeat_program(3), _conditional_program(), _code_load_program(2)):
        cp = made[1]
        programs = cp.report.programs
        steps = programs[programs["kind"].astype(str) != "Sequence"]
        # a matmul compute set's exchange is a row of the tree, not a step (program_tree.exchange_pre_row)
        pre = [f"{step.name}/ExchangePre" for step in cp.steps.static if step.role in ("mm_convolve", "mm_reduce")]
        assert sorted(steps["name"]) == sorted([step.name for step in cp.steps.static] + pre)
    # a repeat's body sits under its Repeat step, each of its ops a Sequence there
    programs = _repeat_program(3)[1].report.programs
    repeat = programs.index[programs["kind"].astype(str) == "Repeat"]
    assert len(repeat) == 1
    row = repeat[0]
    children = programs[programs["parent"] == programs.at[row, "id"]]
    assert len(children) and (children["depth"] == programs.at[row, "depth"] + 1).all()
    assert (children["kind"].astype(str) == "Sequence").all()
