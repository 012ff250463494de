"""``--compile-only`` on profile, run and sweep: the simulator compiles and models the program
without computing values, every view says so, and a program too large for numeric simulation
is refused up front with a suggestion to use it."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

from profcompare.errors import ProfcompareError
from profcompare.readers import open_report
from profcompare.runner import check_execution

BANNER = "compile only: memory and time modelled, no values computed"
LARGE_STACK = pathlib.Path(__file__).parents[1] / "compile_only" / "programs" / "large_stack.py"

#: a program that prints what Session.run returned and reads its weights back
SMALL = textwrap.dedent(
    """
    import numpy as np
    import popxl
    import popxl.ops as ops

    ir = popxl.Ir()
    ir.replication_factor = 2
    with ir.main_graph:
        x_stream = popxl.h2d_stream((2, 4), popxl.float32, "x")
        w = popxl.variable(np.full((4, 4), 2.0, np.float32), name="w")
        y = ops.matmul(ops.host_load(x_stream, "x"), w)
        out = popxl.d2h_stream(y.shape, y.dtype, "out")
        ops.host_store(out, y)
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run({x_stream: np.ones((2, 2, 4), np.float32)})[out]
    print("result", result.shape, result.dtype, float(result.sum()))
    print("weights", float(session.get_tensor_data(w).sum()))
    """
)


@pytest.fixture
def workdir(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
    monkeypatch.delenv("PROFCOMPARE_SIM_EXECUTION", raising=False)
    monkeypatch.delenv("PROFCOMPARE_SIM_HOST_MEMORY", raising=False)
    monkeypatch.setenv("PROFCOMPARE_BACKEND", "sim")
    return tmp_path


def test_profile_compile_only_runs_the_program_with_zeros_and_says_so(run_cli, workdir: pathlib.Path) -> None:
    (workdir / "small.py").write_text(SMALL)
    outcome = run_cli("profile", "--compile-only", "--out", "runs", "--name", "co", "small.py")
    assert outcome.exit_code == 0, outcome.stderr
    assert f"execution: {BANNER}" in outcome.stderr
    job = workdir / "runs" / "co" / "small"
    log = (job / "run.log").read_text()
    assert "result (2, 2, 4) float32 0.0" in log and "weights 0.0" in log
    assert "CompileOnlyWarning: get_tensor_data: values were not computed" in log
    assert json.loads((job / "run.json").read_text())["execution"] == "compile-only"
    assert open_report(job).meta.execution == "compile-only"
    assert f"COMPILE ONLY: This report is {BANNER}." in outcome.stdout
    numeric = run_cli("profile", "-q", "--out", "runs", "--name", "numeric", "small.py")
    assert numeric.exit_code == 0, numeric.stderr
    numeric_job = workdir / "runs" / "numeric" / "small"
    # each element is 4 x 1 x 2.0 = 8.0, 16 elements over both replicas
    assert "result (2, 2, 4) float32 128.0" in (numeric_job / "run.log").read_text()
    assert json.loads((numeric_job / "run.json").read_text())["execution"] == "numeric"
    assert "COMPILE ONLY" not in numeric.stdout
    # the views of a compile-only report say so; a numeric one's do not
    shown = run_cli("show", str(job), "--format", "markdown")
    assert f"COMPILE ONLY: This report is {BANNER}." in shown.stdout
    assert json.loads(run_cli("show", str(job), "--format", "json").stdout)["meta"]["execution"] == "compile-only"
    compared = run_cli("compare", str(numeric_job), str(job))
    assert f"COMPILE ONLY: The new report is {BANNER}." in compared.stdout
    assert "COMPILE ONLY: The base report" not in compared.stdout
    html = run_cli("compare", str(numeric_job), str(job), "--format", "html", "-o", "diff.html")
    assert html.exit_code == 0, html.stderr
    page = (workdir / "diff.html").read_text()
    assert page.count(f'title="{BANNER}">COMPILE ONLY</span>') == 1  # the new report's card only


def test_numeric_profile_of_a_program_too_large_for_the_host_suggests_compile_only(
        run_cli, workdir: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 8 layers of 1024 x 1024 float32 on 16 replicas: each weight needs 2 host copies and 16
    # device copies of 4 MiB = 72 MiB, more than the 64 MiB allowed
    monkeypatch.setenv("PROFCOMPARE_SIM_HOST_MEMORY", "64MiB")
    outcome = run_cli("profile", "-q", "--out", "runs", "--name", "big", str(LARGE_STACK), "8", "1024", "16")
    assert outcome.exit_code == 1
    first = outcome.stderr.splitlines()[0]
    assert first == (
        "profcompare: large_stack: failed: SimulatorHostMemoryError: numeric simulation needs at least 72.0 MiB "
        "(75,497,472 bytes) of host memory for the 1 variable created so far (host copies and 16 device copies "
        "each), more than the 64.0 MiB (67,108,864 bytes) available (PROFCOMPARE_SIM_HOST_MEMORY); profile it with "
        "--compile-only (or PROFCOMPARE_SIM_EXECUTION=compile-only): memory and time are modelled the same, no "
        "values are computed (log: runs/big/large_stack/run.log)")
    compiled = run_cli("profile", "-q", "--compile-only", "--out", "runs", "--name", "big-co", str(LARGE_STACK),
                       "8", "1024", "16")
    assert compiled.exit_code == 0, compiled.stderr
    report = open_report(workdir / "runs" / "big-co" / "large_stack")
    weights = report.variables[report.variables["name"].astype(str).str.fullmatch(r"layer\d\.weight")]
    assert len(weights) == 8 and set(weights["bytes"]) == {1024 * 1024 * 4}
    assert int(report.remote_buffers["bytes"].sum()) == 8 * 1024 * 1024 * 4  # the momenta, 8 entries


def test_a_large_program_compiles_compile_only_in_little_host_memory(workdir: pathlib.Path) -> None:
    # 64 layers of 4096 x 4096 float32 weights (4 GiB) and as many momenta in Streaming Memory
    # on 16 replicas: the numeric simulation would hold (2 + 16) x 4 GiB + 16 x 4 GiB
    # the peak is this process's own (VmHWM, the high-water mark of its memory map): ru_maxrss
    # would start at the test process's resident size, which the child inherits at fork
    measure = ("import re, sys\n"
               "from profcompare.sim import main\n"
               "code = main(sys.argv[1:])\n"
               "status = open('/proc/self/status').read()\n"
               "print('maxrss_kib', re.search(r'VmHWM:\\s+(\\d+) kB', status).group(1))\n"
               "sys.exit(code)\n")
    env = {**os.environ, "PROFCOMPARE_SIM_EXECUTION": "compile-only",
           "POPLAR_ENGINE_OPTIONS": json.dumps({"autoReport.all": "true", "autoReport.directory": str(workdir / "r"),
                                                "debug.allowOutOfMemory": "true"})}
    done = subprocess.run([sys.executable, "-c", measure, str(LARGE_STACK), "64", "4096", "16"], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["output"] == "(16, 8, 4096) float32 0.0"
    peak_bytes = int(lines["maxrss_kib"]) * 1024
    assert peak_bytes < 1.5e9, f"peak RSS {peak_bytes / 2**20:.0f} MiB"
    report = open_report(workdir / "r")
    assert report.meta.execution == "compile-only" and report.meta.target.num_replicas == 16
    weights = report.variables[report.variables["name"].astype(str).str.fullmatch(r"layer\d+\.weight")]
    assert len(weights) == 64 and int(weights["bytes"].sum()) == 64 * 4096 * 4096 * 4
    assert int(report.remote_buffers["bytes"].sum()) == 64 * 4096 * 4096 * 4


def test_run_and_sweep_compile_only(run_cli, workdir: pathlib.Path) -> None:
    knobs = ["--replicas", "2", "--hidden", "64", "--layers", "1", "--steps", "1", "--grad-accum", "1"]
    outcome = run_cli("run", "onchip", "offchip", "--compile-only", "-q", "--out", "runs", "--name", "r", *knobs)
    assert outcome.exit_code == 0, outcome.stderr
    run_dir = workdir / "runs" / "r"
    for variant in ("onchip", "offchip"):
        info = json.loads((run_dir / variant / "run.json").read_text())
        assert info["execution"] == "compile-only" and info["losses"] == [0.0]
    assert f"COMPILE ONLY: The base report is {BANNER}." in outcome.stdout
    assert "Compile only: memory and time modelled, no values computed." in (run_dir / "index.html").read_text()
    assert f"COMPILE ONLY: The new report is {BANNER}." in (run_dir / "compare-onchip-vs-offchip.md").read_text()
    swept = run_cli("sweep", "offchip-sharded", "--param", "sharded_threshold=1e10,512", "--compile-only", "-q",
                    "--out", "runs", "--name", "s", *knobs)
    assert swept.exit_code == 0, swept.stderr
    sweep_dir = workdir / "runs" / "s"
    assert json.loads((sweep_dir / "sweep.json").read_text())["execution"] == "compile-only"
    assert "Compile only: memory and time modelled, no values computed." in (sweep_dir / "sweep.html").read_text()
    listed = run_cli("runs", "--out", "runs")
    rows = [re.split(r"\s{2,}", line.strip()) for line in listed.stdout.splitlines() if "compile only" in line]
    assert sorted((row[0], row[1], row[4]) for row in rows) == [("r", "run", "sim, compile only"),
                                                                 ("s", "sweep", "sim, compile only")]


def test_a_numeric_run_index_has_no_compile_only_banner(run_cli, workdir: pathlib.Path) -> None:
    outcome = run_cli("run", "onchip", "-q", "--out", "runs", "--name", "n", "--replicas", "1", "--hidden", "32",
                      "--layers", "1", "--steps", "1", "--grad-accum", "1")
    assert outcome.exit_code == 0, outcome.stderr
    assert json.loads((workdir / "runs" / "n" / "onchip" / "run.json").read_text())["execution"] == "numeric"
    assert "Compile only" not in (workdir / "runs" / "n" / "index.html").read_text()


def test_compile_only_needs_the_simulator() -> None:
    with pytest.raises(ProfcompareError, match="compile-only execution is a simulator mode"):
        check_execution("compile-only", "sdk")
    assert check_execution(None, "sdk", {}) == "numeric"
    assert check_execution(None, "sim", {"PROFCOMPARE_SIM_EXECUTION": "compile-only"}) == "compile-only"
    with pytest.raises(ProfcompareError, match="unknown execution mode 'fast'"):
        check_execution(None, "sim", {"PROFCOMPARE_SIM_EXECUTION": "fast"})


def test_the_python_api_passes_compile_only(monkeypatch: pytest.MonkeyPatch) -> None:
    import profcompare.commands.api as run_api

    seen = {}

    def fake_run_variants(names, **kwargs):
        seen.update(kwargs)
        return object()

    monkeypatch.setattr(run_api, "run_variants", fake_run_variants)
    run_api.run("onchip", compile_only=True)
    assert seen["execution"] == "compile-only"
    run_api.run("onchip")
    assert seen["execution"] is None
