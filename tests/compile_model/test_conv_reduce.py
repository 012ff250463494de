"""A matmul's partials reduced in poplin's stages (conv_reduce.py), worked by hand."""

from __future__ import annotations

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.amp import plan_partition
from profcompare.emulator.compile.conv_reduce import reduce_plan, reduce_stage_cycles, reduce_stages
from profcompare.emulator.compile.cycles import PHASE_INDEX
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.emulator.targets import MK2


def test_stages_and_depths_as_poplins_reduce_plan():
    # one stage below 16 partials, two from 16, three from 125 (ConvReducePlan.cpp)
    assert [reduce_stages(d) for d in (2, 15, 16, 124, 125)] == [1, 1, 2, 2, 3]
    assert reduce_stages(200, multi_stage=False) == 1
    assert reduce_plan(1) == () and reduce_plan(15) == (15,)
    # 64: 64^(1/2) = 8 (8 + 64/8 = 16 messages against 9 + 64/9 = 16.1)
    assert reduce_plan(64) == (64, 8)
    # 98: 98^(1/2) = 9.9 -> 9 (9 + 10.9 = 19.9) or 10 (10 + 9.8 = 19.8): 10
    assert reduce_plan(98) == (98, 10)
    # 300: 300^(2/3) = 44.8 -> 45, then 45^(1/2) = 6.7 -> 7
    assert reduce_plan(300) == (300, 45, 7)


def test_each_stage_receives_and_adds_its_share_of_the_partials():
    # x[5, 512] @ w[512, 512]: 64 input-group splits, 23 field positions x 8 output channels a tile
    part = plan_partition(5, 512, 512, 1, 4, True, 1472, MK2)
    assert (part.in_splits, part.field_per_tile, part.out_groups_per_tile, part.unit.out_chans) == (64, 23, 1, 8)
    # each stage's exchange reaches the partition's 1,472 tiles (every tile): the latency 88 + the
    # reach 39 (exchange_cost.py), plus the words.
    # stage 1: the tile's 184 fp32 partials, 736 B / 4 B per cycle + 127, then 184 / 2 + 242;
    # stage 2: 184 x 8 / 64 = 23 partials, 92 B / 4 + 127, then 23 / 2 -> 11.5 + 242
    assert part.tiles == 1472
    assert reduce_stage_cycles(part, MK2) == ((184 + 127, 92 + 242), (23 + 127, 254))
    assert sum(e + c for e, c in reduce_stage_cycles(part, MK2)) == 1_049  # the real Reduce0 + Reduce1: 1,018
    assert reduce_stage_cycles(plan_partition(512, 5, 784, 1, 4, True, 1472, MK2), MK2) == ()  # no split


def test_a_matmul_reduces_in_one_compute_set_per_stage():
    b = ProgramBuilder()
    w = b.variable("w", (512, 512))
    (x,) = b.op("HostLoad", [], [("x", (5, 512), "float32")], attrs={"stream": "x"})
    b.op("MatMul", [x, w], [("y", (5, 512), "float32")], flops=2 * 5 * 512 * 512, name="mm")
    c = compile_program(b.build())
    # two stages (64 partials): Reduce0 and Reduce1, each after an internal sync (the real trace's)
    reds = [s for s in c.steps.static if s.role == "mm_reduce"]
    assert [s.name for s in reds] == ["mm/Reduce0", "mm/Reduce1"]
    rows = [c.static_cycles[s.index] for s in reds]
    assert [(int(r[PHASE_INDEX["exchange"]]), int(r[PHASE_INDEX["compute"]])) for r in rows] == [(311, 334), (150, 254)]
    names = [c.steps.static[int(c.steps.exec_static[e])].name for e in c.steps.run_steps]
    at = names.index("mm/Reduce0")
    assert names[at - 1: at + 3] == ["mm/Internal Sync", "mm/Reduce0", "mm/Internal Sync", "mm/Reduce1"]
