"""Device data and the cycle model's rules."""

from __future__ import annotations

import dataclasses

import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.cycles import PHASE_INDEX
from profcompare.emulator.compile.mapping import linear_split
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.emulator.targets import BOW, MK1, MK2, get_device, num_ipus_for
from profcompare.errors import ProfcompareError


@pytest.mark.parametrize("spec", [MK1, MK2, BOW])
def test_every_number_has_a_source(spec):
    for f in dataclasses.fields(spec):
        if f.name in ("architecture", "sources"):
            continue
        src = spec.sources[f.name]
        assert src.startswith(("facts", "ASSUMPTION", "calibrated")), (f.name, src)


def test_generations():
    assert (MK2.tiles_per_ipu, MK2.bytes_per_tile) == (1472, 624 * 1024)
    assert (MK1.tiles_per_ipu, MK1.bytes_per_tile) == (1216, 256 * 1024)
    assert BOW.clock_hz > MK2.clock_hz and BOW.tiles_per_ipu == MK2.tiles_per_ipu
    assert get_device(None) is MK2 and get_device("GC2") is MK1 and get_device("Bow") is BOW
    with pytest.raises(ProfcompareError, match="unknown IPU target"):
        get_device("mk9")


@pytest.mark.parametrize("replicas,ipus", [(1, 1), (2, 2), (3, 4), (4, 4), (5, 8), (8, 8)])
def test_replicas_map_to_power_of_two_ipus(replicas, ipus):
    assert num_ipus_for(replicas) == ipus
    assert MK2.target(replicas).num_ipus == ipus


def _collective_program(kind: str, replicas: int, n: int = 1_000_000):
    b = ProgramBuilder(replicas=replicas)
    g = b.variable("g", (n,), kind="accumulator")
    shard = -(-n // replicas)
    if kind == "ReplicatedAllReduceInplace":
        b.op(kind, [g], [("g_red", (n,), "float32")], modified=[g], attrs={"op": "mean"}, name="c")
    elif kind == "ReplicatedReduceScatter":
        b.op(kind, [g], [("g_shard", (shard,), "float32")], attrs={"op": "add"}, name="c")
    return b.build()


def test_all_reduce_is_a_ring_over_ipu_links():
    n, nbytes = 1_000_000, 4_000_000
    for r in (2, 4, 8):
        c = compile_program(_collective_program("ReplicatedAllReduceInplace", r))
        cyc = c.static_cycles[0]
        link = 2 * (r - 1) / r * nbytes / (2 * MK2.ipu_link_bytes_per_s) * MK2.clock_hz
        assert cyc[PHASE_INDEX["collective"]] == pytest.approx(link, abs=1)
        assert cyc[PHASE_INDEX["sync"]] == 2 * (r - 1) * MK2.global_sync_cycles
    single = compile_program(_collective_program("ReplicatedAllReduceInplace", 1))
    assert single.static_cycles[0][PHASE_INDEX["collective"]] == 0
    rs = compile_program(_collective_program("ReplicatedReduceScatter", 4)).static_cycles[0]
    ar = compile_program(_collective_program("ReplicatedAllReduceInplace", 4)).static_cycles[0]
    assert rs[PHASE_INDEX["collective"]] == pytest.approx(ar[PHASE_INDEX["collective"]] / 2, abs=1)
    assert n


def test_streaming_memory_time_is_bytes_over_bandwidth():
    b = ProgramBuilder()
    bid = b.remote_buffer("s", (250_000,), "float32")
    b.op("RemoteLoad", [], [("s_loaded", (250_000,), "float32")], attrs={"remote_buffer": bid})
    slow = compile_program(b.build(), MK2.replace(streaming_bytes_per_s=1e9))
    fast = compile_program(b.build(), MK2.replace(streaming_bytes_per_s=2e9))
    assert slow.phase_cycles["streaming_memory"] == pytest.approx(1e6 / 1e9 * MK2.clock_hz, abs=1)
    assert fast.phase_cycles["streaming_memory"] == pytest.approx(slow.phase_cycles["streaming_memory"] / 2, abs=1)
    assert slow.phase_cycles["sync"] == MK2.global_sync_cycles


def test_matmul_compute_uses_amp_rate():
    b = ProgramBuilder()
    w = b.variable("w", (1024, 1024))
    (x,) = b.op("HostLoad", [], [("x", (256, 1024), "float32")], attrs={"stream": "x"})
    b.op("MatMul", [x, w], [("y", (256, 1024), "float32")], flops=2 * 256 * 1024 * 1024, name="mm")
    c = compile_program(b.build())
    amp = next(s for s in c.steps.static if s.name == "mm")
    compute = c.static_cycles[amp.index][PHASE_INDEX["compute"]]
    plan_tiles = linear_split(1024 * 1024, 4, 1472).tiles_used  # tiles holding the weight
    assert plan_tiles == 1469
    assert compute == pytest.approx(2 * 256 * 1024 * 1024 / (plan_tiles * 32) + MK2.vertex_overhead_cycles, abs=2)


def test_model_document_explains_every_device_field():
    import pathlib

    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "ipu-model.md").read_text()
    for f in dataclasses.fields(MK2):
        if f.name not in ("architecture", "sources"):
            assert f"`{f.name}`" in doc, f.name
    for family in MK2.codelet_bytes:
        assert f"| {family} |" in doc, family
