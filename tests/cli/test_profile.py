"""``profcompare profile SCRIPT`` and ``python -m profcompare.sim``: unmodified popxl programs on
the simulator, one report per Session in a run directory, errors of the program shown as theirs."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from profcompare.readers import open_report

#: a popxl program as a user writes it: two Sessions of different sizes
TWO_SESSIONS = textwrap.dedent(
    """
    import sys
    import numpy as np
    import popxl
    import popxl.ops as ops
    from popxl.transforms import autodiff

    assert callable(autodiff), autodiff
    assert sys.modules["popxl.ops"] is ops

    def build(n):
        ir = popxl.Ir()
        with ir.main_graph:
            w = popxl.variable(np.full((n, n), 2.0, np.float32), name="w")
            x = ops.matmul(w, w)
            out = popxl.d2h_stream(x.shape, x.dtype, "out")
            ops.host_store(out, x)
        return ir, out

    for n in (4, int(sys.argv[1])):
        ir, out = build(n)
        with popxl.Session(ir, "ipu_model") as session:
            result = session.run()[out]
        print("result", n, float(result[0, 0]))
    """
)

#: a tutorial's shape: a training Session (a weight updated from its gradient), then an inference
#: Session with the trained weight, larger by peak liveness (a batch of 8,192)
TRAIN_THEN_INFER = textwrap.dedent(
    """
    import numpy as np
    import popxl
    import popxl.ops as ops
    from popxl.transforms import autodiff

    def layer(x, w):
        return ops.gelu(x @ w)

    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        x_stream = popxl.h2d_stream((16, 32), popxl.float32, "x")
        x = ops.host_load(x_stream, "x")
        w = popxl.variable(np.full((32, 32), 0.01, np.float32), name="w")
        fwd = ir.create_graph(layer, x, w)
        grad = autodiff(fwd, grads_required=[fwd.inputs[1]])
        call = ops.call_with_info(fwd, x, w)
        dy = popxl.constant(np.ones((16, 32), np.float32))
        (dw,) = ops.call(grad.graph, dy, inputs_dict=grad.inputs_dict(call))
        ops.var_updates.accumulate_(w, dw, -0.1)
    with popxl.Session(ir, "ipu_model") as session:
        session.run({x_stream: np.ones((16, 32), np.float32)})
        trained = session.get_tensor_data(w)

    ir = popxl.Ir()
    with ir.main_graph:
        x_stream = popxl.h2d_stream((8192, 32), popxl.float32, "x")
        w = popxl.variable(trained, name="w")
        y = layer(ops.host_load(x_stream, "x"), w)
        out = popxl.d2h_stream(y.shape, y.dtype, "y")
        ops.host_store(out, y)
    with popxl.Session(ir, "ipu_model") as session:
        session.run({x_stream: np.ones((8192, 32), np.float32)})
    """
)

FAILING = textwrap.dedent(
    """
    import popxl

    def helper():
        return 1 / 0

    ir = popxl.Ir()
    helper()
    """
)


@pytest.fixture
def workdir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
    monkeypatch.setenv("PROFCOMPARE_BACKEND", "sim")
    return tmp_path


def test_profile_writes_one_report_per_session_and_shows_the_largest(run_cli, workdir: pathlib.Path) -> None:
    (workdir / "train.py").write_text(TWO_SESSIONS)
    outcome = run_cli("profile", "--quiet", "--out", "runs", "--name", "r1", "train.py", "16")
    assert outcome.exit_code == 0, outcome.stderr
    # neither Session trains: the larger (the second) is shown, and the first line says so
    assert outcome.stdout.splitlines()[0].startswith("showing Session 2 of 2: the largest (peak liveness ")
    assert outcome.stdout.splitlines()[0].endswith("; no Session updates weights); --session N or --session all "
                                                   "shows others")
    job = workdir / "runs" / "r1" / "train"
    info = json.loads((job / "run.json").read_text())
    assert info["status"] == "ok" and info["workload"] == "script" and info["backend"] == "sim"
    assert [s["index"] for s in info["sessions"]] == [1, 2]
    # newest first: the job directory opens as the last Session's report
    assert info["report_files"] == ["session-2/profile.sqlite", "session-1/profile.sqlite"]
    last = open_report(job)
    first = open_report(job / "session-1")
    # the 16x16 weight of the second program, the 4x4 of the first
    assert int(last.variables.set_index("name").loc["w", "bytes"]) == 16 * 16 * 4
    assert int(first.variables.set_index("name").loc["w", "bytes"]) == 4 * 4 * 4
    # the program ran with its argument and its output is in run.log
    log = (job / "run.log").read_text()
    assert "result 4 16.0" in log and "result 16 64.0" in log
    assert "report: " in outcome.stdout and "session-2/profile.sqlite" in outcome.stdout
    assert "session 1: " in outcome.stdout and "session 2: " in outcome.stdout
    # compare works on them
    compared = run_cli("compare", str(job / "session-1"), str(job), "--format", "json")
    assert compared.exit_code == 0, compared.stderr
    summary = json.loads(compared.stdout)
    assert summary["schema_version"]


def test_profile_refuses_an_existing_run_without_force(run_cli, workdir: pathlib.Path) -> None:
    (workdir / "train.py").write_text(TWO_SESSIONS)
    assert run_cli("profile", "-q", "--out", "runs", "--name", "same", "train.py", "4").exit_code == 0
    again = run_cli("profile", "-q", "--out", "runs", "--name", "same", "train.py", "4")
    assert again.exit_code == 2
    assert "already exists" in again.stderr and "Traceback" not in again.stderr
    forced = run_cli("profile", "-q", "--out", "runs", "--name", "same", "--force", "train.py", "8")
    assert forced.exit_code == 0, forced.stderr
    assert "replaced the previous run" in forced.stdout
    assert not [p for p in (workdir / "runs").iterdir() if p.name.startswith(".")]


def test_a_failing_program_gives_one_line_and_its_own_traceback(run_cli, workdir: pathlib.Path) -> None:
    (workdir / "bad.py").write_text(FAILING)
    outcome = run_cli("profile", "-q", "--out", "runs", "--name", "bad", "bad.py")
    assert outcome.exit_code == 1
    lines = outcome.stderr.splitlines()
    errors = [ln for ln in lines if ln.startswith("profcompare: ")]
    assert len(errors) == 1 and "failed: ZeroDivisionError: division by zero" in errors[0]
    assert 'bad.py", line 8, in <module>' in outcome.stderr
    assert 'bad.py", line 5, in helper' in outcome.stderr
    # the program's traceback only: no frames of profcompare or runpy
    assert "profcompare/" not in outcome.stderr.split(errors[0], 1)[1]
    assert "runpy" not in outcome.stderr
    info = json.loads((workdir / "runs" / "bad" / "bad" / "run.json").read_text())
    assert info["status"] == "failed" and info["exit_code"] == 1


def test_a_program_without_a_session_has_no_report(run_cli, workdir: pathlib.Path) -> None:
    (workdir / "nothing.py").write_text("import popxl\nprint('hello')\n")
    outcome = run_cli("profile", "-q", "--out", "runs", "--name", "n", "nothing.py")
    assert outcome.exit_code == 1
    assert "created no popxl Session, so there is no report" in outcome.stderr


def test_a_missing_script_is_one_line(run_cli, workdir: pathlib.Path) -> None:
    outcome = run_cli("profile", "-q", "--out", "runs", "missing.py")
    assert outcome.exit_code == 2
    assert outcome.stderr.strip() == "profcompare: error: no such script: missing.py"
    assert not (workdir / "runs").exists()


def test_profile_runs_pytest_files(run_cli, workdir: pathlib.Path) -> None:
    (workdir / "test_model.py").write_text(textwrap.dedent(
        """
        import numpy as np
        import popxl
        import popxl.ops as ops

        def test_add():
            ir = popxl.Ir()
            with ir.main_graph:
                a = popxl.variable(np.arange(3, dtype=np.float32))
                out = popxl.d2h_stream(a.shape, a.dtype)
                ops.host_store(out, ops.add(a, a))
            with popxl.Session(ir, "ipu_model") as s:
                np.testing.assert_array_equal(s.run()[out], [0, 2, 4])

        def test_fails():
            assert 1 == 2
        """
    ))
    outcome = run_cli("profile", "-q", "--out", "runs", "--name", "p", "-m", "pytest", "-q", "-p", "no:cacheprovider",
                      "test_model.py")
    # one test fails: pytest's status 1, its summary shown, the passing test's report kept
    assert outcome.exit_code == 1
    assert "pytest exited with status 1" in outcome.stderr
    assert "1 failed, 1 passed" in outcome.stderr
    job = workdir / "runs" / "p" / "pytest"
    assert (job / "session-1" / "profile.sqlite").is_file()


def test_python_m_profcompare_sim_resolves_every_submodule(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "names.py"
    script.write_text(textwrap.dedent(
        """
        import sys
        import popxl, popxl.ops, popxl.transforms, popxl.ops.collectives, popxl_addons, popxl_addons.rts
        from popxl.transforms import autodiff
        from popxl_addons.transforms import autodiff as addons_autodiff
        print(autodiff.__name__, type(autodiff).__name__, addons_autodiff.__module__)
        print(sys.modules["popxl.ops.collectives"] is popxl.ops.collectives, popxl.SIMULATED)
        try:
            import popxl.no_such_module
        except ImportError as exc:
            print("import error:", exc)
        """
    ))
    env = {k: v for k, v in os.environ.items() if k != "POPLAR_ENGINE_OPTIONS"}
    done = subprocess.run([sys.executable, "-m", "profcompare.sim", str(script)], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "autodiff function profcompare.emulator.popxl_addons.transforms.autodiff"
    assert lines[1] == "True True"
    assert lines[2] == "import error: module popxl.no_such_module is not implemented by the profcompare simulator"


def test_profile_passes_the_addons_generation_to_the_program(run_cli, workdir: pathlib.Path) -> None:
    (workdir / "gen.py").write_text(TWO_SESSIONS.replace("import sys\n", "import sys, os\nprint('addons', os.environ.get('PROFCOMPARE_SIM_ADDONS'))\n", 1))
    outcome = run_cli("profile", "-q", "--out", "runs", "--name", "g", "--addons", "3.0", "gen.py", "4")
    assert outcome.exit_code == 0, outcome.stderr
    assert "addons 3.0" in (workdir / "runs" / "g" / "gen" / "run.log").read_text()


def _report_titles(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("profcompare report: ")]


def test_profile_shows_the_training_session_by_default_and_says_so(run_cli, workdir: pathlib.Path) -> None:
    (workdir / "tutorial.py").write_text(TRAIN_THEN_INFER)
    outcome = run_cli("profile", "-q", "--out", "runs", "--name", "t", "tutorial.py")
    assert outcome.exit_code == 0, outcome.stderr
    lines = outcome.stdout.splitlines()
    # the inference Session is larger (11.1 MiB) but the training one is shown, and the first line says why
    assert lines[0] == ("showing Session 1 of 2: the training Session (it updates weights; peak liveness 5.9 MiB); "
                        "--session N or --session all shows others")
    assert _report_titles(outcome.stdout) == ["profcompare report: session-1"]
    assert "  session 1: runs/t/tutorial/session-1/profile.sqlite  (shown above)" in lines
    assert "  session 2: runs/t/tutorial/session-2/profile.sqlite" in lines


def test_profile_session_picks_one_or_all(run_cli, workdir: pathlib.Path) -> None:
    (workdir / "tutorial.py").write_text(TRAIN_THEN_INFER)
    second = run_cli("profile", "-q", "--out", "runs", "--name", "two", "--session", "2", "tutorial.py")
    assert second.exit_code == 0, second.stderr
    assert second.stdout.splitlines()[0] == "showing Session 2 of 2 (--session 2)"
    assert _report_titles(second.stdout) == ["profcompare report: session-2"]
    every = run_cli("profile", "-q", "--out", "runs", "--name", "all", "--session", "all", "tutorial.py")
    assert every.exit_code == 0, every.stderr
    lines = every.stdout.splitlines()
    assert lines[0] == "showing all 2 Sessions, in the order the program created them"
    headings = [line for line in lines if line.startswith("Session ")]
    assert headings == ["Session 1 (session-1/profile.sqlite, trains: it updates weights)",
                        "Session 2 (session-2/profile.sqlite)"]
    assert _report_titles(every.stdout) == ["profcompare report: session-1", "profcompare report: session-2"]


def test_profile_session_out_of_range_is_one_line_after_the_run(run_cli, workdir: pathlib.Path) -> None:
    (workdir / "train.py").write_text(TWO_SESSIONS)
    outcome = run_cli("profile", "-q", "--out", "runs", "--name", "r", "--session", "3", "train.py", "8")
    assert outcome.exit_code == 2
    assert outcome.stderr.strip() == ("profcompare: error: --session 3: the program created no such Session with a "
                                      "report (Sessions: 1, 2)")
    # the run is kept and listed; no report is shown
    assert _report_titles(outcome.stdout) == []
    assert "  session 2: runs/r/train/session-2/profile.sqlite" in outcome.stdout.splitlines()


@pytest.mark.parametrize("value", ["0", "last", "-1"])
def test_a_bad_session_is_refused_before_the_program_runs(run_cli, workdir: pathlib.Path, value: str) -> None:
    (workdir / "train.py").write_text(TWO_SESSIONS)
    outcome = run_cli("profile", "-q", "--out", "runs", "--session", value, "train.py", "8")
    assert outcome.exit_code == 2
    assert outcome.stderr.strip() == (f"profcompare: error: --session {value!r}: expected a Session number (1, 2, ...) "
                                      "or 'all'")
    assert not (workdir / "runs").exists()
