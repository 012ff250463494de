"""MNIST MLP training with Adam, in four optimizer-state layouts (the tutorial's study).

The model is the tutorial's MLP 784-(hidden x layers)-10 with GELU, trained with Adam (fp16
first moment, fp32 second moment, eps 1e-5, bias correction, no weight decay), gradient
accumulation and data-parallel replication. One training step (one ``session.run``) is one
weight update over ``micro_batch * grad_accum * replicas`` samples. The popxl code is in
``workloads._mnist_program``; this module holds the registry entry and the host loop.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from profcompare.backend.knobs import AdviseSpace, Constraint, Derived, Dimension, batch_share, powers_of_two
from profcompare.errors import WorkloadError
from workloads import (
    BATCH_BOUNDS,
    DEPTH_BOUNDS,
    SEED_BOUNDS,
    STEPS_BOUNDS,
    WIDTH_BOUNDS,
    Knob,
    Workload,
    WorkloadResult,
    check_bounds,
    register_checker,
    require,
)
from workloads._mnist_limits import check_size
from workloads.data import Dataset, load_mnist, missing_idx_files, synthetic_mnist

VARIANTS = {
    "onchip": "Adam state in tile memory on every replica; gradients all-reduced (mean)",
    "onchip-sharded": "Adam state in tile memory, sharded across replicas (RTS) above sharded_threshold",
    "offchip": "Adam state in Streaming Memory (remote buffers), loaded and stored per variable, unsharded",
    "offchip-sharded": "Adam state in Streaming Memory with replicated tensor sharding above sharded_threshold",
}

_MAX_REPLICAS = 64  # assumption: the largest data-parallel pod slice we model (IPU-POD64)
#: sharded_threshold is an element count; 1e10 is the usual way to say "shard nothing", and any
#: value up to int64's largest compares with the element counts of the program
_MAX_THRESHOLD = 2**63 - 1

KNOBS = (
    Knob("replicas", int, 4, "data-parallel replicas (a power of two)", bounds=(1, _MAX_REPLICAS)),
    Knob("grad_accum", int, 8, "micro-batches accumulated per weight update", bounds=BATCH_BOUNDS),
    Knob("micro_batch", int, 8, "samples per micro-batch per replica", bounds=BATCH_BOUNDS),
    Knob("sharded_threshold", int, 512, "shard tensors with at least this many elements (sharded variants)",
         bounds=(1, _MAX_THRESHOLD)),
    Knob("hidden", int, 512, "width of each hidden layer", bounds=WIDTH_BOUNDS),
    Knob("layers", int, 3, "number of hidden layers", bounds=DEPTH_BOUNDS),
    Knob("steps", int, 2, "training steps (weight updates) to run", bounds=STEPS_BOUNDS),
    Knob("lr", float, 1e-3, "Adam learning rate"),
    Knob("seed", int, 42, "seed for weights and synthetic data", bounds=SEED_BOUNDS),
    Knob("device", str, "ipu_hw", "popxl device name", choices=("ipu_hw", "ipu_model")),
    Knob(
        "data",
        str,
        "",
        "directory with MNIST IDX files (torchvision layout, gz or not); empty = synthetic",
        path=True,
    ),
)


def check_config(config: Mapping[str, Any]) -> None:
    """Raise a one-line WorkloadError for knob values outside their valid ranges."""
    check_bounds(KNOBS, config)
    replicas = config["replicas"]
    require(
        1 <= replicas <= _MAX_REPLICAS and replicas & (replicas - 1) == 0,
        "replicas",
        replicas,
        "powers of two from 1 to 64 (1, 2, 4, 8, 16, 32, 64)",
    )
    require(config["lr"] > 0, "lr", config["lr"], "numbers > 0")
    check_size(config, {knob.name: knob.default for knob in KNOBS})
    require(
        not config["data"] or Path(config["data"]).is_dir(),
        "data",
        config["data"],
        "existing directories holding MNIST IDX files, or '' for synthetic data",
    )
    # the files too, so that a wrong directory fails here and not inside every variant
    missing = missing_idx_files(Path(config["data"])) if config["data"] else []
    if missing:
        raise WorkloadError(
            f"bad value {config['data']!r} for knob 'data': no MNIST file {' or '.join(missing)} (.gz or not) "
            "in its MNIST/raw/, raw/ or itself (the torchvision layout)"
        )


def samples_per_step(config: Mapping[str, Any]) -> int:
    """Return micro_batch * grad_accum * replicas (samples consumed by one weight update)."""
    return int(config["micro_batch"]) * int(config["grad_accum"]) * int(config["replicas"])


def training_data(config: Mapping[str, Any]) -> Dataset:
    """Return the training set: MNIST from ``config['data']`` or the synthetic set (enough
    samples for every step without repeats)."""
    if config["data"]:
        return load_mnist(config["data"], "train")
    return synthetic_mnist(samples_per_step(config) * int(config["steps"]), int(config["seed"]))


def step_batches(dataset: Dataset, config: Mapping[str, Any]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Return (images, labels) for each step: a seeded shuffle of the dataset, taken in order
    and wrapping around when the dataset is smaller than steps * samples_per_step."""
    per_step = samples_per_step(config)
    steps = int(config["steps"])
    order = np.random.default_rng(int(config["seed"]) + 1).permutation(len(dataset))
    needed = per_step * steps
    index = np.resize(order, needed)
    batches = []
    for step in range(steps):
        chosen = index[step * per_step : (step + 1) * per_step]
        batches.append((dataset.images[chosen], dataset.labels[chosen]))
    return batches


