"""The time model's two fitted constants and the public timings they are fitted and validated on.

Everything else in the time model is sourced (targets.py). Two host-side costs have no public
figure (ipu_facts.md 4), so they are fitted, each on one published timing of the popxl tutorials'
notebooks (graphcore/examples tutorials/tutorials/popxl; the only data the time model may be
fitted on). Each point is the tutorial's own ``mnist.py``, run unmodified under ``profcompare
profile --backend sim`` with the notebook's configuration (benchmarks/tutorial_points.py):

1. ``run_overhead_seconds``: host/runtime time of one ``session.run`` outside the device. Fitted on
   the remote-variables tutorial's inference session (1 replica, batch 80: 0.8002 ms per run),
   a program whose device time is small, so the run overhead dominates it.
2. ``remote_transfer_seconds``: the fixed cost of one remote exchange (a transfer, or the transfers
   of one merged exchange: remote_exchange.py). Fitted on the same
   tutorial's off-chip sharded training session (DP 4, GA 4, micro-batch 8, threshold 512:
   3.3694 ms per run), with the first constant already fixed.

The other two public timings validate them (benchmarks/fidelity.py prints the table).

A run's modelled time is linear in the two constants (:class:`PointComponents`), so a point is
recorded as the three figures its time is made of, read from its report
(:func:`components_of_report`) or from its program (:func:`components_of_program`); the fit
(:func:`fit_constants`) and the table (:func:`fidelity`) work on those.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from profcompare.emulator.targets import MK2, DeviceSpec
from profcompare.errors import ProfcompareError

if TYPE_CHECKING:
    from profcompare.emulator.program import LoweredProgram
    from profcompare.model import Report

RTS_TUTORIAL = "5_remote_variables_and_rts"
PHASED_TUTORIAL = "6_phased_execution"
#: the notebooks' configurations as the programs' command lines (each notebook sets its options in
#: a cell; these are the same values as ``mnist.py``'s options)
RTS_ARGS = ("--data-parallel", "4", "--gradient-accumulation", "4", "--train-micro-batch-size", "8",
            "--sharded-threshold", "512", "--test-batch-size", "80")
PHASED_ARGS = ("--data-parallel", "2", "--gradient-accumulation", "4", "--train-micro-batch-size", "8",
               "--sharded-threshold", "512", "--test-batch-size", "80", "--io-mode", "io")


@dataclass(frozen=True)
class PublicPoint:
    """One published timing of a popxl tutorial session, and the run of the tutorial's program
    that models it: ``tutorial``'s ``mnist.py`` with ``args``; its ``session``-th Session (from 1,
    in the order the program creates them) is the one timed."""

    key: str
    what: str
    source: str
    seconds: float  # published mean duration of one session.run
    samples_per_run: int
    role: str  # "fit run_overhead_seconds" | "fit remote_transfer_seconds" | "validate"
    tutorial: str  # directory of the tutorial under tutorials/popxl
    args: tuple[str, ...]  # the program's command line: the notebook's configuration
    session: int  # which Session of the program the timing is of
    replicas: int  # that Session's replication factor (checked against its report)
    note: str = ""

    @property
    def fitted(self) -> bool:
        """True for the two points a constant is solved on."""
        return self.role != "validate"


_NOTEBOOK = "graphcore/examples tutorials/tutorials/popxl/{}/mnist.ipynb output"

PUBLIC_POINTS: tuple[PublicPoint, ...] = (
    PublicPoint("rts-inference", "remote-variables tutorial, inference session (1 replica, batch 80)",
                _NOTEBOOK.format(RTS_TUTORIAL) + " (99,971.5 samples/s)",
                0.8002e-3, 80, "fit run_overhead_seconds", RTS_TUTORIAL, RTS_ARGS, 2, 1),
    PublicPoint("rts-train", "remote-variables tutorial, off-chip sharded training (DP 4, GA 4, mb 8, threshold 512)",
                _NOTEBOOK.format(RTS_TUTORIAL) + " (37,989.2 samples/s)",
                3.3694e-3, 128, "fit remote_transfer_seconds", RTS_TUTORIAL, RTS_ARGS, 1, 4),
    PublicPoint("phased-train", "phased-execution tutorial, training (DP 2, GA 4, mb 8, threshold 512, 32 I/O tiles)",
                _NOTEBOOK.format(PHASED_TUTORIAL) + " (16,993.5 samples/s)",
                3.7662e-3, 64, "validate", PHASED_TUTORIAL, PHASED_ARGS, 1, 2),
    PublicPoint("phased-inference", "phased-execution tutorial, inference session (1 replica, batch 80)",
                _NOTEBOOK.format(PHASED_TUTORIAL) + " (99,799.0 samples/s)",
                0.8016e-3, 80, "validate", PHASED_TUTORIAL, PHASED_ARGS, 2, 1),
)


def point(key: str) -> PublicPoint:
    """The public point named ``key``."""
    for p in PUBLIC_POINTS:
        if p.key == key:
            return p
    raise ProfcompareError(f"no public point {key!r} (there are {', '.join(p.key for p in PUBLIC_POINTS)})")


@dataclass(frozen=True)
class PointComponents:
    """What one run of a point's program is made of in the time model, in device cycles: its time
    for any value of the two fitted constants is :meth:`cycles`.

    - ``device_cycles``: the device's span of one run with both fitted terms zero (it includes the
      run's opening wait for the host, ``opening_wait_cycles``);
    - ``remote_exchanges``: remote exchanges a run makes (a transfer on its own, or the transfers
      of one merged exchange together: compile/remote_exchange.py), each costing
      ``remote_transfer_seconds`` in its Begin;
    - ``opening_wait_cycles``: the part of ``run_overhead_seconds`` spent inside the device's span
      (the run's opening control copy waits for the host: ``run_start_wait_cycles``), 0 for a
      program without host transfers.
    """

    key: str
    device_cycles: int
    remote_exchanges: int
    opening_wait_cycles: int
    clock_hz: float

    def cycles(self, run_overhead_seconds: float, remote_transfer_seconds: float) -> int:
        """Cycles of one ``session.run`` (device span plus host/runtime time) with these constants,
        rounded as the compile rounds them (each term up to a whole cycle)."""
        transfer = math.ceil(remote_transfer_seconds * self.clock_hz)
        runtime = max(0, math.ceil(run_overhead_seconds * self.clock_hz) - self.opening_wait_cycles)
        return self.device_cycles + self.remote_exchanges * transfer + runtime

    def seconds(self, run_overhead_seconds: float, remote_transfer_seconds: float) -> float:
        """Seconds of one ``session.run`` with these constants."""
        return self.cycles(run_overhead_seconds, remote_transfer_seconds) / self.clock_hz


def _opening_wait(runtime: int, device: DeviceSpec) -> int:
    """The opening wait inside the device's span, recovered from a run's host/runtime cycles under
    ``device``'s constants (compile: runtime = overhead, less the wait when the run opens with a
    host transfer)."""
    overhead = math.ceil(device.run_overhead_seconds * device.clock_hz)
    if runtime == overhead:
        return 0
    if runtime == max(0, overhead - device.run_start_wait_cycles) and runtime > 0:
        return device.run_start_wait_cycles
    raise ProfcompareError(f"the report's host/runtime time ({runtime:,} cycles) is neither the run overhead "
                           f"({overhead:,}) nor it less the opening wait: it was not compiled with these constants")


def components_of_report(key: str, report: Report, device: DeviceSpec = MK2) -> PointComponents:
    """A point's components from its simulated report (with an execution profile), compiled with
    ``device``'s constants: the device span and host/runtime time of its first run, and its remote
    transfers (the Begin steps that cost ``remote_transfer_seconds`` in Streaming Memory time).

    Raises ProfcompareError when the report does not decompose exactly under those constants."""
    summary = report.summary()
    if math.isnan(summary["cycles_per_step"]) or math.isnan(summary["host_seconds_per_step"]):
        raise ProfcompareError(f"{key}: the report has no execution profile with host/runtime time")
    clock = report.meta.target.clock_hz
    if clock != device.clock_hz:
        raise ProfcompareError(f"{key}: the report's clock ({clock:,.0f} Hz) is not the device's ({device.clock_hz:,.0f})")
    span = int(round(summary["cycles_per_step"]))
    runtime = int(round(summary["host_seconds_per_step"] * clock))
    ex = report.execution
    first = ex[ex["run"] == ex["run"].min()]
    begins = first[(first["type"].astype(str) == "StreamCopyBegin") & (first["phase"].astype(str) == "streaming_memory")]
    transfer = math.ceil(device.remote_transfer_seconds * clock)
    odd = begins[begins["cycles"] != transfer]
    if len(odd):
        raise ProfcompareError(f"{key}: {len(odd)} remote transfer Begin(s) do not cost remote_transfer_seconds "
                               f"({transfer:,} cycles): the report was not compiled with these constants")
    n = len(begins)
    return PointComponents(key, span - n * transfer, n, _opening_wait(runtime, device), clock)


def remote_exchanges_per_run(program: LoweredProgram) -> int:
    """Remote exchanges one run of the main program makes: a remote transfer on its own, or the
    transfers of one merged exchange together (compile/remote_exchange.py)."""
    from profcompare.emulator.compile.programs import classify
    from profcompare.emulator.compile.remote_exchange import exchanges_per_run

    return exchanges_per_run(program, {op_id: classify(op, program) for op_id, op in program.ops.items()})


def components_of_program(key: str, program: LoweredProgram, device: DeviceSpec = MK2) -> PointComponents:
    """A point's components from its program, compiled with both fitted terms zero."""
    from profcompare.emulator.compile import compile_program

    compiled = compile_program(program, device.replace(run_overhead_seconds=0.0, remote_transfer_seconds=0.0))
    wait = device.run_start_wait_cycles if compiled.opening is not None else 0
    return PointComponents(key, compiled.cycles_per_step, remote_exchanges_per_run(program), wait, device.clock_hz)


