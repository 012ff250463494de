"""Cycle estimates of tiny compiled programs, every figure worked out by hand (cycles.py).

Mk2 device figures used below (targets.py, each sourced there): 4 B per cycle per tile of
exchange, 8 B per cycle of vector datapath (2 fp32 elements), 32 fp32 AMP FLOPs per cycle per
tile (16 conv units, or 8), 6 worker contexts, 242 cycles per compute set, 117 per exchange, 94 per
internal sync; a matmul's Convolve is PopLibs' AMP estimate (amp.py). Most programs run on a
Mk2 cut down to 4 tiles, where a float32 tensor of 512 B or more spreads evenly over the tiles.
"""

from __future__ import annotations

import dataclasses
import math

import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.cycles import PHASE_INDEX, CostModel, MatmulPlan, Ring, TensorStats, static_cycles
from profcompare.emulator.compile.placement import layout_of
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.emulator.program import OpInfo
from profcompare.emulator.targets import MK2

from .test_static_cycles_code_load import _loading_program

TINY = MK2.replace(tiles_per_ipu=4)


def test_the_device_figures_the_hand_sums_use():
    assert (MK2.exchange_bytes_per_cycle, MK2.datapath_bytes, MK2.amp_flops_per_cycle_fp32) == (4, 8, 32)
    assert (MK2.vertex_overhead_cycles, MK2.exchange_overhead_cycles, MK2.internal_sync_cycles) == (242, 117, 94)


def _cycles_by_step(compiled) -> dict[str, dict[str, int]]:
    """Non-zero cycles by phase of each static step, by step name."""
    out: dict[str, dict[str, int]] = {}
    for st in compiled.steps.static:
        row = compiled.static_cycles[st.index]
        out[st.name] = {p: int(row[i]) for p, i in PHASE_INDEX.items() if row[i]}
    return out


