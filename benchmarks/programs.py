"""Programs of the public timing points (profcompare.emulator.compile.calibration.PUBLIC_POINTS).

Training points are built by the MNIST workload (workloads/mnist.py) through the popxl emulator
and lowered; inference points by the compile model's synthetic builder (the tutorials' test
session: one host load, the forward graph, one host store).
"""

from __future__ import annotations

from profcompare.emulator.compile.calibration import PublicPoint
from profcompare.emulator.compile.synthetic import mlp_inference_program
from profcompare.emulator.program import LoweredProgram


def workload_program(variant: str, config: dict[str, int]) -> LoweredProgram:
    """The LoweredProgram of an MNIST workload variant with ``config`` over the knob defaults."""
    from profcompare.emulator.lowering import lower
    from workloads import mnist
    from workloads._mnist_program import build_program

    full = {k.name: k.default for k in mnist.KNOBS}
    full.update(config)
    return lower(build_program(variant, full).ir, "ipu_hw")


def point_program(point: PublicPoint) -> LoweredProgram:
    """The program the model runs for one public timing point."""
    if point.program == "inference":
        return mlp_inference_program(batch=point.config["batch"])
    return workload_program(point.program, point.config)
