"""The variant subprocess on the SDK path, exercised in-process: out-of-memory is popart's
exception type, reports are listed only once every popxl Session is released, and run.json
records the popxl-addons generation; ``--addons`` reaches the subprocesses."""

from __future__ import annotations

import gc
import json
import sys
import types
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from profcompare.runner.process import variant_main as _variant_main
from profcompare.commands._common import addons_environment
from profcompare.emulator import popxl as sim_popxl
from profcompare.errors import ProfcompareError
from workloads import WorkloadResult

KEPT: list[Any] = []


class _TinyWorkload:
    """Builds a one-op program on the simulator; optionally keeps its Session alive."""

    def __init__(self, keep_session: bool = False) -> None:
        self.keep_session = keep_session

    def run(self, variant: str, config: dict[str, Any]) -> WorkloadResult:
        from profcompare import sdk

        popxl = sdk.popxl
        ir = popxl.Ir()
        with ir.main_graph:
            v = popxl.variable(np.zeros(2, np.float32))
            sdk.ops.var_updates.accumulate_(v, popxl.constant(np.ones(2, np.float32)))
        session = popxl.Session(ir, "ipu_model")
        with session:
            session.run()
        if self.keep_session:
            KEPT.append(session)
        return WorkloadResult(variant=variant, backend="sim", losses=(1.0,), samples_per_step=1, steps=1,
                              build_seconds=0.0, compile_seconds=0.0, run_seconds=0.0)


@pytest.fixture
def job_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROFCOMPARE_BACKEND", "sim")
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps({"autoReport.all": "true",
                                                            "autoReport.directory": str(tmp_path)}))
    monkeypatch.setattr(sim_popxl, "Session", sim_popxl.Session)  # the run instruments it; restore after
    KEPT.clear()
    return tmp_path


def _spec() -> dict[str, Any]:
    return {"workload": "tiny", "workload_ref": "unused", "variant": "v", "config": {}, "backend": "sim"}


def test_run_json_records_the_generation_and_the_report(job_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    monkeypatch.setattr(_variant_main, "_load_workload", lambda ref: _TinyWorkload())
    info = _variant_main.run(_spec(), lambda stage: None)
    assert info["status"] == "ok" and info["addons_generation"] == "3.0" and info["warnings"] == []
    assert info["report_files"] == ["profile.sqlite"]
    assert json.loads((job_dir / "run.json").read_text())["addons_generation"] == "3.0"


def test_a_session_kept_alive_is_reported(job_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_variant_main, "_load_workload", lambda ref: _TinyWorkload(keep_session=True))
    info = _variant_main.run(_spec(), lambda stage: None)
    assert info["status"] == "ok"
    assert len(info["warnings"]) == 1 and "still referenced" in info["warnings"][0]
    KEPT.clear()


def test_sessions_are_released_before_the_reports_are_listed(job_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listed: list[bool] = []
    real_close = _variant_main._close_sessions

    def close(sessions: list[Any]) -> str | None:
        warning = real_close(sessions)
        listed.append(all(ref() is None for ref in sessions) and len(sessions) == 1)
        return warning

    monkeypatch.setattr(_variant_main, "_close_sessions", close)
    monkeypatch.setattr(_variant_main, "_load_workload", lambda ref: _TinyWorkload())
    info = _variant_main.run(_spec(), lambda stage: None)
    assert listed == [True] and info["status"] == "ok"


def test_a_session_held_only_by_a_reference_cycle_is_released() -> None:
    class Session:
        pass

    gc.disable()  # no automatic collection between the steps below
    try:
        session = Session()
        session.self = session  # type: ignore[attr-defined]  # a cycle: reference counting cannot free it
        sessions = [weakref.ref(session)]
        del session
        assert sessions[0]() is not None  # still there: only a collection frees it
        assert _variant_main._close_sessions(sessions) is None
        assert sessions[0]() is None
    finally:
        gc.enable()


def test_out_of_memory_is_popart_s_exception(monkeypatch: pytest.MonkeyPatch) -> None:
    popart = types.ModuleType("popart")

    class popart_exception(Exception):  # noqa: N801 - popart's own names
        pass

    class OutOfMemoryException(popart_exception):
        pass

    popart.popart_exception = popart_exception  # type: ignore[attr-defined]
    popart.OutOfMemoryException = OutOfMemoryException  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "popart", popart)
    assert _variant_main._is_out_of_memory(OutOfMemoryException("Out of memory on tile 17"))
    assert not _variant_main._is_out_of_memory(popart_exception("some other failure"))
    # a message is not a type: only the exception popart raises for it counts
    assert not _variant_main._is_out_of_memory(RuntimeError("out of memory"))


def test_out_of_memory_without_popart_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "popart", raising=False)
    assert not _variant_main._is_out_of_memory(MemoryError("graph_memory_allocation_error"))


def test_addons_option_reaches_the_subprocess_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROFCOMPARE_SIM_ADDONS", raising=False)
    assert addons_environment(None, "sim") is None
    env = addons_environment("3.0", "sim")
    assert env is not None and env["PROFCOMPARE_SIM_ADDONS"] == "3.0"
    with pytest.raises(ProfcompareError, match="installed popxl-addons decides"):
        addons_environment("3.0", "sdk")
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "2.9")
    with pytest.raises(ProfcompareError, match="unknown popxl-addons generation '2.9'"):
        addons_environment(None, "sim")


def test_run_with_addons_records_it_end_to_end(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from profcompare.cli import cli

    result = CliRunner().invoke(cli, ["run", "onchip-sharded", "--backend", "sim", "--addons", "3.0", "--out",
                                       str(tmp_path), "--name", "r", "-q", "--replicas", "2", "--hidden", "32",
                                       "--layers", "1", "--grad-accum", "2", "--steps", "1",
                                       "--sharded-threshold", "64"])
    assert result.exit_code == 0, result.output
    info = json.loads((tmp_path / "r" / "onchip-sharded" / "run.json").read_text())
    assert info["addons_generation"] == "3.0" and info["status"] == "ok"
    from profcompare import open_report

    report = open_report(tmp_path / "r" / "onchip-sharded")
    assert report.meta.addons_generation == "3.0"
    assert report.meta.to_dict()["addons_generation"] == "3.0"
