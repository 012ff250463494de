"""A staging directory is removed only when its owner is proven gone (its lock is free), never
because its process id looks dead here: the reports folder may be shared with other containers or
hosts, whose process ids mean nothing in this one. A run whose staging directory was taken away
publishes nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from runner_launch import subprocess_env

from profcompare import runner
from profcompare.cli import cli
from profcompare.runner import staging as staging_mod


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _pid_looks_dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


#: a run in another PID namespace: its staging directory is named after a pid that does not exist here
_OTHER_NAMESPACE_OWNER = """
import os, sys, time
from pathlib import Path
from profcompare.runner import staging
os.getpid = lambda: {pid}
held = staging.create_staging(Path(sys.argv[1]), "r")
(held.path / "half-written.txt").write_text("in progress")
print(held.path, flush=True)
time.sleep(120)
"""


def _start_owner(out: Path, pid: int) -> tuple[subprocess.Popen[str], Path]:
    proc = subprocess.Popen([sys.executable, "-c", _OTHER_NAMESPACE_OWNER.format(pid=pid), str(out)],
                            env=subprocess_env(), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line, "the owner process did not start"
    return proc, Path(line)


def test_a_live_staging_directory_survives_clean_up_whatever_its_pid_and_goes_once_its_owner_died(
    fake_registry: object, tmp_path: Path
) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    dead = _dead_pid()
    proc, held = _start_owner(out, dead)
    try:
        assert held.name.startswith(f".r.tmp-{dead}-") and _pid_looks_dead(dead)
        assert runner.leftover_staging(out) == []
        assert runner.remove_stale_staging(out) == []
        listing = CliRunner().invoke(cli, ["runs", "--out", str(out)])
        assert listing.exit_code == 0 and "leftover" not in listing.output
        # a run of any name in the same folder leaves it alone too
        result = runner.execute_jobs(runner.make_jobs(["fake-small"], {}), out=out, name="other", backend="sim")
        assert result.ok
        assert (held / "half-written.txt").read_text() == "in progress"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # the owner is gone, so its lock is free: now the directory is a leftover
    assert runner.leftover_staging(out) == [held]
    listing = CliRunner().invoke(cli, ["runs", "--out", str(out)])
    assert "1 leftover staging directory of killed runs" in listing.output
    assert runner.remove_stale_staging(out) == [held]
    assert sorted(p.name for p in out.iterdir()) == ["other"]


def test_entries_without_an_owner_are_judged_by_age(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    dead = _dead_pid()
    setting_up = out / f".young.tmp-{dead}-0badcafe"  # between mkdir and its lock file
    setting_up.mkdir()
    abandoned = out / f".aged.tmp-{dead}-0badcafe"  # killed right after mkdir, long ago
    abandoned.mkdir()
    empty_lock = out / f".empty.tmp-{dead}-0badcafe"  # killed before writing its (free) lock file, long ago
    empty_lock.mkdir()
    (empty_lock / staging_mod.OWNER_LOCK).touch()
    debris = out / f".gone.old-{dead}"  # a file with a staging name: no run stages into a file
    debris.write_text("x")
    long_ago = time.time() - staging_mod.SETUP_GRACE_SECONDS - 5
    for path in (empty_lock / staging_mod.OWNER_LOCK, empty_lock, abandoned):
        os.utime(path, (long_ago, long_ago))
    assert runner.remove_stale_staging(out) == sorted([abandoned, empty_lock, debris])
    assert sorted(p.name for p in out.iterdir()) == [setting_up.name]


def test_a_run_whose_staging_directory_vanished_publishes_nothing(fake_registry: object, tmp_path: Path) -> None:
    out = tmp_path / "reports"

    def take_it_away(label: str, stage: str, info: object) -> None:
        if label == "fake-small" and stage == "done":
            (staging_dir,) = out.glob(".r.tmp-*")
            import shutil

            shutil.rmtree(staging_dir)  # what a clean-up in another container used to do

    jobs = runner.make_jobs(["fake-small", "fake-big"], {})
    with pytest.raises(runner.StagingLostError, match="removed or replaced by another process"):
        runner.execute_jobs(jobs, out=out, name="r", backend="sim", progress=take_it_away)
    assert sorted(out.iterdir()) == []
    assert runner.list_runs(out) == []


def test_a_vanished_staging_directory_is_one_line_and_exit_code_2(
    fake_registry: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    import profcompare.runner.execute as execute
    from profcompare.cli import main

    out = tmp_path / "reports"
    run_one = execute._run_one

    def run_and_lose_the_staging_directory(*args: object) -> object:
        info = run_one(*args)
        for staging_dir in out.glob(".r.tmp-*"):
            shutil.rmtree(staging_dir)
        return info

    monkeypatch.setattr(execute, "_run_one", run_and_lose_the_staging_directory)
    code = main(["run", "fake-small", "--backend", "sim", "--out", str(out), "--name", "r", "-q"])
    err = capsys.readouterr().err
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith("profcompare: error: the staging directory ") and line.endswith("nothing was published")
    assert sorted(out.iterdir()) == []


def test_the_owner_file_says_who_holds_the_directory(tmp_path: Path) -> None:
    held = staging_mod.create_staging(tmp_path, "r")
    try:
        owner = json.loads((held.path / staging_mod.OWNER_LOCK).read_text())
        assert owner["pid"] == os.getpid() and owner["host"]
        held.check()
    finally:
        held.discard()
    assert not held.path.exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_process_does_not_keep_the_runs_staging_directory_owned(tmp_path: Path) -> None:
    # a variant forked from the runner may outlive a runner killed with SIGKILL for a moment: the
    # staging directory must look ownerless as soon as the runner is gone, so the child holds no
    # copy of the lock's descriptor (and closing its copy does not unlock the runner's)
    held = staging_mod.create_staging(tmp_path, "r")
    try:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                os.fstat(held.lock_fd)
                verdict = b"open"
            except OSError:
                verdict = b"closed"
            os.write(write_end, verdict)
            time.sleep(30)  # alive while the parent looks
            os._exit(0)
        os.close(write_end)
        try:
            assert os.read(read_end, 16) == b"closed"
            assert staging_mod.remove_stale_staging(tmp_path) == []  # still the runner's
            held.release()  # the runner is gone; its forked child lives on
            assert staging_mod.remove_stale_staging(tmp_path) == [held.path]
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
    finally:
        held.release()
