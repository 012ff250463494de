"""Report.with_meta: the same tables (the very frames) under another meta; the tables are
checked again only when the target changes (the only part of meta their checks read)."""

from __future__ import annotations

import dataclasses

import pytest

from profcompare.errors import ReportValidationError
from profcompare.model import TABLES, Report, ReportMeta, Target, make_frame

TARGET = Target(architecture="Mk2", num_ipus=1, tiles_per_ipu=2, bytes_per_tile=1000, clock_hz=1.25e9, num_replicas=1)


def _report() -> Report:
    tiles = make_frame("tiles", {"tile": [0, 1], "ipu": [0, 0], "bytes_including_gaps": [900, 800],
                                 "bytes_excluding_gaps": [800, 700], "always_live_bytes": [100, 100],
                                 "not_always_live_peak_bytes": [50, 40]})
    meta = ReportMeta(source="a", format="store", producer="test", simulated=True, target=TARGET,
                      samples_per_step=100)
    return Report.build(meta, tiles=tiles)


def test_the_same_frames_under_the_new_meta() -> None:
    report = _report()
    report.summary()  # a kept result of the old meta is not carried over
    copy = report.with_meta(report.meta.replace(source="b", samples_per_step=50))
    assert copy.meta.source == "b" and report.meta.source == "a"
    assert all(getattr(copy, t) is getattr(report, t) for t in TABLES)
    assert copy.summary()["samples_per_second"] != report.summary()["samples_per_second"]


def test_a_new_target_checks_the_tables_again() -> None:
    report = _report()
    smaller = dataclasses.replace(TARGET, tiles_per_ipu=1)  # tile 1 is no longer on the IPU
    with pytest.raises(ReportValidationError, match="tile"):
        report.with_meta(report.meta.replace(target=smaller))
    wider = report.with_meta(report.meta.replace(target=dataclasses.replace(TARGET, bytes_per_tile=2000)))
    assert wider.meta.target.bytes_per_tile == 2000


def test_not_a_meta_is_refused() -> None:
    with pytest.raises(ReportValidationError, match="ReportMeta"):
        _report().with_meta({"source": "b"})  # type: ignore[arg-type]
