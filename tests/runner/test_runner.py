"""The runner: validation, engine options, subprocess jobs, run.json, failure isolation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from profcompare import runner
from profcompare.cli import cli, main
from profcompare.errors import EngineOptionsError, OutputExistsError, WorkloadError

# ------------------------------------------------------------------ POPLAR_ENGINE_OPTIONS


def test_engine_options_keep_user_keys_and_force_autoreport(tmp_path: Path) -> None:
    user = json.dumps({"debug.instrument": "false", "autoReport.directory": "/elsewhere", "autoReport.all": "false"})
    merged = json.loads(runner.merge_engine_options(user, tmp_path))
    assert merged == {
        "debug.instrument": "false",
        "autoReport.all": "true",
        "autoReport.directory": str(tmp_path),
    }


def test_engine_options_without_user_value(tmp_path: Path) -> None:
    for value in (None, "", "  "):
        assert json.loads(runner.merge_engine_options(value, tmp_path)) == {
            "autoReport.all": "true",
            "autoReport.directory": str(tmp_path),
        }


@pytest.mark.parametrize("value", ['{"autoReport.all": true', "not json", '["autoReport.all"]', "42"])
def test_malformed_user_engine_options_are_a_clear_error(value: str, tmp_path: Path) -> None:
    with pytest.raises(EngineOptionsError) as info:
        runner.merge_engine_options(value, tmp_path)
    message = str(info.value)
    assert "POPLAR_ENGINE_OPTIONS" in message and "\n" not in message


def test_malformed_user_engine_options_stop_the_run_before_it_starts(
    fake_registry: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", "{autoReport.all: true}")
    code = main(["run", "fake-small", "--backend", "sim", "--out", str(tmp_path / "r"), "--name", "x", "-q"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("profcompare: error: POPLAR_ENGINE_OPTIONS is not valid JSON")
    assert len(err.splitlines()) == 1
    assert not (tmp_path / "r" / "x").exists()


def test_child_gets_merged_options_backend_and_its_own_directory(
    fake_registry: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", '{"profiler.replicaToProfile": "0"}')
    jobs = runner.make_jobs(["fake-small"], {"size": "64"})
    result = runner.execute_jobs(jobs, out=tmp_path, name="env", backend="sim")
    job_dir = tmp_path / "env" / "fake-small"
    env = json.loads((job_dir / "env.json").read_text())
    options = json.loads(env["POPLAR_ENGINE_OPTIONS"])
    assert options["profiler.replicaToProfile"] == "0"
    assert options["autoReport.all"] == "true"
    # the child ran inside its own (staging) directory and autoReport pointed there
    assert Path(env["cwd"]).name == "fake-small"
    assert options["autoReport.directory"] == env["cwd"]
    assert Path(env["cwd"]).parent.name.startswith(".env.tmp-")
    assert env["PROFCOMPARE_BACKEND"] == "sim"
    assert env["config"]["size"] == 64
    assert result.outcome("fake-small").status == "ok"


# ------------------------------------------------------------------ run.json


def test_run_json_records_what_happened(fake_registry: object, tmp_path: Path) -> None:
    jobs = runner.make_jobs(["fake-small"], {"size": 128})
    result = runner.execute_jobs(jobs, out=tmp_path, name="r", backend="sim")
    info = json.loads((tmp_path / "r" / "fake-small" / "run.json").read_text())
    assert info["schema_version"] == 1
    assert (info["workload"], info["variant"], info["backend"], info["status"]) == ("fake", "fake-small", "sim", "ok")
    assert info["error"] is None
    assert info["config"] == {"size": 128, "sleep": 0.0, "device": "ipu_hw", "tag": ""}
    assert info["samples_per_step"] == 32
    assert info["losses"] == [2.0, 1.5]
    assert info["report_files"] == ["profile.sqlite"]
    assert set(info["timings"]) == {"build_s", "compile_s", "run_s", "total_s"}
    assert info["timings"]["total_s"] > 0
    assert info["started"] <= info["finished"]
    assert info["profcompare_version"]
    # stray stdout of the workload went to the log, not into the progress protocol
    assert "stray output" in (tmp_path / "r" / "fake-small" / "run.log").read_text()
    assert result.outcome("fake-small").report_files == ("profile.sqlite",)


def test_progress_reports_stages_in_order(fake_registry: object, tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    runner.execute_jobs(
        runner.make_jobs(["fake-small", "fake-broken"]),
        out=tmp_path,
        name="p",
        backend="sim",
        progress=lambda label, stage, info: seen.append((label, stage if stage != "done" else f"done:{info['status']}")),
    )
    small = [s for label, s in seen if label == "fake-small"]
    assert small[0] == "queued" and small[-1] == "done:ok"
    assert small.index("starting") < small.index("building") < small.index("writing report")
    assert [s for label, s in seen if label == "fake-broken"][-1] == "done:failed"


def test_failing_variants_do_not_lose_the_others(fake_registry: object, tmp_path: Path) -> None:
    jobs = runner.make_jobs(["fake-small", "fake-broken", "fake-crash", "fake-oom", "fake-big"])
    result = runner.execute_jobs(jobs, out=tmp_path, name="mixed", backend="sim", parallel=2)
    status = {o.label: o.status for o in result.outcomes}
    assert status == {"fake-small": "ok", "fake-broken": "failed", "fake-crash": "failed", "fake-oom": "oom", "fake-big": "ok"}
    assert not result.ok
    broken = result.outcome("fake-broken")
    assert broken.error == "broken on purpose" and not broken.has_report
    crash = result.outcome("fake-crash")
    assert "killed by signal 9" in crash.error
    assert json.loads((tmp_path / "mixed" / "fake-crash" / "run.json").read_text())["status"] == "failed"
    oom = result.outcome("fake-oom")
    assert "out of memory" in oom.error and oom.report_files == ("profile.sqlite",)
    for label in ("fake-small", "fake-big"):
        assert (tmp_path / "mixed" / label / "profile.sqlite").is_file()


# ------------------------------------------------------------------ validation (one-line errors)


def _one_line_error(args: list[str]) -> str:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code != 0
    exc = result.exception
    assert isinstance(exc, WorkloadError), result.output
    message = str(exc)
    assert "\n" not in message
    return message


def test_unknown_variant_lists_the_valid_ones(fake_registry: object, tmp_path: Path) -> None:
    message = _one_line_error(["run", "fake-small", "nope", "--out", str(tmp_path)])
    assert "nope" in message
    for variant in ("fake-small", "fake-big", "fake-oom"):
        assert variant in message
    assert not any(tmp_path.iterdir())


def test_bad_knob_values_name_the_knob_and_the_choices(fake_registry: object, tmp_path: Path) -> None:
    message = _one_line_error(["run", "fake-small", "--device", "gpu", "--out", str(tmp_path)])
    assert "gpu" in message and "ipu_hw" in message and "ipu_model" in message
    message = _one_line_error(["run", "fake-small", "--set", "size=lots", "--out", str(tmp_path)])
    assert "lots" in message and "size" in message
    message = _one_line_error(["run", "fake-small", "--set", "colour=red", "--out", str(tmp_path)])
    assert "colour" in message and "size" in message and "sleep" in message
    message = _one_line_error(["run", "fake-small", "fake-small", "--out", str(tmp_path)])
    assert "twice" in message


def test_cli_error_is_one_line_on_stderr(fake_registry: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("profcompare: error: unknown variant 'nope'")
    assert "Traceback" not in err


def test_knobs_accept_scientific_integers_and_dashes(fake_registry: object) -> None:
    (job,) = runner.make_jobs(["fake-small"], {"size": "1e4", "sleep": "0.5"})
    assert job.config["size"] == 10000 and job.config["sleep"] == 0.5
    with pytest.raises(WorkloadError, match="size"):
        runner.make_jobs(["fake-small"], {"size": "1.5"})


def test_run_names(tmp_path: Path) -> None:
    import datetime

    stamp = datetime.datetime(2026, 11, 22, 10, 15, 0)
    assert runner.default_run_name(["onchip", "offchip-sharded"], stamp) == "20261122-101500-onchip-vs-offchip-sharded"
    for bad in ("", ".", "..", "../x", "a/b", ".hidden"):
        with pytest.raises(WorkloadError):
            runner.check_run_name(bad)


def test_existing_run_is_not_replaced_without_force(fake_registry: object, tmp_path: Path) -> None:
    jobs = runner.make_jobs(["fake-small"], {"size": 100})
    runner.execute_jobs(jobs, out=tmp_path, name="same", backend="sim")
    with pytest.raises(OutputExistsError, match="--force"):
        runner.execute_jobs(runner.make_jobs(["fake-small"], {"size": 200}), out=tmp_path, name="same", backend="sim")
    assert runner.read_run_json(tmp_path / "same" / "fake-small")["config"]["size"] == 100
    result = runner.execute_jobs(runner.make_jobs(["fake-small"], {"size": 200}), out=tmp_path, name="same", backend="sim", force=True)
    assert result.replaced
    assert runner.read_run_json(tmp_path / "same" / "fake-small")["config"]["size"] == 200
    assert sorted(p.name for p in tmp_path.iterdir()) == ["same"]  # no staging or old dirs left


def test_find_report_files_follows_the_autoreport_layout(tmp_path: Path) -> None:
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "profile.pop").write_bytes(b"x")
    (tmp_path / "debug.cbor").write_bytes(b"x")
    assert runner.find_report_files(tmp_path) == ["training/profile.pop"]
    (tmp_path / "profile.pop").write_bytes(b"x")
    assert runner.find_report_files(tmp_path) == ["profile.pop", "training/profile.pop"]


def test_backend_choice() -> None:
    assert runner.resolve_backend("sim") == "sim"
    with pytest.raises(WorkloadError, match="auto, sdk, sim"):
        runner.resolve_backend("gpu")


def test_mnist_variants_and_knobs_are_validated_before_running(tmp_path: Path) -> None:
    message = _one_line_error(["run", "onchip", "on-chip", "--out", str(tmp_path)])
    assert all(v in message for v in ("onchip", "onchip-sharded", "offchip", "offchip-sharded"))
    message = _one_line_error(["run", "onchip", "--device", "gpu", "--out", str(tmp_path)])
    assert "ipu_hw" in message and "ipu_model" in message
    message = _one_line_error(["run", "onchip", "--hidden", "wide", "--out", str(tmp_path)])
    assert "'wide'" in message and "hidden" in message
    message = _one_line_error(["sweep", "offchip-sharded", "--param", "threshold=1,2", "--out", str(tmp_path)])
    assert "sharded_threshold" in message
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ('{"autoReport.bogus": "x"}', "unrecognised option 'autoReport.bogus'"),
        ('{"autoReport.executionProfileProgramRunCount": "many"}', "autoReport.executionProfileProgramRunCount"),
        ('{"debug.allowOutOfMemory": "perhaps"}', "debug.allowOutOfMemory"),
    ],
)
def test_bad_engine_options_are_refused_up_front(fake_registry: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str], options: str, message: str) -> None:
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", options)
    assert main(["run", "fake-small", "fake-big", "--backend", "sim", "--out", str(tmp_path), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("profcompare: error: POPLAR_ENGINE_OPTIONS") and message in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # nothing was started