def _matmul(x_shape, w_shape, y_shape, flops):
    b = ProgramBuilder()
    w = b.variable("w", w_shape)
    (x,) = b.op("HostLoad", [], [("x", x_shape, "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.op("MatMul", [x, w], [("y", y_shape, "float32")], flops=flops, name="mm")
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    program = b.build()
    (op,) = [o for o in program.ops.values() if o.type == "MatMul"]
    return program, op, x, w


def test_matmul_plan_and_steps_without_split():
    program, op, x, w = _matmul((8, 16), (16, 32), (8, 32), 2 * 8 * 16 * 32)
    plan = CostModel(program, TINY, 4).matmul_plan(op)
    # T = 4 tiles (x 512 B, w 2,048 B, y 1,024 B all reach the 4 tiles); w is kept, x (512 B) is
    # copied to ceil(sqrt(4)) = 2 tile groups: 1,024 B, 256 B received per tile; the output
    # fills the 4 tiles, so the contraction is not split: no partials, nothing to reduce
    assert plan == MatmulPlan(tiles=4, flops=8192, dtype="float32", kept_operand=w, copied_bytes=1024,
                              exchange_bytes_per_tile=256, contraction_splits=1, partial_bytes=0,
                              partial_exchange_bytes_per_tile=0, reduce_elements_per_tile=0)
    part = CostModel(program, TINY, 4).amp_partition(op)
    # the Convolve's partition (amp.py): the 8-conv-unit AMP (8 x 8 channel groups) with x as the
    # weights (8 output channels, K = 16: 2 input groups) over a field of 32, split 2 ways in the
    # field and 2 in the input groups: 16 field positions and 1 group of each per tile
    assert (part.unit.conv_units, part.swapped, part.field_splits, part.in_splits, part.out_splits) == (8, False, 2, 2, 1)
    assert (part.field_per_tile, part.in_groups_per_tile, part.out_groups_per_tile) == (16, 1, 1)
    # PopLibs' estimate: 16 positions over 6 workers (3 or 2 each); fp32, zeroing pass: 46 +
    # (2 + 4 x 3) = 60 worker cycles x 6 = 360 (the others' 56 x 6 + 14 = 350 is less); weight load
    # 8 units x 32 B / 16 B per cycle = 16; 50 + (12 + 1) + 11 + (19 - 1) + (7 + 16 + 360) = 475
    assert part.convolve_cycles == 50 + 13 + 11 + 18 + 7 + 16 + 360 == 475
    # each tile's weights slice: 8 output x 8 input channels x 4 B = 256 B
    assert part.weights_bytes_per_tile == 8 * 8 * 4 == 256
    c = _cycles_by_step(compile_program(program, TINY))
    # the weights (x) reach 2 field-split tiles, the activations (w, a variable) 1: poplin
    # rearranges neither (it copies an operand broadcast to more than 7 tiles, conv_rearrange.py), so the
    # rearrangement step moves nothing and keeps its fixed cost; the Convolve receives the weights
    # slices (its own exchange: no DoExchange step; exchange_cost.py: the latency 88, the reach 39
    # over the partition's 4 tiles, every tile of TINY, and the words), then runs the AMP vertex
    assert part.tiles == 4
    assert CostModel(program, TINY, 4).rearrange_copy(op).operands == ()
    assert c["mm/weightsRearranged/OnTileCopy"] == {"compute": 242}
    assert c["mm/Convolve"] == {"exchange": 88 + 39 + 256 // 4, "compute": 475} == {"exchange": 191, "compute": 475}
    assert c["mm/Internal Sync"] == {"sync": 94}
    assert not any(name.endswith("ExchangePre") or name == "mm/Reduce" for name in c)


def test_matmul_plan_and_steps_with_split_contraction():
    program, op, x, w = _matmul((2, 64), (64, 2), (2, 2), 2 * 2 * 64 * 2)
    plan = CostModel(program, TINY, 4).matmul_plan(op)
    # x and w (512 B each) on 4 tiles, y (16 B) on 1: s = min(64, ceil(4 / 1)) = 4 ways;
    # partials 4 x 4 B x 4 = 64 B, 16 B per plan tile; 4 outputs x 4 partials over 4 tiles to add
    assert plan == MatmulPlan(tiles=4, flops=512, dtype="float32", kept_operand=x, copied_bytes=1024,
                              exchange_bytes_per_tile=256, contraction_splits=4, partial_bytes=64,
                              partial_exchange_bytes_per_tile=16, reduce_elements_per_tile=4)
    part = CostModel(program, TINY, 4).amp_partition(op)
    # the Convolve: 2 output channels (padded to 8), K = 64 (8 input groups) split 4 ways (2 groups
    # a tile), a field of 2; weights slice 8 x 16 x 4 B = 512 B
    assert (part.unit.conv_units, part.field_splits, part.in_splits, part.field_per_tile,
            part.in_groups_per_tile, part.weights_bytes_per_tile) == (8, 1, 4, 2, 2, 512)
    # 2 positions: two workers with 1 (the others idle); zeroing 47 + 6 = 53, later 47 worker cycles
    # (x 6: 318, 282); first group 11 + 18 + (7 + 16 + 318) = 370, the second 15 + 19 + (6 + 16 + 282)
    # = 338: 50 + 13 + 338 + 370
    assert part.convolve_cycles == 50 + 13 + 338 + 370 == 771
    c = _cycles_by_step(compile_program(program, TINY))
    assert c["mm/Convolve"] == {"exchange": 88 + 39 + 512 // 4, "compute": 771}  # over all 4 tiles
    # the Reduce: the partition's 4 partials per output in one stage (fewer than 16, poplin's
    # ConvReducePlan); each tile receives the partials it produced, 2 positions x 8 (padded) output
    # channels = 16 fp32 (64 B), then adds them
    assert c["mm/Reduce0"] == {"exchange": 88 + 39 + 64 // 4, "compute": 16 // 2 + 242} == {"exchange": 143, "compute": 250}


def test_a_split_rounds_up_the_tiles_the_output_leaves_idle():
    program, op, x, w = _matmul((4, 32), (32, 24), (4, 24), 2 * 4 * 32 * 24)
    plan = CostModel(program, TINY, 4).matmul_plan(op)
    # x (512 B) and w (3 KiB) on 4 tiles; y (384 B = 48 grains, at least 16 a tile) on 3:
    # s = min(32, ceil(4 / 3)) = 2; partials 96 x 4 B x 2 = 768 B, 192 B per plan tile;
    # 96 x 2 additions over 4 tiles = 48 each
    assert (plan.contraction_splits, plan.partial_bytes, plan.partial_exchange_bytes_per_tile,
            plan.reduce_elements_per_tile) == (2, 768, 192, 48)
    assert type(plan.contraction_splits) is int


def test_a_batched_matmul_contracts_its_last_axis():
    b = ProgramBuilder()
    w = b.variable("w", (16, 8))  # 512 B, 4 tiles
    (x,) = b.op("HostLoad", [], [("x", (2, 4, 16), "float32")], attrs={"stream": "x"}, name="load_x")  # 4 tiles
    (y,) = b.op("MatMul", [x, w], [("y", (2, 4, 8), "float32")], name="mm")  # no FLOPs given; 256 B, 2 tiles
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    program = b.build()
    (op,) = [o for o in program.ops.values() if o.type == "MatMul"]
    plan = CostModel(program, TINY, 4).matmul_plan(op)
    # K = 16 (x's last axis): FLOPs 2 x 64 outputs x 16; s = min(16, ceil(4 / 2)) = 2;
    # partials 64 x 4 B x 2 = 512 B; 64 x 2 additions over 4 tiles = 32 each
    assert (plan.flops, plan.contraction_splits, plan.partial_bytes, plan.reduce_elements_per_tile) == (
        2048, 2, 512, 32)
    part = CostModel(program, TINY, 4).amp_partition(op)
    # against one w, x's batch folds into its rows: M = 2 x 4 = 8 output channels, K = 16 (2 input
    # groups), a field of 8, split 2 ways in each: 4 positions (4 workers with 1, 2 idle) and 1
    # group a tile; zeroing pass 6 x 53 = 318: 50 + 13 + 11 + 18 + (7 + 16 + 318)
    assert (part.swapped, part.groups_per_tile, part.field_splits, part.in_splits, part.field_per_tile) == (
        False, 1, 2, 2, 4)
    c = _cycles_by_step(compile_program(program, TINY))
    assert c["mm/Convolve"]["compute"] == part.convolve_cycles == 50 + 13 + 11 + 18 + 7 + 16 + 318 == 433


def test_a_broadcast_input_costs_an_exchange():
    b = ProgramBuilder()
    bias = b.variable("bias", (32,))  # 128 B: one tile
    big = b.variable("big", (4, 256))  # 4,096 B: 1,024 B per tile
    (h,) = b.op("HostLoad", [], [("h", (8, 32), "float32")], attrs={"stream": "h"}, name="load_h")
    (y,) = b.op("Add", [h, bias], [("y", (8, 32), "float32")], flops=256, name="add_bias")
    (g,) = b.op("HostLoad", [], [("g", (8, 256), "float32")], attrs={"stream": "g"}, name="load_g")
    (z,) = b.op("Add", [g, big], [("z", (8, 256), "float32")], flops=2048, name="add_big")
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    b.op("HostStore", [z], attrs={"stream": "z"}, name="store_z")
    c = _cycles_by_step(compile_program(b.build(), TINY))
    # y: 64 elements per tile; the whole bias (128 B, less than 64 x 4 B) reaches the worst tile
    # (received by the add's compute set itself: no DoExchange step); 1 FLOP per element, 2 per vector cycle
    assert c["add_bias"] == {"exchange": 128 // 4 + 117, "compute": 64 // 2 + 242} == {"exchange": 149, "compute": 274}
    # z: 512 elements per tile; a tile needs at most its share of big: 512 x 4 B of its 4,096 B
    assert c["add_big"] == {"exchange": 2048 // 4 + 117, "compute": 512 // 2 + 242} == {"exchange": 629, "compute": 498}
    assert not any(name.endswith("ExchangePre") for name in c)


def test_a_zero_fill_costs_one_store_per_element_whatever_its_flops():
    b = ProgramBuilder()
    b.op("Init", [], [("zeros", (1024,), "float32")], flops=3 * 1024, name="init")  # 4 KiB: 256 per tile
    c = _cycles_by_step(compile_program(b.build(), TINY))
    assert c["init/Fill"] == {"compute": 256 // 2 + 242} == {"compute": 370}
    assert c["init/Internal Sync"] == {"sync": 94}
    b = ProgramBuilder()
    (x,) = b.op("HostLoad", [], [("x", (1024,), "float32")], attrs={"stream": "x"}, name="load_x")
    b.op("Exp", [x], [("e", (1024,), "float32")], flops=3 * 1024, name="exp")
    c = _cycles_by_step(compile_program(b.build(), TINY))
    assert c["exp"] == {"compute": 3 * 256 // 2 + 242}  # an element-wise op costs its FLOPs per element


def test_tensor_statistics_by_hand():
    b = ProgramBuilder()
    empty = b.variable("empty", (0,))
    one = b.variable("one", (1,))
    thirty = b.variable("thirty", (30,))
    half = b.variable("half", (1000,), "float16")
    costs = CostModel(b.build(), MK2, 1472)
    assert costs.stats(empty) == TensorStats(0, 0, 4, 0, 0)
    assert costs.stats(one) == TensorStats(4, 1, 4, 1, 1)
    assert costs.stats(thirty) == TensorStats(120, 30, 4, 1, 30)
    # 250 grains of 4 halves, at least 16 grains per tile: 15 tiles, at most 17 grains = 68 halves
    assert costs.stats(half) == TensorStats(2000, 1000, 2, 15, 68)


def test_tensor_statistics_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        TensorStats(4, 1, 4, 1, 1).nbytes = 8  # type: ignore[misc]


def test_io_tile_tensors_spread_over_the_io_tiles_and_the_rest_over_the_compute_tiles():
    b = ProgramBuilder()
    x = b.variable("x", (4096,))
    x_io = b.variable("x_io", (4096,))
    program = b.build()
    program = dataclasses.replace(program, num_io_tiles=32, tensors={
        **program.tensors, x_io: dataclasses.replace(program.tensors[x_io], tile_set="io")})
    layout = layout_of(program, MK2.tiles_per_ipu)
    assert layout.compute_tiles == 1440
    costs = CostModel(program, MK2, layout.compute_tiles)
    # 16 KiB = 2,048 grains; at least 16 grains (128 B) per tile: 128 of the 1,440 compute tiles,
    # but over the 32 I/O tiles 64 grains (128 elements) each
    assert costs.stats(x) == TensorStats(16384, 4096, 4, 128, 32)
    assert costs.stats(x_io) == TensorStats(16384, 4096, 4, 32, 128)


def _ring_program():
    b = ProgramBuilder(replicas=4)
    g = b.variable("g", (1000,), kind="accumulator")  # 4,000 B
    shard = b.variable("shard", (250,))  # 1,000 B
    return b.build(), g, shard


@pytest.mark.parametrize(("op_type", "tensor", "attrs", "expected"), [
    # all-reduce: 2(N-1) steps, 2(N-1)/N x S over the links, (N-1)/N of the elements added
    ("ReplicatedAllReduce", "g", {}, Ring(4, 6, 6000, 750)),
    ("ReplicatedReduceScatter", "g", {}, Ring(4, 3, 3000, 750)),
    # all-gather of a 1,000 B shard: N-1 steps, each IPU sends (N-1) shards, no additions
    ("ReplicatedAllGather", "shard", {}, Ring(4, 3, 3000, 0)),
    # a collective of another type: a ring of 2(N-1) steps, no additions
    ("ReplicatedAllToAll", "g", {}, Ring(4, 6, 6000, 0)),
    ("ReplicatedAllReduce", "g", {"group_size": 2}, Ring(2, 2, 4000, 500)),
    ("ReplicatedAllReduce", "g", {"group_size": 1}, Ring(1, 0, 0, 0)),
    ("ReplicatedAllReduce", "g", {"op": "local"}, Ring(4, 0, 0, 0)),
    ("ReplicaShardedSlice", "g", {}, Ring(4, 0, 0, 0)),
])
def test_collective_rings_by_hand(op_type, tensor, attrs, expected):
    program, g, shard = _ring_program()
    tid = {"g": g, "shard": shard}[tensor]
    costs = CostModel(program, MK2, 1472)
    assert costs.ring(OpInfo("op", "main", op_type, "c", (tid,), (), (), 0, attrs)) == expected
    # an in-place collective given only the tensor it modifies rings that tensor
    assert costs.ring(OpInfo("op2", "main", op_type, "c", (), (), (tid,), 0, attrs)) == expected


def test_a_collective_of_an_unknown_tensor_moves_nothing():
    program, g, _ = _ring_program()
    costs = CostModel(program, MK2, 1472)
    assert costs.ring(OpInfo("op", "main", "ReplicatedAllReduce", "c", ("nowhere",), (), (), 0, {})) == Ring(
        4, 0, 0, 0)
    assert costs.ring(OpInfo("op", "main", "ReplicatedAllReduce", "c", (), (), (), 0, {})) == Ring(4, 0, 0, 0)


@pytest.mark.parametrize(("replicas", "sharing"), [(1, 1), (2, 2), (4, 4), (8, 4)])
def test_a_code_load_moves_the_code_of_every_ipu_sharing_the_gateway(replicas, sharing):
    program, g = _loading_program(replicas)
    compiled = compile_program(program, MK2)
    costs = CostModel(program, MK2, layout_of(program, MK2.tiles_per_ipu).compute_tiles)
    (data,) = [s for s in compiled.steps.static if s.role == "code_load"]
    cycles = static_cycles(compiled.steps, costs, {g.id: 1_575_000})
    # 1,575,000 B per IPU at 15.75 GB/s and 1.33 GHz is 133,000 cycles; the gateway's IPUs
    # (at most 4) load at once through it
    assert cycles[data.index, PHASE_INDEX["streaming_memory"]] == sharing * 133_000
    assert math.ceil(sharing * 1_575_000 / MK2.gateway_bytes_per_s * MK2.clock_hz) == sharing * 133_000


def test_a_host_transfer_of_no_known_tensor_moves_no_bytes():
    b = ProgramBuilder()
    b.op("HostLoad", [], attrs={"stream": "s"}, name="load")  # a load landing nowhere
    b.op("HostStore", ["not_a_tensor"], attrs={"stream": "s"}, name="store")
    c = _cycles_by_step(compile_program(b.build(), TINY))
    # Begin (the control copy 269 + 1,109 + 140, then the data copy's Begin 7,903) and End (9,870)
    # are the trace's fixed blocks; the Mid has no bytes to move, only its fixed 1,109
    for name in ("load", "store"):
        assert {k: v for k, v in c.items() if k.startswith(name + "/")} == {
            f"{name}/Begin": {"host_io": 9421}, f"{name}/Mid": {"host_io": 1109}, f"{name}/End": {"host_io": 9870}}


def test_a_reduction_of_no_known_input_exchanges_no_bytes():
    b = ProgramBuilder()
    b.op("ReduceSum", [], [("s", (32,), "float32")], name="sum")
    c = _cycles_by_step(compile_program(b.build(), TINY))
    assert c["sum/Reduce"]["exchange"] == 117  # the fixed cost of an exchange, no data


def test_an_io_tile_copy_exchanges_the_worst_tile_of_its_output():
    b = ProgramBuilder()
    (x,) = b.op("HostLoad", [], [("x", (1024,), "float32")], attrs={"stream": "x"}, name="load_x")
    b.op("IoTileCopy", [x], [("x_compute", (1024,), "float32")], name="to_compute")
    c = _cycles_by_step(compile_program(b.build(), TINY))
    # 4 KiB over 4 tiles: 1 KiB received by the worst tile at 4 B per cycle, after the latency (88)
    # and the reach to every tile of TINY (39; exchange_cost.py)
    assert c["to_compute/IoTileCopy"] == {"exchange": 88 + 39 + 1024 // 4} == {"exchange": 383}
    assert c["to_compute/Internal Sync"] == {"sync": 94}


def test_a_reduce_partials_step_adds_each_input_element_once():
    b = ProgramBuilder()
    (x,) = b.op("HostLoad", [], [("x", (1000,), "float32")], attrs={"stream": "x"}, name="load_x")  # 4 tiles
    (y,) = b.op("ReduceSum", [x], [("y", (), "float32")], flops=1000, name="sum")  # one addition per input element
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    c = _cycles_by_step(compile_program(b.build(), TINY))
    # x: 1,000 elements over 4 tiles = 250 on the worst tile, 1 FLOP each, 2 fp32 per vector
    # cycle: 125 + 242 (not 250 x 1,000 FLOPs per *output* element)
    assert c["sum/partials"] == {"compute": 250 // 2 + 242} == {"compute": 367}


def test_the_largest_of_an_op_s_tensors_is_the_one_with_the_most_bytes():
    b = ProgramBuilder()
    small = b.variable("small", (100,))
    big = b.variable("big", (1000,))
    costs = CostModel(b.build(), TINY, 4)
    assert costs.largest((small, big)) == costs.largest((big, small)) == big
    assert costs.largest((small, "not_a_tensor")) == small
    assert costs.largest(("not_a_tensor",)) is None


def test_a_reduce_over_two_inputs_is_costed_from_the_larger():
    b = ProgramBuilder()
    (x,) = b.op("HostLoad", [], [("x", (1000,), "float32")], attrs={"stream": "x"}, name="load_x")  # 4 tiles
    (y,) = b.op("HostLoad", [], [("y", (100,), "float32")], attrs={"stream": "y"}, name="load_y")  # 3 tiles
    (s,) = b.op("ReduceSum", [y, x], [("s", (), "float32")], flops=1100, name="sum")
    b.op("HostStore", [s], attrs={"stream": "s"}, name="store_s")
    c = _cycles_by_step(compile_program(b.build(), TINY))
    # partials: x's worst tile, 250 elements at 1,100 / 1,000 FLOPs each, 2 fp32 per vector cycle:
    # 137.5 + 242, rounded up (y's 34 elements at 11 FLOPs each would be 429)
    assert c["sum/partials"] == {"compute": 380}
    # the final Reduce receives x's 4,000 B on the one tile of s at 4 B per cycle: 1,000 + 117
    # (y's 400 B would be 217); then 1,100 FLOPs on s's one element: 550 + 242
    assert c["sum/Reduce"] == {"exchange": 1117, "compute": 792}


def test_a_mean_accumulation_is_popart_s_four_compute_sets():
    b = ProgramBuilder()
    acc = b.variable("accum", (1024,), kind="accumulator")  # 4 KiB: 256 elements a tile
    counter = b.variable("counter", (), kind="accumulator")
    (g,) = b.op("HostLoad", [], [("g", (1024,), "float32")], attrs={"stream": "g"}, name="load_g")
    b.op("AccumulateMean", [acc, g, counter], modified=[acc], flops=4 * 1024, name="acc")
    compiled = compile_program(b.build(), TINY)
    steps = [(s.type, s.name, s.role) for s in compiled.steps.static if s.op and s.name.startswith("acc")]
    # counter + 1 and b side by side, a sync, a, a sync, then the update (its sync the next compute set's)
    assert steps == [("OnTileExecute", "acc/counter_1", "scalar_update"), ("OnTileExecute", "acc/b", "scalar_update"),
                     ("Sync", "acc/Internal Sync", "sync_internal"), ("OnTileExecute", "acc/a", "scalar_update"),
                     ("Sync", "acc/Internal Sync", "sync_internal"), ("OnTileExecute", "acc/AddTo", "compute")]
    c = _cycles_by_step(compiled)
    # a scalar on one tile: half a vector cycle (rounded up) + the compute set's fixed cost
    assert c["acc/counter_1"] == c["acc/b"] == c["acc/a"] == {"compute": 1 + 242}
    # the update: 256 elements a tile x 4 FLOPs / 2 per cycle + 242
    assert c["acc/AddTo"] == {"compute": 256 * 4 // 2 + 242} == {"compute": 754}
    # the scalar steps hold their launch code (24 B a tile) on the counter's tile only, the update
    # on the accumulator's 4 tiles
    code = compiled.report.code
    control = code[code["category"].astype(str) == "controlCode"].set_index("name")["code_bytes"]
    assert [int(control[n]) for n in ("acc/counter_1", "acc/b", "acc/a", "acc/AddTo")] == [24, 24, 24, 4 * 24]


def test_the_loss_one_hot_labels_are_encoded_then_copied_between_tiles():
    b = ProgramBuilder()
    (probs,) = b.op("HostLoad", [], [("probs", (32, 16), "float32")], attrs={"stream": "p"}, name="load_p")
    (labels,) = b.op("HostLoad", [], [("labels", (32,), "int32")], attrs={"stream": "l"}, name="load_l")
    b.op("NllLossWithSoftmaxGrad", [probs, labels], [("loss", (), "float32"), ("dx", (32, 16), "float32")],
         flops=3 * 512, name="nll")
    compiled = compile_program(b.build(), TINY)
    steps = [(s.type, s.name) for s in compiled.steps.static if s.op and s.name.startswith("nll")]
    assert steps == [("OnTileExecute", "nll/nll/encodedOut/zero"), ("Sync", "nll/Internal Sync"),
                     ("OnTileExecute", "nll/nll/OneHot/OneHotEncode"), ("Sync", "nll/Internal Sync"),
                     ("DoExchange", "nll/nll/encodedOut/ExchangePre"), ("OnTileExecute", "nll"),
                     ("Sync", "nll/Internal Sync")]
    c = _cycles_by_step(compiled)
    # dx (2 KiB): 128 elements, 512 B a tile; written at 2 elements a cycle, copied at 4 B a cycle
    assert c["nll/nll/encodedOut/zero"] == c["nll/nll/OneHot/OneHotEncode"] == {"compute": 128 // 2 + 242}
    # the copy reaches dx's 4 tiles, every tile of TINY: the latency 88 + the reach 39 (exchange_cost.py)
    assert c["nll/nll/encodedOut/ExchangePre"] == {"exchange": 88 + 39 + 512 // 4} == {"exchange": 255}