@dataclass(frozen=True)
class Fit:
    """The two fitted constants and the figures they were solved from."""

    run_overhead_seconds: float
    remote_transfer_seconds: float
    inference_device_seconds: float  # device time of the inference program
    training_seconds_without_transfers: float  # training run with remote_transfer_seconds = 0
    remote_exchanges_per_run: int


def fit_constants(inference: PointComponents, training: PointComponents) -> Fit:
    """Solve the two fitted constants from the components of the remote-variables tutorial's
    inference and training sessions (:data:`PUBLIC_POINTS` rts-inference and rts-train).

    Raises ProfcompareError when the model without the fitted terms already exceeds a timing, or
    when the training program makes no remote transfer."""
    inf_point, train_point = point("rts-inference"), point("rts-train")
    inf_device = inference.device_cycles / inference.clock_hz
    # the opening wait is host time already inside the device's span
    run_overhead = inf_point.seconds - inf_device + inference.opening_wait_cycles / inference.clock_hz
    if inference.remote_exchanges or run_overhead <= 0:
        raise ProfcompareError(f"the inference program's modelled device time {inf_device * 1e3:.4f} ms already "
                               f"exceeds the published {inf_point.seconds * 1e3:.4f} ms; nothing to fit")
    without = training.seconds(run_overhead, 0.0)
    n = training.remote_exchanges
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


