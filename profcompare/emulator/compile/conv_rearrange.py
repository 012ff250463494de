"""A matmul's rearrangement copy: which operands poplin copies into its plan's layout, and what the
copy costs (docs/ipu-model.md section 7, "Rearrangement copies").

**Which operands** (graphcore/poplibs ``lib/poplin/Convolution.cpp``, ``convolutionImpl`` at the
system level, then ``convolutionPreprocess``): poplin copies an operand into a tensor it creates
for the plan (``actsRearranged``, ``weightsRearranged``, laid out by ``createInputImpl`` /
``createWeightsImpl``) when

- the pass is a weight update (``inputRearrangementIsExpensive`` / ``weightRearrangementIsExpensive``
  hold for ``TRAINING_WU`` and ``FC_TRAINING_WU``: PopART's ``MatMulRhsGradOp``): both operands;
- the weights would be broadcast to more than 7 tiles (``weightViewMaxBroadcastDests``: the batch
  split x the field splits), or the activations to more than 7 (``inViewMaxBroadcastDests``: the
  kernel splits x the output-channel split): that operand ("We can reduce the amount of exchange
  code / number of copy pointers required by rearranging the data once and broadcasting the
  rearranged data").

"Note these copies will be elided if the inputs already use the expected memory layout and tile
mapping": an operand that is a variable, or a view of one, was created for the plan by PopART
(``MatMulOpx::createInput``, poplin's ``createMatMulInputRHS``/``LHS``; the transposed weights of an
input gradient by ``fullyConnectedWeightTranspose``), so it is not copied. The real trace in
``shared/data`` shows this: a forward matmul's copy writes ``weightsRearranged`` only (the LHS of 5
rows, the plan's weights after ``swapOperands``), a weight update's writes
``{actsRearranged, weightsRearranged}``.

**What the copy costs**: the operand's elements move from its producer's layout to the plan's.
The plan's layout (``mapWeights`` / ``mapActivations``, ``mapActivationsOrWeights``) holds the
weights in grains of input channels x output channels per group (at least 256 bytes a tile), the
activations in grains of the input channels per group (at least 128 bytes a tile), each grain on one
of the tiles that read it; within a grain the input channels -- the contraction -- are innermost.
Poplar copies contiguous regions: a region is as long as the source keeps the elements contiguous
along the contraction, up to the group. The source's contiguous axis follows its producer:

- a matmul's output (poplin's ``partialReduceOut``, shape ``[...][partialChansPerGroup]``,
  ``lib/poplin/ConvReduce.cpp``) has its output channels innermost: the LHS rows when the plan's
  weights are the LHS, the RHS columns when it swaps the operands; element-wise ops keep their
  first input's layout (popops ``createOutputForElementWiseOp``), a non-linearity's gradient its
  forward activation's (popnn ``nonLinearityInputGradient``: "Use mapping of the output
  activations"); a pipeline restore the stashed tensor's;
- everything else (host loads, inter-IPU copies, initialised tensors) is row-major, the last
  dimension contiguous.

A copy's destination tile receives its slice (exchange, ``exchange_bytes_per_cycle``), then copies
it region by region into place. Its block is the fixed cost of an on-tile copy
(``vertex_overhead_cycles``) + the exchange + ``REGION_CYCLES`` per region, on the busiest
destination tile; a weight update's two operands sit on different tiles (poplin maps weights from
the top of the tile range and activations from tile 0, ``calculateActivationsOrWeightsUsage``), so
its copy costs the slower of the two.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from profcompare.emulator.compile.amp import AmpPartition
from profcompare.emulator.program import LoweredProgram, OpInfo

#: Cycles per contiguous region a rearrangement copy writes on its busiest tile. Measured on the
#: real trace in shared/data (B): ``copy78`` (the pipelined MNIST's fc2 forward, x[5, 512] from the
#: previous matmul's output, each of 64 tiles receiving one 8 x 8 grain of 40 real elements, each
#: its own region) takes 2,029 cycles = 242 (an on-tile copy's fixed cost) + 160 B / 4 B a cycle +
#: 40 regions x 43.7. Checked, not fitted, on the trace's eight other forward and input-gradient
#: copies (docs/ipu-model.md section 7): ``copy79`` / ``copy85`` (row-major sources: 5 regions of 8
#: elements) 500 / 501 against the model's 502. ASSUMPTION (reading): about 7 supervisor
#: instructions a region at one issue every 6 cycles (facts 1.1: 6 hardware contexts).
REGION_CYCLES = 44

#: poplin's minimum bytes of a weights / activations slice per tile (``mapActivationsOrWeights``:
#: ``minBytesPerTile = isActs ? 128 : 256``, lib/poplin/Convolution.cpp)
WEIGHTS_MIN_BYTES_PER_TILE = 256
ACTS_MIN_BYTES_PER_TILE = 128

#: Broadcast destinations beyond which poplin rearranges an operand once
#: (``inViewMaxBroadcastDests`` / ``weightViewMaxBroadcastDests``, lib/poplin/Convolution.cpp)
MAX_BROADCAST_DESTS = 7

#: Ops whose output keeps its first input's layout (element-wise ops, views, on-tile copies)
#: how many producers a layout is traced back through in one walk before the tensor is taken as
#: row-major, as a tensor of a producer that keeps no layout is (ASSUMPTION: a bound on Python's
#: recursion, not a Poplar fact; walks are cached, so it binds only on one unbroken chain this long)
MAX_TRACE_DEPTH = 300

_KEEPS_LAYOUT = frozenset({
    "Add", "Sub", "Mul", "Div", "Neg", "Gelu", "Relu", "Tanh", "Sigmoid", "Exp", "Log", "Sqrt", "Scale",
    "Cast", "Dropout", "Identity", "Copy", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Pow",
    "ScaledAdd", "Swish", "Softmax", "Mean", "Max", "Min", "Abs",
})

#: Ops whose output is laid out like their second input: a non-linearity's input gradient takes the
#: forward activation's layout (popnn ``nonLinearityInputGradient``); PopART's grad ops take the
#: incoming gradient first
_LIKE_SECOND_INPUT = frozenset({"GeluGrad", "ReluGrad", "TanhGrad", "SigmoidGrad", "SwishGrad"})


@dataclass(frozen=True)
class Layout:
    """Where a 2-D (or batched) tensor's elements are contiguous in tile memory."""

    axis: int  # -1: along the last dimension, -2: along the one before
    run: int  # contiguous elements along it


