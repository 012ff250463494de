"""Tile memory of tiny compiled programs, every figure worked out by hand (memory.py).

The programs run on a Mk2 IPU cut down to 4 tiles, so that each tensor's bytes per tile follow
from the linear mapping at a glance: a float32 tensor of 512 B or more whose size is a multiple
of 512 B lands as size / 4 on every tile (the 128-byte minimum per tile, docs/ipu-model.md
section 4); one of 128 B or less lands on one tile. Code, vertex state, stack and headers come
from code.py (tested there); here they enter only as the non-interleaved bytes each tile's row
of the report shows.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.cycles import CostModel
from profcompare.emulator.compile.liveness import tile_peaks
from profcompare.emulator.compile.mapping import mapping_offset
from profcompare.emulator.compile.memory import (
    NON_INTERLEAVED_CATEGORIES,
    Storage,
    _unique,
    build_storage,
    tile_memory,
)
from profcompare.emulator.compile.synthetic import ProgramBuilder, mlp_inference_program, mlp_program
from profcompare.emulator.targets import MK2

from .compile_stages import compile_stages

TINY = MK2.replace(tiles_per_ipu=4)
BOUNDARY = TINY.non_interleaved_bytes  # 212,992 B: 208 KiB


def _non_interleaved(tiles) -> np.ndarray:
    """Bytes of the categories that must be non-interleaved, per tile (code.py's figures)."""
    return tiles[list(NON_INTERLEAVED_CATEGORIES)].sum(axis=1).to_numpy()


def _matmul_program():
    """y[8, 32] = x[8, 16] @ w[16, 32], every tensor and operand copy spread evenly on 4 tiles."""
    b = ProgramBuilder()
    w = b.variable("w", (16, 32))  # 2,048 B: 512 B per tile
    (x,) = b.op("HostLoad", [], [("x", (8, 16), "float32")], attrs={"stream": "x"}, name="load_x")  # 128 B/tile
    (y,) = b.op("MatMul", [x, w], [("y", (8, 32), "float32")], flops=2 * 8 * 16 * 32, name="mm")  # 256 B/tile
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    return b.build()


def test_matmul_operand_copies_and_the_tile_span_by_hand():
    report = compile_program(_matmul_program(), TINY).report
    v = report.variables.set_index("name")
    # plan: T = 4 tiles; w (2,048 B) stays, x (512 B) is copied to ceil(sqrt(4)) = 2 tile groups:
    # 1,024 B of copies, live from the rearrangement that writes them (step 8, after the matmul's
    # WriteUndef and the sync before it) to the Convolve that receives them (step 10)
    assert v["bytes"].to_dict() == {"w": 2048, "x": 512, "y": 1024, "y/operand_copies": 1024}
    assert v.loc["y/operand_copies", "kind"] == "other" and v.loc["y/operand_copies", "tiles"] == 4
    lv = report.liveness.set_index("step")["program"].astype(str)
    first, last = (int(v.loc["y/operand_copies", c]) for c in ("first_step", "last_step"))
    assert (first, last) == (8, 10) and (lv[first], lv[last]) == ("mm/weightsRearranged/OnTileCopy", "mm/Convolve")
    tiles = report.tiles
    # per tile at the matmul: w 512 + x 128 + y 256 + copies 256 = 1,152 B. Only y is interleaved:
    # with the contraction whole it is the AMP's partials (its ``out`` field); the operands and
    # their copies (``in``, ``weights``) fill the non-interleaved region. The span is the region
    # boundary plus y's 256 B
    assert tiles["not_always_live_peak_bytes"].tolist() == [1152] * 4
    assert tiles["variable"].tolist() == [1152] * 4 and tiles["constant"].tolist() == [0] * 4
    ni = _non_interleaved(tiles)
    assert (ni + 896 < BOUNDARY).all()
    assert tiles["bytes_excluding_gaps"].tolist() == (ni + 1152).tolist()
    assert tiles["bytes_including_gaps"].tolist() == [BOUNDARY + 256] * 4 == [213_248] * 4
    assert report.summary()["max_tile_bytes"] == 213_248


def _partials_program():
    """y[2, 2] = x[2, 64] @ w[64, 2]: the output fits on one tile, so the contraction is split."""
    b = ProgramBuilder()
    w = b.variable("w", (64, 2))  # 512 B: 128 B per tile
    (x,) = b.op("HostLoad", [], [("x", (2, 64), "float32")], attrs={"stream": "x"}, name="load_x")  # 128 B/tile
    (y,) = b.op("MatMul", [x, w], [("y", (2, 2), "float32")], flops=2 * 2 * 64 * 2, name="mm")  # 16 B, 1 tile
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    return b.build()


def test_split_contraction_partials_are_interleaved_fp32_on_the_output_tile():
    report = compile_program(_partials_program(), TINY).report
    v = report.variables.set_index("name")
    # T = 4, output on 1 tile: s = min(K = 64, ceil(4 / 1)) = 4 ways; partials = 4 outputs x 4 B x 4;
    # x and w are the same size: the lhs x stays, w (512 B) is copied twice
    assert v.loc["y/partials", "bytes"] == 4 * 4 * 4 == 64
    assert v.loc["y/operand_copies", "bytes"] == 2 * 512
    assert v.loc["y/partials", "tiles"] == 1
    lv = report.liveness.set_index("step")["program"].astype(str)
    assert (lv[int(v.loc["y/partials", "first_step"])], lv[int(v.loc["y/partials", "last_step"])]) == (
        "mm/Convolve", "mm/Reduce0")
    # the partials follow y's mapping offset: the same tile as y
    out_tile = mapping_offset((2, 2), "float32", 4)
    tiles = report.tiles
    # at the Convolve: w 128 + x 128 + copies 256 on every tile, + y 16 + partials 64 on y's tile.
    # Only the partials are interleaved (the AMP's ``out``); y is written by the Reduce, whose
    # output has no region constraint. Tiles without the partials span their non-interleaved
    # bytes; y's tile spans the boundary plus the 64 B of partials
    peak = [512] * 4
    peak[out_tile] = 512 + 16 + 64
    assert tiles["not_always_live_peak_bytes"].tolist() == peak
    ni = _non_interleaved(tiles)
    span = [int(n) + 512 for n in ni]
    span[out_tile] = BOUNDARY + 64
    assert tiles["bytes_including_gaps"].tolist() == span
    assert tiles.loc[out_tile, "bytes_including_gaps"] == 213_056


def _near_full_program():
    """A matmul reading a constant, then an add of another constant: data of both region classes."""
    b = ProgramBuilder()
    c = b.tensor("c", (16, 32), storage="constant", kind="constant")  # 2,048 B: 512 B/tile, matmul operand
    k = b.tensor("k", (8, 32), storage="constant", kind="constant")  # 1,024 B: 256 B/tile, no matmul
    (x,) = b.op("HostLoad", [], [("x", (8, 16), "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.op("MatMul", [x, c], [("y", (8, 32), "float32")], flops=2 * 8 * 16 * 32, name="mm")
    (z,) = b.op("Add", [y, k], [("z", (8, 32), "float32")], flops=8 * 32, name="add")
    b.op("HostStore", [z], attrs={"stream": "z"}, name="store_z")
    return b.build()


def test_a_matmul_whose_operands_fill_the_non_interleaved_region_fits_by_hand():
    # the shape of a language-model head: the operands and their copies are most of the data, the
    # output a smaller part. Only the output (the AMP's partials) must be interleaved, so the
    # operands use the free non-interleaved space and the tile fits where it would not if they
    # had to sit above the region boundary too
    roomy = compile_program(_matmul_program(), TINY).report
    ni = int(_non_interleaved(roomy.tiles)[0])
    # per tile: operands w 512 + x 128 and the copies 256 = 896 B flexible, y 256 B interleaved;
    # a region boundary 900 B above the code leaves the flexible 896 B below it
    device = TINY.replace(non_interleaved_bytes=ni + 900, bytes_per_tile=ni + 900 + 300)
    result = compile_program(_matmul_program(), device)
    tiles = result.report.tiles
    # span = boundary + y's 256 = ni + 1,156 <= ni + 1,200: every tile fits, 44 B to spare; with
    # the operands and copies interleaved as well it would be ni + 900 + 1,152, 852 B over
    assert tiles["bytes_including_gaps"].tolist() == [ni + 1156] * 4
    assert tiles["bytes_excluding_gaps"].tolist() == [ni + 1152] * 4
    assert not result.oom and result.tiles_over_budget == 0
    # 4 B less room below the boundary and the operands' last 4 B overflow above it
    tight = compile_program(_matmul_program(), device.replace(non_interleaved_bytes=ni + 892)).report.tiles
    assert tight["bytes_including_gaps"].tolist() == [ni + 892 + 4 + 256] * 4


def test_flexible_data_overflowing_a_full_non_interleaved_region_by_hand():
    roomy = compile_program(_near_full_program(), TINY).report
    ni = _non_interleaved(roomy.tiles)
    assert (ni == ni[0]).all()
    ni = int(ni[0])
    # leave 200 B free in the non-interleaved region
    report = compile_program(_near_full_program(), TINY.replace(non_interleaved_bytes=ni + 200)).report
    tiles = report.tiles
    assert (_non_interleaved(tiles) == ni).all()
    v = report.variables.set_index("name")
    assert v["bytes"].to_dict() == {"c": 2048, "k": 1024, "x": 512, "y": 1024, "z": 1024, "y/operand_copies": 1024}
    # per tile:
    #   constants (always live): c 512 (flexible: the matmul reads it as an operand) + k 256
    #   (flexible) = 768
    #   not-always-live: x 128 + copies 256 (flexible) + y 256 (interleaved: the AMP's partials)
    #                    at the matmul = 640, y 256 + z 256 (flexible) at the add = 512
    #   the span at each step, from the data live together then (200 B of the flexible data
    #   fit below the boundary, the rest overflows above it):
    #     at the matmul: flexible 768 + 384 = 1,152 -> 952 over; interleaved 256 + 952 = 1,208
    #     at the add:    flexible 768 + 256 = 1,024 -> 824 over; interleaved 256 + 824 = 1,080
    #   span = max(boundary, ni + 200) + 1,208: every byte above the full region is in use, so
    #   the span is the bytes excluding gaps
    assert tiles["constant"].tolist() == [768] * 4 and tiles["variable"].tolist() == [640] * 4
    assert tiles["bytes_excluding_gaps"].tolist() == [ni + 768 + 640] * 4
    assert tiles["bytes_including_gaps"].tolist() == [ni + 200 + 1208] * 4
    cats = report.categories.set_index("category")["bytes"]
    assert cats["constant"] == 2048 + 1024  # each constant once, over all tiles
    # with room to spare the flexible data all fit below the boundary: span = boundary + y's 256
    assert roomy.tiles["bytes_including_gaps"].tolist() == [BOUNDARY + 256] * 4


def _regions(tiles) -> list[list[int]]:
    """Each tile's (non-interleaved, interleaved, overflow, gap) bytes."""
    return tiles[["non_interleaved_bytes", "interleaved_bytes", "overflow_bytes", "gap_bytes"]].astype(int).values.tolist()


def test_memory_by_region_of_the_matmul_by_hand():
    tiles = compile_program(_matmul_program(), TINY).report.tiles
    ni = int(_non_interleaved(tiles)[0])
    # at the peak (the matmul): the operands and copies (896 B) fill the free non-interleaved
    # space, y's 256 B are the interleaved partials; the span is the boundary plus 256, so the
    # gap is the free space left below the boundary
    assert _regions(tiles) == [[ni + 896, 256, 0, BOUNDARY - ni - 896]] * 4
    assert (tiles["non_interleaved_bytes"] + tiles["interleaved_bytes"] + tiles["overflow_bytes"]
            == tiles["bytes_excluding_gaps"]).all()


def test_memory_beyond_the_tile_is_overflow_by_hand():
    roomy = compile_program(_matmul_program(), TINY).report
    ni = int(_non_interleaved(roomy.tiles)[0])
    # the span is ni + 900 + 256 = ni + 1,156 (the boundary plus y); a tile of ni + 1,100 B holds
    # all but the top 56 B, which are y's: 56 B overflow, 200 B of y stay interleaved
    device = TINY.replace(non_interleaved_bytes=ni + 900, bytes_per_tile=ni + 1100)
    tiles = compile_program(_matmul_program(), device).report.tiles
    assert tiles["bytes_including_gaps"].tolist() == [ni + 1156] * 4
    assert _regions(tiles) == [[ni + 896, 200, 56, 4]] * 4


def test_memory_by_region_of_flexible_data_overflowing_the_region_by_hand():
    ni = int(_non_interleaved(compile_program(_near_full_program(), TINY).report.tiles)[0])
    tiles = compile_program(_near_full_program(), TINY.replace(non_interleaved_bytes=ni + 200)).report.tiles
    # at the peak (the matmul, 640 B): flexible constants 768 + x and copies 384 = 1,152, of which
    # 200 fit below the boundary; interleaved: y 256 + the 952 B above the full region = 1,208
    assert _regions(tiles) == [[ni + 200, 1208, 0, 0]] * 4


def test_a_tile_without_interleaved_data_spans_its_non_interleaved_bytes():
    b = ProgramBuilder()
    (x,) = b.op("HostLoad", [], [("x", (128,), "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.op("Neg", [x], [("y", (128,), "float32")], flops=128, name="neg")
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    tiles = compile_program(b.build(), TINY).report.tiles
    # x and y: 128 B per tile each, live together at the neg; no matmul: nothing interleaved
    assert tiles["variable"].tolist() == [256] * 4
    assert tiles["bytes_including_gaps"].tolist() == (_non_interleaved(tiles) + 256).tolist()
    assert tiles["bytes_including_gaps"].tolist() == tiles["bytes_excluding_gaps"].tolist()


def test_an_odd_sized_float16_operand_copy_takes_whole_4_byte_words():
    b = ProgramBuilder()
    w = b.variable("w", (3, 3), "float16")  # 18 B
    (x,) = b.op("HostLoad", [], [("x", (1, 3), "float16")], attrs={"stream": "x"}, name="load_x")  # 6 B
    (y,) = b.op("MatMul", [x, w], [("y", (1, 3), "float16")], flops=18, name="mm")
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    v = compile_program(b.build(), TINY).report.variables.set_index("name")
    # one tile: x's 6 B are copied once (ceil(sqrt(1)) = 1); temporaries are float32 rows: 2 words
    assert v.loc["y/operand_copies", "bytes"] == 8
    assert v.loc["y/operand_copies", "dtype"] == "float32"
    assert v["bytes"].to_dict() == {"w": 18, "x": 6, "y": 6, "y/operand_copies": 8}


def test_a_matmul_reading_one_tensor_twice_copies_nothing():
    def rows(inputs_of):
        b = ProgramBuilder()
        (x,) = b.op("HostLoad", [], [("x", (16, 16), "float32")], attrs={"stream": "x"}, name="load_x")  # 1 KiB
        b.op("MatMul", inputs_of(x), [("y", (16, 16), "float32")], flops=2 * 16 * 16 * 16, name="mm")
        v = compile_program(b.build(), TINY).report.variables
        return dict(zip(v["name"], v["bytes"]))

    # x @ x: the operand is laid out for the matmul once, nothing to copy
    assert rows(lambda x: [x, x]) == {"x": 1024, "y": 1024}
    # a matmul op given its one operand once (a Gram-matrix-like op) broadcasts it like any
    # smaller operand: to ceil(sqrt(4)) = 2 tile groups
    assert rows(lambda x: [x]) == {"x": 1024, "y": 1024, "y/operand_copies": 2048}


def test_a_subgraph_matmul_names_its_temporaries_by_the_output_id():
    b = ProgramBuilder()
    g = b.graph("fwd")
    a = b.graph_input(g, "a", (2, 64))
    wi = b.graph_input(g, "wi", (64, 2))
    (out,) = b.op("MatMul", [a, wi], [("y", (2, 2), "float32")], flops=512, graph=g, name="fwd/mm")
    b.graph_output(g, out)
    w = b.variable("w", (64, 2))
    (x,) = b.op("HostLoad", [], [("x", (2, 64), "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.call(g, [x, w])
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    program = b.build()
    names = compile_program(program, TINY).report.variables["name"].tolist()
    # the main graph's output tensor is called y too; the subgraph's temporaries carry its id
    assert f"{out}/operand_copies" in names and f"{out}/partials" in names
    assert out.startswith("fwd__") and out.endswith("/y__4")
    assert "y" in names and not any(n.startswith("y/") for n in names)
    # in the main graph they carry the output's name (the first test: y/operand_copies)


def test_repeated_names_get_the_next_free_suffix():
    assert _unique(["x", "x", "x#2"]) == ("x", "x#3", "x#2")
    assert _unique(["a", "b", "a", "a"]) == ("a", "b", "a#2", "a#3")
    assert _unique(["x#2", "x", "x", "x"]) == ("x#2", "x", "x#3", "x#4")
    b = ProgramBuilder()
    (h1,) = b.op("HostLoad", [], [("h", (128,), "float32")], attrs={"stream": "a"}, name="load_a")
    (h2,) = b.op("HostLoad", [], [("h", (128,), "float32")], attrs={"stream": "b"}, name="load_b")
    (z,) = b.op("Add", [h1, h2], [("h#2", (128,), "float32")], name="add")
    b.op("HostStore", [z], attrs={"stream": "z"}, name="store_z")
    v = compile_program(b.build(), TINY).report.variables
    # two main-graph tensors named h and a third already called h#2: the second h becomes h#3
    assert v["name"].tolist() == ["h", "h#3", "h#2"]
    assert v["first_step"].tolist() == [0, 3, 6]


def test_views_remote_stream_and_unused_tensors_own_no_storage():
    b = ProgramBuilder()
    c = b.tensor("c", (128,), storage="constant", kind="constant")  # 512 B
    (cv,) = b.op("Reshape", [c], [("c_view", (2, 64), "float32")])
    bid = b.remote_buffer("state", (128,), "float32")
    b.tensor("state", (128,), kind="optimizer_state", storage="remote", remote_buffer=bid)
    b.tensor("x_stream", (2, 64), kind="stream", storage="stream")
    b.tensor("unused", (128,))  # an intermediate nothing writes or reads
    (x,) = b.op("HostLoad", [], [("x", (2, 64), "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.op("Add", [x, cv], [("y", (2, 64), "float32")], flops=128, name="add")
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    report = compile_program(b.build(), TINY).report
    v = report.variables
    assert v["name"].tolist() == ["c", "x", "y"]
    assert v["bytes"].tolist() == [512, 512, 512]
    cats = report.categories.set_index("category")["bytes"]
    # the constant once (its view shares its storage), 128 B on each tile; nothing of the rest
    assert cats["constant"] == 512 and report.tiles["constant"].tolist() == [128] * 4
    assert report.summary()["always_live_bytes"] == int(report.tiles["always_live_bytes"].sum())
    assert int(report.tiles["always_live_bytes"].sum()) == int(cats.sum()) - int(cats["variable"])


def test_storage_rows_are_the_tensors_owning_memory_then_the_temporaries():
    b = ProgramBuilder()
    c = b.tensor("c", (16, 32), storage="constant", kind="constant")
    (cv,) = b.op("Reshape", [c], [("c_view", (512,), "float32")])  # a view: c's storage
    bid = b.remote_buffer("state", (128,), "float32")
    b.tensor("state", (128,), kind="optimizer_state", storage="remote", remote_buffer=bid)  # Streaming Memory
    b.tensor("x_stream", (8, 16), kind="stream", storage="stream")  # host memory
    b.tensor("unused", (128,))  # an intermediate no op writes or reads
    (x,) = b.op("HostLoad", [], [("x", (8, 16), "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.op("MatMul", [x, c], [("y", (8, 32), "float32")], flops=2 * 8 * 16 * 32, name="mm")
    (z,) = b.op("Add", [y, cv], [("z", (8, 32), "float32")], flops=256, name="add")
    b.op("HostStore", [z], attrs={"stream": "z"}, name="store_z")
    program = b.build()
    steps, storage, _ = compile_stages(program, TINY)
    # one IPU without I/O tiles: mapping with or without the layout is the same
    plain = build_storage(program, steps, CostModel(program, TINY, 4), TINY, 4)
    np.testing.assert_array_equal(plain.tile_bytes, storage.tile_bytes)
    assert storage.ids[:4] == (c, x, y, z)
    assert [i.split("#", 1)[1] for i in storage.ids[4:]] == ["y/operand_copies"]
    assert storage.names == ("c", "x", "y", "z", "y/operand_copies")
    assert storage.storage == ("constant", "intermediate", "intermediate", "intermediate", "temporary")
    # y is the AMP's partials (the contraction is whole): interleaved; c and x, the operands,
    # z (the add's) and the operand copies have no region constraint
    assert storage.interleaved.tolist() == [False, False, True, False, False]
    assert storage.row_bytes.tolist() == [2048, 512, 1024, 1024, 1024]
    assert storage.row_of == {c: 0, x: 1, y: 2, z: 3}


def test_region_arithmetic_of_two_tiles_by_hand():
    """tile_memory on hand-made inputs: a 1,500 B non-interleaved region, 1,000 B of vertex code
    and a 200 B stack per tile; tile 0 has loaded code live and interleaved data, tile 1 neither."""
    device = TINY.replace(non_interleaved_bytes=1500, stack_bytes_per_tile=200)
    storage = Storage(
        ids=("c_mm", "c_add"), names=("c_mm", "c_add"), storage=("constant", "constant"),
        kinds=("constant", "constant"), dtypes=("float32", "float32"), shapes=((25,), (15,)),
        interleaved=np.array([True, False]),  # c_mm is read by a matmul
        tile_bytes=np.array([[100, 0], [0, 60]], dtype=np.int64), row_of={"c_mm": 0, "c_add": 1}, temp_rows={})
    code = {"vertexCode": np.array([1000, 1000])}
    mem = tile_memory(storage, device, code, nal_peak=np.array([400, 200]), nal_il_peak=np.array([120, 0]),
                      nal_flex_peak=np.array([200, 200]), has_host_transfers=False,
                      nal_code_peak=np.array([150, 0]))
    # tile 0: non-interleaved 1,000 + 200 + 150 (loaded code) = 1,350, so 150 B free below the
    #   boundary; interleaved data 100 + 120 = 220; flexible 200 (c_add has nothing here):
    #   150 B fit, 50 overflow: span = max(1,500, 1,500) + 220 + 50 = 1,770
    # tile 1: non-interleaved 1,200, 300 B free; no interleaved data; flexible 60 + 200 = 260
    #   all fit: span = 1,200 + 260 = 1,460 (= the sum of its categories: no gap)
    assert mem.including_gaps.tolist() == [1770, 1460]
    assert mem.excluding_gaps.tolist() == [1000 + 200 + 100 + 400, 1000 + 200 + 60 + 200]
    assert mem.always_live.tolist() == [1300, 1260]
    assert mem.not_always_live_peak.tolist() == [400, 200]
    assert mem.categories["constant"].tolist() == [100, 60] and mem.categories["variable"].tolist() == [400, 200]
    assert mem.categories["hostExchangePacketHeader"].tolist() == [0, 0]
    # without the loaded code's 150 B in the region, all of tile 0's flexible data would fit:
    # span 1,500 + 220; and never less than the sum of the categories
    alone = tile_memory(storage, device, code, np.array([400, 200]), np.array([120, 0]), np.array([200, 200]),
                        has_host_transfers=True)
    assert alone.including_gaps.tolist() == [1720, 1460 + 8]
    assert alone.categories["hostExchangePacketHeader"].tolist() == [8, 8]
    # a category the region model does not place still counts: a tile never spans less than the
    # sum of its categories (here 4,000 B of vertexFieldData on tile 1)
    extra = tile_memory(storage, device, {**code, "vertexFieldData": np.array([0, 4000])}, np.array([400, 200]),
                        np.array([120, 0]), np.array([200, 200]), has_host_transfers=False)
    assert extra.excluding_gaps.tolist() == [1700, 5460]
    assert extra.including_gaps.tolist() == [1720, 5460]


def test_copied_graph_inputs_no_body_op_reads_still_own_storage():
    """g(a, u, spare) returns (-u, a): a is only copied in and out, spare only copied in. Called
    with (x, x2, x) then (x2, x, x2), its inputs are copied (different tensors at each site), so
    each call has its own copies of a and spare."""
    b = ProgramBuilder()
    g = b.graph("g")
    a = b.graph_input(g, "a", (128,))
    u = b.graph_input(g, "u", (128,))
    spare = b.graph_input(g, "spare", (128,))
    (o,) = b.op("Neg", [u], [("o", (128,), "float32")], graph=g, name="g/neg")
    b.graph_output(g, o)
    b.graph_output(g, a)
    (x,) = b.op("HostLoad", [], [("x", (128,), "float32")], attrs={"stream": "x"}, name="load_x")
    (x2,) = b.op("HostLoad", [], [("x2", (128,), "float32")], attrs={"stream": "x2"}, name="load_x2")
    (y1, _y2) = b.call(g, [x, x2, x])
    (_y3, y4) = b.call(g, [x2, x, x2])
    (z,) = b.op("Add", [y1, y4], [("z", (128,), "float32")], name="add")
    b.op("HostStore", [z], attrs={"stream": "z"}, name="store_z")
    report = compile_program(b.build(), TINY).report
    v = report.variables.set_index("name")
    lv = report.liveness.set_index("step")["program"].astype(str)
    for k, call in ((1, "main/call(g)_13"), (2, "main/call(g)_16")):
        row = v.loc[f"{a}@{k}"]
        assert row["bytes"] == 512
        # from its copy in to its copy out at that call
        assert lv[int(row["first_step"])] == f"{call}/copy_in/a/OnTileCopy"
        assert lv[int(row["last_step"])] == f"{call}/copy_out/a/OnTileCopy"
        row = v.loc[f"{spare}@{k}"]
        # written by its copy in, read by nothing: live at that step only
        assert row["bytes"] == 512 and row["first_step"] == row["last_step"]
        assert lv[int(row["first_step"])] == f"{call}/copy_in/spare/OnTileCopy"
    # at the first call's neg: x, x2, a@1, u@1 and o@1 are live (5 x 512 B); at the second's,
    # x and x2 are dead (read by the copies in), the first call's o is live: a@2, u@2, o@2, o
    nal = report.liveness.set_index("program")["not_always_live_bytes"]
    assert nal["g/neg"].tolist() == [5 * 512, 4 * 512]
    assert int(report.liveness["not_always_live_bytes"].max()) == 5 * 512


def test_a_matmul_on_the_second_ipu_keeps_its_temporaries_there():
    b = ProgramBuilder()
    w = b.variable("w", (16, 32))
    (x,) = b.op("HostLoad", [], [("x", (8, 16), "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.op("MatMul", [x, w], [("y", (8, 32), "float32")], flops=2 * 8 * 16 * 32, name="mm")
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    program = b.build()
    program = dataclasses.replace(
        program, ipus_per_replica=2,
        tensors={t: dataclasses.replace(info, ipu=1) for t, info in program.tensors.items()})
    tiles = compile_program(program, TINY).report.tiles
    assert tiles["ipu"].tolist() == [0] * 4 + [1] * 4
    # as on one IPU (the first test), all of it on the second IPU's four tiles
    assert tiles["not_always_live_peak_bytes"].tolist() == [0] * 4 + [1152] * 4


# -- invariants over larger programs -----------------------------------------------------------


PROGRAMS = {
    "mlp_training": lambda: mlp_program(2, hidden=64, in_features=32, out_features=10, replicas=2),
    "mlp_remote_sharded": lambda: mlp_program(2, hidden=64, in_features=32, out_features=10, replicas=2,
                                              remote=True, sharded=True, threshold=16),
    "mlp_inference": lambda: mlp_inference_program(2, hidden=64, in_features=32, batch=4),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
@pytest.mark.parametrize("block", [1, 2, 7])
def test_tile_peaks_do_not_depend_on_the_block_size(name, block):
    steps, storage, inst = compile_stages(PROGRAMS[name]())
    n = steps.num_executed
    assert n > 2 * block
    ref = tile_peaks(inst, storage.tile_bytes, storage.interleaved, n)  # one block of 1,024 steps
    got = tile_peaks(inst, storage.tile_bytes, storage.interleaved, n, block=block)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(r, g)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_temporaries_live_inside_their_ops_steps(name):
    steps, storage, inst = compile_stages(PROGRAMS[name]())
    n_tensors = len(storage.row_of)
    temp_rows = {r: tp for rows in storage.temp_rows.values() for r, tp in rows}
    assert temp_rows, "the program has matmul temporaries"
    ex = np.asarray(steps.exec_static)
    static = steps.static
    seen = 0
    for row, first, last in zip(inst.row, inst.first, inst.last):
        if row < n_tensors:
            continue
        tp = temp_rows[int(row)]
        a, z = static[ex[first]], static[ex[last]]
        # from the step of the op's that starts it to the one that ends it, and nothing else between
        assert (a.op, a.role) == (tp.op, tp.first) and (z.op, z.role) == (tp.op, tp.last)
        assert all(static[ex[s]].op == tp.op for s in range(first, last + 1))
        # partials are the AMP's interleaved ``out``; operand copies feed ``in`` and ``weights``
        assert storage.interleaved[row] == tp.name.endswith("/partials")
        seen += 1
    assert seen >= len(temp_rows)


@pytest.mark.parametrize("name", [*sorted(PROGRAMS), "constants"])
def test_ledger_totals_equal_the_summary(name):
    report = compile_program({**PROGRAMS, "constants": _near_full_program}[name]()).report
    s = report.summary()
    ledger = report.ledger()
    nal = ledger[ledger["location"] == "not_always_live"]
    al = ledger[ledger["location"] == "always_live"]
    sm = ledger[ledger["location"] == "streaming_memory"]
    assert int(nal["bytes_at_peak"].sum()) == s["not_always_live_peak_bytes"]
    # always-live rows are the constants: the constant category
    cats = report.categories.set_index("category")["bytes"]
    assert int(al["bytes"].sum()) == int(cats["constant"])
    assert int(sm["bytes"].sum()) == s["streaming_memory_bytes"]
    assert int(ledger["rows"].sum()) == len(report.variables) + len(report.remote_buffers)
