"""Python processes a profiled program starts run on the simulator too, and their Sessions land
in the same job directory, numbered over all processes (session-N, race-free)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from runner_launch import subprocess_env

from profcompare.readers.store import read_report

#: one Session of a variable of ``size`` float32 elements, as its own process
SESSION_PROGRAM = textwrap.dedent(
    """
    import sys
    import numpy as np
    import popxl

    size = int(sys.argv[1])
    ir = popxl.Ir()
    with ir.main_graph:
        popxl.variable(np.ones(size, np.float32), name=f"v{size}")
    popxl.Session(ir, "ipu_model")
    """
)

#: its own Session (1000 elements), then two children at the same time (2000, 3000), then one
#: more started the way Graphcore's application tests start theirs (a fresh environment dict
#: whose PYTHONPATH is the parent's sys.path, and ``python3`` by name from PATH)
PARENT_PROGRAM = textwrap.dedent(
    """
    import os, subprocess, sys
    import numpy as np
    import popxl

    ir = popxl.Ir()
    with ir.main_graph:
        popxl.variable(np.ones(1000, np.float32), name="v1000")
    popxl.Session(ir, "ipu_model")
    children = [subprocess.Popen([sys.executable, "session.py", str(n)]) for n in (2000, 3000)]
    assert [c.wait() for c in children] == [0, 0]
    env = dict(os.environ)
    env["PYTHONPATH"] = ":".join(sys.path)
    subprocess.run(["python3", "session.py", "4000"], env=env, check=True)
    """
)


def test_sessions_of_child_processes_land_in_the_job_directory(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(PARENT_PROGRAM)
    (tmp_path / "session.py").write_text(SESSION_PROGRAM)
    code = "import sys; from profcompare.cli import main; sys.exit(main(sys.argv[1:]))"
    env = subprocess_env()
    # the virtual environment not activated: the python3 on PATH is another Python
    other = tmp_path / "other-bin"
    other.mkdir()
    (other / "python3").write_text("#!/bin/sh\necho 'another Python' >&2\nexit 3\n")
    (other / "python3").chmod(0o755)
    env["PATH"] = os.pathsep.join([str(other), *(p for p in env.get("PATH", os.defpath).split(os.pathsep)
                                                 if Path(p).resolve() != Path(sys.executable).parent.resolve())])
    done = subprocess.run(
        [sys.executable, "-c", code, "profile", "--backend", "sim", "-q", "--out", "runs", "--name", "p", "prog.py"],
        cwd=tmp_path, env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode()
    job = tmp_path / "runs" / "p" / "prog"
    info = json.loads((job / "run.json").read_text())
    assert info["report_files"] == [f"session-{n}/profile.sqlite" for n in (4, 3, 2, 1)]
    sizes = {}
    for n in (1, 2, 3, 4):
        variables = read_report(job / f"session-{n}" / "profile.sqlite").variables
        [name] = [v for v in variables["name"] if v.startswith("v")]
        sizes[n] = int(variables.loc[variables["name"] == name, "bytes"].iloc[0]) // 4
    assert sizes[1] == 1000 and sizes[4] == 4000
    assert sorted((sizes[2], sizes[3])) == [2000, 3000]  # the two concurrent children, in either order
    assert [s["index"] for s in info["sessions"]] == [1]  # the program's own
