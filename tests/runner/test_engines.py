"""Execution engines: the local pool of warm workers and Dask (a real LocalCluster) run jobs into
the same reports as one fresh subprocess per job; a job that kills its worker loses only itself;
an interrupted run publishes nothing; a bad scheduler address is a one-line error."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import engine_workloads
import pytest
from click.testing import CliRunner
from runner_launch import launcher_code, subprocess_env

from profcompare import runner
from profcompare.runner import sweep
from profcompare.cli import cli, main
from profcompare.readers import open_report

#: tiny compile-only MNIST points: what `advise` evaluates, at the smallest size
TINY = {"layers": "1", "steps": "1", "replicas": "1", "grad_accum": "1"}
GRID = [("hidden", ["32", "48"])]
#: every table a report holds that the tests compare
TABLES = ("tiles", "categories", "variables", "liveness", "execution", "remote_buffers", "code")


def _tiny_jobs(variant: str = "offchip-sharded") -> list[runner.Job]:
    return [p.job for p in sweep.expand_grid(variant, GRID, TINY)]


def _mixed_jobs() -> list[runner.Job]:
    """Two tiny MNIST points with a GPT variant between them: different workloads, one worker."""
    first, second = _tiny_jobs()
    (gpt,) = runner.make_jobs(["phased-rts"], {"layers": "1", "steps": "1"})
    return [first, gpt, second]


def _engine_jobs(*variants_markers: tuple[str, str]) -> list[runner.Job]:
    ref = runner.workload_ref(engine_workloads.WORKLOAD)
    return [runner.Job(f"{variant}-{i}", "engine-test", ref, variant, {"marker": marker})
            for i, (variant, marker) in enumerate(variants_markers)]


def _run(jobs: Sequence[runner.Job], out: Path, name: str, engine: runner.Engine | None = None, **kw: Any) -> runner.RunResult:
    return runner.execute_jobs(jobs, out=out, name=name, backend="sim", execution="compile-only", force=True,
                               engine=engine, parallel=2, **kw)


def assert_same_report(a_dir: Path, b_dir: Path) -> None:
    """The two job directories hold the same report: every table, the summary and the metadata
    (but where the file is and when it was written)."""
    a, b = open_report(a_dir), open_report(b_dir)
    for table in TABLES:
        left, right = getattr(a, table), getattr(b, table)
        assert left.equals(right), f"{table} differs between {a_dir} and {b_dir}"
    assert a.summary().equals(b.summary())
    for field in ("target", "oom", "variant", "workload", "samples_per_step", "simulated", "producer"):
        assert getattr(a.meta, field) == getattr(b.meta, field), field


def _run_json(directory: Path) -> dict[str, Any]:
    return json.loads((directory / "run.json").read_text())


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> runner.RunResult:
    """The mixed jobs run as today: one fresh subprocess each."""
    return _run(_mixed_jobs(), tmp_path_factory.mktemp("fresh"), "fresh")


@pytest.fixture(scope="module")
def dask_engine() -> Iterator[runner.Engine]:
    """A real LocalCluster of two worker processes, shared by the Dask tests."""
    with runner.make_engine(2, "local:2") as engine:
        yield engine


# -- the local pool ----------------------------------------------------------------------------


def test_different_jobs_in_one_warm_worker_give_the_fresh_process_reports(fresh: runner.RunResult,
                                                                          tmp_path: Path) -> None:
    with runner.make_engine(1) as engine:
        pooled = _run(_mixed_jobs(), tmp_path, "pooled", engine)
        # one worker ran the three jobs, one after the other
        workers = engine._workers  # type: ignore[attr-defined]
        assert len(workers) == 1 and workers[0].done == 3
    assert [o.status for o in pooled.outcomes] == ["ok", "ok", "ok"]
    for mine, theirs in zip(pooled.outcomes, fresh.outcomes):
        assert_same_report(mine.directory, theirs.directory)
        a, b = _run_json(mine.directory), _run_json(theirs.directory)
        for key in ("status", "samples_per_step", "losses", "report_files", "execution", "config", "addons_generation",
                    "summary"):
            assert a[key] == b[key], key
    # the two points differ (hidden 32 and 48): the comparison above can fail
    first, second = (open_report(pooled.outcomes[i].directory).summary() for i in (0, 2))
    assert first["always_live_bytes"] < second["always_live_bytes"]


def test_a_job_that_dirties_its_worker_leaves_nothing_for_the_next(tmp_path: Path) -> None:
    jobs = _engine_jobs(("inspect", ""), ("polluter", ""), ("inspect", ""))
    with runner.make_engine(1) as engine:
        result = _run(jobs, tmp_path, "dirty", engine)
    assert [o.status for o in result.outcomes] == ["ok", "ok", "ok"], [o.error for o in result.outcomes]
    before, after = (json.loads((o.directory / "state.json").read_text()) for o in (result.outcomes[0], result.outcomes[2]))
    assert before["pid"] == after["pid"]  # the same warm worker ran all three
    assert after["cwd"].endswith("/" + jobs[2].label)
    for key in ("variable", "popxl_aliased", "root_handlers", "root_level", "error_filters", "path_polluted", "backend"):
        assert after[key] == before[key], key
    assert after["variable"] is None and after["popxl_aliased"] is False
    # each job got its own autoReport directory
    assert before["engine_options"] != after["engine_options"] and jobs[2].label in after["engine_options"]
    # numpy's generator is seeded afresh (the polluter seeded 1234: its first draw would repeat)
    import numpy as np

    np.random.seed(1234)
    assert after["numpy_draw"] != int(np.random.randint(0, 2**31 - 1))


def test_a_job_that_kills_its_worker_is_retried_once_in_a_fresh_worker(tmp_path: Path) -> None:
    once, always = tmp_path / "once", tmp_path / "always"
    once.write_text("die once")
    jobs = _engine_jobs(("crash-always", str(always)), ("crash-once", str(once)), ("inspect", ""))
    with runner.make_engine(2) as engine:
        result = _run(jobs, tmp_path, "crashes", engine)
    statuses = {o.label: o.status for o in result.outcomes}
    assert statuses == {jobs[0].label: "failed", jobs[1].label: "ok", jobs[2].label: "ok"}
    # two attempts each, the second in another (fresh) process
    for marker in (always, once):
        pids = [line.split()[1] for line in Path(f"{marker}.attempts").read_text().splitlines()]
        assert len(pids) == 2 and pids[0] != pids[1]
    error = result.outcomes[0].error
    assert error is not None and "\n" not in error
    assert error == ("the worker process exited with code 3 running this point, twice (it was retried once in a "
                     "fresh worker)")
    assert not (result.outcomes[0].directory / "profile.sqlite").exists()
    log = (result.outcomes[1].directory / "run.log").read_text()
    assert "killed by signal 9" in log and "running it again in a fresh worker" in log


def test_an_interrupted_pool_run_leaves_no_run_directory_and_no_worker(tmp_path: Path) -> None:
    def interrupt(label: str, stage: str, info: Any) -> None:
        if stage == "done":
            raise KeyboardInterrupt

    with runner.make_engine(2) as engine:
        with pytest.raises(KeyboardInterrupt):
            _run(_engine_jobs(("inspect", ""), ("inspect", ""), ("inspect", "")), tmp_path, "stopped", engine,
                 progress=interrupt)
        assert engine._workers == []  # type: ignore[attr-defined]
    assert list(tmp_path.iterdir()) == []


# -- Dask --------------------------------------------------------------------------------------


def test_a_dask_sweep_gives_the_fresh_process_reports(fresh: runner.RunResult, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    result = CliRunner().invoke(
        cli, ["sweep", "offchip-sharded", "--param", "hidden=32,48", *(a for k, v in TINY.items() for a in ("--set", f"{k}={v}")),
              "--backend", "sim", "--compile-only", "--out", str(out), "--name", "d", "--dask", "local:2"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert "Dask LocalCluster of 2 worker process(es)" in result.stderr
    for theirs in (fresh.outcomes[0], fresh.outcomes[2]):
        mine = out / "d" / theirs.label
        assert_same_report(mine, theirs.directory)
        assert {"run.json", "run.log", "profile.sqlite"} <= {p.name for p in mine.iterdir()}
    table = json.loads((out / "d" / "sweep.json").read_text())
    assert [p["status"] for p in table["points"]] == ["ok", "ok"]
    assert all(not math.isnan(p["always_live_bytes"]) for p in table["points"])


def test_a_dask_worker_killed_by_a_point_loses_only_that_point(dask_engine: runner.Engine, tmp_path: Path) -> None:
    once, always = tmp_path / "once", tmp_path / "always"
    once.write_text("die once")
    jobs = _engine_jobs(("crash-always", str(always)), ("crash-once", str(once)), ("inspect", ""))
    events: list[tuple[str, str]] = []
    result = _run(jobs, tmp_path, "crashes", dask_engine, progress=lambda label, stage, info: events.append((label, stage)))
    statuses = {o.label: o.status for o in result.outcomes}
    assert statuses == {jobs[0].label: "failed", jobs[1].label: "ok", jobs[2].label: "ok"}
    # the stages a point goes through reach the callback from the worker, each point's end once, last
    inspected = [stage for label, stage in events if label == jobs[2].label]
    assert inspected[:3] == ["queued", "starting", "building"] and inspected[-1] == "done" and inspected.count("done") == 1
    for job in jobs:
        assert [stage for label, stage in events if label == job.label][-1] == "done"
    assert len(Path(f"{always}.attempts").read_text().splitlines()) == 2
    # died once, then ran to the end; a result still held by a worker that dies before the client
    # fetched it is computed again by Dask (that worker may be the next to run crash-always)
    assert len(Path(f"{once}.attempts").read_text().splitlines()) >= 2
    error = result.outcomes[0].error
    assert error is not None and error.startswith("a Dask worker died running this point, twice (it was retried "
                                                  "once); the last was tcp://127.0.0.1:"), error
    assert (result.outcomes[2].directory / "profile.sqlite").is_file()


def test_an_interrupted_dask_run_leaves_no_run_directory(dask_engine: runner.Engine, tmp_path: Path) -> None:
    def interrupt(label: str, stage: str, info: Any) -> None:
        if stage == "done":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _run(_engine_jobs(("inspect", ""), ("inspect", ""), ("inspect", "")), tmp_path, "stopped", dask_engine,
             progress=interrupt)
    assert list(tmp_path.iterdir()) == []


def test_an_unreachable_scheduler_is_a_one_line_error_before_anything_runs(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "reports"
    code = main(["sweep", "offchip", "--param", "hidden=32,48", "--backend", "sim", "--out", str(out),
                 "--dask", "tcp://127.0.0.1:9"])
    assert code != 0
    stderr = capsys.readouterr().err
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("profcompare: error: cannot reach the Dask scheduler at "
                                                   "tcp://127.0.0.1:9: "), stderr
    assert not out.exists()


@pytest.mark.parametrize("bad", ["local:0", "local:two", "nowhere", "tcp://"])
def test_bad_dask_addresses_are_refused_before_anything_runs(bad: str) -> None:
    from profcompare.errors import ProfcompareError

    with pytest.raises(ProfcompareError, match="bad --dask") as info:
        runner.make_engine(1, bad)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_or_killed_sweep_takes_its_warm_workers_with_it(fake_registry: object, tmp_path: Path,
                                                                  sig: signal.Signals) -> None:
    # `kill PID` cleans up like Ctrl-C; `kill -9 PID` gives the runner no chance: its workers notice on their own
    out = tmp_path / "reports"
    proc = subprocess.Popen(
        [sys.executable, "-c", launcher_code(["sweep", "fake-slow", "--param", "sleep=60,61", "--backend", "sim",
                                               "--out", str(out), "--name", "s", "-q", "--jobs", "2"])],
        env=subprocess_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120  # a guard against hanging, not a speed claim
        while len(list(out.glob(".s.tmp-*/*/env.json"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = {json.loads(p.read_text())["pid"] for p in out.glob(".s.tmp-*/*/env.json")}
        assert len(workers) == 2  # a point in each of the two warm workers
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        while not all(_process_gone(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(_process_gone(pid) for pid in workers)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    if sig == signal.SIGTERM:
        assert proc.returncode == 143 and b"Traceback" not in err, err.decode()
        assert list(out.iterdir()) == []


def _process_gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True
    return "\nState:\tZ" in state  # a zombie has stopped; only its exit status is left


def test_dask_addresses() -> None:
    from profcompare.runner.dask_engine import parse_dask_address

    assert parse_dask_address("local:3") == ("local", 3)
    assert parse_dask_address("local", jobs=2) == ("local", 2)
    assert parse_dask_address("tcp://10.0.0.5:8786") == ("remote", "tcp://10.0.0.5:8786")
    assert parse_dask_address("sched-host:8786") == ("remote", "tcp://sched-host:8786")
