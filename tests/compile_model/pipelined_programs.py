"""Small pipelined popxl programs that several compile-model tests build."""

from __future__ import annotations

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops


def two_stage_copy(shape: tuple[int, ...], steps: int) -> popxl.Ir:
    """Two pipeline stages on two IPUs, ``steps`` pipeline steps: stage 0 loads ``shape`` fp32,
    doubles it and copies it to IPU 1; stage 1 adds 1 and stores it."""
    ir = popxl.Ir()
    with ir.main_graph:
        xs = popxl.h2d_stream(shape, popxl.float32, "x")
        ys = popxl.d2h_stream(shape, popxl.float32, "y")
        with addons.pipelined_execution(steps) as p:
            with p.stage(0), popxl.ipu(0):
                x = ops.host_load(xs, "x") * 2.0
                x = x.copy_to_ipu(1)
            with p.stage(1), popxl.ipu(1):
                ops.host_store(ys, x + 1.0)
    ir.num_host_transfers = steps
    return ir
