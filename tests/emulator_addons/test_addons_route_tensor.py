"""popxl-addons route_tensor_into_graph / is_subgraph on the simulator."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops


def test_is_subgraph_follows_calls_and_repeats() -> None:
    ir = popxl.Ir()
    main = ir.main_graph
    outer, inner, other = (ir.create_empty_graph(n) for n in ("outer", "inner", "other"))
    with inner:
        popxl.graph_output(popxl.constant(np.zeros(1, np.float32)) + 0.0)
    with outer:
        ops.call(inner)
    with main:
        ops.repeat(outer, 2)
    assert addons.is_subgraph(main, inner) and addons.is_subgraph(outer, inner)
    assert not addons.is_subgraph(inner, outer) and not addons.is_subgraph(main, other)


@pytest.mark.parametrize("modified", [False, True])
def test_routed_variable_is_read_and_updated_through_two_levels(modified: bool) -> None:
    ir = popxl.Ir()
    main = ir.main_graph
    outer, inner = ir.create_empty_graph("outer"), ir.create_empty_graph("inner")
    with main:
        a = popxl.variable(np.array([1.0, 2.0], np.float32), name="a")
        ops.call(outer)
        ops.call(outer)
    with outer:
        ops.call(inner)
    with inner:
        routed = addons.route_tensor_into_graph(a, modified=modified)
        again = addons.route_tensor_into_graph(a)
        assert routed is again and routed.graph is inner
        ops.var_updates.accumulate_(routed, popxl.constant(np.array([10.0, 10.0], np.float32)))
    assert len(outer.inputs) == 1 and len(inner.inputs) == 1
    with pytest.raises(ValueError, match="not in a known parent graph"):
        with main:
            addons.route_tensor_into_graph(popxl.constant(1.0), graph=ir.create_empty_graph("lonely"))
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        value = session.get_tensor_data(a)
    # two calls, each adding 10 when the update reaches the variable
    np.testing.assert_allclose(value, [21.0, 22.0] if modified else [1.0, 2.0])
