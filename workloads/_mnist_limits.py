"""What an MNIST run would cost this machine, estimated from its knobs before any work starts.

A typo such as ``--hidden 1000000000`` or ``--layers 1000000`` must be refused in one line
up front, not discovered after variants were spawned that swap, fail or compile for hours.
The estimates are deliberately simple and conservative; each constant says where it comes from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from profcompare.errors import WorkloadError

INPUT_FEATURES = 784
CLASSES = 10

#: Host bytes the emulator holds per model parameter per replica: weights, gradient
#: accumulators, Adam state, call copies and numpy temporaries. Measured: peak RSS of
#: `profcompare run onchip --hidden H --steps 1` (4 replicas) grew by about 27 bytes per
#: parameter per replica from H=1024 to H=2048 (395 MB -> 1,171 MB); rounded up to 32.
HOST_BYTES_PER_PARAMETER_PER_REPLICA = 32
#: Fixed host memory of a variant process (interpreter, numpy, pandas, the compile model):
#: the measured peak RSS of the smallest runs is about 300 MB.
HOST_BASE_BYTES = 300 * 2**20
#: Bytes of one input sample held by the run (784 float32 pixels, a label).
SAMPLE_BYTES = INPUT_FEATURES * 4 + 4
#: Seconds the compile model spends per hidden layer (benchmarks/bench_compile.py: 10-15 ms per
#: layer of a synthetic MLP); the estimate uses the upper end.
COMPILE_SECONDS_PER_LAYER = 0.015
#: Emulator throughput in multiply-adds x 2 per second (benchmarks/bench_emulator_step.py: the
#: tutorial step, 6 x 0.93 M parameters x 256 samples = 1.4 GFLOP, takes about 0.3 s); an assumption
#: for other sizes.
EMULATOR_FLOPS_PER_SECOND = 4.0e9
#: Longest compile or run the parent accepts before refusing (a profiling run is minutes).
MAX_SECONDS = 6 * 3600


def parameters(config: Mapping[str, Any]) -> int:
    """Trainable parameters of the MLP 784-(hidden x layers)-10 (weights and biases)."""
    hidden, layers = int(config["hidden"]), int(config["layers"])
    return INPUT_FEATURES * hidden + hidden + (layers - 1) * (hidden * hidden + hidden) + hidden * CLASSES + CLASSES


def host_bytes(config: Mapping[str, Any]) -> int:
    """Host memory one variant process needs, in bytes (see the constants above)."""
    replicas, steps = int(config["replicas"]), int(config["steps"])
    samples = int(config["micro_batch"]) * int(config["grad_accum"]) * replicas
    activations = samples * int(config["hidden"]) * int(config["layers"]) * 4 * 4  # fwd + grad, fp32, copies
    return (HOST_BASE_BYTES + HOST_BYTES_PER_PARAMETER_PER_REPLICA * parameters(config) * replicas
            + SAMPLE_BYTES * samples * steps + activations)


def run_seconds(config: Mapping[str, Any]) -> float:
    """Seconds the emulator needs to execute every step (6 FLOPs per parameter per sample)."""
    samples = int(config["micro_batch"]) * int(config["grad_accum"]) * int(config["replicas"])
    return 6.0 * parameters(config) * samples * int(config["steps"]) / EMULATOR_FLOPS_PER_SECOND


def compile_seconds(config: Mapping[str, Any]) -> float:
    """Seconds the compile model needs for the program (linear in layers)."""
    return COMPILE_SECONDS_PER_LAYER * int(config["layers"])


def machine_memory_bytes() -> int:
    """Physical memory of this machine in bytes (0 if the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 0


def human_bytes(value: float) -> str:
    """``4 PB``, ``24 GiB``-style figure (decimal units above TiB keep huge numbers readable)."""
    for unit, size in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GiB", 2**30), ("MiB", 2**20)):
        if value >= size:
            return f"{value / size:,.0f} {unit}" if value / size >= 10 else f"{value / size:.1f} {unit}"
    return f"{value:,.0f} B"


def human_seconds(value: float) -> str:
    """``3.2 hours``-style duration."""
    for unit, size in (("years", 365 * 86400.0), ("days", 86400.0), ("hours", 3600.0), ("minutes", 60.0)):
        if value >= size:
            return f"{value / size:,.1f} {unit}"
    return f"{value:.0f} seconds"


def _culprit(config: Mapping[str, Any], defaults: Mapping[str, Any], names: tuple[str, ...]) -> str:
    """The knob(s) that make the run big, as the user typed them (``--hidden 1000000000``)."""
    changed = [n for n in names if config[n] != defaults.get(n)]
    chosen = changed or list(names)
    return ", ".join(f"--{n.replace('_', '-')} {config[n]}" for n in chosen)


def check_size(config: Mapping[str, Any], defaults: Mapping[str, Any], *, memory: int | None = None) -> None:
    """Raise a one-line WorkloadError when the run cannot fit this machine or would take hours."""
    available = machine_memory_bytes() if memory is None else memory
    need = host_bytes(config)
    if available and need > available:
        knobs = _culprit(config, defaults, ("hidden", "layers", "replicas", "micro_batch", "grad_accum", "steps"))
        raise WorkloadError(
            f"{knobs} needs about {human_bytes(need)} of host memory for the emulator; "
            f"this machine has {human_bytes(available)}"
        )
    compile_s = compile_seconds(config)
    if compile_s > MAX_SECONDS:
        raise WorkloadError(
            f"{_culprit(config, defaults, ('layers',))} would take about {human_seconds(compile_s)} to compile "
            f"(about {COMPILE_SECONDS_PER_LAYER * 1000:.0f} ms per layer); the limit is {human_seconds(MAX_SECONDS)}"
        )
    run_s = run_seconds(config)
    if run_s > MAX_SECONDS:
        knobs = _culprit(config, defaults, ("steps", "hidden", "layers", "replicas", "micro_batch", "grad_accum"))
        raise WorkloadError(
            f"{knobs} would take about {human_seconds(run_s)} to execute in the emulator; "
            f"the limit is {human_seconds(MAX_SECONDS)} (lower --steps or the model size)"
        )
