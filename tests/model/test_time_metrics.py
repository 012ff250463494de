"""The three figures of time in a report's summary: device cycles per step, host/runtime time per
step (the runtime phase, not device time) and time per session.run = their sum."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from profcompare.model import Report, ReportMeta, Target, make_frame, run_span_cycles

CLOCK = 1.25e9
TARGET = Target(architecture="Mk2", num_ipus=1, tiles_per_ipu=2, bytes_per_tile=1000, clock_hz=CLOCK, num_replicas=1)


def _report(phases: list[tuple[str, int, int]], *, simulated: bool = True) -> Report:
    """One profiled run of steps (phase, cycles_from, cycles_to), one after another."""
    execution = make_frame("execution", {
        "run": [0] * len(phases), "step": list(range(len(phases))), "program": ["main"] * len(phases),
        "type": ["Call"] * len(phases), "phase": [p for p, _, _ in phases],
        "cycles": [b - a for _, a, b in phases],
        "cycles_from": [a for _, a, _ in phases], "cycles_to": [b for _, _, b in phases],
    })
    meta = ReportMeta(source="", format="store", producer="test", simulated=simulated, target=TARGET,
                      samples_per_step=100, capabilities=frozenset({"execution"}))
    return Report.build(meta, execution=execution)


def test_host_time_is_the_runtime_phase_and_time_per_run_is_device_plus_host() -> None:
    summary = _report([("compute", 0, 1_000), ("exchange", 1_000, 1_500), ("runtime", 1_500, 4_000)]).summary()
    # device: the span of compute + exchange = 1,500 cycles; host: the 2,500 runtime cycles
    assert summary["cycles_per_step"] == 1_500
    assert summary["host_seconds_per_step"] == 2_500 / CLOCK == 2e-6
    assert summary["seconds_per_step"] == 1_500 / CLOCK + 2_500 / CLOCK == 3.2e-6
    assert summary["samples_per_second"] == pytest.approx(100 / 3.2e-6)


def test_a_profile_without_host_time_says_so() -> None:
    summary = _report([("compute", 0, 1_000), ("sync", 1_000, 1_250)], simulated=False).summary()
    # a Poplar profile records device time only: host time is unknown (NaN), not zero
    assert summary["cycles_per_step"] == 1_250
    assert math.isnan(summary["host_seconds_per_step"])
    assert summary["seconds_per_step"] == 1_250 / CLOCK


def test_run_spans_worked_by_hand_in_run_order_or_not() -> None:
    """Three runs: run 0 every interval known, run 1 one device row without an interval (its
    cycles then add up), run 2 host/runtime rows only (no device span: not a run of the device)."""
    rows = [  # (run, phase, cycles, cycles_from, cycles_to)
        (0, "compute", 100, 0, 100), (0, "exchange", 50, 100, 150), (0, "runtime", 250, 150, 400),
        (1, "compute", 120, 400, 520), (1, "compute", 40, None, None), (1, "runtime", 80, 520, 600),
        (2, "runtime", 100, 600, 700),
    ]
    for order in (range(len(rows)), (3, 0, 6, 1, 4, 2, 5)):  # in run order; runs interleaved
        picked = [rows[i] for i in order]
        execution = make_frame("execution", {
            "run": [r[0] for r in picked], "step": list(range(len(picked))), "program": ["main"] * len(picked),
            "type": ["Call"] * len(picked), "phase": [r[1] for r in picked], "cycles": [r[2] for r in picked],
            "cycles_from": pd.array([r[3] for r in picked], dtype="Int64"),
            "cycles_to": pd.array([r[4] for r in picked], dtype="Int64")})
        # device: run 0 spans 150 - 0 = 150, run 1 sums 120 + 40 = 160; run 2 has no device row
        assert run_span_cycles(execution) == (150 + 160) / 2
        # whole session.run: run 0 spans 400, run 1 sums 120 + 40 + 80 = 240, run 2 spans 100
        assert run_span_cycles(execution, include_runtime=True) == (400 + 240 + 100) / 3
