"""PopART's C++ internals (``_pb_graph``, ``_pb_ir``) are simulated only as far as popxl programs
use them (a custom op's graph handle, session options): the rest is refused with one line naming
the API, and ``hasattr`` answers False."""

from __future__ import annotations

import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl.errors import SimulatorNotImplementedError


def test_graph_pb_graph_is_a_handle_refusing_its_members_by_name() -> None:
    ir = popxl.Ir()
    assert ir.main_graph._pb_graph == ir.main_graph._pb_graph
    assert not hasattr(ir.main_graph._pb_graph, "getOps")
    with pytest.raises(SimulatorNotImplementedError, match=r"^popxl\.Graph\._pb_graph\.getOps is not implemented by the profcompare simulator$"):
        ir.main_graph._pb_graph.getOps()


def test_pb_ir_keeps_what_it_simulates_and_names_the_rest() -> None:
    ir = popxl.Ir()
    ir._pb_ir.getSessionOptions().numIOTiles = 32
    assert ir.num_io_tiles == 32
    assert ir._pb_ir.getAllGraphs() == [ir.main_graph]
    with pytest.raises(SimulatorNotImplementedError, match=r"popxl\.Ir\._pb_ir\.setPatterns"):
        ir._pb_ir.setPatterns  # noqa: B018


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
