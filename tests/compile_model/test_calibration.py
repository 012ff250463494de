"""The one fitted constant (Streaming Memory bandwidth) is reproducible from its script."""

from __future__ import annotations

import importlib.util
import pathlib

import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.calibration import (
    MEASURED_SECONDS_PER_UPDATE,
    solve_streaming_bandwidth,
    streaming_bytes_per_run,
)
from profcompare.emulator.compile.synthetic import mlp_program
from profcompare.emulator.targets import CALIBRATED_STREAMING_BYTES_PER_S, MK2

SCRIPT = pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "calibrate_streaming.py"


def _script():
    spec = importlib.util.spec_from_file_location("calibrate_streaming", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_solver_inverts_the_model():
    program = mlp_program(replicas=4, grad_accum=4, remote=True, sharded=True)
    cal = solve_streaming_bandwidth(program)
    assert cal.streaming_bytes_per_update == streaming_bytes_per_run(program) == 2 * 1_398_620
    solved = compile_program(program, MK2.replace(streaming_bytes_per_s=cal.streaming_bytes_per_s))
    assert solved.seconds_per_step == pytest.approx(MEASURED_SECONDS_PER_UPDATE, rel=1e-4)


def test_calibrated_constant_is_reproduced_from_the_workload():
    pytest.importorskip("profcompare.emulator.lowering")
    pytest.importorskip("workloads._mnist_program")
    cal = solve_streaming_bandwidth(_script().workload_program())
    assert cal.streaming_bytes_per_s == pytest.approx(CALIBRATED_STREAMING_BYTES_PER_S, rel=0.01)
    assert cal.streaming_bytes_per_update == 2 * 1_398_620  # Adam state, RTS R=4 (popxl.md 5), in and out


def test_programs_without_streaming_cannot_calibrate():
    from profcompare.errors import ProfcompareError

    with pytest.raises(ProfcompareError, match="no bytes"):
        solve_streaming_bandwidth(mlp_program(layers=2))
