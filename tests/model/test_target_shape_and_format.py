"""Target's per-replica budget, the shape text of the variables table and meta.format."""

from __future__ import annotations

import pytest

from profcompare.errors import ReportValidationError
from profcompare.model import ReportMeta, Target, format_shape, parse_shape


def test_a_replica_budget_is_its_tiles_times_the_bytes_per_tile():
    target = Target(architecture="Mk2", num_ipus=4, tiles_per_ipu=1472, bytes_per_tile=638_976, clock_hz=1.33e9,
                    num_replicas=2, ipus_per_replica=2)
    # two IPUs of 1,472 tiles of 624 KiB each per replica
    assert target.tiles_per_replica == 2944
    assert target.bytes_per_replica == 2944 * 638_976 == 1_881_145_344
    one = Target(architecture="Mk2", num_ipus=1, tiles_per_ipu=1472, bytes_per_tile=638_976, clock_hz=1.33e9)
    assert (one.tiles_per_replica, one.bytes_per_replica) == (1472, 940_572_672)


@pytest.mark.parametrize(("text", "shape"), [
    ("", None), ("   ", None),  # unknown
    ("[]", ()), ("()", ()),  # a scalar
    ("[784, 512]", (784, 512)), (" [10] ", (10,)), ("(8, 1, 3)", (8, 1, 3)),
])
def test_shape_text_parses(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize("shape", [None, (), (1,), (784, 512), (2, 0, 3)])
def test_shape_text_round_trips(shape):
    assert parse_shape(format_shape(shape)) == shape


@pytest.mark.parametrize("fmt", ["csv", "", "STORE", "popvision"])
def test_a_report_of_another_format_is_refused(fmt):
    target = Target(architecture="Mk2", num_ipus=1, tiles_per_ipu=1472, bytes_per_tile=638_976, clock_hz=1.33e9)
    with pytest.raises(ReportValidationError) as err:
        ReportMeta(source="", format=fmt, producer="test", simulated=True, target=target)
    assert str(err.value) == f"meta.format must be 'store', 'pva' or 'ga_cache', got {fmt!r}"
    for ok in ("store", "pva"):
        assert ReportMeta(source="", format=ok, producer="test", simulated=True, target=target).format == ok
