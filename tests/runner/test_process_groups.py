"""Processes a profiled program (or a workload variant) starts end with it: when it exits, when
profcompare gets SIGTERM or SIGINT, and when profcompare is killed with SIGKILL. profcompare
never waits for them, even when they hold a copy of its progress pipe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from runner_launch import subprocess_env

from profcompare import runner

#: a program without popxl: forks a sleeper (which inherits every descriptor, the progress pipe
#: included), records both pids, then ends at once ("exit") or sleeps too ("stay")
FORKING_PROGRAM = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path

    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        Path("sleeper-finished").write_text("nobody ended the sleeper")
        os._exit(0)
    Path("pids.tmp").write_text(json.dumps({"main": os.getpid(), "sleeper": pid}))
    os.replace("pids.tmp", "pids.json")
    if sys.argv[1] == "stay":
        time.sleep(60)
    """
)

#: well under the sleeper's 60 s, generous for a loaded machine
PROMPT_SECONDS = 45


def _running(pid: int) -> bool:
    """True while ``pid`` is a process that has not ended (a zombie has ended)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status and "\nState:\tX" not in status


def _group_running(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that have not ended, read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if fields[0] not in (b"Z", b"X") and int(fields[2]) == pgid:
            found.append(int(entry))
    return found


def _pipes(pid: int) -> set[str]:
    """The pipes process ``pid`` holds open (``pipe:[inode]``)."""
    held = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("pipe:"):
            held.add(target)
    return held


def _wait_for(predicate, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def _profile(workdir: Path, mode: str) -> subprocess.Popen[bytes]:
    (workdir / "prog.py").write_text(FORKING_PROGRAM)
    code = "import sys; from profcompare.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, "profile", "--backend", "sim", "-q", "--out", "runs", "--name", "p", "prog.py", mode],
        cwd=workdir,
        env=subprocess_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # so this test can clean up whatever is left
    )


def _cleanup(proc: subprocess.Popen[bytes], workdir: Path) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    pids = workdir / "pids.json"
    if pids.exists():
        for pid in json.loads(pids.read_text()).values():
            if _running(pid):
                os.kill(pid, signal.SIGKILL)


def test_profile_ends_what_the_program_left_running_and_does_not_wait_for_it(tmp_path: Path) -> None:
    proc = _profile(tmp_path, "exit")
    try:
        _, err = proc.communicate(timeout=PROMPT_SECONDS)
        pids = json.loads((tmp_path / "pids.json").read_text())
        # no popxl Session: no report, exit code 1; what counts here is that it returned at all
        assert proc.returncode == 1, err.decode()
        assert b"created no popxl Session" in err
        _wait_for(lambda: not _running(pids["sleeper"]), timeout=10)
        assert _group_running(pids["main"]) == []
        assert not (tmp_path / "sleeper-finished").exists()
    finally:
        _cleanup(proc, tmp_path)


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGKILL, -9)])
def test_a_signal_to_profile_ends_the_programs_whole_group(tmp_path: Path, sig: signal.Signals, code: int) -> None:
    proc = _profile(tmp_path, "stay")
    try:
        _wait_for(lambda: (tmp_path / "pids.json").exists(), timeout=PROMPT_SECONDS)
        pids = json.loads((tmp_path / "pids.json").read_text())
        assert _running(pids["main"]) and _running(pids["sleeper"])
        # the progress pipe (profcompare reads one end) is not held by the program's forked process:
        # it closes its copy as it starts (an after-fork hook), which on a loaded machine may
        # come a moment after the program has written the pids
        _wait_for(lambda: not _pipes(proc.pid) & _pipes(pids["sleeper"]), timeout=PROMPT_SECONDS)
        proc.send_signal(sig)  # profcompare alone, as `kill PID` or a CI timeout does
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == code, err.decode()
        assert b"Traceback" not in err
        _wait_for(lambda: not _running(pids["main"]) and not _running(pids["sleeper"]), timeout=10)
        assert _group_running(pids["main"]) == []
        assert not (tmp_path / "sleeper-finished").exists()
        if sig != signal.SIGKILL:
            assert sorted((tmp_path / "runs").iterdir()) == []  # cleaned up, nothing published
    finally:
        _cleanup(proc, tmp_path)


def test_a_variants_forked_process_ends_with_it(fake_registry: object, tmp_path: Path) -> None:
    result = runner.execute_jobs(runner.make_jobs(["fake-forks"], {}), out=tmp_path, name="r", backend="sim")
    job = result.outcome("fake-forks").directory
    sleeper = json.loads((job / "sleeper.json").read_text())["pid"]
    try:
        assert result.ok
        # had the run waited for the sleeper (which holds a copy of the progress pipe), the sleeper
        # would have finished and left its mark in the published directory
        _wait_for(lambda: not _running(sleeper), timeout=10)
        assert not (job / "sleeper-finished").exists()
    finally:
        if _running(sleeper):
            os.kill(sleeper, signal.SIGKILL)
