"""Run directories appear only when complete: killed or interrupted runs leave nothing that looks done."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from runner_launch import launcher_code, subprocess_env

from profcompare import runner


def _start(args: list[str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", launcher_code(args)],
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, like a shell job: killpg reaches the children too
    )


def _wait_for(predicate, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    # a guard against hanging, not a speed claim: generous for a loaded 2-core machine
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out waiting for the run to get going")


def _slow_job_started(out: Path) -> bool:
    return any(out.glob(".r.tmp-*/fake-slow/env.json"))


def _visible(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir() if not p.name.startswith("."))


def _start_and_kill_mid_way(out: Path, *extra: str) -> None:
    proc = _start(["run", "fake-small", "fake-slow", "--set", "sleep=60", "--backend", "sim", "--out", str(out), "--name", "r", "-q", *extra])
    try:
        _wait_for(lambda: _slow_job_started(out))
        # fake-small is finished inside the staging directory, fake-slow is mid-way
        assert any(out.glob(".r.tmp-*/fake-small/run.json"))
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_run_killed_mid_way_leaves_no_complete_directory(fake_registry: object, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    _start_and_kill_mid_way(out)
    assert not (out / "r").exists()
    assert _visible(out) == []
    assert runner.list_runs(out) == []
    # a new run of the same name clears the dead run's staging directory and succeeds
    result = runner.execute_jobs(runner.make_jobs(["fake-small"], {"size": 111}), out=out, name="r", backend="sim")
    assert result.ok and (out / "r" / "fake-small" / "run.json").is_file()
    assert sorted(p.name for p in out.iterdir()) == ["r"]
    # a forced rerun killed mid-way leaves the previous run as it was
    _start_and_kill_mid_way(out, "--force", "--set", "size=222")
    assert _visible(out) == ["r"]
    assert runner.read_run_json(out / "r" / "fake-small")["config"]["size"] == 111
    assert not (out / "r" / "fake-slow").exists()


def test_interrupted_run_cleans_up_and_stops_its_children(fake_registry: object, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    proc = _start(["run", "fake-small", "fake-slow", "--set", "sleep=60", "--backend", "sim", "--out", str(out), "--name", "r"])
    try:
        _wait_for(lambda: _slow_job_started(out))
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal reaches the whole foreground group
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    assert b"aborted" in err or b"interrupted" in err
    assert sorted(out.iterdir()) == []


def test_rerun_without_force_refuses(fake_registry: object, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    args = ["run", "fake-small", "fake-broken", "--backend", "sim", "--out", str(out), "--name", "r", "-q", "--jobs", "2"]
    first = subprocess.run([sys.executable, "-c", launcher_code(args)], env=subprocess_env(), capture_output=True, timeout=120, check=False)
    assert first.returncode == 1, first.stderr.decode()
    assert (out / "r" / "fake-small" / "run.json").is_file()
    before = (out / "r" / "fake-small" / "run.json").read_bytes()
    second = subprocess.run([sys.executable, "-c", launcher_code(args)], env=subprocess_env(), capture_output=True, timeout=120, check=False)
    assert second.returncode == 2
    assert b"already exists" in second.stderr and b"--force" in second.stderr
    assert (out / "r" / "fake-small" / "run.json").read_bytes() == before


def _process_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in state  # a zombie has stopped; only its exit status is left


@pytest.mark.parametrize(("sig", "jobs"), [(signal.SIGTERM, "1"), (signal.SIGTERM, "2"), (signal.SIGINT, "1")])
def test_signal_to_the_runner_alone_stops_its_children_and_cleans_up(
    fake_registry: object, tmp_path: Path, sig: signal.Signals, jobs: str
) -> None:
    # `kill PID` or a CI timeout signals only the runner, not its process group
    out = tmp_path / "reports"
    proc = _start(["run", "fake-small", "fake-slow", "--set", "sleep=60", "--backend", "sim", "--out", str(out), "--name", "r", "-q", "--jobs", jobs])
    try:
        _wait_for(lambda: _slow_job_started(out))
        (env_file,) = out.glob(".r.tmp-*/fake-slow/env.json")
        child = json.loads(env_file.read_text())["pid"]
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    # SIGINT is 130, SIGTERM 128 + 15 = 143, as a shell reports them
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err.decode()
        assert b"interrupted" in err
    else:
        assert proc.returncode == 143, err.decode()
        assert b"profcompare: error: terminated by signal 15" in err
    assert b"Traceback" not in err
    assert sorted(out.iterdir()) == []
    _wait_for(lambda: _process_gone(child), timeout=60)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigkill_of_the_runner_leaves_no_orphaned_variant(fake_registry: object, tmp_path: Path, jobs: str) -> None:
    # `kill -9 PID` gives the runner no chance to clean up: its children must notice on their own
    out = tmp_path / "reports"
    proc = _start(["run", "fake-small", "fake-slow", "--set", "sleep=60", "--backend", "sim", "--out", str(out), "--name", "r", "-q", "--jobs", jobs])
    try:
        _wait_for(lambda: _slow_job_started(out))
        (env_file,) = out.glob(".r.tmp-*/fake-slow/env.json")
        child = json.loads(env_file.read_text())["pid"]
        proc.kill()
        proc.wait(timeout=120)
        _wait_for(lambda: _process_gone(child), timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_leftovers_of_killed_runs_of_any_name_are_removed_and_listed(fake_registry: object, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from profcompare.cli import cli

    out = tmp_path / "reports"
    out.mkdir()
    dead = _dead_pid()
    abandoned = runner.staging.create_staging(out, "other-run")  # its owner let go without publishing: gone
    (abandoned.path / "half.txt").write_text("x")
    abandoned.release()
    stale_dir = out / f".older-run.tmp-{dead}"  # from before owner locks, last touched long ago
    stale_dir.mkdir()
    long_ago = time.time() - runner.staging.SETUP_GRACE_SECONDS - 5
    os.utime(stale_dir, (long_ago, long_ago))
    stale_file = out / f".old-run.old-{dead}"
    stale_file.write_text("x")
    live = runner.staging.create_staging(out, "busy")  # a run in progress: never touched
    try:
        listing = CliRunner().invoke(cli, ["runs", "--out", str(out)])
        assert "3 leftover staging directories of killed runs" in listing.output
        result = CliRunner().invoke(cli, ["run", "fake-small", "--backend", "sim", "--out", str(out), "--name", "new", "-q"])
        assert result.exit_code == 0, result.output
        assert sorted(p.name for p in out.iterdir()) == [live.path.name, "new"]
    finally:
        live.discard()


@pytest.mark.parametrize("kind", ["file", "symlink", "dangling"])
def test_force_over_a_file_or_symlink_leaves_nothing_behind(fake_registry: object, tmp_path: Path, kind: str) -> None:
    from click.testing import CliRunner

    from profcompare.cli import cli

    out = tmp_path / "reports"
    out.mkdir()
    target = out / "r"
    if kind == "file":
        target.write_text("precious")
    elif kind == "symlink":
        (tmp_path / "elsewhere").mkdir()
        target.symlink_to(tmp_path / "elsewhere")
    else:
        target.symlink_to(tmp_path / "nowhere")
    refused = CliRunner().invoke(cli, ["run", "fake-small", "--backend", "sim", "--out", str(out), "--name", "r", "-q"])
    assert refused.exit_code != 0 and "already exists" in str(refused.exception) + refused.output
    forced = CliRunner().invoke(cli, ["run", "fake-small", "--backend", "sim", "--out", str(out), "--name", "r", "-q", "--force"])
    assert forced.exit_code == 0, forced.output
    assert sorted(p.name for p in out.iterdir()) == ["r"]
    assert (out / "r").is_dir() and not (out / "r").is_symlink()
    if kind == "symlink":
        assert (tmp_path / "elsewhere").is_dir()  # the link's target is not deleted


@pytest.mark.parametrize("name", ["bad\nname", "esc\x1b[31m", "tab\tname", "c1\x9bx", "x" * 201])
def test_run_names_with_control_characters_or_too_long_are_refused(fake_registry: object, tmp_path: Path, name: str) -> None:
    with pytest.raises(runner.WorkloadError if hasattr(runner, "WorkloadError") else Exception, match="bad run name"):
        runner.check_run_name(name)
