"""Adam's updater as PopLibs' generated map codelet (popops_map.py) and a stash as its dynamic slice
(popops_slice.py), worked by hand."""

from __future__ import annotations

import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.cycles import PHASE_INDEX
from profcompare.emulator.compile.popops_map import (
    adam_element_ops,
    element_cycles,
    map_tile_cycles,
    worker_grain,
)
from profcompare.emulator.compile.popops_slice import dynamic_slice_cycles
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.emulator.targets import MK2


def test_the_updaters_per_element_operations_at_poplibs_cycles():
    # m / (1 - b1^t) in fp16 (21 per 4), v / (1 - b2^t) (10 per 2), sqrt (10 per 2), + eps (1),
    # then the division of the two (10 per 2): 5.25 + 5 + 5 + 1 + 5
    adam = adam_element_ops("adam", 2, 4, weight_decay=False)
    assert adam == (("DIVIDE", 2), ("DIVIDE", 4), ("SQRT", 4), ("ADD", 4), ("DIVIDE", 4))
    assert element_cycles(adam) == 21.25
    # no bias correction: sqrt, + eps, the division; weight decay adds wd x w and its addition
    assert element_cycles(adam_element_ops("adam_no_bias", 4, 4, weight_decay=False)) == 11.0
    assert element_cycles(adam_element_ops("adam", 4, 4, weight_decay=True)) == 23.0
    # adamax has no square root
    assert element_cycles(adam_element_ops("adamax", 4, 4, weight_decay=False)) == 16.0


def test_workers_take_grains_and_the_tile_waits_for_the_slowest():
    # a cast and an fp16 output: single-worker vertices in grains of max(4 halves, 4 B) = 4
    assert worker_grain(False, 4, 2) == 4
    assert worker_grain(False, 2, 4) == 1  # fp32 stores: a MultiVertex, one element at a time
    assert worker_grain(True, 2, 4) == 2  # vectorised: the loop's width
    # 276 elements: 69 grains, 12 for the slowest of 6 workers = 48 elements x 21.25 worker cycles
    # x 6 contexts = 6,120, + the compute set's 242
    assert map_tile_cycles(276, 21.25, False, 4, 4, 6, 242) == 6_362
    # 10 elements: 3 grains, the slowest worker 1 (4 elements): 6 x 4 x 21.25 = 510, + 242
    assert map_tile_cycles(10, 21.25, False, 4, 4, 6, 242) == 752
    # 3 elements: fewer than a grain, the worker takes them all: 6 x 3 x 21.25 = 382.5 -> 383
    assert map_tile_cycles(3, 21.25, False, 4, 4, 6, 242) == 625
    # vectorised (no cast): 180 fp32 elements, 90 vectors, 15 a worker: 6 x 30 x 11 / 2 = 990
    assert map_tile_cycles(180, 11.0, True, 2, 2, 6, 242) == 1_232
    assert map_tile_cycles(0, 21.25, False, 4, 4, 6, 242) == 242


@pytest.mark.parametrize(("shape", "expected"), [((784, 512), 6_362), ((512,), 1_772), ((512, 10), 1_772),
                                                 ((10,), 752)])
def test_an_adam_updater_costs_its_generated_codelet_on_its_worst_tile(shape, expected):
    b = ProgramBuilder()
    m = b.variable("m", shape, "float16")
    v = b.variable("v", shape)
    step = b.variable("step", ())
    b.op("AdamUpdater", [m, v, step], [("updater", shape, "float16")], modified=[step], attrs={"mode": "adam"},
         name="upd")
    c = compile_program(b.build())
    (st,) = [s for s in c.steps.static if s.name.startswith("upd") and s.type == "OnTileExecute"]
    # fp16 updater mapped linearly (at least 128 B a tile): 784 x 512 -> 276 a tile (above); 512 ->
    # 64 a tile: 16 grains, 3 for the slowest worker, 12 elements: 6 x 12 x 21.25 = 1,530 + 242;
    # 512 x 10 -> 64 a tile too; 10 -> one tile (above)
    assert int(c.static_cycles[st.index][PHASE_INDEX["compute"]]) == expected
    assert MK2.vertex_overhead_cycles == 242 and MK2.worker_contexts == 6


def test_a_stash_is_poplibs_dynamic_slice_estimate():
    # 32 fp32 elements a tile (128 B, the linear mapping's minimum): 6 a worker, 3 64-bit copies:
    # supervisor 11 + 14, workers 6 x (39 + 24 + 2 x 3) = 414
    assert dynamic_slice_cycles(32, 2, 6) == 439
    assert dynamic_slice_cycles(64, 4, 6) == 25 + 6 * (39 + 24 + 2 * 2)  # fp16: 11 a worker, 2 copies
    assert dynamic_slice_cycles(0, 2, 6) == 25 + 6 * 63
    assert dynamic_slice_cycles(32, 2, 6, slices=2) == 25 + 6 * (39 + 2 * 30)


def test_a_pipeline_stash_and_restore_cost_the_dynamic_slice_on_the_stashed_tensors_worst_tile():
    b = ProgramBuilder()
    stash = b.variable("stash", (3, 5, 512))
    counter = b.variable("counter", (), "int32")
    (x,) = b.op("HostLoad", [], [("x", (5, 512), "float32")], attrs={"stream": "x"})
    b.op("PipelineStash", [stash, counter, x], [], modified=[stash, counter], name="put")
    b.op("PipelineRestore", [stash, counter], [("x_restored", (5, 512), "float32")], modified=[counter],
         name="get")
    c = compile_program(b.build())
    for name in ("put", "get"):
        st = next(s for s in c.steps.static if s.name.startswith(name) and s.role == "compute")
        # 2,560 fp32 mapped linearly: 32 a tile (above)
        assert int(c.static_cycles[st.index][PHASE_INDEX["compute"]]) == 439, name


def _updater_cycles(shape, m_dtype, v_dtype, out_dtype, *, step=True):
    b = ProgramBuilder()
    inputs = [b.variable("m", shape, m_dtype), b.variable("v", shape, v_dtype)]
    if step:
        inputs.append(b.variable("step", ()))
    b.op("AdamUpdater", inputs, [("updater", shape, out_dtype)], modified=inputs[2:], attrs={"mode": "adam"},
         name="upd")
    c = compile_program(b.build())
    (st,) = [s for s in c.steps.static if s.name.startswith("upd") and s.type == "OnTileExecute"]
    return int(c.static_cycles[st.index][PHASE_INDEX["compute"]])


def test_an_updater_without_a_cast_is_vectorised():
    # fp32 state and updater: no Cast, 2 elements a vector. 180 elements, at least 32 (128 B) a
    # tile: 32 on the worst, 16 vectors, 3 for the slowest of 6 workers: 6 x 6 x 21 / 2 = 378, + 242
    # (element by element it would be 6 x 6 x 21 = 756, + 242)
    assert element_cycles(adam_element_ops("adam", 4, 4, weight_decay=False)) == 21.0
    assert _updater_cycles((180,), "float32", "float32", "float32") == 620


def test_an_updater_given_only_its_two_states_reads_the_second_s_type():
    # fp16 m and fp32 v without the step input: the same codelet as with it (752, above); read as
    # two fp16 states it would be 6 x 4 x 22.25 + 242 = 776
    assert _updater_cycles((10,), "float16", "float32", "float16", step=False) == 752
    assert _updater_cycles((10,), "float16", "float32", "float16") == 752
