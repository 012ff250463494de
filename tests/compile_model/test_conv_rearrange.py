"""A matmul's rearrangement copy (compile/conv_rearrange.py): which operands poplin copies to its
plan's layout, forward and backward, and one copy's cycles worked out by hand -- on two layers
shaped as the pipelined MNIST's fc1 and fc2 (the real trace in shared/data)."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.conv_rearrange import (
    REGION_CYCLES,
    RearrangedOperand,
    copy_cost,
    operand_roles,
)
from profcompare.emulator.compile.cycles import PHASE_INDEX, CostModel
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.targets import MK2


def _two_layer_ir() -> popxl.Ir:
    """gelu(gelu(x[5, 784] @ W1[784, 512]) @ W2[512, 512]) and the weights' gradients: the
    MNIST's fc1 and fc2 (micro-batch 5), x host-loaded."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        x_in = popxl.h2d_stream((5, 784), popxl.float32, "x")
        w1 = popxl.variable(np.zeros((784, 512), np.float32), name="W1")
        w2 = popxl.variable(np.zeros((512, 512), np.float32), name="W2")
        fwd = ir.create_graph(lambda a, b, c: ops.gelu(ops.gelu(a @ b) @ c),
                              popxl.TensorSpec((5, 784), popxl.float32),
                              popxl.TensorSpec((784, 512), popxl.float32),
                              popxl.TensorSpec((512, 512), popxl.float32))
        info = popxl.transforms.autodiff(fwd, grads_required=list(fwd.inputs[1:]))
        x = ops.host_load(x_in)
        call = ops.call_with_info(fwd, x, w1, w2)
        dw1, dw2 = ops.call(info.graph, ops.init((5, 512), popxl.float32, "g", "zero"),
                            inputs_dict=info.inputs_dict(call))
        for name, t in (("dw1", dw1), ("dw2", dw2)):
            ops.host_store(popxl.d2h_stream(t.shape, popxl.float32, name), t)
    return ir


@pytest.fixture(scope="module")
def model():
    program = lower(_two_layer_ir())
    costs = CostModel(program, MK2, MK2.tiles_per_ipu)
    matmuls = {}
    for op in program.ops.values():
        if op.type == "MatMul":
            rows, k = program.tensors[op.inputs[0]].shape
            matmuls[(op.attrs.get("phase"), int(k) if k != 5 else int(rows))] = op
    return program, costs, matmuls


def _summary(costs, op):
    return [(o.role, o.reason, o.tile_elements, o.run, o.regions) for o in costs.rearrange_copy(op).operands]


def test_which_operands_are_rearranged_forward_and_backward(model):
    _, costs, mm = model
    # forward (the real trace's copy79 / copy78: ..._to_.../weightsRearranged): the plan's weights are
    # the LHS x (5 rows: output channels padded to 8), broadcast to the field split's 15 / 23 tiles,
    # more than poplin's 7: rearranged. The activations, W, are a variable PopART created for the
    # plan: its copy is elided
    assert [(o.role, o.reason) for o in costs.rearrange_copy(mm[(None, 784)]).operands] == [
        ("weights", "broadcast to 15 tiles")]
    assert [(o.role, o.reason) for o in costs.rearrange_copy(mm[(None, 512)]).operands] == [
        ("weights", "broadcast to 23 tiles")]
    # fc2's input gradient dY @ W2^T (copy73): dY rearranged, W2^T (a view of the variable, laid
    # out by fullyConnectedWeightTranspose for the plan) not
    assert [o.role for o in costs.rearrange_copy(mm[("BwdLHS", 512)]).operands] == ["weights"]
    # the weight updates (copy98, copy90: ..._to_{...actsRearranged, ...weightsRearranged}): poplin
    # rearranges both operands of every weight-update pass
    assert [(o.role, o.reason) for o in costs.rearrange_copy(mm[("BwdRHS", 512)]).operands] == [
        ("weights", "weight update pass"), ("acts", "weight update pass")]
    assert [o.role for o in costs.rearrange_copy(mm[("BwdRHS", 784)]).operands] == ["weights", "acts"]
    # fc1's input gradient is not required: no such matmul (PopART's autodiff prunes it)
    assert sorted(mm, key=str) == sorted([(None, 784), (None, 512), ("BwdLHS", 512), ("BwdRHS", 512),
                                          ("BwdRHS", 784)], key=str)


def test_the_runs_follow_the_producers_layout(model):
    _, costs, mm = model
    # fc1 forward: x host-loaded, row-major: 8 contraction elements contiguous (a whole group)
    assert _summary(costs, mm[(None, 784)]) == [("weights", "broadcast to 15 tiles", 40, 8, 5)]
    # fc2 forward: x is fc1's output through a gelu, laid out as poplin's reduction left it, the 5
    # rows innermost: along the contraction every element is its own region
    assert _summary(costs, mm[(None, 512)]) == [("weights", "broadcast to 23 tiles", 40, 1, 40)]
    # fc2's input gradient: dY is gelu's input gradient, laid out like the forward activation: the
    # same as fc2 forward
    assert _summary(costs, mm[("BwdLHS", 512)]) == [("weights", "broadcast to 23 tiles", 40, 1, 40)]


