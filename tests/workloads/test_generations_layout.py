"""Every MNIST variant builds under both popxl-addons generations with the same layout: the same
per-replica optimizer state on chip and the same Streaming Memory (tutorial defaults: Adam
state 5,594,204 B unsharded, 1,398,620 B sharded over 4 replicas)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from profcompare import sdk
from profcompare.emulator.lowering import lower
from workloads import find_variant, parse_knobs
from workloads._mnist_program import build_program
from workloads.mnist import run as run_mnist

VARIANTS = ("onchip", "onchip-sharded", "offchip", "offchip-sharded")
PARAMS = [784 * 512, 512, 512 * 512, 512, 512 * 512, 512, 512 * 10, 10]  # the tutorial's MLP
UNSHARDED_STATE = 5_594_204
SHARDED_STATE = 1_398_620


def _layout(variant: str, generation: str, monkeypatch: pytest.MonkeyPatch, **knobs: object) -> dict[str, object]:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", generation)
    assert sdk.addons_generation("sim") == generation
    program = lower(build_program(variant, parse_knobs(find_variant(variant), knobs)).ir, "ipu_hw")
    main_state = [t for t in program.tensors.values()
                  if t.graph == program.main_graph and t.storage == "variable" and t.kind == "optimizer_state"]
    buffers = program.remote_buffers
    return {
        "state_on_chip_bytes": sum(t.nbytes for t in main_state),
        "streaming_memory_bytes": sum(b.entries * math.prod(b.shape) * np.dtype(b.dtype).itemsize for b in buffers),
        "state_shapes": sorted((t.name.removesuffix("_rts"), t.shape, t.meta_shape) for t in main_state),
        "buffers": sorted((b.name, b.shape, b.meta_shape) for b in buffers),
    }


@pytest.mark.parametrize("variant", VARIANTS)
def test_both_generations_build_the_same_layout(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    old = _layout(variant, "3.0", monkeypatch)
    new = _layout(variant, "3.4", monkeypatch)
    assert old == new


def test_tutorial_state_bytes_per_variant(monkeypatch: pytest.MonkeyPatch) -> None:
    for generation in ("3.0", "3.4"):
        layouts = {v: _layout(v, generation, monkeypatch) for v in VARIANTS}
        assert layouts["onchip"]["state_on_chip_bytes"] == UNSHARDED_STATE
        assert layouts["onchip"]["streaming_memory_bytes"] == 0
        assert layouts["offchip"]["state_on_chip_bytes"] == 0
        assert layouts["offchip"]["streaming_memory_bytes"] == UNSHARDED_STATE
        assert layouts["offchip-sharded"]["state_on_chip_bytes"] == 0
        assert layouts["offchip-sharded"]["streaming_memory_bytes"] == SHARDED_STATE
        # on chip, sharded: the shards of replica_sharded_variable (plus the unsharded fc4.bias state
        # and the 8 steps), each shard also in its Streaming Memory buffer (its WeightsFromHost home)
        assert layouts["onchip-sharded"]["state_on_chip_bytes"] == SHARDED_STATE
        assert layouts["onchip-sharded"]["streaming_memory_bytes"] == SHARDED_STATE - 10 * 6 - 8 * 4


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_trains_identically_under_both_generations(variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
    knobs = {"replicas": 2, "grad_accum": 2, "micro_batch": 4, "hidden": 32, "layers": 1, "sharded_threshold": 64,
             "steps": 2}
    losses = {}
    for generation in ("3.0", "3.4"):
        monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", generation)
        losses[generation] = run_mnist(variant, parse_knobs(find_variant(variant), knobs)).losses
    assert losses["3.0"] == losses["3.4"] and losses["3.0"][1] < losses["3.0"][0]
