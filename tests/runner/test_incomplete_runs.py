"""A ``profile`` stopped by a signal (Ctrl-C, SIGTERM from a timeout) keeps the Session reports
the program had already written: the run is published with status ``incomplete``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from runner_launch import subprocess_env

from profcompare.runner import list_runs

#: one Session whose report is written when it is created, a marker, then a long wait
ONE_SESSION_THEN_WAIT = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import numpy as np
    import popxl
    from popxl import ops

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.ones(64, np.float32), name="x")
        s = popxl.d2h_stream(x.shape, x.dtype, "y")
        ops.host_store(s, x * 2.0)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
    Path(sys.argv[1]).write_text("first session done")
    if sys.argv[2] == "second":
        ir2 = popxl.Ir()
        with ir2.main_graph:
            popxl.variable(np.ones(8, np.float32), name="z")
        popxl.Session(ir2, "ipu_model")
        Path(sys.argv[1] + ".2").write_text("second session done")
    time.sleep(120)
    """
)


def _profile(workdir: Path, *args: str) -> subprocess.Popen[bytes]:
    (workdir / "prog.py").write_text(ONE_SESSION_THEN_WAIT)
    code = "import sys; from profcompare.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, "profile", "--backend", "sim", "-q", "--out", "runs", "--name", "p", "prog.py",
         *args],
        cwd=workdir, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _wait_for(path: Path, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return
        time.sleep(0.1)
    raise AssertionError(f"{path} did not appear")


@pytest.mark.parametrize(("sig", "code", "sessions"),
                         [(signal.SIGTERM, 143, "one"), (signal.SIGINT, 130, "one"), (signal.SIGTERM, 143, "second")])
def test_a_stopped_profile_publishes_the_reports_already_written(tmp_path: Path, sig: signal.Signals, code: int,
                                                                 sessions: str) -> None:
    marker = tmp_path / "done.txt"
    proc = _profile(tmp_path, str(marker), sessions)
    try:
        _wait_for(Path(str(marker) + ".2") if sessions == "second" else marker)
        proc.send_signal(sig)  # as `timeout` or Ctrl-C does
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err.decode()
    assert b"Traceback" not in err
    job = tmp_path / "runs" / "p" / "prog"
    info = json.loads((job / "run.json").read_text())
    assert info["status"] == "incomplete"
    expected = (["session-2/profile.sqlite", "session-1/profile.sqlite"] if sessions == "second"
                else ["session-1/profile.sqlite"])
    assert info["report_files"] == expected  # newest Session first, as a finished run lists them
    assert all((job / f).is_file() for f in expected)
    assert f"{len(expected)} report(s) written until then kept" in info["error"]
    [listing] = list_runs(tmp_path / "runs")
    assert listing.status == "incomplete"
    assert not [p for p in (tmp_path / "runs").iterdir() if p.name.startswith(".")]  # no staging left


def test_a_profile_stopped_before_any_report_publishes_nothing(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text("import time\ntime.sleep(120)\n")
    code = "import sys; from profcompare.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "profile", "--backend", "sim", "-q", "--out", "runs", "--name", "p", "prog.py"],
        cwd=tmp_path, env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        time.sleep(3)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 143
    assert sorted((tmp_path / "runs").iterdir()) == []
