"""PopART's C++ internals (``_pb_graph``, ``_pb_ir``) as programs and their tests use them:
what the simulator keeps (session options, a graph's ops by PopART class, a custom op's graph
handle) is given, the rest is refused in one line naming the API (and ``hasattr`` answers False)."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl.errors import SimulatorNotImplementedError


def test_graph_ops_by_popart_class() -> None:
    from profcompare.emulator.popart._internal import ir as _ir

    from profcompare.emulator.popxl_addons.testing_utils import ops_of_type

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones((2, 4), np.float32), name="x")
        w = popxl.variable(np.ones((4, 4), np.float32), name="w")
        y = popxl.ops.layer_norm(x @ w - x, popxl.constant(np.ones(4, np.float32)),
                                 popxl.constant(np.zeros(4, np.float32)))
        y = popxl.ops.gelu(y + x)
        y += x
        popxl.ops.host_store(popxl.d2h_stream(y.shape, y.dtype), y)
    ops = ir.main_graph._pb_graph.getOps()
    assert [type(op).__name__ for op in ops] == [
        "MatMulOp", "SubtractOp", "GroupNormOp", "AddOp", "GeluOp", "AddLhsInplaceOp", "HostStoreOp"]
    assert ops_of_type(ops, _ir.op.AddOp) == 1  # the in-place add is no AddOp, as in PopART
    assert ops_of_type(ops, _ir.op.GroupNormOp) == 1 and ops_of_type(ops, _ir.op.SplitOp) == 0
    assert [op.id for op in ops] == list(range(100, 107)) and ops[0].opType() == "MatMul"
    assert isinstance(ops[0], _ir.Op)
    # the matmul's fully-connected pass, as popxl-addons' enable_fc_pass / disable_fc_pass set it
    from profcompare.emulator.popxl_addons.transforms.use_fc_pass import disable_fc_pass

    assert ops[0].useFullyConnectedPass() is True
    disable_fc_pass(ir)
    [graph] = ir._pb_ir.getAllGraphs()
    assert [op.useFullyConnectedPass() for op in graph.getOps() if hasattr(op, "useFullyConnectedPass")] == [False]


def test_graph_internals_beyond_the_ops_are_refused_by_name() -> None:
    from profcompare.emulator.popart._internal import ir as _ir

    graph = popxl.Ir().main_graph._pb_graph
    assert not hasattr(graph, "createConnectedOp_AddOp")
    with pytest.raises(SimulatorNotImplementedError, match=r"^popxl\.Graph\._pb_graph\.createConnectedOp_AddOp is not "
                                                          r"implemented by the profcompare simulator$"):
        graph.createConnectedOp_AddOp  # noqa: B018
    with pytest.raises(SimulatorNotImplementedError, match=r"^popart\._internal\.ir\.op\.NotAnOp is not implemented"):
        _ir.op.NotAnOp  # noqa: B018
    with pytest.raises(SimulatorNotImplementedError, match=r"^popart\._internal\.ir\.Ir is not implemented"):
        _ir.Ir  # noqa: B018


def test_pb_ir_keeps_what_it_simulates_and_names_the_rest() -> None:
    ir = popxl.Ir()
    ir._pb_ir.getSessionOptions().numIOTiles = 32
    assert ir.num_io_tiles == 32
    assert ir._pb_ir.getAllGraphs() == [ir.main_graph._pb_graph]
    with pytest.raises(SimulatorNotImplementedError, match=r"popxl\.Ir\._pb_ir\.getOpSchedule"):
        ir._pb_ir.getOpSchedule  # noqa: B018


def test_pre_alias_patterns_through_the_internal_ir_are_recorded_as_popxl_addons_does() -> None:
    from profcompare.emulator.popart._internal import ir as _ir

    ir = popxl.Ir()
    with pytest.raises(RuntimeError, match="no patterns set"):
        ir._pb_ir.applyPreAliasPatterns(ir.main_graph._pb_graph)
    ir._pb_ir.setPatterns(_ir.patterns.Patterns(_ir.patterns.PatternsLevel.Default))
    for g in ir._pb_ir.getAllGraphs():
        ir._pb_ir.applyPreAliasPatterns(g)
    assert ir._pre_alias_patterns == "default"  # reported as meta.session_options preAliasPatterns
    with pytest.raises(TypeError, match="needs popart._internal.ir.patterns.Patterns"):
        ir._pb_ir.setPatterns("default")


def test_ops_are_numbered_from_100_in_creation_order_as_popart() -> None:
    import numpy as np

    from profcompare.emulator.popxl_addons.performance_utils import evaluate_FLOPs

    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        x = popxl.constant(np.ones(4, np.float32))
        a = popxl.constant(np.ones((4, 8), np.float32))
        x @ a  # op 100
        x.T @ x  # the transpose is op 101, the matmul 102
    assert [op.id for op in ir.main_graph._ops] == ["100", "101", "102"]
    assert evaluate_FLOPs(ir.main_graph)["MatMul"] == {100: 2 * 4 * 8, 102: 2 * 4}
