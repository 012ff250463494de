"""The time model's two fitted constants: re-solved from the public timings, and what they mean."""

from __future__ import annotations

import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.calibration import PUBLIC_POINTS, fit_constants, remote_transfers_per_run
from profcompare.emulator.compile.synthetic import mlp_inference_program
from profcompare.emulator.targets import FITTED_REMOTE_TRANSFER_SECONDS, FITTED_RUN_OVERHEAD_SECONDS, MK2
from workloads import mnist
from workloads._mnist_program import build_program


def _training_program():
    from profcompare.emulator.lowering import lower

    config = {k.name: k.default for k in mnist.KNOBS}
    config.update(PUBLIC_POINTS[1].config)
    return lower(build_program("offchip-sharded", config).ir, "ipu_hw")


@pytest.fixture(scope="module")
def fit():
    return fit_constants(mlp_inference_program(batch=80), _training_program())


def test_the_fitted_constants_are_what_the_calibration_solves(fit) -> None:
    assert fit.run_overhead_seconds == pytest.approx(FITTED_RUN_OVERHEAD_SECONDS, rel=0.01)
    assert fit.remote_transfer_seconds == pytest.approx(FITTED_REMOTE_TRANSFER_SECONDS, rel=0.01)


def test_with_the_fitted_constants_the_fit_points_are_reproduced() -> None:
    inference = compile_program(mlp_inference_program(batch=80), MK2)
    assert inference.seconds_per_step == pytest.approx(PUBLIC_POINTS[0].seconds, rel=0.01)
    training = compile_program(_training_program(), MK2)
    assert training.seconds_per_step == pytest.approx(PUBLIC_POINTS[1].seconds, rel=0.01)


def test_the_remote_fit_divides_the_remainder_by_the_transfers_of_one_run(fit) -> None:
    program = _training_program()
    # off-chip sharded MNIST: 8 parameters x 3 state tensors (first, second order, step), loaded and stored
    assert remote_transfers_per_run(program) == fit.remote_transfers_per_run == 8 * 3 * 2
    rebuilt = fit.training_seconds_without_transfers + fit.remote_transfers_per_run * fit.remote_transfer_seconds
    assert rebuilt == pytest.approx(PUBLIC_POINTS[1].seconds, rel=1e-9)


def test_only_two_points_are_fitted_and_the_others_validate() -> None:
    roles = [p.role for p in PUBLIC_POINTS]
    assert roles.count("validate") == 2 and len(roles) == 4
    assert sorted(r for r in roles if r != "validate") == ["fit remote_transfer_seconds", "fit run_overhead_seconds"]
