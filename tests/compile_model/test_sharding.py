"""Replica sharding shrinks optimiser state; off-chip state leaves tile memory (popxl.md 5)."""

from __future__ import annotations

import math

import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.synthetic import mlp_program

PARAMS = [784 * 512, 512, 512 * 512, 512, 512 * 512, 512, 512 * 10, 10]  # the tutorial's MLP


def _adam_bytes(replicas: int, threshold: int = 512) -> int:
    total = 0
    for n in PARAMS:
        shard = math.ceil(n / replicas) if replicas > 1 and n >= threshold and n % replicas == 0 else n
        total += shard * (2 + 4) + 4  # fp16 first moment, fp32 second moment, fp32 step
    return total


def _state(report, always_live: bool) -> int:
    """Bytes of optimizer_state rows of the variables table that are (not) always live."""
    v = report.variables
    sel = (v["kind"].astype(str) == "optimizer_state") & (v["always_live"] == always_live)
    return int(v.loc[sel, "bytes"].sum())


def _written_state(report) -> int:
    """Bytes of the on-chip optimizer-state variables: since v2 not always live, each live from
    the StreamCopyMid of WeightsFromHost that writes it to the last step of the run. Copies of
    the state inside a shared Adam graph (called for several parameters) are not counted."""
    v = report.variables
    lv = report.liveness
    program_at = lv.set_index("step")["program"].astype(str)
    last = int(lv["step"].max())
    state = v[(v["kind"].astype(str) == "optimizer_state") & ~v["always_live"]]
    written = state[[program_at[int(f)] == f"WeightsFromHost/{n}/Mid"
                     for n, f in zip(state["name"], state["first_step"])]]
    assert (written["last_step"] == last).all()
    assert len(written) in (0, 3 * len(PARAMS))  # first moment, second moment and step per parameter
    return int(written["bytes"].sum())


def test_reference_numbers():
    # shared/reference/popxl.md section 5
    assert _adam_bytes(1) == 5_594_204
    assert _adam_bytes(4) == 1_398_620


@pytest.mark.parametrize("replicas", [2, 4, 8])
def test_sharding_divides_on_chip_state_by_replicas_with_padding(replicas):
    full = compile_program(mlp_program(replicas=replicas, grad_accum=2)).report
    sharded = compile_program(mlp_program(replicas=replicas, grad_accum=2, sharded=True)).report
    # Adam state is written from the host, not always live (v2): nothing of it in always-live memory
    assert _state(full, True) == _state(sharded, True) == 0
    assert _written_state(full) == _adam_bytes(1) == 5_594_204
    assert _written_state(sharded) == _adam_bytes(replicas)
    if replicas == 4:
        assert _written_state(sharded) == 1_398_620
    assert sharded.meta.target.num_replicas == replicas and sharded.meta.target.num_ipus == replicas


def test_padding_of_uneven_shards():
    # 30 elements over 4 replicas -> 8 per replica, the last shard padded (facts 2.6)
    kw = {"layers": 1, "in_features": 3, "out_features": 10, "replicas": 4, "grad_accum": 2, "sharded": True, "threshold": 8}
    tutorial = compile_program(mlp_program(**kw)).report.variables.set_index("name")
    assert tutorial.loc["fc1.weight.second_order", "bytes"] == 30 * 4  # 30 % 4 != 0: the tutorial keeps it whole
    padded = compile_program(mlp_program(**kw, shard_divisible_only=False)).report.variables.set_index("name")
    assert padded.loc["fc1.weight.second_order", "bytes"] == 8 * 4
    assert padded.loc["fc1.weight.first_order", "bytes"] == 8 * 2
    assert padded.loc["fc1.weight.second_order", "shape"] == "[8]"


@pytest.mark.parametrize("sharded", [False, True])
def test_offchip_state_is_streaming_memory_not_tile_memory(sharded):
    onchip = compile_program(mlp_program(replicas=4, grad_accum=4, sharded=sharded)).report
    offchip = compile_program(mlp_program(replicas=4, grad_accum=4, sharded=sharded, remote=True)).report
    expected = _adam_bytes(4 if sharded else 1)
    assert _state(onchip, True) == _state(offchip, True) == 0
    assert _written_state(onchip) == expected
    assert _written_state(offchip) == 0  # nothing written from the host: the state lives in remote buffers
    assert offchip.summary()["streaming_memory_bytes"] == expected
    assert onchip.summary()["streaming_memory_bytes"] == 0
    rb = offchip.remote_buffers
    assert len(rb) == 24 and bool(rb["sharded"].any()) == sharded
    # loaded state is not always live: it appears in the liveness of the RemoteLoad steps
    loaded = offchip.variables[offchip.variables["kind"].astype(str) == "remote_staging"]
    assert len(loaded) and not loaded["always_live"].any()
    assert (offchip.liveness["program_type"].astype(str) == "RemoteLoad").sum() == 24
    variable_onchip = onchip.categories.set_index("category").loc["variable", "bytes"]
    variable_offchip = offchip.categories.set_index("category").loc["variable", "bytes"]
    assert variable_offchip < variable_onchip
