"""A simulated workload variant runs in a child forked from the runner (Linux), and that child is
the same kind of process a fresh ``python -m profcompare.runner.process.variant_main`` is: its own session and
process group, the job's directory, environment and BLAS thread count, its output in run.log."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import fake_workloads
import pytest

from profcompare import runner
from profcompare.runner import forked
from profcompare.runner.plan import SCRIPT_CHILD_MODULE, Job

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="variants are forked on Linux only")


def _run_fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, start: str | None,
              blas: str | None = None) -> dict[str, object]:
    monkeypatch.setattr(fake_workloads, "RUNNER_MARK", "set in the runner")
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", forked.START_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    if start is not None:
        monkeypatch.setenv(forked.START_VARIABLE, start)
    if blas is not None:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", blas)
    result = runner.execute_jobs(runner.make_jobs(["fake-small"]), out=tmp_path, name=f"r-{start}-{blas}",
                                 backend="sim")
    assert result.ok
    job_dir = tmp_path / f"r-{start}-{blas}" / "fake-small"
    env = json.loads((job_dir / "env.json").read_text())
    env["log"] = (job_dir / "run.log").read_text()
    return env


@pytest.mark.parametrize(("start", "forked_child"), [(None, True), ("spawn", False)])
def test_a_simulated_variant_runs_in_a_process_of_its_own_session(
        fake_registry: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: str | None,
        forked_child: bool) -> None:
    env = _run_fake(tmp_path, monkeypatch, start=start)
    # forked: the runner's modules, as they were, without an import; spawned: a fresh import
    assert env["runner_mark"] == ("set in the runner" if forked_child else None)
    assert env["pid"] != os.getpid() and env["ppid"] == os.getpid()
    assert env["sid"] == env["pid"]  # a session (and process group) of its own
    assert Path(str(env["cwd"])).name == "fake-small"
    assert env["PROFCOMPARE_BACKEND"] == "sim"
    assert "autoReport" in str(env["POPLAR_ENGINE_OPTIONS"])
    assert "stray output on stdout must not disturb the runner" in str(env["log"])


@pytest.mark.parametrize("start", [None, "spawn"])
@pytest.mark.parametrize(("blas", "threads"), [(None, 1), ("2", 2)])
def test_the_variant_has_the_blas_threads_its_environment_asks_for(
        fake_registry: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start: str | None,
        blas: str | None, threads: int) -> None:
    # one thread unless the caller's environment says otherwise, whether the BLAS library was
    # loaded by the variant (spawned) or by the runner (forked)
    assert _run_fake(tmp_path, monkeypatch, start=start, blas=blas)["blas_threads"] == threads


def test_only_simulated_workload_variants_are_forked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(forked.START_VARIABLE, raising=False)
    variant = Job("v", "mnist", "workloads.mnist:WORKLOAD", "onchip", {})
    script = Job("train.py", "script", "", "train.py", {}, child=SCRIPT_CHILD_MODULE)
    assert forked.can_fork(variant, "sim") is sys.platform.startswith("linux")
    assert not forked.can_fork(variant, "sdk")  # the real SDK gets a fresh process
    assert not forked.can_fork(script, "sim")  # a user's program too
    assert not forked.can_fork(variant, "sim", {forked.START_VARIABLE: "spawn"})


def test_a_forked_variant_reuses_freed_memory_instead_of_faulting_it_in_again() -> None:
    # in a fresh process (the test process's heap is whatever earlier tests left): after
    # keep_freed_memory, a large temporary freed and allocated again reuses pages already
    # mapped; a count of page faults, not a time
    import subprocess
    import textwrap

    script = textwrap.dedent("""
        import resource, numpy as np
        from profcompare.runner.forked import keep_freed_memory
        assert keep_freed_memory()
        np.ones(2 << 20).sum()  # 16 MiB, touched, then freed
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(5):
            np.ones(2 << 20).sum()
        print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    """)
    import ctypes.util

    if ctypes.util.find_library("c") is None or "musl" in (ctypes.util.find_library("c") or ""):
        pytest.skip("glibc only")
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, env=env).stdout
    # without keep_freed_memory glibc gives the block back each time: about 500 faults here
    assert int(out) < 50
