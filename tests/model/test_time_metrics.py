"""The three figures of time in a report's summary: device cycles per step, host/runtime time per
step (the runtime phase, not device time) and time per session.run = their sum."""

from __future__ import annotations

import math

import pytest

from profcompare.model import Report, ReportMeta, Target, make_frame

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
