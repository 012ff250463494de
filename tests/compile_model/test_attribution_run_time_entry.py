"""Attribution of remote loads whose entry is a repeat's loop counter: the counter is followed
iteration by iteration (its start constant, then plus its step), so each iteration's load holds
that iteration's entry (the start constant alone is only the first iteration's entry)."""

from __future__ import annotations

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops


def _parameters(counter: bool) -> dict[str, str]:
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        buffer = popxl.remote_buffer((8, 8), popxl.float32, 2)
        popxl.remote_variable(np.zeros((8, 8), np.float32), buffer, 0, name="w0")
        popxl.remote_variable(np.ones((8, 8), np.float32), buffer, 1, name="w1")
        x = popxl.variable(np.ones((8, 8), np.float32), name="x")

        def use(i: popxl.Tensor, a: popxl.Tensor) -> popxl.Tensor:
            return a @ ops.remote_load(buffer, i)  # a matmul operand: the variables are weights

        load = ir.create_graph(use, popxl.TensorSpec((), popxl.int32), x.spec)
        one = popxl.constant(np.int32(1), popxl.int32, "one")
        if counter:
            def body(n: popxl.Tensor, a: popxl.Tensor) -> popxl.Tensor:
                ops.call(load, n, a)
                return n + popxl.constant(np.int32(1), popxl.int32, "step")

            ops.repeat(ir.create_graph(body, popxl.TensorSpec((), popxl.int32), x.spec), 2,
                       popxl.constant(np.int32(0), popxl.int32, "first"), x)
        else:
            ops.call(load, one, x)
    variables = compile_program(lower(ir)).report.variables
    loaded = variables[variables["name"].str.contains("remote_load")]
    return dict(zip(loaded["name"], loaded["parameter"]))


def test_a_load_called_with_a_constant_entry_holds_that_entry_s_variable() -> None:
    params = _parameters(counter=False)
    assert params and set(params.values()) == {"w1"}


def test_a_load_indexed_by_a_repeat_counter_holds_each_iteration_s_entry() -> None:
    # entries 0 and 1 over the two iterations: the first iteration's load instance holds w0, the
    # second w1 (not entry 0 twice, the counter's start constant)
    params = _parameters(counter=True)
    assert sorted(params.items()) == [
        ("_parameters.use_subgraph(0)/id_1_offset_i_remote_load@1", "w0"),
        ("_parameters.use_subgraph(0)/id_1_offset_i_remote_load@2", "w1"),
    ]
