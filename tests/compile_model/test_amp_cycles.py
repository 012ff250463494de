"""The AMP Convolve estimate and a matmul's partition (compile/amp.py), worked out by hand from
PopLibs' own formula (graphcore/poplibs lib/poplin/PerformanceEstimation.hpp,
getConvPartial1x1SupervisorCycleEstimate)."""

from __future__ import annotations

from profcompare.emulator.compile.amp import (
    AmpDevice,
    AmpUnit,
    amp_units,
    convolve_cycles,
    plan_partition,
)
from profcompare.emulator.targets import MK1, MK2


def test_conv_units_follow_the_devices_amp_rates():
    # conv units = AMP MACs per cycle x worker cycles per field position / weights per unit:
    # Mk2 fp32 16 MACs x 8 / 8 = 16, fp16 64 x 4 / 16 = 16; Mk1 fp32 8 x 8 / 8 = 8, fp16 32 x 4 / 16 = 8;
    # and the 8-unit configuration PopLibs also offers
    mk2 = AmpDevice.of(MK2)
    assert [(u.conv_units, u.in_chans, u.out_chans) for u in amp_units(mk2, 4, True)] == [(16, 8, 16), (8, 8, 8)]
    assert [(u.conv_units, u.in_chans, u.out_chans) for u in amp_units(mk2, 2, True)] == [(16, 16, 16), (8, 16, 8)]
    mk1 = AmpDevice.of(MK1)
    assert [(u.conv_units, u.in_chans) for u in amp_units(mk1, 4, True)] == [(8, 8)]
    assert [(u.conv_units, u.in_chans) for u in amp_units(mk1, 2, True)] == [(8, 16)]


def test_an_fp16_convolve_by_hand():
    unit = AmpUnit(conv_units=16, in_chans=16, out_chans=16, itemsize=2, float_partials=True)
    # 12 positions, 2 per worker; fp16 with fp32 partials: worker cycles 40 + 1 (zeroing) or + 2,
    # less the retention saving of 7: 34 and 35, x 6 workers = 204 and 210, the tile waits at least
    # the fastest + 14: 218 and 224. Weight load 16 units x 16 x 2 B / 16 B per cycle = 32.
    # Supervisor: 50 + 6 x (7 + 3 x (2 - 1)) = 110; the first input group 11 + (19 - 1 + 7 + 32 + 218)
    # = 286, the second 15 + (19 + 6 + 32 + 224) = 296; 12 + 1 per conv group
    assert convolve_cycles(12, 2, 1, 1, unit, 6) == 110 + 13 + 286 + 296 == 705


def test_the_estimate_reaches_the_amp_rate_at_scale():
    # a large fp16 matmul: the core loop is the AMP rate (4 worker cycles per position for 16 x 16
    # channels: 128 FLOPs per cycle per tile on Mk2); the partition uses 1,408 of the 1,472 tiles
    # (11 field x 128 output-group splits), 373 positions a pass, whose fixed costs add 15%
    part = plan_partition(2048, 4096, 4096, 1, 2, True, 1472, MK2)
    peak = 2 * 2048 * 4096 * 4096 / (1472 * 128)
    assert (part.tiles, part.field_per_tile, part.in_groups_per_tile, part.out_groups_per_tile) == (1408, 373, 256, 1)
    core = 373 * 256 * 4
    assert round(part.convolve_cycles / core, 2) == 1.15
    assert 1.0 < part.convolve_cycles / peak < 1.25
    # with more positions a pass the fixed costs fade: 2,048 positions, 32 groups: 2.7% over the core loop
    unit = AmpUnit(conv_units=16, in_chans=16, out_chans=16, itemsize=2, float_partials=True)
    assert round(convolve_cycles(2048, 32, 1, 1, unit, 6) / (2048 * 32 * 4), 3) == 1.027


def test_a_batch_of_five_is_padded_to_the_amp_group_and_is_the_weights():
    # the real trace's first layer: images [5, 784] @ fc1.weight [784, 512], fp32. The 5 rows
    # become 8 output channels (the 8-unit AMP), K = 784 is 98 groups of 8, the field is 512;
    # the LHS is the weights, as the real trace's LhsReshape -> weightsRearranged copy shows
    part = plan_partition(5, 784, 512, 1, 4, True, 1472, MK2)
    assert (part.swapped, part.unit.conv_units, part.padded_m, part.padded_k) == (False, 8, 8, 784)
    # fixed costs dominate: 691 cycles where the FLOPs at the AMP rate would be 2 x 5 x 784 x 512 /
    # (1,472 x 32) = 86
    assert part.convolve_cycles == 691
    # the same product with the operands the other way round swaps them back
    other = plan_partition(512, 784, 5, 1, 4, True, 1472, MK2)
    assert other.swapped and other.convolve_cycles == part.convolve_cycles


def test_a_partition_never_uses_more_tiles_than_it_has():
    for m, k, n, tiles in ((1, 1, 1, 4), (7, 3, 11, 4), (300, 70, 9, 16), (64, 4096, 64, 1472)):
        part = plan_partition(m, k, n, 1, 4, True, tiles, MK2)
        assert 1 <= part.tiles <= tiles
        assert part.field_per_tile * part.field_splits >= (n if not part.swapped else m)
        assert part.convolve_cycles > 0
