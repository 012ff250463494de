"""GPT (decoder-only transformer) training in several large-model layouts.

The model and its tensor-parallel, data-parallel, phased and RTS layouts are described in
``workloads._gpt_program``; this module holds the registry entry, the knobs and the host loop.
One training step (one ``session.run``) is one weight update over ``micro_batch * grad_accum * dp``
sequences of ``seq`` tokens. Inputs are synthetic token ids (profiles do not depend on them).
At LLM sizes run it with ``--compile-only``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from profcompare.backend.knobs import (
    AdviseSpace,
    Constraint,
    Derived,
    Dimension,
    Infeasible,
    batch_share,
    powers_of_two,
)
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
from workloads._gpt_limits import check_size

VARIANTS = {
    "resident": "weights, gradient accumulators and Adam state in tile memory",
    "resident-offchip": "weights and accumulators in tile memory, Adam state in Streaming Memory",
    "phased": "weights and accumulators in Streaming Memory, loaded per layer; Adam state in Streaming Memory",
    "phased-rts": "as phased, with Adam state and the update sharded over the data-parallel replicas (RTS)",
    "phased-rts-recompute": "as phased-rts, decoder layers recomputing their activations in the backward pass",
}

#: variant -> (phased, Adam state off chip, RTS, recompute)
_LAYOUTS = {
    "resident": (False, False, False, False),
    "resident-offchip": (False, True, False, False),
    "phased": (True, True, False, False),
    "phased-rts": (True, True, True, False),
    "phased-rts-recompute": (True, True, True, True),
}

#: assumption: the largest pod we model (IPU-POD256 = 256 replicas of one IPU)
_MAX_REPLICAS = 256
#: assumption: at most half of an IPU's 1,472 tiles as I/O tiles
_MAX_IO_TILES = 736
#: GPT-3 175B has 96 heads; 2**14 is 170 times that (heads divide hidden, so hidden bounds them too)
_HEADS_BOUNDS = (1, 2**14)
#: GPT-3 trained on 2,048-token sequences, the longest contexts published are about 1M tokens:
#: 2**20. The seq x seq causal mask the program builds on the host is checked against this
#: machine's memory separately (check_size).
_SEQ_BOUNDS = (1, 2**20)
#: GPT-3's vocabulary has 50,257 tokens, the largest published about 256k; 2**22 is 16 times that.
_VOCAB_BOUNDS = (1, 2**22)

KNOBS = (
    Knob("layers", int, 2, "decoder layers", bounds=DEPTH_BOUNDS),
    Knob("hidden", int, 64, "hidden size", bounds=WIDTH_BOUNDS),
    Knob("heads", int, 4, "attention heads (divisible by tp; hidden divisible by heads)", bounds=_HEADS_BOUNDS),
    Knob("seq", int, 16, "sequence length (tokens)", bounds=_SEQ_BOUNDS),
    Knob("vocab", int, 128, "vocabulary size", bounds=_VOCAB_BOUNDS),
    Knob("micro_batch", int, 2, "sequences per micro-batch per data-parallel replica", bounds=BATCH_BOUNDS),
    Knob("grad_accum", int, 2, "micro-batches accumulated per weight update", bounds=BATCH_BOUNDS),
    Knob("tp", int, 2, "tensor-parallel replicas (a power of two)", bounds=(1, _MAX_REPLICAS)),
    Knob("dp", int, 2, "data-parallel replicas (a power of two)", bounds=(1, _MAX_REPLICAS)),
    Knob("io_tiles", int, 0, "tiles per IPU set aside as I/O tiles", bounds=(0, _MAX_IO_TILES)),
    Knob("amp", float, 0.6, "available memory proportion of every matmul (PopLibs' default 0.6)"),
    # the values are checked by check_config (no ``choices``: a long metavar would widen every
    # workload's option column in `run --help`)
    Knob("state", str, "variant", "where Adam state lives: variant (the variant's choice), onchip or offchip"),
    Knob("recompute", str, "variant", "recompute decoder activations in the backward pass: variant, on or off"),
    Knob("steps", int, 2, "training steps (weight updates) to run", bounds=STEPS_BOUNDS),
    Knob("lr", float, 1e-3, "Adam learning rate"),
    Knob("seed", int, 42, "seed for weights and synthetic tokens", bounds=SEED_BOUNDS),
    Knob("device", str, "ipu_hw", "popxl device name", choices=("ipu_hw", "ipu_model")),
)

def check_config(config: Mapping[str, Any]) -> None:
    """Raise a one-line WorkloadError for knob values outside their valid ranges."""
    check_bounds(KNOBS, config)
    for name in ("tp", "dp"):
        value = config[name]
        require(1 <= value <= _MAX_REPLICAS and value & (value - 1) == 0, name, value,
                "powers of two from 1 to 256")
    require(config["tp"] * config["dp"] <= _MAX_REPLICAS, "dp", config["dp"],
            f"powers of two with tp * dp <= {_MAX_REPLICAS}")
    require(config["heads"] % config["tp"] == 0, "heads", config["heads"], f"multiples of tp ({config['tp']})")
    require(config["vocab"] % config["tp"] == 0, "vocab", config["vocab"], f"multiples of tp ({config['tp']})")
    require(config["hidden"] % config["heads"] == 0, "hidden", config["hidden"],
            f"multiples of heads ({config['heads']})")
    require(0 <= config["io_tiles"] <= _MAX_IO_TILES, "io_tiles", config["io_tiles"],
            f"integers from 0 to {_MAX_IO_TILES}")
    require(config["state"] in ("variant", "onchip", "offchip"), "state", config["state"], "variant, onchip, offchip")
    require(config["recompute"] in ("variant", "on", "off"), "recompute", config["recompute"], "variant, on, off")
    require(0 < config["amp"] <= 1, "amp", config["amp"], "numbers in (0, 1]")
    require(config["lr"] > 0, "lr", config["lr"], "numbers > 0")
    check_size(config, {knob.name: knob.default for knob in KNOBS})


def layout_of(variant: str, config: Mapping[str, Any]) -> Any:
    """Return the ``Layout`` of ``variant`` with the ``state`` and ``recompute`` knobs applied."""
    from workloads._gpt_program import Layout

    phased, offchip, rts, recompute = _resolved(variant, config)
    return Layout(phased=phased, state_offchip=offchip, rts=rts, recompute=recompute)


def _resolved(variant: str, config: Mapping[str, Any]) -> tuple[bool, bool, bool, bool]:
    """(phased, Adam state off chip, RTS, recompute) of ``variant`` with the ``state`` and
    ``recompute`` knobs applied (WorkloadError for RTS with the state on chip)."""
    phased, offchip, rts, recompute = _LAYOUTS[variant]
    if config["state"] != "variant":
        offchip = config["state"] == "offchip"
    if config["recompute"] != "variant":
        recompute = config["recompute"] == "on"
    if rts and not offchip:
        raise WorkloadError(f"variant {variant!r} shards Adam state in Streaming Memory: it needs state=offchip "
                            "(or state=variant)")
    return phased, offchip, rts, recompute


def layout(variant: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The layout ``variant`` chooses with ``config`` (the ``state`` and ``recompute`` knobs
    applied): ``phased``, ``optimizer_state`` ("onchip" | "offchip"), ``rts``, ``recompute``,
    ``tp``, ``dp``, ``replicas`` (tp x dp), ``io_tiles`` and ``amp`` (the matmuls' available
    memory proportion)."""
    if variant not in VARIANTS:
        raise WorkloadError(f"unknown gpt variant {variant!r}; valid variants: {', '.join(VARIANTS)}")
    phased, offchip, rts, recompute = _resolved(variant, config)
    return {
        "phased": phased,
        "optimizer_state": "offchip" if offchip else "onchip",
        "rts": rts,
        "recompute": recompute,
        "tp": int(config["tp"]),
        "dp": int(config["dp"]),
        "replicas": int(config["tp"]) * int(config["dp"]),
        "io_tiles": int(config["io_tiles"]),
        "amp": float(config["amp"]),
    }


