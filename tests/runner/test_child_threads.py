"""A workload variant's subprocess runs numpy's BLAS on one thread unless the caller says otherwise;
a user's script keeps the caller's environment."""

from __future__ import annotations

from pathlib import Path

from profcompare.runner import child_environment
from profcompare.runner.plan import SCRIPT_CHILD_MODULE, Job

VARIANT = Job("onchip", "mnist", "workloads.mnist:WORKLOAD", "onchip", {})
SCRIPT = Job("train.py", "script", "", "train.py", {}, child=SCRIPT_CHILD_MODULE)


def test_variant_subprocess_runs_blas_on_one_thread(tmp_path: Path) -> None:
    env = child_environment(VARIANT, tmp_path, "sim", {"PATH": "/usr/bin"})
    assert env["OPENBLAS_NUM_THREADS"] == env["OMP_NUM_THREADS"] == env["MKL_NUM_THREADS"] == "1"


def test_callers_thread_count_wins(tmp_path: Path) -> None:
    env = child_environment(VARIANT, tmp_path, "sim", {"OPENBLAS_NUM_THREADS": "4", "OMP_NUM_THREADS": "2"})
    assert env["OPENBLAS_NUM_THREADS"] == "4" and env["OMP_NUM_THREADS"] == "2" and env["MKL_NUM_THREADS"] == "1"


def test_script_subprocess_keeps_the_callers_threads(tmp_path: Path) -> None:
    env = child_environment(SCRIPT, tmp_path, "sim", {"PATH": "/usr/bin"})
    assert not {"OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"} & set(env)
