"""A language-model head tied to an embedding held in Streaming Memory in two halves, worked out by
hand (liveness.py, memory.py): the shape of BLOOM's head in graphcore/examples' popxl application.

The application loads the vocabulary shard of the word embedding from remote buffers in the head's
phase, as two halves of the hidden dimension (one transfer of the whole would exceed Poplar's
largest), and computes the logits as ``x1 @ E1.T + x2 @ E2.T`` in the head graph, which it calls
with the loaded halves. Here the same program runs on a Mk2 IPU cut down to 4 tiles, every tensor
spread evenly (a float16 tensor of 512 B or more whose size is a multiple of 512 B lands as size / 4
on every tile; docs/ipu-model.md section 4):

    x  [16, 32]  fp16  1,024 B   256 B a tile (the head's input)
    x1, x2 [16, 16]      512 B   128 B a tile (ops.split's outputs)
    E1, E2 [64, 16]    2,048 B   512 B a tile (the loaded halves)
    logits [16, 64]    2,048 B   512 B a tile (each matmul's output, and their sum)

Each matmul's plan (docs section 7): T = 4 tiles, the larger operand (the half, 2,048 B) stays, the
smaller (x1, 512 B) is copied to ceil(sqrt(4)) = 2 tile groups: 1,024 B of operand copies, 256 B a
tile, live from the rearrangement to the Convolve. The output (16 x 64) fills all 4 tiles, so the
contraction is not split: the output is the AMP's partials, the only interleaved data.
"""

from __future__ import annotations

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.memory import NON_INTERLEAVED_CATEGORIES
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.targets import MK2

TINY = MK2.replace(tiles_per_ipu=4)
BOUNDARY = TINY.non_interleaved_bytes  # 212,992 B: 208 KiB
VOCAB, HIDDEN, SEQ = 64, 32, 16


