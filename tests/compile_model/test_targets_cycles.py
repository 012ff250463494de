"""Device data and the cycle model's rules."""

from __future__ import annotations

import dataclasses
import math

import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.amp import plan_partition
from profcompare.emulator.compile.cycles import PHASE_INDEX
from profcompare.emulator.compile.mapping import linear_split
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.emulator.targets import (
    BOW,
    FITTED_REMOTE_TRANSFER_SECONDS,
    FITTED_RUN_OVERHEAD_SECONDS,
    MK1,
    MK2,
    get_device,
    num_ipus_for,
)
from profcompare.errors import ProfcompareError

FITTED = {"remote_transfer_seconds", "run_overhead_seconds"}


@pytest.mark.parametrize("spec", [MK1, MK2, BOW])
def test_every_number_has_a_source(spec):
    for f in dataclasses.fields(spec):
        if f.name in ("architecture", "sources"):
            continue
        src = spec.sources[f.name]
        # a reference row ("facts ...", or a figure "anchored on facts ..."), a stated ASSUMPTION,
        # one of the two fitted constants, or a block length measured in the real trace in shared/data
        assert src.startswith(("facts", "anchored on facts", "ASSUMPTION", "fitted", "shared/data/")), (f.name, src)
        # only the two fitted constants may be fitted; every trace figure names the trace file
        assert not src.startswith("fitted") or f.name in FITTED, (f.name, src)
        assert not src.startswith("shared/data/") or ".sqlite" in src, (f.name, src)


def test_fitted_constants_are_the_mk2_fit():
    assert {n for n, s in MK2.sources.items() if s.startswith("fitted")} == FITTED
    assert MK2.remote_transfer_seconds == FITTED_REMOTE_TRANSFER_SECONDS == 8.500e-5
    assert MK2.run_overhead_seconds == FITTED_RUN_OVERHEAD_SECONDS == 6.956e-4
    # the trace's measured block lengths (median cycles, shared/data Graph Analyser trace)
    assert (MK2.internal_sync_cycles, MK2.global_sync_cycles) == (94, 131)
    # its host stream copies matched across the 2 IPUs: the data copy's Begin and End, a Mid's fixed
    # cost, the control copy's Begin and End, and the run's start-of-run wait for the host
    assert (MK2.stream_copy_begin_cycles, MK2.stream_copy_end_cycles, MK2.stream_copy_mid_cycles) == (7903, 9870, 1109)
    assert (MK2.host_sync_begin_cycles, MK2.host_sync_end_cycles, MK2.run_start_wait_cycles) == (269, 140, 464_832)
    assert (MK2.vertex_overhead_cycles, MK2.exchange_overhead_cycles) == (242, 117)
    assert (MK2.gateway_bytes_per_s, MK2.ipus_per_gateway, MK2.host_bytes_per_s) == (15.75e9, 4, 5.5e9)
    assert not hasattr(MK2, "streaming_bytes_per_s")


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


