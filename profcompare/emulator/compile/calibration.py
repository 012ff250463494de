"""The time model's two fitted constants and the public timings they are fitted and validated on.

Everything else in the time model is sourced (targets.py). Two host-side costs have no public
figure (ipu_facts.md 4), so they are fitted, each on one published timing of the graphcore/tutorials
popxl notebooks (the only data the time model may be fitted on):

1. ``run_overhead_seconds``: host/runtime time of one ``session.run`` outside the device. Fitted on
   the remote-variables tutorial's inference session (1 replica, batch 80: 0.8002 ms per run),
   a program whose device time is small, so the run overhead dominates it.
2. ``remote_transfer_seconds``: the fixed cost of one remote buffer transfer. Fitted on the same
   tutorial's off-chip sharded training session (DP 4, GA 4, micro-batch 8, threshold 512:
   3.3694 ms per run), with the first constant already fixed.

The other two public timings validate them (benchmarks/fidelity.py prints the table).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from profcompare.emulator.compile import compile_program
from profcompare.emulator.program import LoweredProgram
from profcompare.emulator.targets import MK2, DeviceSpec
from profcompare.errors import ProfcompareError

TUTORIAL_CONFIG = {"replicas": 4, "grad_accum": 4, "micro_batch": 8, "sharded_threshold": 512,
                   "hidden": 512, "layers": 3}
PHASED_CONFIG = {"replicas": 2, "grad_accum": 4, "micro_batch": 8, "sharded_threshold": 512,
                 "hidden": 512, "layers": 3}


@dataclass(frozen=True)
class PublicPoint:
    """One published timing of a popxl tutorial session."""

    key: str
    what: str
    source: str
    seconds: float  # published mean duration of one session.run
    samples_per_run: int
    role: str  # "fit run_overhead_seconds" | "fit remote_transfer_seconds" | "validate"
    program: str  # how the model builds the program: "inference" | workload variant name
    config: dict[str, int]
    note: str = ""


PUBLIC_POINTS: tuple[PublicPoint, ...] = (
    PublicPoint("rts-inference", "remote-variables tutorial, inference session (1 replica, batch 80)",
                "graphcore/tutorials tutorials/popxl/5_remote_variables_and_rts/mnist.ipynb output",
                0.8002e-3, 80, "fit run_overhead_seconds", "inference", {"batch": 80}),
    PublicPoint("rts-train", "remote-variables tutorial, off-chip sharded training (DP 4, GA 4, mb 8, threshold 512)",
                "graphcore/tutorials tutorials/popxl/5_remote_variables_and_rts/mnist.ipynb output (37,989.2 samples/s)",
                3.3694e-3, 128, "fit remote_transfer_seconds", "offchip-sharded", dict(TUTORIAL_CONFIG)),
    PublicPoint("phased-train", "phased-execution tutorial, training (DP 2, GA 4, mb 8, threshold 512, 32 I/O tiles)",
                "graphcore/tutorials tutorials/popxl/6_phased_execution/mnist.ipynb output (16,993.5 samples/s)",
                3.7662e-3, 64, "validate", "offchip-sharded", dict(PHASED_CONFIG),
                "the model runs the remote-variables program at DP 2: the phased program also streams "
                "each layer's weights from Streaming Memory and stages transfers on I/O tiles, which the "
                "model's program does not do, so the model is expected to under-predict"),
    PublicPoint("phased-inference", "phased-execution tutorial, inference session",
                "graphcore/tutorials tutorials/popxl/6_phased_execution/mnist.ipynb output",
                0.8016e-3, 80, "validate", "inference", {"batch": 80},
                "modelled as the same inference program as rts-inference (same MLP, batch 80)"),
)


@dataclass(frozen=True)
class Fit:
    """The two fitted constants and the figures they were solved from."""

    run_overhead_seconds: float
    remote_transfer_seconds: float
    inference_device_seconds: float  # device time of the inference program
    training_seconds_without_transfers: float  # training run with remote_transfer_seconds = 0
    remote_transfers_per_run: int


def remote_transfers_per_run(program: LoweredProgram) -> int:
    """RemoteLoad and RemoteStore executions in one run of the main program."""
    return sum(1 for e in program.schedule if program.ops[e.op].type.startswith(("RemoteLoad", "RemoteStore")))


def fit_constants(inference: LoweredProgram, training: LoweredProgram, device: DeviceSpec = MK2) -> Fit:
    """Solve the two fitted constants from the inference and training programs of the
    remote-variables tutorial (:data:`PUBLIC_POINTS` rts-inference and rts-train).

    Raises ProfcompareError when the model without the fitted terms already exceeds a timing.
    """
    inf_point, train_point = PUBLIC_POINTS[0], PUBLIC_POINTS[1]
    base = device.replace(run_overhead_seconds=0.0, remote_transfer_seconds=0.0)
    compiled = compile_program(inference, base)
    inf_device = compiled.seconds_per_step
    # a run with host transfers spends run_start_wait_cycles of its host time inside the device's
    # span (the opening control copy waits for the host): that part is already in inf_device
    inside = device.run_start_wait_cycles / device.clock_hz if compiled.opening is not None else 0.0
    run_overhead = inf_point.seconds - inf_device + inside
    if run_overhead <= 0:
        raise ProfcompareError(f"the inference program's modelled device time {inf_device * 1e3:.4f} ms already "
                               f"exceeds the published {inf_point.seconds * 1e3:.4f} ms; nothing to fit")
    partial = base.replace(run_overhead_seconds=run_overhead)
    without = compile_program(training, partial).seconds_per_step
    n = remote_transfers_per_run(training)
    if n == 0:
        raise ProfcompareError("the training program makes no remote transfer; nothing to fit")
    remote = (train_point.seconds - without) / n
    if remote <= 0:
        raise ProfcompareError(f"the training program without transfer costs already takes {without * 1e3:.4f} ms, "
                               f"more than the published {train_point.seconds * 1e3:.4f} ms")
    return Fit(run_overhead, remote, inf_device, without, n)


@dataclass(frozen=True)
class FidelityRow:
    """One public timing against the model."""

    point: PublicPoint
    modelled_seconds: float

    @property
    def error(self) -> float:
        """Relative error of the model: modelled / published - 1."""
        return self.modelled_seconds / self.point.seconds - 1.0


def fidelity(build: Callable[[PublicPoint], LoweredProgram], device: DeviceSpec = MK2) -> list[FidelityRow]:
    """The model's time per run for every public point; ``build`` makes each point's program."""
    return [FidelityRow(p, compile_program(build(p), device).seconds_per_step) for p in PUBLIC_POINTS]


__all__ = ["Fit", "FidelityRow", "PHASED_CONFIG", "PUBLIC_POINTS", "PublicPoint", "TUTORIAL_CONFIG",
           "fidelity", "fit_constants", "remote_transfers_per_run"]
