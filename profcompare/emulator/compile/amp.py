"""A matmul's Convolve compute set on the AMP units: its partition over tiles and its cycles
(docs/ipu-model.md "Cycles").

PopLibs computes a matmul as a 1x1 convolution (graphcore/poplibs ``lib/poplin/MatMul.cpp``,
``getConvParams``: a matmul is "a 1-d convolution" with input channels = the contraction). The
planner may swap the operands (``ConvTransform::swapOperands``, ``lib/poplin/Convolution.cpp``), and
the real trace in ``shared/data`` shows it does for a small batch: the LHS of 5 rows is rearranged
as the convolution's weights (``MatMulOp_LhsReshape ... _to_ .../weightsRearranged``). So for
``C[M, N] = A[M, K] @ B[K, N]`` the input channels are K, and either the output channels are M and
the field N (the LHS is the weights) or the other way round, whichever the partition prefers.

The AMP vertex (``ConvPartial1x1Out``) works on groups of channels: ``in_chans`` input channels
(the conv unit's weights: pipeline depth x input load elements, 4 x 2 fp32 / 4 x 4 fp16) by
``out_chans`` output channels (one per conv unit used); a channel count is padded up to its
group (poplin's ValuePadder; the real trace's ``ValuePadder/padding`` copies). Its cycles are
PopLibs' own estimate (``lib/poplin/PerformanceEstimation.hpp``:
``getConvPartial1x1SupervisorCycleEstimate``, the half/float path), restated here:

- the worker loop over its field positions e (6 workers share the tile's field, each cycle of a
  worker is ``worker_contexts`` tile cycles): for fp32 activations 24 cycles at e = 0, 47 at
  e = 1, 46 at e = 2, then 46 + 8 (e - 3); when the pass zeroes the partials it adds 2 + z e
  (z = 8 with 16 fp32 conv units, 4 with fp32 partials, else 2). fp16 activations with fp32
  partials (or 16 conv units): 21/22, 32/33, 41/42, 37/38 + 4 (e - 3), less a retention saving
  of 7; the tile waits for its slowest worker (at least the fastest + 14);
- the supervisor's loop: 50 cycles, then per input-channel group and output-channel group the
  weight load (conv units x weight bytes per unit / 16 bytes per cycle, the ld128 load) and
  fixed costs of 6 to 19 cycles around each worker pass (the first pass zeroes the partials).

The partition (how the field, the input-channel groups and the output-channel groups are split
over the tiles) is the one of smallest modelled cycles -- the Convolve, the rearranged weights
each tile receives, and, when the input channels are split, the reduction of the partials --,
which is what PopLibs' planner minimises (``lib/poplin/ConvPlan.cpp``); ASSUMPTION: with these
three costs only (the planner also weighs memory and its own exchange estimates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from profcompare.emulator.targets import DeviceSpec

#: Bytes per cycle of the AMP's weight (coefficient) load: the ld128 load, "16 bytes per cycle"
#: (graphcore/poplibs lib/poplin/PerformanceEstimation.hpp, getConvPartialAmpSupervisorWeightLoadCycleEstimate)
COEFF_LOAD_BYTES_PER_CYCLE = 16

#: Weights per conv unit: the conv unit's pipeline depth (4) x input elements loaded per cycle
#: (2 fp32, 4 fp16) (graphcore/poplibs lib/poplin/ConvVertexType.cpp: weightsPerConvUnit =
#: convChainLength x convInputLoadElems)
CHAIN_LENGTH = 4

#: Worker cycles per field position of the AMP inner loop: 8 fp32, 4 fp16 activations
#: (PerformanceEstimation.hpp "Core loop cycles for 16x8 AMP vertex")
CORE_CYCLES = {4: 8, 2: 4}


@dataclass(frozen=True)
class AmpUnit:
    """One AMP vertex configuration: conv units used, the channel groups, the input element type."""

    conv_units: int
    in_chans: int  # input channels per group (weights per conv unit)
    out_chans: int  # output channels per group (one per conv unit)
    itemsize: int  # bytes of an input element (4 fp32, 2 fp16)
    float_partials: bool


@dataclass(frozen=True)
class AmpPartition:
    """A matmul's Convolve over the tiles: the split of each dimension, the per-tile work and cycles."""

    unit: AmpUnit
    field_splits: int
    in_splits: int  # ways the contraction (input-channel groups) is split: partials per output
    out_splits: int
    group_splits: int
    field_per_tile: int
    in_groups_per_tile: int
    out_groups_per_tile: int
    groups_per_tile: int
    convolve_cycles: int  # the AMP vertex of the busiest tile (PopLibs' estimate)
    weights_bytes_per_tile: int  # the padded weights (LHS) slice each tile holds
    padded_m: int  # output channels after padding to the group
    padded_k: int  # input channels after padding to the group
    swapped: bool  # the RHS is the weights (output channels N, field M)

    @property
    def tiles(self) -> int:
        return self.field_splits * self.in_splits * self.out_splits * self.group_splits


