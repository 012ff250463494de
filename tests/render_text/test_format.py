"""Number formatting shared by every renderer."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from profcompare.model import ReportMeta, Target
from profcompare.render.format import (
    MISSING,
    describe_report,
    format_bytes,
    format_bytes_each,
    format_count,
    format_metric,
    format_pct,
    metric_tone,
    status_tone,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0, "0 B"),
        (1, "1 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (624 * 1024, "624.0 KiB"),
        (int(3.6 * 1024**2), "3.6 MiB"),
        (1024**2 - 1, "1.0 MiB"),  # 1023.999 KiB rounds up into the next unit, never "1024.0 KiB"
        (897 * 1024**2, "897.0 MiB"),
        (5 * 1024**4, "5.0 TiB"),
        (-2048, "-2.0 KiB"),
    ],
)
def test_format_bytes_uses_1024_based_units(value: int, expected: str) -> None:
    assert format_bytes(value) == expected


def test_format_bytes_signed_marks_growth_only() -> None:
    assert format_bytes(2048, signed=True) == "+2.0 KiB"
    assert format_bytes(-64, signed=True) == "-64 B"
    assert format_bytes(0, signed=True) == "0 B"


@pytest.mark.parametrize("missing", [None, math.nan, pd.NA])
def test_missing_values_read_na(missing: object) -> None:
    assert format_bytes(missing) == MISSING
    assert format_pct(missing) == MISSING
    assert format_count(missing) == MISSING


def test_format_pct_never_hides_a_small_change() -> None:
    assert format_pct(12.345) == "+12.3%"
    assert format_pct(-0.5) == "-0.5%"
    assert format_pct(0.0) == "0.0%"
    assert format_pct(0.01) == "+<0.1%"
    assert format_pct(-0.01) == "-<0.1%"
    assert format_pct(40.0, signed=False) == "40.0%"


def test_format_metric_follows_the_metric_unit() -> None:
    assert format_metric("peak_liveness_bytes", 3 * 1024**2) == "3.0 MiB"
    assert format_metric("cycles_per_step", 1234567.4) == "1,234,567"
    assert format_metric("tiles_over_budget", 3.0) == "3"
    assert format_metric("samples_per_second", 12345.67) == "12,345.7"
    assert format_metric("cycles_per_step", -50.0, signed=True) == "-50"


def test_growth_is_bad_for_memory_and_good_for_throughput() -> None:
    assert status_tone("grew") == "bad"
    assert status_tone("added") == "bad"
    assert status_tone("shrank") == "good"
    assert status_tone("unchanged") is None
    assert metric_tone("peak_liveness_bytes", "grew") == "bad"
    assert metric_tone("samples_per_second", "grew") == "good"
    assert metric_tone("samples_per_second", "shrank") == "bad"


def test_describe_report_says_simulated_and_oom() -> None:
    target = Target("Mk2", 1, 1472, 624 * 1024, 1.33e9)
    sim = ReportMeta("", "store", "profcompare-sim 0.1.0", True, target, variant="onchip")
    assert describe_report(sim) == "onchip (simulated, profcompare-sim 0.1.0)"
    real = ReportMeta("", "pva", "Poplar 3.3.0", False, target, variant="offchip", oom=True)
    assert describe_report(real) == "offchip (Poplar 3.3.0, OUT OF MEMORY)"


def test_format_bytes_each_is_format_bytes_of_every_value() -> None:
    """The array form gives format_bytes' text for every value: around each unit's boundary (where
    Python's rounding picks the unit), powers of 1024 and their neighbours, random magnitudes over
    every unit, negatives, zeros, infinities; NaN gives the text asked for."""
    rng = np.random.default_rng(3)
    edges = []
    for k in range(7):
        base = 1024.0 ** k
        edges += [base, np.nextafter(base, 0), np.nextafter(base, np.inf), 1023.94 * base, 1023.95 * base,
                  1023.96 * base, 1024 * base - 1, 0.05 * base, 0.95 * base, 999.95 * base]
    values = np.concatenate([np.array(edges), rng.uniform(0, 70, 20_000) ** 10, rng.integers(0, 5000, 2_000),
                             -rng.uniform(0, 1e7, 500), [0.0, -0.0, 0.5, 1.5, 2.5, 1023.5, np.inf, -np.inf]])
    assert format_bytes_each(values) == [format_bytes(v) for v in values]
    assert format_bytes_each(np.array([np.nan, 2048.0]), missing="–") == ["–", "2.0 KiB"]
    assert format_bytes_each(np.array([np.nan])) == [format_bytes(np.nan)]