def backend_name(popxl_module: Any) -> str:
    """Return "sim" when ``popxl_module`` is the emulator's popxl, "sdk" otherwise."""
    return "sim" if popxl_module.__name__.startswith("profcompare.emulator") else "sdk"


def run(variant: str, config: Mapping[str, Any]) -> WorkloadResult:
    """Build the ``variant`` program, create its Session (where the sim compiles and writes its
    autoReport; may raise IpuOutOfMemoryError) and train ``config['steps']`` weight updates.
    Returns the per-step mean losses and the build / compile / run times."""
    if variant not in VARIANTS:
        raise_unknown_variant(variant)
    config = dict(config)
    check_config(config)
    dataset = training_data(config)  # read the data first: a bad --data fails before building
    batches = step_batches(dataset, config)

    from workloads import _mnist_program as program_module  # imports the SDK seam

    popxl = program_module.popxl
    start = time.perf_counter()
    program = program_module.build_program(variant, config)
    built = time.perf_counter()
    session = popxl.Session(program.ir, config["device"])
    compiled = time.perf_counter()
    losses = []
    with session:
        for images, labels in batches:
            outputs = session.run(program_module.host_inputs(program, images, labels))
            losses.append(float(np.mean(outputs[program.loss_stream])))
    finished = time.perf_counter()
    return WorkloadResult(
        variant=variant,
        backend=backend_name(popxl),
        losses=tuple(losses),
        samples_per_step=samples_per_step(config),
        steps=int(config["steps"]),
        build_seconds=built - start,
        compile_seconds=compiled - built,
        run_seconds=finished - compiled,
        extra={"data": dataset.source},
    )


#: variant -> (Adam state in Streaming Memory, sharded over the replicas)
_LAYOUTS = {
    "onchip": (False, False),
    "onchip-sharded": (False, True),
    "offchip": (True, False),
    "offchip-sharded": (True, True),
}


def layout(variant: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The layout ``variant`` chooses with ``config``: ``optimizer_state`` ("onchip" | "offchip"),
    ``rts`` (Adam state sharded over the replicas), ``sharded_threshold`` (elements; only when
    sharded), ``replicas`` and ``io_tiles`` (none: the program sets no I/O tiles)."""
    if variant not in _LAYOUTS:
        raise_unknown_variant(variant)
    offchip, rts = _LAYOUTS[variant]
    chosen: dict[str, Any] = {"optimizer_state": "offchip" if offchip else "onchip", "rts": rts}
    if rts:
        chosen["sharded_threshold"] = int(config["sharded_threshold"])
    chosen["replicas"] = int(config["replicas"])
    chosen["io_tiles"] = 0
    return chosen


def raise_unknown_variant(variant: str) -> None:
    """Raise the WorkloadError for a variant this workload does not have."""
    from profcompare.errors import WorkloadError

    raise WorkloadError(f"unknown mnist variant {variant!r}; valid variants: {', '.join(VARIANTS)}")


WORKLOAD = Workload(
    name="mnist",
    description=(
        "MNIST MLP (784-512x3-10, GELU) trained with Adam: optimizer state on chip or in "
        "Streaming Memory, with or without RTS"
    ),
    variants=VARIANTS,
    knobs=KNOBS,
    run=run,
    layout=layout,
)

register_checker(WORKLOAD.name, check_config)

#: The layout space ``profcompare advise mnist`` searches: the four state layouts, data-parallel
#: replicas up to the machine's IPUs, the RTS threshold of the sharded variants and how the fixed
#: global batch is split into micro-batches and accumulation (4 x 3 x 4 = 96 points on 4 IPUs).
ADVISE = AdviseSpace(
    workload=WORKLOAD.name,
    variants=tuple(VARIANTS),
    dimensions=(
        Dimension("replicas", powers_of_two(1, 16)),
        # 262145 shards only fc1's state (784 x 512 elements), 1024 every weight's, 512 the biases' too
        Dimension("sharded_threshold", (512, 1024, 262145), only_for=("onchip-sharded", "offchip-sharded")),
        Dimension("micro_batch", (4, 8, 16, 32)),
    ),
    derived=(
        Derived("grad_accum", "micro_batch x grad_accum x replicas = global batch",
                lambda knobs, context: batch_share(context.global_batch, (knobs["micro_batch"], knobs["replicas"]))),
    ),
    constraints=(Constraint("replicas exceed --ipus", lambda knobs, context: knobs["replicas"] <= context.ipus),),
    default_ipus=4,  # the tutorial's machine: one IPU-M2000 (4 IPUs)
    default_global_batch=256,  # the tutorial's: micro_batch 8 x grad_accum 8 x replicas 4
    global_batch_rule="micro_batch x grad_accum x replicas",
    headline=("replicas", "micro_batch", "grad_accum", "sharded_threshold"),
    notes=("the model size (hidden, layers) is not searched: fix it with --fix hidden=1024 or search it with "
           "--set hidden=256,512",),
)
