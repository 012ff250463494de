"""Reproduce the Streaming Memory bandwidth calibration (docs/ipu-model.md "Calibration").

Builds the tutorial's off-chip sharded MNIST program (4 replicas, gradient accumulation 4,
micro-batch 8, sharded_threshold 512, 784-512-512-512-10) and solves the compile model for the
bandwidth that makes one weight update take the measured 3.37 ms (ipu_facts.md section 3).

    python benchmarks/calibrate_streaming.py [--source workload|synthetic]

``workload`` (default) builds the program with workloads/mnist.py through the popxl emulator
and lowers it; ``synthetic`` uses the compile model's synthetic generator with the same shapes.
"""

from __future__ import annotations

import argparse
import sys

from profcompare.emulator.compile.calibration import (
    MEASURED_SECONDS_PER_UPDATE,
    TUTORIAL_CONFIG,
    solve_streaming_bandwidth,
)
from profcompare.emulator.compile.synthetic import mlp_program


def workload_program():
    """The LoweredProgram of workloads/mnist.py's offchip-sharded variant at the tutorial config."""
    from profcompare.emulator.lowering import lower
    from workloads import mnist
    from workloads._mnist_program import build_program

    config = {k.name: k.default for k in mnist.KNOBS}
    config.update(TUTORIAL_CONFIG)
    return lower(build_program("offchip-sharded", config).ir, "ipu_hw")


def synthetic_program():
    """The synthetic generator's version of the same program."""
    c = TUTORIAL_CONFIG
    return mlp_program(layers=c["layers"] + 1, hidden=c["hidden"], micro_batch=c["micro_batch"],
                       grad_accum=c["grad_accum"], replicas=c["replicas"], remote=True, sharded=True,
                       threshold=c["sharded_threshold"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", choices=("workload", "synthetic"), default="workload")
    args = parser.parse_args()
    program = workload_program() if args.source == "workload" else synthetic_program()
    cal = solve_streaming_bandwidth(program)
    print(f"program source:                 {args.source}")
    print(f"measured time per update:       {MEASURED_SECONDS_PER_UPDATE * 1e3:.3f} ms (ipu_facts.md 3, item 1)")
    print(f"modelled time without transfers: {cal.other_seconds * 1e3:.3f} ms")
    print(f"Streaming Memory bytes/update:  {cal.streaming_bytes_per_update:,} B per replica")
    print(f"calibrated bandwidth:           {cal.streaming_bytes_per_s:.4g} B/s per replica")
    return 0


if __name__ == "__main__":
    sys.exit(main())