def fidelity(components: Mapping[str, PointComponents], device: DeviceSpec = MK2) -> list[FidelityRow]:
    """The model's time per run for every public point with ``device``'s two constants."""
    missing = [p.key for p in PUBLIC_POINTS if p.key not in components]
    if missing:
        raise ProfcompareError(f"no components for public point(s) {', '.join(missing)}")
    return [FidelityRow(p, components[p.key].seconds(device.run_overhead_seconds, device.remote_transfer_seconds))
            for p in PUBLIC_POINTS]


def components_to_json(components: Sequence[PointComponents], produced_by: str) -> str:
    """The recorded components of the public points (benchmarks/public_points.json)."""
    return json.dumps({"produced_by": produced_by, "points": [asdict(c) for c in components]}, indent=1) + "\n"


def components_from_json(text: str) -> dict[str, PointComponents]:
    """The components recorded by :func:`components_to_json`, by point key."""
    try:
        rows = json.loads(text)["points"]
        out = {str(r["key"]): PointComponents(str(r["key"]), int(r["device_cycles"]), int(r["remote_exchanges"]),
                                              int(r["opening_wait_cycles"]), float(r["clock_hz"])) for r in rows}
    except (ValueError, KeyError, TypeError) as exc:
        raise ProfcompareError(f"not a record of the public points' components ({exc})") from None
    return out


__all__ = ["Fit", "FidelityRow", "PHASED_ARGS", "PHASED_TUTORIAL", "PUBLIC_POINTS", "PointComponents", "PublicPoint",
           "RTS_ARGS", "RTS_TUTORIAL", "components_from_json", "components_of_program", "components_of_report",
           "components_to_json", "fidelity", "fit_constants", "point", "remote_exchanges_per_run"]
