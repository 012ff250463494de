"""popxl_addons.transforms.repeat_graph on the simulator: the values a repeated main graph
stores and leaves in its variables, the moved ops and their inputs, ordering, and the no-op for
a count of one."""

from __future__ import annotations

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons.transforms.repeat_graph import repeat_graph


def test_every_iteration_stores_and_updates_the_variable() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.array([1.0, 10.0], np.float32), name="v")
        doubled = v * 2.0
        ops.var_updates.accumulate_(v, popxl.constant(np.array([1.0, -1.0], np.float32)))
        stream = addons.host_store(doubled)
    repeat_graph(ir.main_graph, 4)
    ir.num_host_transfers = 4
    with popxl.Session(ir, "ipu_hw") as session:
        out = session.run()[stream]
    # iteration i reads v = v0 + i * [1, -1] before its update
    np.testing.assert_array_equal(out, [[2.0, 20.0], [4.0, 18.0], [6.0, 16.0], [8.0, 14.0]])
    np.testing.assert_array_equal(session.get_tensor_data(v), [5.0, 6.0])


def test_the_ops_move_and_tensors_read_become_by_reference_inputs() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        small = popxl.variable(np.float32(1), name="small")
        big = popxl.variable(np.ones((2, 2), np.float32), name="big")
        with popxl.in_sequence():
            big + 1.0
            small * 3.0
    new = repeat_graph(ir.main_graph, 3)
    assert new is not ir.main_graph and new.name.startswith("repeat_graph")
    assert [op.type for op in new.ops] == ["Add", "Mul"]
    # in the order the moved ops read them: big, the constant 1, small, the constant 3
    assert len(new.inputs) == 4 and (new.inputs[0].name, new.inputs[2].name) == ("big", "small")
    assert all(t in new._by_ref_inputs for t in new.inputs)
    (loop,) = ir.main_graph.ops
    assert loop.type == "Loop" and loop.attrs["repeat_count"] == 3
    add, mul = new.ops
    assert (add.id, mul.id) in new._topo_constraints
    assert ir.main_graph._topo_constraints == []


def test_a_count_of_one_changes_nothing() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.constant(np.int32(0)) + 1
        stream = addons.host_store(x)
    before = ir.main_graph.ops
    assert repeat_graph(ir.main_graph, 1) is ir.main_graph
    assert repeat_graph(ir.main_graph, 0) is ir.main_graph
    assert ir.main_graph.ops == before
    with popxl.Session(ir, "ipu_hw") as session:
        assert session.run()[stream] == 1
