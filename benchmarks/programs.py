"""Programs of the MNIST workload's variants, built through the popxl emulator and lowered
(benchmarks/fidelity.py's variants table). The public timing points run the tutorials' own
programs instead (benchmarks/tutorial_points.py)."""

from __future__ import annotations

from profcompare.emulator.program import LoweredProgram


def workload_program(variant: str, config: dict[str, int]) -> LoweredProgram:
    """The LoweredProgram of an MNIST workload variant with ``config`` over the knob defaults."""
    from profcompare.emulator.lowering import lower
    from workloads import mnist
    from workloads._mnist_program import build_program

    full = {k.name: k.default for k in mnist.KNOBS}
    full.update(config)
    return lower(build_program(variant, full).ir, "ipu_hw")

