"""How an input-gradient matmul gets its transposed weights (docs/ipu-model.md "Program steps").

PopART turns a matmul's left-hand gradient ``dX = dY @ W^T`` into a MatMul of phase BwdLHS,
which PopLibs plans as the fully connected layer's backward pass (``fullyConnectedPass``
TRAINING_BWD). ``W`` is laid out for the forward pass's plan (the forward matmul created it), so
PopLibs first makes the transposed weights in the backward plan's layout with
``fullyConnectedWeightTranspose`` (graphcore/poplibs ``lib/poplin/Convolution.cpp``):

- it picks a forward and a backward group size among the common divisors of each plan's input
  channels per group and the weight's dimension (``getGroupSizes``, ``commonDivisors``: the
  greatest first, then every divisor of it in decreasing order), scoring each pair by how many
  tiles hold the first element of a block (``blockScore``: the spread times the worst tile's
  transpose speed), the first best pair winning (``pickGroupSizes``, strictly greater);
- it transposes with transpose vertices (a ``weightTranspose/Transpose`` compute set writing a
  tensor in the backward plan's layout) unless a group size is 1 or either plan does not swap
  the operands (``useCopyImpl``); then the weights reach the convolution as a view in the
  forward layout, and the convolution's preprocessing regroups them
  (``regroupIfBeneficialForPlan``: their detected grouping, along the forward contraction, is
  not the backward plan's input-channel grouping): a Copy into a ``preRegroup`` variable spread
  over the IPU's tiles, a Transpose compute set, then the Copy to the plan's rearranged operands
  (``lib/popops/Rearrange.cpp`` ``regroupTensorInternal``; ``ConvProgramTree`` lowers the
  pre-transpose copies, the transpose compute sets, then the post-transpose copies).

The model lays ``W`` out as its forward partition does (amp.py): each tile a block of the
contraction's input-channel groups by the field's (or, swapped, the output channels') columns.
ASSUMPTION: every tile transposes at the same speed (fp32 has no fast transpose,
``canUseFastTranspose``: 8- and 16-bit types only; the output taken as contiguous), so the score
is the spread alone. The real trace in ``shared/data`` shows both paths: fc2 and fc3's input
gradients (512 x 512 weights) transpose with vertices; fc4's (512 x 10) takes the copy path
(``fc4.weight_to_.../preRegroup``, ``Transpose_#0/Acts``, ``.../actsRearranged``).
"""

from __future__ import annotations

import math

from profcompare.emulator.compile.amp import AmpPartition


def common_divisors(a: int, b: int) -> tuple[int, ...]:
    """PopLibs' ``commonDivisors``: gcd(a, b) first, then every divisor of it from the largest."""
    g = math.gcd(max(1, a), max(1, b))
    return (g, *(i for i in range(-(-g // 2), 0, -1) if g % i == 0))


def _blocks_with_multiple(size: int, block: int, group: int) -> int:
    """How many of the consecutive blocks of ``block`` items covering ``size`` items hold an
    index that is a multiple of ``group``."""
    count = 0
    for start in range(0, size, max(1, block)):
        end = min(size, start + max(1, block))
        if (end - 1) // group >= -(-start // group):
            count += 1
    return count


def weight_blocks(fwd: AmpPartition, rows: int, cols: int) -> tuple[int, int]:
    """(rows, columns) of the block of the forward weight ``W[rows, cols]`` each tile holds under
    the forward partition: rows are the contraction (input-channel groups), columns the field,
    or the output channels when the partition swaps the operands (the RHS is the weights)."""
    row_block = max(1, fwd.in_groups_per_tile * fwd.unit.in_chans)
    col_block = max(1, fwd.out_groups_per_tile * fwd.unit.out_chans if fwd.swapped else fwd.field_per_tile)
    return min(rows, row_block), min(cols, col_block)


def spread(fwd: AmpPartition, rows: int, cols: int, fwd_group: int, bwd_group: int) -> int:
    """Tiles holding the first element of a (forward group x backward group) block of ``W``:
    blocks start at rows that are multiples of ``fwd_group`` and columns of ``bwd_group``."""
    rb, cb = weight_blocks(fwd, rows, cols)
    return _blocks_with_multiple(rows, rb, fwd_group) * _blocks_with_multiple(cols, cb, bwd_group)


def group_sizes(fwd: AmpPartition, bwd: AmpPartition, rows: int, cols: int) -> tuple[int, int]:
    """(forward, backward) group sizes ``pickGroupSizes`` chooses for ``W[rows, cols]``: forward
    over the contraction ``rows`` (the forward plan's input channels per group), backward over
    ``cols`` (the backward plan's); the first pair of greatest spread."""
    best: tuple[int, int, int] | None = None
    for f in common_divisors(fwd.unit.in_chans, rows):
        for b in common_divisors(bwd.unit.in_chans, cols):
            score = spread(fwd, rows, cols, f, b)
            if best is None or score > best[0]:
                best = (score, f, b)
    assert best is not None
    return best[1], best[2]


def uses_copy_path(fwd: AmpPartition, bwd: AmpPartition, rows: int, cols: int) -> bool:
    """True when ``fullyConnectedWeightTranspose`` falls back to copies (``useCopyImpl``): a group
    size of 1, or a plan that does not swap the operands. The model's ``swapped`` is the other
    way round from PopLibs' ``swapOperands`` (amp.py: unswapped, the LHS is the convolution's
    weights, which is PopLibs' swap)."""
    f, b = group_sizes(fwd, bwd, rows, cols)
    return f == 1 or b == 1 or fwd.swapped or bwd.swapped


__all__ = ["common_divisors", "group_sizes", "spread", "uses_copy_path", "weight_blocks"]
