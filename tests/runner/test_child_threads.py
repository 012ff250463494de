"""A workload variant's subprocess runs numpy's BLAS on one thread unless the caller says otherwise;
a user's script keeps the caller's environment; the command line loads its own BLAS library (the
one forked variants inherit) with the variants' thread counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from profcompare.perf import blas_threads
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


# The command line gives its own process the variants' thread counts before numpy is imported,
# so the BLAS library a forked variant inherits already runs the way the variant wants.

THREAD_NAMES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

# `profcompare workloads` imports numpy (the workloads' modules do) inside the command
_COMMAND_THEN_LOOK = """
import json, os, sys
from profcompare.perf import blas_threads
from profcompare.cli import main
assert "numpy" not in sys.modules
main(["workloads"])
from threadpoolctl import threadpool_info
blas = [int(i["num_threads"]) for i in threadpool_info() if i.get("user_api") == "blas"]
print(json.dumps({"env": {n: os.environ.get(n) for n in %r}, "blas": blas,
                  "known": blas_threads.loaded_as(dict.fromkeys(%r, "1"))}))
""" % (THREAD_NAMES, THREAD_NAMES)


def _command_then_look(**extra: str) -> dict[str, object]:
    root = str(Path(__file__).resolve().parents[2])
    env = {k: v for k, v in os.environ.items() if k not in THREAD_NAMES}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
    env.update(extra)
    out = subprocess.run([sys.executable, "-c", _COMMAND_THEN_LOOK], capture_output=True, text=True,
                         check=True, env=env).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_the_command_line_loads_blas_with_one_thread_and_then_gives_its_environment_back() -> None:
    seen = _command_then_look()
    assert seen["blas"] in ([], [1])  # numpy loaded inside the command: one thread (none: no BLAS library)
    assert seen["known"] is True  # a child forked from here needs no change of the counts
    assert seen["env"] == dict.fromkeys(THREAD_NAMES)  # the process's environment as it was


def test_the_command_line_keeps_a_thread_count_the_caller_set() -> None:
    seen = _command_then_look(OPENBLAS_NUM_THREADS="2")
    assert seen["env"] == {"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": None, "MKL_NUM_THREADS": None}
    assert seen["known"] is False  # loaded with 2: a child asking for 1 lowers it itself


def test_nothing_changes_once_numpy_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy  # noqa: F401 - loaded, as in a notebook or this test process

    monkeypatch.setattr(blas_threads, "_loaded_with", None)
    environ: dict[str, str] = {"PATH": "/usr/bin"}
    with blas_threads.loaded_as_variants_run(environ) as changed:
        assert changed is False
        assert environ == {"PATH": "/usr/bin"}
    assert not blas_threads.loaded_as(dict.fromkeys(THREAD_NAMES, "1"))  # unknown: the child sets its own


def test_before_numpy_the_variables_are_set_for_the_body_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "numpy", raising=False)
    monkeypatch.setattr(blas_threads, "_loaded_with", None)
    monkeypatch.setattr(blas_threads, "_added", ())
    environ = {"PATH": "/usr/bin", "OMP_NUM_THREADS": "3"}
    with blas_threads.loaded_as_variants_run(environ) as changed:
        assert changed is True
        assert environ == {"PATH": "/usr/bin", "OMP_NUM_THREADS": "3", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        # a forked child whose environment asks for these counts needs no change of them; another does
        assert blas_threads.loaded_as({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "1"})
        assert not blas_threads.loaded_as({"OPENBLAS_NUM_THREADS": "2", "OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "1"})
        assert not blas_threads.loaded_as({"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})
        # a user's program started meanwhile gets the environment it was given
        assert blas_threads.without_added(dict(environ)) == {"PATH": "/usr/bin", "OMP_NUM_THREADS": "3"}
    assert environ == {"PATH": "/usr/bin", "OMP_NUM_THREADS": "3"}
    # numpy was not imported in the body: nothing is known of the BLAS library it will load
    assert not blas_threads.loaded_as({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "3", "MKL_NUM_THREADS": "1"})
    assert blas_threads.without_added({"OPENBLAS_NUM_THREADS": "1"}) == {"OPENBLAS_NUM_THREADS": "1"}


@pytest.mark.parametrize("environ", [None, "a copy with more"])
def test_a_users_program_does_not_get_the_command_lines_own_thread_counts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, environ: str | None) -> None:
    # the command line added OPENBLAS_NUM_THREADS to its own environment; the caller had set OMP's.
    # `profile` passes no environment, `profile --addons` a copy of the process's with more in it
    monkeypatch.setattr(blas_threads, "_added", ("OPENBLAS_NUM_THREADS",))
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "1")
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    given = None if environ is None else {**os.environ, "PROFCOMPARE_SIM_ADDONS": "3.0"}
    script = child_environment(SCRIPT, tmp_path, "sim", given)
    assert "OPENBLAS_NUM_THREADS" not in script and script["OMP_NUM_THREADS"] == "1" and "MKL_NUM_THREADS" not in script
    variant = child_environment(VARIANT, tmp_path, "sim", given)
    assert variant["OPENBLAS_NUM_THREADS"] == variant["OMP_NUM_THREADS"] == variant["MKL_NUM_THREADS"] == "1"
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"  # the command's own environment is left as it is
