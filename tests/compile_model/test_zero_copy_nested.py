"""Zero-copy graph inputs through nested calls: a graph called from several graphs, each passing
its own input that is itself a zero-copy alias of one tensor, copies nothing in (programs.py)."""

from __future__ import annotations

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.targets import get_device


def _double_through_two_graphs():
    """``inner`` (x * 2) called from two graphs ``outer`` (one per call site), both called with w."""
    ir = popxl.Ir()
    with ir.main_graph:
        w = popxl.variable(np.ones(1024, np.float32), name="w")
        inner = ir.create_graph(lambda x: x * 2, w.spec)

        def outer(x):
            (y,) = ops.call(inner, x)
            return y
        (a,) = ops.call(ir.create_graph(outer, w.spec), w)
        (b,) = ops.call(ir.create_graph(outer, w.spec), w)
        ops.host_store(popxl.d2h_stream((1024,), popxl.float32, "a"), a)
        ops.host_store(popxl.d2h_stream((1024,), popxl.float32, "b"), b)
    return compile_program(lower(ir), get_device("mk2")).report


def test_a_graph_called_from_two_graphs_with_aliases_of_one_tensor_copies_nothing_in():
    names = set(_double_through_two_graphs().variables["name"])
    # the outer graphs' inputs alias w (one call site each); inner's two call sites pass those
    # aliases, so its input aliases w too: no row of its own, only its products
    assert not [n for n in names if "subgraph(" in n and n.split("/")[-1].split("@")[0] == "x"]
    # (and the constant 2, always live)
    assert sorted(n.split("/")[-1] for n in names if "<lambda>_subgraph(0)/" in n) == ["mul_out@1", "mul_out@2", "t"]