@dataclass(frozen=True)
class AmpDevice:
    """The device figures the partition needs (hashable, for the cache)."""

    worker_contexts: int
    datapath_bytes: int
    amp_flops_per_cycle_fp16: int
    amp_flops_per_cycle_fp32: int
    exchange_bytes_per_cycle: int

    @classmethod
    def of(cls, device: DeviceSpec) -> AmpDevice:
        return cls(device.worker_contexts, device.datapath_bytes, device.amp_flops_per_cycle_fp16,
                   device.amp_flops_per_cycle_fp32, device.exchange_bytes_per_cycle)


def amp_units(device: AmpDevice, itemsize: int, float_partials: bool) -> tuple[AmpUnit, ...]:
    """The AMP configurations of ``device`` for inputs of ``itemsize`` bytes: every conv unit of
    the tile, and 8 of them (poplin ConvVertexType.cpp: "we need to enable 8 engines config as well").

    Conv units per tile: the device's AMP MACs per cycle x worker cycles per field position / weights
    per conv unit (a field position's pass multiplies a weight group by every conv unit; D from
    facts 1.1's AMP rates: Mk2 16 fp32 / 16 fp16 units, Mk1 8 / 8)."""
    itemsize = 4 if itemsize >= 4 else 2
    in_chans = CHAIN_LENGTH * (device.datapath_bytes // itemsize)
    macs = (device.amp_flops_per_cycle_fp16 if itemsize == 2 else device.amp_flops_per_cycle_fp32) // 2
    units = max(1, macs * CORE_CYCLES[itemsize] // in_chans)
    counts = sorted({units, min(units, 8)}, reverse=True)
    return tuple(AmpUnit(u, in_chans, u, itemsize, float_partials or itemsize == 4) for u in counts)


def _worker_cycles(e: int, zeroing: bool, unit: AmpUnit) -> int:
    """One worker's inner-loop cycles over ``e`` field positions (PerformanceEstimation.hpp)."""
    float_acts = unit.itemsize == 4
    core = CORE_CYCLES[unit.itemsize]
    z = 8 if (float_acts and unit.conv_units == 16) else (4 if unit.float_partials else 2)
    common = (not float_acts and unit.conv_units == 16) or unit.float_partials
    if float_acts:
        fixed = (24, 47, 46)
        cycles = fixed[e] if e < 3 else 46 + (e - 3) * core
        if e > 0:
            cycles += (2 + z * e) * zeroing
        return cycles
    if common:
        cycles = (20, 31, 40)[e] if e < 3 else 37 + (e - 3) * core
        cycles += (1 if zeroing else 2) if e < 3 else (0 if zeroing else 1)
        return cycles - (7 if e > 0 else 0)
    cycles = (24, 39, 40)[e] if e < 3 else 41 + (e - 3) * core
    if e > 0:
        cycles += (2 + z * e) * zeroing
    return cycles


def _inner_loop_cycles(field: int, zeroing: bool, unit: AmpUnit, workers: int) -> int:
    """Tile cycles of one pass over ``field`` positions shared by the workers: the slowest worker's
    cycles times the worker contexts (at least the fastest's + 14)."""
    if field <= 0:
        return 0
    most, least = -(-field // workers), field // workers
    slowest = workers * _worker_cycles(most, zeroing, unit)
    fastest = workers * _worker_cycles(least, zeroing, unit) if field >= workers else 0
    return max(slowest, fastest + 14)


def convolve_cycles(field: int, in_groups: int, out_groups: int, groups: int, unit: AmpUnit, workers: int) -> int:
    """PopLibs' estimate of a ConvPartial1x1Out vertex: ``field`` positions, ``in_groups`` x
    ``out_groups`` channel groups, ``groups`` conv groups (getConvPartial1x1SupervisorCycleEstimate)."""
    if field <= 0 or in_groups <= 0 or out_groups <= 0 or groups <= 0:
        return 0
    float_acts = unit.itemsize == 4
    common = int((not float_acts and unit.conv_units == 16) or unit.float_partials)
    retention_total, retention_in = (7, 3) if (not float_acts and common) else (0, 0)
    loads = unit.conv_units * unit.in_chans * unit.itemsize // COEFF_LOAD_BYTES_PER_CYCLE
    passes = -(-unit.out_chans // unit.conv_units)
    zeroing = _inner_loop_cycles(field, True, unit, workers)
    plain = _inner_loop_cycles(field, False, unit, workers)
    later_groups = (in_groups - 1) * (15 - common + 1 + out_groups * (19 + passes * (6 + loads + plain)))
    first_group = 11 + out_groups * (19 - common + passes * (7 + loads + zeroing))
    return (50 + workers * (retention_total + retention_in * (in_groups * groups - 1))
            + groups * (12 + common + later_groups + first_group))


def _split_choices(n: int) -> list[int]:
    """Ways to split ``n`` items that give distinct per-tile counts (ceil(n / k))."""
    out, k = [], 1
    while k <= n:
        per = -(-n // k)
        out.append(k)
        k = -(-n // (per - 1)) if per > 1 else n + 1
    return out


def plan_partition(m: int, k: int, n: int, groups: int, itemsize: int, float_partials: bool, tiles: int,
                   device: DeviceSpec) -> AmpPartition:
    """The partition of a matmul ``[groups] x [m, k] @ [k, n]`` over ``tiles`` tiles (module docstring)."""
    return _plan(max(1, m), max(1, k), max(1, n), max(1, groups), itemsize, float_partials, max(1, tiles),
                 AmpDevice.of(device))


@lru_cache(maxsize=4096)
def _plan(m: int, k: int, n: int, groups: int, itemsize: int, float_partials: bool, tiles: int,
          device: AmpDevice) -> AmpPartition:
    best: tuple[float, AmpPartition] | None = None
    # the planner may swap the operands (poplin ConvTransform swapOperands): M and N change parts
    orientations = ((False, m, n), (True, n, m)) if m != n else ((False, m, n),)
    for swapped, out_chans, field_size in orientations:
        for unit in amp_units(device, itemsize, float_partials):
            found = _best_split(out_chans, k, field_size, groups, unit, tiles, device)
            if best is None or found[0] < best[0]:
                cost, (f, s, o, gs, field, g_in, g_out, g, conv, weights) = found
                best = (cost, AmpPartition(unit, f, s, o, gs, field, g_in, g_out, g, conv, weights,
                                           -(-out_chans // unit.out_chans) * unit.out_chans,
                                           -(-k // unit.in_chans) * unit.in_chans, swapped))
    assert best is not None
    return best[1]


def _best_split(m: int, k: int, n: int, groups: int, unit: AmpUnit, tiles: int, device: AmpDevice
                ) -> tuple[float, tuple[int, ...]]:
    """The split of smallest modelled cycles for output channels ``m``, input channels ``k``,
    field ``n``: (cost, (field, input, output, group splits, per-tile field, input groups, output
    groups, conv groups, Convolve cycles, weights bytes per tile))."""
    workers = device.worker_contexts
    best: tuple[float, tuple[int, ...]] | None = None
    in_groups, out_groups = -(-k // unit.in_chans), -(-m // unit.out_chans)
    partial_bytes = 4 if unit.float_partials else 2
    for gs in _split_choices(groups):
        for s in _split_choices(in_groups):
            for o in _split_choices(out_groups):
                room = tiles // (gs * s * o)
                if room < 1:
                    break
                f = min(n, room)
                f = -(-n // -(-n // f))  # the fewest tiles for the same field per tile
                field, g_in, g_out, g = -(-n // f), -(-in_groups // s), -(-out_groups // o), -(-groups // gs)
                conv = convolve_cycles(field, g_in, g_out, g, unit, workers)
                weights = g * g_out * unit.out_chans * g_in * unit.in_chans * unit.itemsize
                cost = conv + weights / device.exchange_bytes_per_cycle
                if s > 1:
                    # the partials of the other splits: received, then added (vector unit)
                    per_tile = math.ceil(s * n * out_groups * unit.out_chans * groups / (f * s * o * gs))
                    cost += (per_tile * partial_bytes / device.exchange_bytes_per_cycle
                             + per_tile / max(1, device.datapath_bytes // partial_bytes))
                if best is None or cost < best[0]:
                    best = (cost, (f, s, o, gs, field, g_in, g_out, g, conv, weights))
    assert best is not None
    return best


__all__ = ["COEFF_LOAD_BYTES_PER_CYCLE", "AmpDevice", "AmpPartition", "AmpUnit", "amp_units", "convolve_cycles",
           "plan_partition"]
