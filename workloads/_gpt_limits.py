"""What a GPT run would ask of this machine and of the compile model, estimated from its knobs
before any work starts.

Each knob is bounded on its own (``Knob.bounds``); these checks bound their products. Even under
``--compile-only`` the program builds the seq x seq causal mask on the host, and the compile model
counts every tensor's bytes in int64: a configuration past either is refused in one line naming
the knobs, not discovered inside every variant after a run directory was published.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from profcompare.errors import WorkloadError
from workloads._mnist_limits import HOST_BASE_BYTES, human_bytes, machine_memory_bytes

#: Host bytes per element of the causal mask while it is built (``_gpt_program.Attention``):
#: the bool ``ones`` and its ``triu`` (1 + 1), the float64 ``where`` (8), the float32 constant (4);
#: at most 13 of them are alive at once (the ``ones`` is freed before the ``where``).
MASK_HOST_BYTES_PER_ELEMENT = 13
#: Bytes the compile model can count: its byte columns are int64.
INT64_BYTES = 2**63 - 1
#: Bytes per parameter on a replica: fp32 weight, gradient accumulator and Adam's two moments.
STATE_BYTES_PER_PARAMETER = 16
#: fp32 activations of one decoder layer per token and hidden unit kept for the backward pass
#: (layer norms, q/k/v, attention context, the 4 x hidden feed-forward and their gradients),
#: rounded up.
ACTIVATION_VALUES_PER_TOKEN_HIDDEN = 16
#: fp32 (heads x seq x seq) tensors of one layer: scores, masked scores, probabilities.
ATTENTION_MAPS_PER_LAYER = 3
#: fp32 (tokens x vocab) tensors of the head: logits, exponentials, probabilities.
LOGIT_MAPS = 3

_SIZE_KNOBS = ("layers", "hidden", "heads", "seq", "vocab", "micro_batch", "tp", "dp")


def parameters(config: Mapping[str, Any]) -> int:
    """Parameters of the model: embeddings (vocab and positions), per layer 12 hidden^2 weights
    and 13 hidden biases and norms, and the final norm."""
    hidden, layers = int(config["hidden"]), int(config["layers"])
    embeddings = (int(config["vocab"]) + int(config["seq"])) * hidden
    return embeddings + layers * (12 * hidden * hidden + 13 * hidden) + 2 * hidden


def program_bytes(config: Mapping[str, Any]) -> int:
    """An upper estimate of the bytes of every tensor of the program over all replicas: the
    figure the compile model's int64 byte counts must hold (see the constants above)."""
    tokens = int(config["micro_batch"]) * int(config["seq"])
    hidden, seq = int(config["hidden"]), int(config["seq"])
    attention = ATTENTION_MAPS_PER_LAYER * int(config["heads"]) * int(config["micro_batch"]) * seq * seq
    per_layer = 4 * (ACTIVATION_VALUES_PER_TOKEN_HIDDEN * tokens * hidden + attention)
    head = 4 * LOGIT_MAPS * tokens * int(config["vocab"])
    replicas = int(config["tp"]) * int(config["dp"])
    return replicas * (STATE_BYTES_PER_PARAMETER * parameters(config) + int(config["layers"]) * per_layer + head)


def mask_host_bytes(config: Mapping[str, Any]) -> int:
    """Host memory the program build needs for the causal mask, in bytes, process base included."""
    return HOST_BASE_BYTES + MASK_HOST_BYTES_PER_ELEMENT * int(config["seq"]) ** 2


def _culprit(config: Mapping[str, Any], defaults: Mapping[str, Any], names: tuple[str, ...]) -> str:
    """The knob(s) that make the run big, as the user typed them (``--seq 1000000``)."""
    changed = [n for n in names if config[n] != defaults.get(n)]
    return ", ".join(f"--{n.replace('_', '-')} {config[n]}" for n in (changed or list(names)))


def check_size(config: Mapping[str, Any], defaults: Mapping[str, Any], *, memory: int | None = None) -> None:
    """Raise a one-line WorkloadError when the program's bytes do not fit int64 or its causal
    mask does not fit this machine's memory (``memory`` overrides the machine's, for tests)."""
    total = program_bytes(config)
    if total > INT64_BYTES:
        raise WorkloadError(
            f"{_culprit(config, defaults, _SIZE_KNOBS)} makes a program of about {human_bytes(total)}, more than "
            f"the {human_bytes(INT64_BYTES)} the compile model's int64 byte counts can hold"
        )
    available = machine_memory_bytes() if memory is None else memory
    need = mask_host_bytes(config)
    if available and need > available:
        raise WorkloadError(
            f"{_culprit(config, defaults, ('seq',))} needs about {human_bytes(need)} of host memory to build the "
            f"seq x seq causal mask (even with --compile-only); this machine has {human_bytes(available)}"
        )