def shape_of(config: Mapping[str, Any]) -> Any:
    """Return the program ``Shape`` of ``config``."""
    from workloads._gpt_program import Shape

    return Shape(**{name: int(config[name]) for name in (
        "layers", "hidden", "heads", "seq", "vocab", "micro_batch", "grad_accum", "tp", "dp")})


def samples_per_step(config: Mapping[str, Any]) -> int:
    """Return micro_batch * grad_accum * dp (sequences consumed by one weight update)."""
    return int(config["micro_batch"]) * int(config["grad_accum"]) * int(config["dp"])


def synthetic_tokens(config: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    """Return (tokens, labels) of shape (steps, grad_accum, dp, micro_batch, seq): random token
    ids, each label the next token of a sequence one longer."""
    rng = np.random.default_rng(int(config["seed"]) + 1)
    shape = (int(config["steps"]), int(config["grad_accum"]), int(config["dp"]), int(config["micro_batch"]))
    sequences = rng.integers(0, int(config["vocab"]), size=shape + (int(config["seq"]) + 1,), dtype=np.int32)
    return sequences[..., :-1], sequences[..., 1:]


def run(variant: str, config: Mapping[str, Any]) -> WorkloadResult:
    """Build the ``variant`` program, create its Session (where the sim compiles and writes its
    autoReport) and train ``config['steps']`` weight updates. Returns the per-step mean losses
    and the build / compile / run times."""
    if variant not in VARIANTS:
        raise WorkloadError(f"unknown gpt variant {variant!r}; valid variants: {', '.join(VARIANTS)}")
    config = dict(config)
    check_config(config)
    layout = layout_of(variant, config)
    shape = shape_of(config)

    from workloads import _gpt_program as program_module  # imports the SDK seam
    from workloads.mnist import backend_name

    popxl = program_module.popxl
    start = time.perf_counter()
    program = program_module.build_program(layout, shape, float(config["lr"]), int(config["seed"]),
                                           int(config["io_tiles"]), float(config["amp"]))
    built = time.perf_counter()
    session = popxl.Session(program.ir, config["device"])
    compiled = time.perf_counter()
    tokens, labels = synthetic_tokens(config)
    losses = []
    with session:
        for step in range(int(config["steps"])):
            outputs = session.run(program_module.host_inputs(program, tokens[step], labels[step]))
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
        extra={"data": "synthetic tokens"},
    )


