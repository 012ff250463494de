"""The reduction of a matmul's partials in stages, as poplin plans it (docs/ipu-model.md section 7).

When a matmul's partition splits the contraction (the input-channel groups) ``s`` ways, each output
has ``s`` partials, which poplin adds in one or more stages (graphcore/poplibs
``lib/poplin/ConvReducePlan.cpp``; the real trace's ``Reduce0`` and ``Reduce1`` compute sets):

- the number of stages: 1 below a depth of 16 partials, 2 from 16, 3 from 125 (``getNumReduceStages``:
  "each stage involves a reduction of p^(1/n) messages");
- the depth after each stage: ``getMultiStageReducePlanAndCost`` (restated below), p^((n-1)/n)
  rounded down or up, whichever gives fewer messages per tile (depth ÷ next depth summed over the
  stages).

Each stage receives its partials from the tiles that hold them and adds them. ASSUMPTION: each
stage's work spreads over the partition's tiles (where the partials are), so a tile of stage i
receives and adds its share, ``partials per tile x depth_i / s`` (the first stage: the partials
each tile produced). Its cycles follow the model's rules for any compute set that receives its
data (section 7): its exchange (``<stage>/ExchangePre``, exchange_cost.py: the latency, the reach over
the partition's tiles, the bytes ÷ ``exchange_bytes_per_cycle``), then the additions on the vector
unit + ``vertex_overhead_cycles``.
"""

from __future__ import annotations

import math

from profcompare.emulator.compile.amp import AmpPartition
from profcompare.emulator.compile.exchange_cost import small_exchange_cycles
from profcompare.emulator.targets import DeviceSpec


def reduce_stages(depth: int, multi_stage: bool = True) -> int:
    """Stages poplin reduces ``depth`` partials in (ConvReducePlan.cpp ``getNumReduceStages``)."""
    if not multi_stage:
        return 1
    if depth >= 125:
        return 3
    if depth >= 16:
        return 2
    return 1


def _plan_and_cost(depth: int, stages: int) -> tuple[tuple[int, ...], float]:
    if stages == 1:
        return (), float(depth)
    down = int(math.pow(depth, (stages - 1.0) / stages))
    plan_down, cost_down = _plan_and_cost(down, stages - 1)
    cost_down += depth / down
    plan_up, cost_up = _plan_and_cost(down + 1, stages - 1)
    cost_up += depth / (down + 1)
    if cost_down < cost_up:
        return (down, *plan_down), cost_down
    return (down + 1, *plan_up), cost_up


def reduce_plan(depth: int) -> tuple[int, ...]:
    """The depth of the partials entering each stage: ``(depth, intermediate depths...)``
    (ConvReducePlan.cpp ``getMultiStageReducePlan``); empty when there is nothing to reduce."""
    if depth <= 1:
        return ()
    return (depth, *_plan_and_cost(depth, reduce_stages(depth))[0])


def reduce_stage_cycles(part: AmpPartition, device: DeviceSpec, tiles: int | None = None) -> tuple[tuple[int, int], ...]:
    """(exchange, compute) cycles of each stage of the partition's reduction (see the module) on an
    IPU of ``tiles`` compute tiles (default: all its tiles)."""
    depths = reduce_plan(part.in_splits)
    if not depths:
        return ()
    partial_bytes = 4 if part.unit.float_partials else 2
    produced = part.field_per_tile * part.out_groups_per_tile * part.unit.out_chans * part.groups_per_tile
    width = max(1, device.datapath_bytes // partial_bytes)
    out = []
    for depth in depths:
        per_tile = math.ceil(produced * depth / part.in_splits)
        out.append((small_exchange_cycles(device, per_tile * partial_bytes, part.tiles,
                                          tiles or device.tiles_per_ipu),
                    math.ceil(per_tile / width + device.vertex_overhead_cycles)))
    return tuple(out)


__all__ = ["reduce_plan", "reduce_stage_cycles", "reduce_stages"]