@dataclass(frozen=True)
class RearrangedOperand:
    """One operand a matmul's rearrangement copy moves to the plan's layout (its busiest tile)."""

    role: str  # "weights" or "acts" (poplin's weightsRearranged / actsRearranged)
    tensor: str
    reason: str  # why poplin rearranges it
    tile_elements: int  # the operand's (unpadded) elements on its busiest destination tile
    run: int  # elements per contiguous region
    itemsize: int

    @property
    def regions(self) -> int:
        return -(-self.tile_elements // max(1, self.run))

    @property
    def tile_bytes(self) -> int:
        return self.tile_elements * self.itemsize


@dataclass(frozen=True)
class RearrangeCopy:
    """A matmul's rearrangement copy and its cycles on the busiest destination tile."""

    operands: tuple[RearrangedOperand, ...]
    exchange_cycles: int  # the busiest operand's slice received
    on_tile_cycles: int  # the fixed cost + its regions copied into place

    @property
    def cycles(self) -> int:
        return self.exchange_cycles + self.on_tile_cycles


def operand_roles(part: AmpPartition, weight_update: bool) -> dict[str, str]:
    """The operands poplin rearranges ({"weights"|"acts": reason}) for a plan (module docstring)."""
    roles: dict[str, str] = {}
    if weight_update:
        return {"weights": "weight update pass", "acts": "weight update pass"}
    if part.field_splits > MAX_BROADCAST_DESTS:
        roles["weights"] = f"broadcast to {part.field_splits} tiles"
    if part.out_splits > MAX_BROADCAST_DESTS:
        roles["acts"] = f"broadcast to {part.out_splits} tiles"
    return roles


def tile_elements(role: str, part: AmpPartition, contraction: int, other: int, groups: int, itemsize: int) -> int:
    """Unpadded elements of the rearranged ``role`` operand on its busiest tile under poplin's
    mapping: grains (weights: input x output channels per group; activations: input channels per
    group), at least the minimum bytes a tile, spread over the partition's tiles. ``other`` is the
    operand's non-contraction size (output channels of the weights, field of the activations)."""
    unit = part.unit
    padded_k = -(-contraction // unit.in_chans) * unit.in_chans
    if role == "weights":
        grain = unit.in_chans * unit.out_chans
        padded_other = -(-other // unit.out_chans) * unit.out_chans
        min_bytes = WEIGHTS_MIN_BYTES_PER_TILE
    else:
        grain = unit.in_chans
        padded_other = other
        min_bytes = ACTS_MIN_BYTES_PER_TILE
    grains = max(1, groups * padded_other * padded_k // grain)
    min_grains = max(1, -(-math.ceil(min_bytes / max(1, itemsize)) // grain))
    per_tile = max(min_grains, -(-grains // max(1, part.tiles))) * grain
    per_tile = min(per_tile, grains * grain)
    # the padding (poplin's ValuePadder constants) is written with the copy but is not the operand's
    return max(1, per_tile * contraction * other // (padded_k * padded_other))


def copy_cost(operands: tuple[RearrangedOperand, ...], overhead_cycles: int,
              exchange_bytes_per_cycle: float) -> RearrangeCopy:
    """The copy's cycles: the slowest operand's tile (its slice received, the fixed cost, its
    regions); no operand, no copy."""
    best = (0, 0)
    for o in operands:
        parts = (math.ceil(o.tile_bytes / exchange_bytes_per_cycle), overhead_cycles + o.regions * REGION_CYCLES)
        if sum(parts) > sum(best):
            best = parts
    return RearrangeCopy(operands, best[0], best[1])


class LayoutTracer:
    """The layout of a program's tensors as their producers made them (module docstring); built
    once per program, each answer cached."""

    def __init__(self, program: LoweredProgram, matmul_output: Callable[[OpInfo], Layout]) -> None:
        self.program = program
        self.matmul_output = matmul_output
        self._producer: dict[str, OpInfo] = {}
        self._call_sites: dict[str, str] = {}
        self._call_outputs: dict[str, str] = {}
        self._stashed: dict[str, str] = {}
        self._cache: dict[str, Layout | None] = {}
        for op in program.ops.values():
            for t in op.outputs:
                self._producer[t] = op
            if op.type == "Call":
                for inner, outer in (op.attrs.get("inputs") or {}).items():
                    # ASSUMPTION: a subgraph input has the layout of its first call site's tensor
                    # (a graph called with operands of different layouts is costed as the first)
                    self._call_sites.setdefault(inner, outer)
                for inner, outer in (op.attrs.get("outputs") or {}).items():
                    self._call_outputs[outer] = inner
            if op.type == "PipelineStash" and len(op.inputs) > 2:
                self._stashed.setdefault(op.inputs[0], op.inputs[2])

    def layout(self, tid: str) -> Layout | None:
        """The layout of ``tid``, or None when it is a variable or a view of one (created for the
        plan: its copy is elided)."""
        return self._layout(tid, 0)

    def _layout(self, tid: str, depth: int) -> Layout | None:
        # every tensor a trace passes is cached, so a later matmul's trace stops where an
        # earlier one's did: a program's long chains (a residual stream) are walked once
        if tid not in self._cache:
            self._cache[tid] = self._trace(tid, depth)
        return self._cache[tid]

    def _trace(self, tid: str, depth: int) -> Layout | None:
        info = self.program.tensors.get(tid)
        if info is None:
            return None
        shape = info.shape or (1,)
        row_major = Layout(-1, int(shape[-1]))
        if depth > MAX_TRACE_DEPTH:
            return row_major
        op = self._producer.get(tid)
        if op is None:
            if tid in self._call_sites:
                return self._layout(self._call_sites[tid], depth + 1)
            if tid in self._stashed:
                return self._layout(self._stashed[tid], depth + 1)
            return None if info.storage == "variable" else row_major
        if op.type == "Call" and tid in self._call_outputs:
            return self._layout(self._call_outputs[tid], depth + 1)
        if op.type == "MatMul":
            return self.matmul_output(op)
        if op.type == "PipelineRestore" and op.inputs:
            return self._layout(op.inputs[0], depth + 1)
        if op.type in ("Transpose", "TransposeInplace") and op.inputs:
            inner = self._layout(op.inputs[0], depth + 1)
            if inner is None:
                return None
            perm = tuple(op.attrs.get("perm") or ())
            rank = len(shape)
            swaps_last_two = rank >= 2 and (not perm or tuple(perm[-2:]) == (rank - 1, rank - 2))
            return Layout(-3 - inner.axis, inner.run) if swaps_last_two else inner
        if op.type in _LIKE_SECOND_INPUT and len(op.inputs) > 1:
            return self._layout(op.inputs[1], depth + 1)
        if op.type in _KEEPS_LAYOUT and op.inputs:
            inner = self._layout(op.inputs[0], depth + 1)
            src = self.program.tensors.get(op.inputs[0])
            if inner is not None and src is not None and tuple(src.shape[-2:]) != tuple(shape[-2:]):
                return row_major  # a reshape changing the last two dimensions: ASSUMPTION row-major
            return inner
        return row_major


def rearranged_operands(program: LoweredProgram, op: OpInfo, part: AmpPartition, weight_update: bool,
                        layout_of: Callable[[str], Layout | None]) -> tuple[RearrangedOperand, ...]:
    """The operands of matmul ``op`` its rearrangement copy moves (module docstring), each with its
    busiest tile's elements and contiguous run."""
    if len(op.inputs) < 2:
        return ()
    lhs, rhs = program.tensors[op.inputs[0]], program.tensors[op.inputs[1]]
    k = int(lhs.shape[-1]) if lhs.shape else 1
    m = max(1, lhs.nelms // max(1, k))
    n = int(rhs.shape[-1]) if len(rhs.shape) >= 2 else 1
    groups = math.prod(int(d) for d in rhs.shape[:-2]) if len(rhs.shape) > 2 else 1
    if groups > 1:
        m = max(1, m // groups)
    # the plan's weights: the LHS (output channels its rows) unless the plan swaps the operands
    weights_is_lhs = not part.swapped
    out: list[RearrangedOperand] = []
    for role, reason in operand_roles(part, weight_update).items():
        lhs_side = weights_is_lhs == (role == "weights")
        tid = op.inputs[0] if lhs_side else op.inputs[1]
        layout = layout_of(tid)
        if layout is None:
            continue  # created for the plan: the copy is elided
        # the contraction is the LHS's last axis, the RHS's one before
        contraction_axis = -1 if lhs_side else -2
        run = min(layout.run, part.unit.in_chans) if layout.axis == contraction_axis else 1
        other = m if lhs_side else n
        elements = tile_elements(role, part, k, other, groups, int(lhs.itemsize))
        out.append(RearrangedOperand(role, tid, reason, elements, max(1, run), int(lhs.itemsize)))
    return tuple(out)


__all__ = ["ACTS_MIN_BYTES_PER_TILE", "MAX_BROADCAST_DESTS", "REGION_CYCLES", "WEIGHTS_MIN_BYTES_PER_TILE", "Layout",
           "LayoutTracer", "RearrangeCopy", "RearrangedOperand", "copy_cost", "operand_roles", "rearranged_operands",
           "tile_elements"]
