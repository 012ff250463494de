"""autoReport semantics of the simulator's Engine (POPLAR_ENGINE_OPTIONS)."""

from __future__ import annotations

import json
import os

import pytest

from profcompare.emulator.compile.engine_options import parse_engine_options
from profcompare.emulator.compile.synthetic import mlp_program
from profcompare.emulator.engine import Engine
from profcompare.errors import EngineOptionsError
from profcompare.readers.store import read_report


@pytest.fixture(scope="module")
def program():
    return mlp_program(layers=2, hidden=64, micro_batch=4)


def _env(**options):
    return {"POPLAR_ENGINE_OPTIONS": json.dumps(options)}


def test_no_options_writes_nothing(program, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    engine = Engine(program, environ={})
    engine.on_run()
    engine.on_detach()
    assert os.listdir(tmp_path) == []
    assert engine.report.meta.simulated  # compiled anyway


def test_all_writes_into_directory_without_engine_subdirectory(program, tmp_path):
    target = tmp_path / "reports" / "new"
    engine = Engine(program, environ=_env(**{"autoReport.all": "true", "autoReport.directory": str(target)}))
    assert sorted(os.listdir(target)) == ["profile.sqlite"]
    graph_only = read_report(target / "profile.sqlite")
    assert len(graph_only.execution) == 0 and len(graph_only.tiles) == 1472
    assert graph_only.meta.simulated and graph_only.meta.producer.startswith("profcompare-sim ")
    for _ in range(3):
        engine.on_run()
    engine.on_detach()
    report = read_report(target / "profile.sqlite")
    assert sorted(report.execution["run"].unique().tolist()) == [0, 1]  # default run count 2
    ex = report.execution
    runtime = ex[ex["phase"].astype(str) == "runtime"]
    device = ex[ex["phase"].astype(str) != "runtime"]
    per_run = device.groupby("run")["cycles"].sum()
    assert per_run[0] == per_run[1] == engine.compiled.cycles_per_step
    # one host/runtime row per run, after the device's steps: ceil(run_overhead_seconds x clock) =
    # 925,148 less the 464,832 the device spends waiting for the host in the run's opening copy
    assert runtime["run"].tolist() == [0, 1] and runtime["type"].astype(str).tolist() == ["Host", "Host"]
    assert runtime["cycles"].tolist() == [460_316, 460_316] == [engine.compiled.runtime_cycles] * 2
    assert (runtime["cycles_from"].to_numpy() == device.groupby("run")["cycles_to"].max().to_numpy()).all()
    # the WeightsFromHost program runs once per engine, not per run: no setup rows
    assert not ex["program"].astype(str).str.startswith("WeightsFromHost/").any()
    summary = report.summary()
    assert summary["cycles_per_step"] == engine.compiled.cycles_per_step
    clock = report.meta.target.clock_hz
    assert summary["seconds_per_step"] == pytest.approx(engine.compiled.seconds_per_step, rel=1e-9)
    assert summary["seconds_per_step"] == pytest.approx(
        (engine.compiled.cycles_per_step + 460_316) / clock, rel=1e-9)


def test_default_directory_is_cwd(program, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Engine(program, environ=_env(**{"autoReport.all": "true"}))
    assert os.listdir(tmp_path) == ["profile.sqlite"]


def test_output_graph_profile_false_writes_no_file(program, tmp_path):
    engine = Engine(program, environ=_env(**{"autoReport.all": "true", "autoReport.outputGraphProfile": "false",
                                             "autoReport.directory": str(tmp_path)}))
    engine.on_run()
    engine.on_detach()
    assert os.listdir(tmp_path) == []


def test_execution_profile_off_keeps_graph_profile_only(program, tmp_path):
    engine = Engine(program, environ=_env(**{"autoReport.all": "true", "autoReport.outputExecutionProfile": "false",
                                             "autoReport.directory": str(tmp_path)}))
    engine.on_run()
    engine.on_detach()
    report = read_report(tmp_path / "profile.sqlite")
    assert len(report.execution) == 0 and "execution" not in report.meta.capabilities


def test_run_count_and_partial_runs_at_detach(program, tmp_path):
    engine = Engine(program, environ=_env(**{"autoReport.outputGraphProfile": True,
                                             "autoReport.outputExecutionProfile": True,
                                             "autoReport.executionProfileProgramRunCount": "5",
                                             "autoReport.directory": str(tmp_path)}))
    for _ in range(3):
        engine.on_run()
    assert len(read_report(tmp_path / "profile.sqlite").execution) == 0  # not yet 5 runs
    engine.on_detach()
    assert read_report(tmp_path / "profile.sqlite").execution["run"].nunique() == 3


def test_malformed_json_is_rejected(program):
    with pytest.raises(EngineOptionsError, match="not valid JSON"):
        Engine(program, environ={"POPLAR_ENGINE_OPTIONS": '{"autoReport.all": "true"'})


def test_unknown_autoreport_key_is_rejected(program):
    with pytest.raises(EngineOptionsError, match="unrecognised option 'autoReport.colour'"):
        Engine(program, environ=_env(**{"autoReport.colour": "true"}))


@pytest.mark.parametrize("options,fragment", [
    ({"autoReport.all": "yes"}, "expected \"true\" or \"false\""),
    ({"autoReport.executionProfileProgramRunCount": "two"}, "expected an integer"),
    ({"autoReport.directory": 3}, "expected a path string"),
])
def test_bad_values_are_rejected(options, fragment):
    with pytest.raises(EngineOptionsError, match=fragment):
        parse_engine_options(json.dumps(options))


def test_non_object_and_other_keys():
    with pytest.raises(EngineOptionsError, match="JSON object"):
        parse_engine_options("[1, 2]")
    opts = parse_engine_options(json.dumps({"target.syncReplicasIndependently": "true", "debug.instrument": "true",
                                            "profiler.format": "v3"}))
    assert not opts.graph_profile and not opts.execution_profile and not opts.allow_out_of_memory
    opts = parse_engine_options(json.dumps({"autoReport.all": True, "autoReport.executionProfileProgramRunCount": 7}))
    assert opts.graph_profile and opts.execution_profile and opts.program_run_count == 7


def test_options_text_is_read_as_a_json_object_with_short_messages():
    from profcompare.backend.poplar_options import parse_options_object

    assert parse_options_object(None) == {} and parse_options_object("  ") == {}
    assert parse_options_object('{"autoReport.all": "true", "debug.x": 1}') == {"autoReport.all": "true", "debug.x": 1}
    long_value = "[" + ", ".join(["1"] * 100) + "]"
    with pytest.raises(EngineOptionsError, match=r"must be a JSON object") as info:
        parse_options_object(long_value)
    message = str(info.value)
    assert "..." in message and len(message) < 200 and "\n" not in message
