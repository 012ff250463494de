"""How an input-gradient matmul gets its transposed weights (compile/fc_weight_transpose.py):
PopLibs' fullyConnectedWeightTranspose group sizes and its copy path, worked out by hand, and the
steps and cycles the copy path gives a program."""

from __future__ import annotations

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.amp import AmpPartition, AmpUnit, plan_partition
from profcompare.emulator.compile.fc_weight_transpose import (
    common_divisors,
    group_sizes,
    spread,
    uses_copy_path,
    weight_blocks,
)
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.targets import MK2

FP32 = AmpUnit(conv_units=8, in_chans=8, out_chans=8, itemsize=4, float_partials=True)


def _partition(field_per_tile: int, in_groups_per_tile: int, out_groups_per_tile: int = 1,
               swapped: bool = False) -> AmpPartition:
    return AmpPartition(FP32, 1, 1, 1, 1, field_per_tile, in_groups_per_tile, out_groups_per_tile, 1, 0, 0, 8, 8,
                        swapped)


def test_common_divisors_in_poplibs_order():
    # the greatest common divisor first, then every divisor of it from the largest
    assert common_divisors(8, 512) == (8, 4, 2, 1)
    assert common_divisors(8, 10) == (2, 1)
    assert common_divisors(16, 24) == (8, 4, 2, 1)
    assert common_divisors(8, 9) == (1, 1)  # as PopLibs' loop gives it: gcd 1, then ceil(1 / 2) = 1


def test_weight_blocks_and_spread_by_hand():
    # W[512, 10] under a forward partition of one field column and one input group (8 rows) per
    # tile: 64 x 10 blocks; first elements of (8 x 2) blocks sit on every row block and on the
    # even columns only: 64 x 5 tiles; of (8 x 1) blocks on all 640
    fwd = _partition(field_per_tile=1, in_groups_per_tile=1)
    assert weight_blocks(fwd, 512, 10) == (8, 1)
    assert spread(fwd, 512, 10, 8, 2) == 320
    assert spread(fwd, 512, 10, 8, 1) == 640
    # swapped (the RHS is the convolution's weights): columns are output-channel groups
    assert weight_blocks(_partition(1, 2, out_groups_per_tile=3, swapped=True), 512, 100) == (16, 24)
    # 23 columns a tile: every block but the last (506..511) holds a multiple of 8
    wide = _partition(field_per_tile=23, in_groups_per_tile=1)
    assert spread(wide, 512, 512, 8, 8) == 64 * 22 and spread(wide, 512, 512, 8, 4) == 64 * 23


def test_a_narrow_weight_takes_the_copy_path():
    # fc4 of the MNIST example: W[512, 10], micro-batch 5, fp32: a backward group of 1 spreads over
    # twice the tiles of a group of 2, so it wins, and a group size of 1 means copies
    fwd = plan_partition(5, 512, 10, 1, 4, True, 1472, MK2)
    bwd = plan_partition(5, 10, 512, 1, 4, True, 1472, MK2)
    assert group_sizes(fwd, bwd, 512, 10) == (8, 1)
    assert uses_copy_path(fwd, bwd, 512, 10)
    # fc2 / fc3: W[512, 512] keeps groups of 8 and 4: transpose vertices
    fwd = plan_partition(5, 512, 512, 1, 4, True, 1472, MK2)
    bwd = plan_partition(5, 512, 512, 1, 4, True, 1472, MK2)
    assert group_sizes(fwd, bwd, 512, 512) == (8, 4)
    assert not uses_copy_path(fwd, bwd, 512, 512)


def test_a_plan_that_does_not_swap_forces_the_copy_path():
    # PopLibs' useCopyImpl: either plan without swapOperands (the model's swapped partition)
    # (blocks of 8 x 8: groups of 8 both ways reach every tile)
    fwd, bwd = _partition(8, 1), _partition(8, 1, swapped=True)
    assert group_sizes(fwd, bwd, 64, 64) == (8, 8)
    assert uses_copy_path(fwd, bwd, 64, 64)
    assert not uses_copy_path(fwd, _partition(8, 1), 64, 64)


def _linear_grad_ir(width: int) -> popxl.Ir:
    """x[5, 512] @ W[512, width]; the gradients of x and W by autodiff, both streamed out."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        x_in = popxl.h2d_stream((5, 512), popxl.float32, "x")
        out = popxl.d2h_stream((5, 512), popxl.float32, "dx")
        w = popxl.variable(np.zeros((512, width), np.float32), name="W")
        fwd = ir.create_graph(lambda a, b: a @ b, popxl.TensorSpec((5, 512), popxl.float32),
                              popxl.TensorSpec((512, width), popxl.float32))
        info = popxl.transforms.autodiff(fwd, grads_required=list(fwd.inputs))
        x = ops.host_load(x_in)
        call = ops.call_with_info(fwd, x, w)
        dx, _dw = ops.call(info.graph, ops.init((5, width), popxl.float32, "g", "zero"),
                           inputs_dict=info.inputs_dict(call))
        ops.host_store(out, dx)
    return ir


def test_the_copy_path_steps_of_a_program():
    # W[512, 10]: the input gradient's Transpose is a view, and its matmul regroups the weights
    # through two exchanges around a transpose before the Convolve
    program = lower(_linear_grad_ir(10))
    compiled = compile_program(program, MK2)
    static = compiled.steps.static
    roles = [s.role for s in static]
    i = roles.index("mm_preregroup")
    assert [(s.type, s.role) for s in static[i:i + 6]] == [
        ("DoExchange", "mm_preregroup"), ("OnTileExecute", "mm_regroup"), ("Sync", "sync_internal"),
        ("DoExchange", "mm_rearrange_exchange"), ("Sync", "sync_internal"), ("OnTileExecute", "mm_convolve")]
    # the weights' Transpose is a view; the input's (the weight gradient's x^T) still computes
    transposes = [compiled.steps.op_class[o.id] for o in program.ops.values() if o.type == "Transpose"]
    assert sorted(transposes) == ["elementwise", "view"]
    # W[512, 512] keeps the transpose (the model's stand-in for the weightTranspose compute set)
    wide = compile_program(lower(_linear_grad_ir(512)), MK2)
    assert "mm_preregroup" not in [s.role for s in wide.steps.static]