def _tied_head_program():
    """Load both halves in the head's phase, call the head graph with them (BLOOM's head_phase)."""
    ir = popxl.Ir()
    half = popxl.TensorSpec((VOCAB, HIDDEN // 2), popxl.float16)
    with ir.main_graph:
        buffer_1 = popxl.remote_buffer(half.shape, half.dtype, 1)
        buffer_2 = popxl.remote_buffer(half.shape, half.dtype, 1)
        x_spec = popxl.TensorSpec((SEQ, HIDDEN), popxl.float16)

        def head(x, e1, e2):
            x1, x2 = ops.split(x, 2, axis=-1)
            return x1 @ e1.T + x2 @ e2.T
        head_graph = ir.create_graph(head, x_spec, half, half)

        def head_phase(x):
            (logits,) = ops.call(head_graph, x, ops.remote_load(buffer_1, 0), ops.remote_load(buffer_2, 0))
            return logits
        phase_graph = ir.create_graph(head_phase, x_spec)
        x = ops.host_load(popxl.h2d_stream(x_spec.shape, x_spec.dtype, "x"), "x")
        (logits,) = ops.call(phase_graph, x)
        ops.host_store(popxl.d2h_stream((SEQ, VOCAB), popxl.float16, "logits"), logits)
    return lower(ir)


def _non_interleaved(tiles) -> np.ndarray:
    return tiles[list(NON_INTERLEAVED_CATEGORIES)].sum(axis=1).to_numpy()


def _rows(report):
    """{short name: (bytes, first step, last step)} of the head's tensors and the loaded halves."""
    out = {}
    for r in report.variables.itertuples():
        name = str(r.name)
        if "remote_load" in name:
            short = "E2" if "__t" in name.rsplit("/", 1)[-1] else "E1"
        elif "head_subgraph(0)/" in name:  # the graph's scope, after the building function's name
            short = name.split("head_subgraph(0)/", 1)[1]
        else:
            continue
        out[short] = (int(r.bytes), int(r.first_step), int(r.last_step))
    return out


def test_both_halves_are_live_at_the_first_matmul_and_the_first_is_freed_before_the_second():
    report = compile_program(_tied_head_program(), TINY).report
    rows = _rows(report)
    program = report.liveness.set_index("step")["program"].astype(str)
    steps = {name: [int(s) for s in program.index if program[s] == name] for name in set(program)}
    rearrange_1, rearrange_2 = steps["matmul/weightsRearranged/OnTileCopy"]
    convolve_1, convolve_2 = steps["matmul/Convolve"]
    # both halves are loaded before the call, so both are live from their loads to their matmuls;
    # a tensor lives to its last read (Poplar's liveness), so E1 dies with the first matmul (its
    # last step, the Convolve: no sync follows it, as the step after reads only its own tiles'
    # data; programs.place_syncs) and is not live at the second, which ends with the sync before
    # the add (a step that receives)
    e1, e2 = rows["E1"], rows["E2"]
    assert e1[0] == e2[0] == 2048
    assert e1[1] < e2[1] < rearrange_1
    assert e1[2] == convolve_1 and e2[2] == convolve_2 + 1
    # the first logits live from the first matmul (its first step: the WriteUndef of its rearranged
    # operand, right before the rearrangement; the sync that precedes the rearrangement is the
    # transpose's, before the WriteUndef) to the add; the second from the second matmul
    assert rows["matmul_out"] == (2048, rearrange_1 - 1, steps["add"][0])
    assert rows["matmul_out__t0"][1] == rearrange_2 - 1
    # the operand copies (x1 copied twice: 1,024 B) live inside their own matmul only
    assert rows["matmul_out/operand_copies"] == (1024, rearrange_1, convolve_1)
    assert rows["matmul_out__t0/operand_copies"] == (1024, rearrange_2, convolve_2)
    live = report.liveness.set_index("step")["not_always_live_bytes"]
    # at the first matmul: E1 + E2 2,048 each, x1 and x2 512 each (x2 waits for the second
    # matmul), copies 1,024, the first logits 2,048 = 8,192 B, the program's peak
    assert live[convolve_1] == 2 * 2048 + 2 * 512 + 1024 + 2048 == 8192 == live.max()
    # at the second: E2, x2, copies, both logits = 7,680 B (E1 and x1 gone)
    assert live[convolve_2] == 2048 + 512 + 1024 + 2 * 2048 == 7680
    # at the add: both logits and their sum (popxl applies no in-place pattern: a new tensor)
    assert live[steps["add"][0]] == 3 * 2048 == 6144
    # per tile a quarter of each: the not-always-live peak is 2,048 B on every tile
    assert report.tiles["not_always_live_peak_bytes"].tolist() == [2048] * 4


def test_the_widest_span_is_at_the_second_matmul_while_the_halves_fit_below_the_boundary():
    tiles = compile_program(_tied_head_program(), TINY).report.tiles
    ni = _non_interleaved(tiles)
    # per tile, the interleaved data (the logits, the AMP's partials) and the other data:
    #   first matmul:  other E1 512 + E2 512 + x1 128 + x2 128 + copies 256 = 1,536; logits 512
    #   second matmul: other E2 512 + x2 128 + copies 256 = 896; both logits 1,024
    # with the whole 208 KiB region free, every operand fits below the boundary, and the span is
    # the boundary plus the interleaved bytes live at a step: widest at the second matmul
    assert (ni + 1536 < BOUNDARY).all()
    assert tiles["bytes_including_gaps"].tolist() == [BOUNDARY + 1024] * 4 == [214_016] * 4
    # (plus the two 4-byte load offsets, constants on two tiles)
    assert tiles["constant"].tolist() == [4, 4, 0, 0]
    assert tiles["bytes_excluding_gaps"].tolist() == (ni + tiles["constant"] + 2048).tolist()


def test_halves_filling_the_free_region_overflow_above_it_with_no_gap_left():
    roomy = compile_program(_tied_head_program(), TINY).report.tiles
    ni = _non_interleaved(roomy)
    assert (ni == ni[0]).all()
    ni = int(ni[0])
    # leave 896 B free below the boundary: the first matmul's 1,536 B of operands, halves and
    # copies fill it and overflow by 640 B: span = ni + 896 + 640 + 512 = ni + 2,048, every byte
    # above the code in use (the bytes without gaps); the second matmul's 896 B fit, its span
    # ni + 896 + 1,024 = ni + 1,920 is now the narrower. Were the operands and copies interleaved
    # too (every tensor a matmul touches), the first matmul's span would be the boundary plus all
    # 2,048 B: ni + 2,944, 896 B of it a gap below the boundary. (Tiles 0 and 1 also hold a 4-byte
    # constant, which overflows with the rest.)
    device = TINY.replace(non_interleaved_bytes=ni + 896)
    tiles = compile_program(_tied_head_program(), device).report.tiles
    const = tiles["constant"].to_numpy()
    assert const.tolist() == [4, 4, 0, 0]
    assert tiles["bytes_including_gaps"].tolist() == (ni + 2048 + const).tolist()
    assert tiles["bytes_excluding_gaps"].tolist() == (ni + 2048 + const).tolist()
    # 644 B more room below the boundary and the first matmul's operands (and the constants) all
    # fit: its span is the boundary plus 512; the second matmul's, the boundary plus 1,024, is the
    # widest again, with 640 B of the region below the boundary unused then (a gap)
    wider = compile_program(_tied_head_program(), TINY.replace(non_interleaved_bytes=ni + 1540)).report.tiles
    assert wider["bytes_including_gaps"].tolist() == [ni + 1540 + 1024] * 4
