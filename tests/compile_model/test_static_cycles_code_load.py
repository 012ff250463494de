"""compile.cycles.static_cycles and the code a ``remote_code_load`` moves: the loaded graph's
bytes must be given (a graph missing from ``loaded_code_bytes`` is an error, not a free load)
and the load's data step costs those bytes at the gateway bandwidth."""

from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.cycles import PHASE_INDEX, CostModel, static_cycles
from profcompare.emulator.compile.placement import layout_of
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.targets import get_device

MK2 = get_device("mk2")


def _loading_program(replicas: int = 1):
    """main: remote_code_load(body), call(body, x); body adds x to itself."""
    ir = popxl.Ir()
    ir.replication_factor = replicas
    with ir.main_graph:
        x = popxl.variable(np.ones((8,), np.float32), name="x")
    g = ir.create_graph(lambda a: a + a, x)
    with ir.main_graph, popxl.in_sequence(True):
        ops.remote_code_load(g, "executable")
        ops.call(g, x)
    return lower(ir), g


def test_loaded_code_bytes_is_a_required_argument() -> None:
    param = inspect.signature(static_cycles).parameters["loaded_code_bytes"]
    assert param.default is inspect.Parameter.empty


def test_a_loaded_graph_missing_from_the_map_is_an_error() -> None:
    program, g = _loading_program()
    compiled = compile_program(program, MK2)
    costs = CostModel(program, MK2, layout_of(program, MK2.tiles_per_ipu).compute_tiles)
    (data,) = [s for s in compiled.steps.static if s.role == "code_load"]
    message = (f"static_cycles: op {data.op} loads the code of graph '{g.id}', which has no entry in "
               "loaded_code_bytes (graphs with code sizes: ['other'])")
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        static_cycles(compiled.steps, costs, {"other": 1000})
    with pytest.raises(ValueError, match="which has no entry in loaded_code_bytes"):
        static_cycles(compiled.steps, costs, {})
    # given, the bytes set the data step's Streaming Memory cycles: 1,575,000 B at 15.75 GB/s
    # and 1.33 GHz is 133,000 cycles
    cycles = static_cycles(compiled.steps, costs, {g.id: 1_575_000})
    assert cycles[data.index].tolist() == [
        133_000 if i == PHASE_INDEX["streaming_memory"] else 0 for i in range(cycles.shape[1])]
    assert 133_000 == math.ceil(1_575_000 / MK2.gateway_bytes_per_s * MK2.clock_hz)