def _ring_collective_cycles(r: int, ring_steps: int, reducing_steps: int, reduced_elements: int,
                            link_bytes: int, n: int = 1_000_000) -> int:
    """collective phase of a ring over r replicas on a [n] fp32 tensor, by the v2 rules."""
    split = linear_split(n, 4, MK2.tiles_per_ipu)
    worst_tile_bytes = -(-split.num_grains // split.tiles_used) * split.grain * 4
    # the exchange into the transfer buffers: the latency, the reach over g's tiles, the words
    reach = MK2.exchange_reach_cycles * (split.tiles_used - 1) / (MK2.tiles_per_ipu - 1)
    pre = math.ceil(MK2.exchange_latency_cycles + reach + worst_tile_bytes / MK2.exchange_bytes_per_cycle)
    per_step = math.ceil(link_bytes / ring_steps / (2 * MK2.ipu_link_bytes_per_s) * MK2.clock_hz)
    per_tile = -(-reduced_elements // (split.tiles_used * reducing_steps))
    reduce = math.ceil(per_tile / MK2.vector_width(4) + MK2.vertex_overhead_cycles)
    return pre + ring_steps * (MK2.global_sync_cycles + per_step) + reducing_steps * reduce


def test_all_reduce_is_a_ring_over_ipu_links():
    n, nbytes = 1_000_000, 4_000_000
    for r in (2, 4, 8):
        c = compile_program(_collective_program("ReplicatedAllReduceInplace", r))
        ring = [s for s in c.steps.static if s.op]
        types = [s.type for s in ring]
        # DoExchange, per ring step an external Sync + GlobalExchange (+ Reduce on the first N-1), internal Sync
        assert types.count("GlobalExchange") == 2 * (r - 1)
        assert sum(s.name.endswith("External Sync") for s in ring) == 2 * (r - 1)
        assert sum(s.role == "ring_reduce" for s in ring) == r - 1
        assert types[0] == "DoExchange" and ring[-1].name == "c/Internal Sync"
        link = 2 * (r - 1) * nbytes // r  # bytes each IPU sends over its links
        expected = _ring_collective_cycles(r, 2 * (r - 1), r - 1, (r - 1) * n // r, link)
        assert c.phase_cycles["collective"] == expected
        # an Internal Sync before its first exchange (ExchangePre) and the run's closing one
        assert c.phase_cycles["sync"] == 2 * MK2.internal_sync_cycles
    # worked by hand for 4 replicas (1,471 tiles hold g, at most 680 elements each):
    # pre 88 + 39 x 1,470 / 1,471 + 2,720 B / 4 = 806.97 -> 807 (exchange_cost.py); 6 x 131 syncs;
    # 6 x ceil(1e6 B / 64e9 B/s x 1.33e9) = 6 x 20,782; 3 reducing steps x (ceil(750,000 / (1,471 x 3))
    # / 2 + 242) = 3 x 327
    ar = compile_program(_collective_program("ReplicatedAllReduceInplace", 4))
    assert ar.phase_cycles["collective"] == 807 + 6 * 131 + 6 * 20_782 + 3 * 327 == 127_266
    for st in ar.steps.static:
        if st.type == "GlobalExchange":
            assert ar.static_cycles[st.index][PHASE_INDEX["collective"]] == 20_782
        elif st.name.endswith("External Sync"):
            assert ar.static_cycles[st.index][PHASE_INDEX["collective"]] == MK2.global_sync_cycles
    single = compile_program(_collective_program("ReplicatedAllReduceInplace", 1))
    assert single.phase_cycles["collective"] == 0
    assert not any(s.type == "GlobalExchange" for s in single.steps.static)
    # reduce-scatter: the N-1 reducing steps of the all-reduce, without its all-gather half
    rs = compile_program(_collective_program("ReplicatedReduceScatter", 4))
    assert sum(s.type == "GlobalExchange" for s in rs.steps.static) == 3
    assert rs.phase_cycles["collective"] == 807 + 3 * 131 + 3 * 20_782 + 3 * 327 == 64_527
    assert ar.phase_cycles["collective"] - rs.phase_cycles["collective"] == 3 * (131 + 20_782)


def _remote_load_program(replicas: int = 1, n: int = 250_000):
    b = ProgramBuilder(replicas=replicas)
    bid = b.remote_buffer("s", (n,), "float32")
    b.op("RemoteLoad", [], [("s_loaded", (n,), "float32")], attrs={"remote_buffer": bid}, name="load")
    return b.build()


def test_streaming_memory_time_is_fixed_cost_plus_bytes_over_gateway_bandwidth():
    fixed = math.ceil(MK2.remote_transfer_seconds * MK2.clock_hz)
    assert fixed == 113_051  # 8.500e-5 s x 1.33e9 Hz = 113,050.0 (ceil of the float product)
    slow = compile_program(_remote_load_program(), MK2.replace(gateway_bytes_per_s=1e9))
    fast = compile_program(_remote_load_program(), MK2.replace(gateway_bytes_per_s=2e9))
    assert [s.type for s in slow.steps.static] == ["StreamCopyBegin", "RemoteLoad", "StreamCopyEnd"]
    assert slow.phase_cycles["streaming_memory"] == pytest.approx(fixed + 1e6 / 1e9 * MK2.clock_hz, abs=1)
    assert fast.phase_cycles["streaming_memory"] == pytest.approx(fixed + 1e6 / 2e9 * MK2.clock_hz, abs=1)
    assert slow.phase_cycles["streaming_memory"] - fast.phase_cycles["streaming_memory"] == pytest.approx(
        665_000, abs=1)
    assert slow.phase_cycles["sync"] == MK2.global_sync_cycles  # the StreamCopyEnd
    # the default gateway: 1e6 B / 15.75 GB/s x 1.33e9 Hz = 84,444.4 -> 84,445 cycles
    default = compile_program(_remote_load_program())
    assert default.phase_cycles["streaming_memory"] == 113_051 + 84_445
    end = default.steps.static[2]
    assert default.static_cycles[end.index][PHASE_INDEX["sync"]] == 131


def test_gateway_is_shared_by_the_replicas_transferring_at_once():
    one, four, eight = (compile_program(_remote_load_program(r)) for r in (1, 4, 8))
    # sharing = min(replicas, ipus_per_gateway): 4 IPUs move 4 x 1e6 B through one gateway
    assert one.phase_cycles["streaming_memory"] == 113_051 + 84_445
    assert four.phase_cycles["streaming_memory"] == 113_051 + 337_778  # ceil(4e6 / 15.75e9 x 1.33e9)
    assert four.phase_cycles["streaming_memory"] > one.phase_cycles["streaming_memory"]
    assert eight.phase_cycles["streaming_memory"] == four.phase_cycles["streaming_memory"]  # 4 per gateway


def test_host_copy_begin_and_end_are_measured_mid_is_bytes_over_shared_host_link():
    for replicas, mid in ((1, 241_819), (2, 483_637), (4, 967_273), (8, 967_273)):
        b = ProgramBuilder(replicas=replicas)
        b.op("HostLoad", [], [("x", (250_000,), "float32")], attrs={"stream": "x"}, name="load_x")
        c = compile_program(b.build())
        by_name = {s.name: s for s in c.steps.static}
        assert list(by_name) == ["load_x/Begin", "load_x/Mid", "load_x/End"]

        def host_io(name, c=c, by_name=by_name):
            return int(c.static_cycles[by_name[name].index][PHASE_INDEX["host_io"]])

        # Begin: the control copy (269 + 1,109 + 140) and the data copy's Begin 7,903
        assert host_io("load_x/Begin") == 269 + 1109 + 140 + MK2.stream_copy_begin_cycles == 9421
        assert host_io("load_x/End") == MK2.stream_copy_end_cycles == 9870
        sharing = min(replicas, MK2.ipus_per_gateway)
        assert host_io("load_x/Mid") == 1109 + math.ceil(1e6 * sharing / MK2.host_bytes_per_s * MK2.clock_hz) == 1109 + mid
        # the run opens with two control copies, the second waiting 464,832 cycles for the host,
        # then the program Switch's control broadcast on one IPU: an internal sync (94) and the
        # exchange of its 4 bytes to every tile (exchange_cost.py: the latency 88 + the reach to
        # every tile 39 + 4 / 4 = 128, the real trace's copy103_switchControlBroadcast88/ExchangePre)
        assert c.opening == (0, 2 * 1518 + 464_832 + 94 + 128,
                             (("host_io", 2 * 1518 + 464_832), ("sync", 94), ("exchange", 128)))
        assert c.phase_cycles["host_io"] == 9421 + 1109 + mid + 9870 + 2 * 1518 + 464_832


def test_seconds_per_step_is_every_phase_including_runtime_over_clock():
    c = compile_program(_remote_load_program(4))
    runtime = math.ceil(MK2.run_overhead_seconds * MK2.clock_hz)
    # no host transfer: the whole host/runtime time is outside the device (6.956e-4 s x 1.33e9 Hz)
    assert runtime == c.phase_cycles["runtime"] == c.runtime_cycles == 925_148
    device = 113_051 + 337_778 + 131  # Begin, RemoteLoad, StreamCopyEnd (external sync)
    assert c.cycles_per_step == device
    assert sum(c.phase_cycles.values()) == device + runtime
    assert c.seconds_per_step == pytest.approx((device + runtime) / MK2.clock_hz, rel=1e-12)
    summary = c.with_execution(2).summary()
    assert summary["cycles_per_step"] == device
    assert summary["seconds_per_step"] == pytest.approx((device + runtime) / MK2.clock_hz, rel=1e-9)


def test_matmul_compute_is_the_amp_vertex_estimate():
    b = ProgramBuilder()
    w = b.variable("w", (1024, 1024))
    (x,) = b.op("HostLoad", [], [("x", (256, 1024), "float32")], attrs={"stream": "x"})
    b.op("MatMul", [x, w], [("y", (256, 1024), "float32")], flops=2 * 256 * 1024 * 1024, name="mm")
    c = compile_program(b.build())
    mm = [s for s in c.steps.static if s.name.startswith("mm")]
    assert [s.name for s in mm][:5] == ["mm/rearranged/WriteUndef", "mm/weightsRearranged/OnTileCopy",
                                       "mm/Internal Sync", "mm/Convolve", "mm/Internal Sync"]
    assert not any(s.type == "DoExchange" for s in mm)  # the Convolve and Reduce receive their data
    amp = next(s for s in mm if s.name == "mm/Convolve")
    compute = c.static_cycles[amp.index][PHASE_INDEX["compute"]]
    part = plan_partition(256, 1024, 1024, 1, 4, True, 1472, MK2)
    # 16 conv units (8 x 16 channel groups): 16 output groups, 128 input groups and the field of
    # 1,024 over 1,440 tiles: 114 positions and 13 input groups a tile
    assert (part.unit.conv_units, part.out_splits, part.in_splits, part.field_splits) == (16, 16, 10, 9)
    assert (part.field_per_tile, part.in_groups_per_tile, part.out_groups_per_tile) == (114, 13, 1)
    assert compute == part.convolve_cycles == 15_673
    # the AMP's core loop over a tile's work is the AMP rate (114 positions x 13 groups x 8 cycles,
    # 16 units x 8 inputs per 8 cycles = 32 FLOPs a cycle); the zeroing of the partials and the
    # per-pass costs add 32% at this size
    core = 114 * 13 * 8
    assert core == 2 * 114 * 13 * 16 * 8 // 32
    assert 1.0 < compute / core < 1.35
    for s in mm:
        if s.type == "Sync":
            assert c.static_cycles[s.index][PHASE_INDEX["sync"]] == MK2.internal_sync_cycles


def _update_program(sharded: bool, n: int = 1 << 20, replicas: int = 4):
    """An Adam-like called graph updating a [n] weight, or its [n / replicas] shard."""
    b = ProgramBuilder(replicas=replicas)
    w = b.variable("w", (n,))
    acc = b.variable("accum", (n,), kind="accumulator")
    shape = (n // replicas,) if sharded else (n,)
    if sharded:
        (w,) = b.op("ReplicaShardedSlice", [w], [("w_shard", shape, "float32")],
                    attrs={"op": "local", "group_size": replicas}, kind="weight")
        (acc,) = b.op("ReplicatedReduceScatter", [acc], [("g_shard", shape, "float32")],
                      attrs={"op": "mean", "group_size": replicas}, kind="gradient")
    g = b.graph("adam")
    var = b.graph_input(g, "var", shape, kind="weight", by_ref=True)
    grad = b.graph_input(g, "grad", shape, kind="gradient")
    (m,) = b.op("AccumulateMovingAverage", [grad], [("moving_average", shape, "float32")], graph=g,
                flops=3 * shape[0])
    (u,) = b.op("AdamUpdater", [m, var], [("updater", shape, "float32")], graph=g, flops=6 * shape[0])
    b.op("ScaledAddLhsInplace", [var, u], [("var_updated", shape, "float32")], modified=[var], graph=g)
    b.call(g, [w, acc])
    return b.build()


def test_optimizer_temporaries_scale_with_the_shard():
    def temporaries(sharded: bool):
        v = compile_program(_update_program(sharded)).report.variables
        rows = v[v["name"].str.startswith("adam__")]
        assert not rows["always_live"].any()
        return rows

    full, shard = temporaries(False), temporaries(True)
    # the graph's two op outputs (moving average, updater); its inputs alias the caller's tensors
    assert len(full) == len(shard) == 2
    assert sorted(full["bytes"].tolist()) == [4 * (1 << 20)] * 2  # [1,048,576] fp32
    assert sorted(shard["bytes"].tolist()) == [(1 << 20)] * 2  # [262,144] fp32 shard
    assert int(full["bytes"].sum()) == 4 * int(shard["bytes"].sum()) == 8_388_608


def test_model_document_explains_every_device_field():
    import pathlib

    doc = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "ipu-model.md").read_text()
    for f in dataclasses.fields(MK2):
        if f.name not in ("architecture", "sources"):
            assert f"`{f.name}`" in doc, f.name
    for family in MK2.codelet_bytes:
        assert f"| {family} |" in doc, family