def test_one_rearranged_copy_by_hand(model):
    program, costs, mm = model
    op = mm[(None, 512)]
    part = costs.amp_partition(op)
    # the plan: 8 x 8 fp32 AMP groups, x the weights (not swapped), the contraction 512 split 64
    # ways, the field (W2's 512 columns) 23 ways
    assert (part.unit.in_chans, part.unit.out_chans, part.swapped, part.in_splits, part.field_splits) == (
        8, 8, False, 64, 23)
    # the weights padded to 8 x 512 = 4,096 elements: 64 grains of 8 x 8 (poplin's mapWeights grain,
    # 256 B: its minimum a tile), one a tile; of a grain's 64 elements 5 x 8 = 40 are x's (the rest
    # the ValuePadder rows)
    (w,) = costs.rearrange_copy(op).operands
    assert w.tile_elements == 5 * 8 == 40 and w.tile_bytes == 160
    # the tile receives 160 B at 4 B a cycle (40), then writes 40 regions of one element (x keeps
    # its 5 rows contiguous, the grain its 8 contraction elements) at 44 cycles each after the
    # on-tile copy's fixed cost of 242: 2,042 (the real copy78: 2,029)
    copy = costs.rearrange_copy(op)
    assert (copy.exchange_cycles, copy.on_tile_cycles) == (160 // 4, 242 + 40 * REGION_CYCLES) == (40, 2_002)
    assert copy.cycles == 2_042
    # the step: its exchange and on-tile parts
    steps = compile_program(program, MK2).steps
    (st,) = [s for s in steps.static if s.op == op.id and s.role == "mm_rearrange"]
    c = costs.step_cycles(st, 0, "matmul")
    assert (int(c[PHASE_INDEX["exchange"]]), int(c[PHASE_INDEX["compute"]]), int(c.sum())) == (40, 2_002, 2_042)
    # fc1 forward, row-major source: 5 regions of 8: 40 + 242 + 5 x 44 = 502 (the real copy79: 500)
    assert costs.rearrange_copy(mm[(None, 784)]).cycles == 40 + 242 + 5 * 44 == 502


def test_a_weight_update_costs_its_slower_operand(model):
    _, costs, mm = model
    # fc1's weight update: x^T from the row-major host load keeps the 784 columns contiguous, not the
    # contraction: one region an element (poplin would regroup it first, preRegroup + Transpose in
    # the real trace: not modelled, docs section 7); 16 x 5 a tile (the plan's 8 x 16 AMP)
    assert _summary(costs, mm[("BwdRHS", 784)])[0][2:] == (80, 1, 80)
    # fc2's weight update x^T[512, 5] @ dY[5, 512]: the weights x^T (512 output channels x the 5 of
    # the micro-batch, padded to 8) one 8 x 8 grain a tile, 40 elements; the activations dY (512
    # field positions x 8) 4 positions a tile (poplin's 128 B minimum), 20 elements. Both sources
    # keep the micro-batch -- the contraction -- contiguous: regions of 5
    assert _summary(costs, mm[("BwdRHS", 512)])[0][2:] == (40, 5, 8)
    assert _summary(costs, mm[("BwdRHS", 512)])[1][2:] == (20, 5, 4)
    # on different tiles (weights from the top of the tile range, activations from tile 0): the
    # slower, the weights: 40 + 242 + 8 x 44 = 634 (the real copy98: 2,144; docs section 7)
    assert costs.rearrange_copy(mm[("BwdRHS", 512)]).cycles == 160 // 4 + 242 + 8 * 44 == 634


def test_roles_and_cost_rules():
    from profcompare.emulator.compile.amp import AmpPartition, AmpUnit

    unit = AmpUnit(8, 8, 8, 4, True)

    def part(field_splits, out_splits):
        return AmpPartition(unit, field_splits, 1, out_splits, 1, 1, 1, 1, 1, 0, 0, 8, 8, False)

    # poplin rearranges an operand broadcast to more than 7 tiles, and both in a weight update
    assert operand_roles(part(7, 7), False) == {}
    assert operand_roles(part(8, 1), False) == {"weights": "broadcast to 8 tiles"}
    assert operand_roles(part(1, 9), False) == {"acts": "broadcast to 9 tiles"}
    assert set(operand_roles(part(1, 1), True)) == {"weights", "acts"}
    # the copy costs its slowest operand; no operand, no cycles
    a = RearrangedOperand("weights", "a", "", 40, 1, 4)
    b = RearrangedOperand("acts", "b", "", 20, 5, 4)
    assert copy_cost((a, b), 242, 4).cycles == 40 + 242 + 40 * 44
    assert copy_cost((), 242, 4).cycles == 0


@pytest.mark.parametrize("adds", [1, 70, 900])
def test_a_long_chain_of_layout_keeping_ops_still_gets_its_copy(adds: int) -> None:
    """x host-loaded, then ``adds`` element-wise adds (each keeps its first input's layout), then
    x[5, 512] @ W[512, 512]: the weights are copied to the plan's layout however long the chain
    (the trace once stopped after 64 producers and took the operand for a variable, eliding the
    copy): fc2-shaped, the same 502 cycles as a host-loaded operand gets with one add."""
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        x_in = popxl.h2d_stream((5, 512), popxl.float32, "x")
        w = popxl.variable(np.zeros((512, 512), np.float32), name="W")
        x = ops.host_load(x_in)
        for _ in range(adds):
            x = x + 1.0
        ops.host_store(popxl.d2h_stream((5, 512), popxl.float32, "y"), x @ w)
    program = lower(ir)
    (op,) = [o for o in program.ops.values() if o.type == "MatMul"]
    copy = CostModel(program, MK2, MK2.tiles_per_ipu).rearrange_copy(op)
    assert [(o.role, o.run, o.regions) for o in copy.operands] == [("weights", 8, 5)]
    assert copy.cycles == 502
