"""Time one training step of the tutorial's MNIST program on the emulator vs plain numpy.

The step is the ``onchip`` variant with the tutorial's settings (4 replicas, gradient
accumulation 8, micro-batch 8, MLP 784-512x3-10): 8 x (forward, loss, backward, accumulate)
on every replica, all-reduce mean, Adam on every variable. The numpy side is the same
arithmetic written directly (``workloads._mnist_numpy``). Prints the median of several runs of
each and their ratio (target: emulator <= 3x numpy).

    python benchmarks/bench_emulator_step.py [--runs 7] [--check] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

# one BLAS thread on both sides unless the caller says otherwise: on a small shared machine a
# multi-threaded BLAS makes both timings erratic (threads spin while competing for cores)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402 - after the thread settings

os.environ["PROFCOMPARE_BACKEND"] = "sim"
os.environ.pop("POPLAR_ENGINE_OPTIONS", None)  # time execution only, write no report
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TARGET_RATIO = 3.0


def _config(**overrides: object) -> dict:
    from workloads import find_variant, parse_knobs

    return parse_knobs(find_variant("onchip"), {"steps": 1, **overrides})


def _batch(config: dict, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    from workloads.data import synthetic_mnist
    from workloads.mnist import samples_per_step

    data = synthetic_mnist(samples_per_step(config), seed)
    return data.images, data.labels


def measure(config: dict, runs: int, profile: bool = False) -> tuple[list[float], list[float]]:
    """Return (emulator seconds, numpy seconds) per weight update, ``runs`` each.

    The two sides alternate run by run so that load from other processes affects both alike;
    the numpy side starts from the emulator's initial weights."""
    from workloads import _mnist_program as prog
    from workloads._mnist_numpy import NumpyTrainer

    program = prog.build_program("onchip", config)
    session = prog.popxl.Session(program.ir, config["device"])
    images, labels = _batch(config)
    inputs = prog.host_inputs(program, images, labels)
    ga, r, b = config["grad_accum"], config["replicas"], config["micro_batch"]
    np_images, np_labels = images.reshape(ga, r, b, 28, 28), labels.reshape(ga, r, b)
    emulator, reference = [], []
    profiler = cProfile.Profile() if profile else None
    with session:
        initial = session.get_tensors_data(program.variables.tensors)
        keys = {t: key for key, t in program.variables.named_tensors.items()}
        trainer = NumpyTrainer({keys[t]: v for t, v in initial.items()}, lr=config["lr"])
        session.run(inputs)  # warm-up both sides
        trainer.step(np_images, np_labels)
        for _ in range(runs):
            if profiler:
                profiler.enable()
            start = time.perf_counter()
            session.run(inputs)
            emulator.append(time.perf_counter() - start)
            if profiler:
                profiler.disable()
            start = time.perf_counter()
            trainer.step(np_images, np_labels)
            reference.append(time.perf_counter() - start)
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
    return emulator, reference


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs of each side (median reported)")
    parser.add_argument("--check", action="store_true", help=f"exit 1 when the ratio exceeds {TARGET_RATIO}")
    parser.add_argument("--profile", action="store_true", help="print a cProfile of the emulator runs")
    args = parser.parse_args(argv)
    config = _config()
    emu_times, np_times = measure(config, args.runs, args.profile)
    emu, ref = statistics.median(emu_times), statistics.median(np_times)
    ratio = emu / ref
    print(
        f"onchip step (replicas {config['replicas']}, grad_accum {config['grad_accum']}, "
        f"micro_batch {config['micro_batch']}, hidden {config['hidden']}x{config['layers']}), median of {args.runs}:"
    )
    print(f"  emulator : {emu * 1e3:8.1f} ms")
    print(f"  numpy    : {ref * 1e3:8.1f} ms")
    print(f"  ratio    : {ratio:8.2f}x (target <= {TARGET_RATIO:.0f}x)")
    return 1 if args.check and ratio > TARGET_RATIO else 0


if __name__ == "__main__":
    raise SystemExit(main())
