"""Calibration of the one fitted constant: the Streaming Memory bandwidth.

The reference gives no Streaming Memory bandwidth (shared/reference/ipu_facts.md 4). It is set
from one published measurement (facts 3 item 1): the PopXL tutorial's MNIST with the Adam state
in Streaming Memory and replicated tensor sharding (4 replicas, gradient accumulation 4,
micro-batch 8, sharded_threshold 512) takes 3.37 ms per weight update (37,989 samples/s with
128 samples per update).

The model's time for one weight update is ``T_other + B / bandwidth`` where ``T_other`` is
everything but the bandwidth term (compute, exchange, syncs including the global sync of each
transfer, host I/O, collectives) and ``B`` the bytes moved to and from Streaming Memory per
replica. Solving ``T_other + B / bandwidth = T_measured`` gives the bandwidth. Because all other
constants are fixed beforehand, the calibrated value absorbs whatever the model leaves out of
that program (its unmodelled overheads), which docs/ipu-model.md states.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from profcompare.emulator.compile import compile_program
from profcompare.emulator.program import LoweredProgram
from profcompare.emulator.targets import MK2, DeviceSpec
from profcompare.errors import ProfcompareError

#: facts 3 item 1: seconds per weight update of the tutorial's off-chip sharded MNIST.
MEASURED_SECONDS_PER_UPDATE = 0.00337
MEASURED_SAMPLES_PER_SECOND = 37_989
TUTORIAL_CONFIG = {"replicas": 4, "grad_accum": 4, "micro_batch": 8, "sharded_threshold": 512,
                   "hidden": 512, "layers": 3}


@dataclass(frozen=True)
class Calibration:
    """The result of solving for the Streaming Memory bandwidth."""

    streaming_bytes_per_s: float
    streaming_bytes_per_update: int
    other_seconds: float  # modelled time of one update without the bandwidth term
    measured_seconds: float


def streaming_bytes_per_run(program: LoweredProgram) -> int:
    """Bytes moved between tile memory and Streaming Memory in one run (per replica)."""
    total = 0
    for entry in program.schedule:
        op = program.ops[entry.op]
        if op.type.startswith("RemoteLoad"):
            tids = op.outputs
        elif op.type.startswith("RemoteStore"):
            tids = op.inputs[:1]
        else:
            continue
        total += sum(program.tensors[t].nbytes for t in tids if t in program.tensors)
    return total


def solve_streaming_bandwidth(program: LoweredProgram, measured_seconds: float = MEASURED_SECONDS_PER_UPDATE,
                              device: DeviceSpec = MK2) -> Calibration:
    """Solve ``other + bytes / bandwidth = measured`` for the Streaming Memory bandwidth.

    Returns a :class:`Calibration`. Raises ProfcompareError when the program moves nothing
    to Streaming Memory or the rest of the model alone already exceeds the measurement.
    """
    nbytes = streaming_bytes_per_run(program)
    if nbytes <= 0:
        raise ProfcompareError("calibration program moves no bytes to or from Streaming Memory")
    no_bandwidth_term = device.replace(streaming_bytes_per_s=math.inf)
    other = compile_program(program, no_bandwidth_term).seconds_per_step
    if other >= measured_seconds:
        raise ProfcompareError(
            f"the model without Streaming Memory transfer time already takes {other * 1e3:.3f} ms, "
            f"more than the measured {measured_seconds * 1e3:.3f} ms; nothing to calibrate")
    return Calibration(nbytes / (measured_seconds - other), nbytes, other, measured_seconds)
