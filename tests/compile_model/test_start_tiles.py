"""Start tiles of linearly mapped tensors: PopART's LinearMapper for tensors created outside an op,
clones where their source starts, the shape hash otherwise (start_tiles.py), worked out by hand."""

from __future__ import annotations

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.mapping import mapping_offset
from profcompare.emulator.compile.start_tiles import start_tiles
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.targets import get_device

MK2 = get_device("mk2")
TILES = MK2.tiles_per_ipu


def _biases(n: int):
    """``n`` variables of 768 fp16 (1536 B: 12 tiles at the 128 B minimum), each doubled."""
    ir = popxl.Ir()
    with ir.main_graph:
        for i in range(n):
            b = popxl.variable(np.ones(768, np.float16), name=f"b{i}")
            ops.host_store(popxl.d2h_stream((768,), popxl.float16, f"s{i}"), b * 2)
    return compile_program(lower(ir), MK2)


def test_linear_mapper_starts_each_variable_where_the_previous_one_ended():
    rows = [(768, 2, (768,), "float16", True)] * 3 + [(4096, 4, (4096,), "float32", True),
                                                      (768, 2, (768,), "float16", False)]
    starts = start_tiles([f"t{i}" for i in range(5)], [r[0] for r in rows], [r[1] for r in rows],
                         [r[2] for r in rows], [r[3] for r in rows], [(0, TILES)] * 5, [r[4] for r in rows], {},
                         datapath_bytes=8, min_bytes_per_tile=128)
    # 12 tiles each, then 16 KiB over 128 tiles; the last row is not the mapper's: the shape hash
    assert starts.tolist() == [0, 12, 24, 36, mapping_offset((768,), "float16", TILES)]


def test_a_clone_starts_where_its_source_starts_and_wraps_around_the_region():
    starts = start_tiles(["a", "b", "c"], [768, 768, 768], [2, 2, 2], [(768,)] * 3, ["float16"] * 3,
                         [(0, 16)] * 3, [True, True, False], {"c": "b"}, datapath_bytes=8, min_bytes_per_tile=128)
    # b starts at 12 of a 16-tile region; c clones b
    assert starts.tolist() == [0, 12, 12]


def test_small_variables_of_one_shape_spread_their_code_over_the_tiles():
    cp = _biases(10)
    tiles = cp.report.tiles
    # in creation order: b0 on tiles 0..11, the multiply's constant 2 on tile 12 (one tile), b1 on
    # 13..24, ...; each product is a clone of its variable. The multiplies run on 10 x 13 tiles
    assert int((tiles["vertexInstanceState"] > 0).sum()) == 130
    nal = tiles["not_always_live_peak_bytes"].to_numpy()
    expected = np.zeros(TILES, dtype=np.int64)
    for i in range(10):
        expected[13 * i:13 * i + 12] = 2 * 128  # the variable and its product
    assert nal.tolist() == expected.tolist()
    assert int(tiles["constant"].to_numpy()[12::13][:10].min()) > 0


def test_a_called_graphs_input_and_the_calls_output_clone_the_callers_tensors():
    ir = popxl.Ir()
    with ir.main_graph:
        b = popxl.variable(np.ones(768, np.float16), name="b")
        popxl.variable(np.ones(768, np.float16), name="c")  # moves the mapper past b: c on 12..23

        def double(x):
            return x * 2

        g = ir.create_graph(double, b.spec)
        (y,) = ops.call(g, b)
        ops.host_store(popxl.d2h_stream((768,), popxl.float16, "y"), y)
    cp = compile_program(lower(ir), MK2)
    nal = cp.report.tiles["not_always_live_peak_bytes"].to_numpy()
    # b, the graph's copy of it, the product and the call's output all on b's tiles 0..11: at the
    # multiply b, its copy and the product are live (3 x 128 B); c alone on 12..23
    assert nal[:12].tolist() == [3 * 128] * 12
    assert nal[12:24].tolist() == [128] * 12
    assert not nal[24:].any()