WORKLOAD = Workload(
    name="gpt",
    description=(
        "GPT decoder-only transformer trained with Adam: tensor and data parallel, resident or "
        "phased (weights per layer from Streaming Memory), Adam state on chip, off chip or RTS"
    ),
    variants=VARIANTS,
    knobs=KNOBS,
    run=run,
    layout=layout,
)

register_checker(WORKLOAD.name, check_config)


def _data_parallel(knobs: Mapping[str, Any], context: Any) -> int:
    """dp = IPUs / tp: every IPU of the machine holds one replica."""
    if knobs["tp"] > context.ipus or context.ipus % knobs["tp"]:
        raise Infeasible("tp does not divide --ipus")
    return int(context.ipus // knobs["tp"])


#: Model sizes ``profcompare advise gpt --size NAME`` searches (the other knobs keep their
#: defaults). ``gptj-6b`` is GPT-J 6B as Graphcore's gptj_6B_1024_pod16 configuration, the size
#: benchmarks/bench_llm.py runs: 28 layers, hidden 4096, 16 heads, sequence 1024, vocabulary 50400,
#: and that configuration's matmul available memory proportion, 0.2.
SIZES: dict[str, dict[str, Any]] = {
    "tiny": {},
    "gptj-6b": {"layers": 28, "hidden": 4096, "heads": 16, "seq": 1024, "vocab": 50400, "amp": 0.2},
}

#: The layout space ``profcompare advise gpt`` searches: TP x DP = --ipus, resident or phased
#: weights, Adam state on or off chip (RTS with phased-rts), recompute, micro-batch (gradient
#: accumulation follows from the fixed global batch), I/O tiles and the matmuls' available memory
#: proportion. The variants resident-offchip
#: and phased-rts-recompute are the state and recompute knobs of resident and phased-rts, so they
#: are not searched twice.
ADVISE = AdviseSpace(
    workload=WORKLOAD.name,
    variants=("resident", "phased", "phased-rts"),
    dimensions=(
        Dimension("tp", lambda context: powers_of_two(1, max(1, context.ipus))),
        Dimension("state", ("onchip", "offchip")),
        Dimension("recompute", ("off", "on")),
        Dimension("micro_batch", (1, 2, 4)),
        Dimension("io_tiles", (0, 128)),
        # PopLibs' default and the value of Graphcore's GPT-J 6B configuration (gptj_6B_1024_pod16)
        Dimension("amp", (0.2, 0.6)),
    ),
    derived=(
        Derived("dp", "tp x dp = --ipus", _data_parallel),
        Derived("grad_accum", "micro_batch x grad_accum x dp = global batch",
                lambda knobs, context: batch_share(context.global_batch, (knobs["micro_batch"], knobs["dp"]))),
    ),
    constraints=(
        Constraint("tp does not divide heads", lambda knobs, context: knobs["heads"] % knobs["tp"] == 0),
        Constraint("tp does not divide vocab", lambda knobs, context: knobs["vocab"] % knobs["tp"] == 0),
        Constraint("RTS needs Adam state off chip",
                   lambda knobs, context: not (knobs["variant"] == "phased-rts" and knobs["state"] == "onchip")),
    ),
    default_ipus=16,  # an IPU-POD16, the machine of the gptj_6B_1024_pod16 configuration
    default_global_batch=16,  # that configuration as bench_llm runs it: micro_batch 1 x grad_accum 16 x dp 1
    global_batch_rule="micro_batch x grad_accum x dp",
    sizes=SIZES,
    headline=("tp", "dp", "state", "recompute", "micro_batch", "grad_accum", "io_tiles"),
    notes=("the matmul available memory proportion (amp) is searched at 0.2 and 0.6 (PopLibs' default; "
           "gptj_6B_1024_pod16 uses 0.2); --set amp=0.1,0.2,0.4,0.6 searches other values",),
)
