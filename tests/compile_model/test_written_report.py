"""The simulator keeps the last report it wrote to each file, so the process that ran a variant
takes its figures without reading the file back; a file changed since is read instead."""

from __future__ import annotations

import json

import pandas as pd

from profcompare.emulator import engine as engine_module
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.readers.store import read_report, write_report


def _program():
    b = ProgramBuilder()
    w = b.variable("fc.weight", (64, 32))
    (x,) = b.op("HostLoad", [], [("x", (8, 64), "float32")], attrs={"stream": "x"})
    (y,) = b.op("MatMul", [x, w], [("y", (8, 32), "float32")], flops=2 * 8 * 64 * 32)
    b.op("HostStore", [y], attrs={"stream": "y"})
    return b.build()


def _engine(tmp_path):
    env = {"POPLAR_ENGINE_OPTIONS": json.dumps({"autoReport.all": "true", "autoReport.directory": str(tmp_path)})}
    return engine_module.Engine(_program(), environ=env)


def test_the_report_written_is_kept_with_the_figures_of_the_file(tmp_path):
    engine = _engine(tmp_path)
    engine.on_run()
    engine.on_run()  # the execution profile (2 runs by default) rewrites the file
    kept = engine_module.written_report(tmp_path / "profile.sqlite")
    assert kept is not None and len(kept.execution) > 0
    pd.testing.assert_series_equal(kept.summary(), read_report(tmp_path / "profile.sqlite").summary(), check_names=False)
    engine_module.forget_written()
    assert engine_module.written_report(tmp_path / "profile.sqlite") is None


def test_a_file_changed_since_it_was_written_is_not_answered_for(tmp_path):
    _engine(tmp_path)
    path = tmp_path / "profile.sqlite"
    assert engine_module.written_report(path) is not None
    write_report(read_report(path), path, overwrite=True)  # another writer: another file
    assert engine_module.written_report(path) is None
    assert engine_module.written_report(tmp_path / "elsewhere.sqlite") is None
    engine_module.forget_written()


def test_only_the_last_report_written_is_kept(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _engine(tmp_path / "a")
    _engine(tmp_path / "b")
    assert engine_module.written_report(tmp_path / "b" / "profile.sqlite") is not None
    assert engine_module.written_report(tmp_path / "a" / "profile.sqlite") is None  # read from its file
    assert len(engine_module._WRITTEN) == 1
    engine_module.forget_written()


def test_a_job_run_in_this_process_leaves_no_report_kept(tmp_path):
    """A warm worker runs job after job: the reports the simulator kept for one are dropped with it."""
    from profcompare import runner
    from profcompare.runner.engine import job_spec
    from profcompare.runner.execute import child_environment
    from profcompare.runner.child import import_roots
    from profcompare.runner.in_process import run_job_here

    (job,) = runner.make_jobs(["onchip"], {"hidden": "32", "layers": "1", "steps": "1"})
    job_dir = tmp_path / job.label
    job_dir.mkdir()
    env = child_environment(job, job_dir.resolve(), "sim", None, "compile-only")
    info = run_job_here(job_spec(job, "sim"), env, job_dir, paths=import_roots(job))
    assert info["status"] == "ok" and info["summary"]["max_tile_bytes"] > 0
    assert engine_module._WRITTEN == {}
