"""open_report: run directories, report directories, files, and one clear error for bad input."""

from __future__ import annotations

import json
import os
import pathlib
import sqlite3

import pytest
from readers_builders import assert_reports_equal

from profcompare.errors import ReportFormatError
from profcompare.model import Report
from profcompare.readers import open_report, store


def write_run(directory: pathlib.Path, **fields: object) -> None:
    run = {
        "schema_version": 1, "workload": "mnist", "variant": "offchip-sharded", "backend": "sim",
        "config": {"replicas": 4, "grad_accum": 8, "lr": 0.001}, "samples_per_step": 256, "status": "ok",
        "error": None, "report_files": ["profile.sqlite"],
    }
    run.update(fields)
    (directory / "run.json").write_text(json.dumps(run))


def test_run_directory_takes_workload_and_config_from_run_json(report: Report, tmp_path: pathlib.Path) -> None:
    store.write_report(report.__class__.build(report.meta.replace(workload=None, variant=None, config={},
                                                                  samples_per_step=None)),
                       tmp_path / "profile.sqlite")
    write_run(tmp_path)
    opened = open_report(tmp_path)
    assert opened.meta.workload == "mnist"
    assert opened.meta.variant == "offchip-sharded"
    assert dict(opened.meta.config) == {"replicas": 4, "grad_accum": 8, "lr": 0.001}
    assert opened.meta.samples_per_step == 256
    assert opened.meta.label == "offchip-sharded"
    assert opened.meta.source == str(tmp_path / "profile.sqlite")
    # run.json itself is accepted too
    assert open_report(tmp_path / "run.json").meta.variant == "offchip-sharded"


def test_report_directory_and_file_give_the_same_report(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    assert_reports_equal(open_report(tmp_path), report)
    assert_reports_equal(open_report(path), report)
    assert_reports_equal(open_report(str(path)), report)


def test_reader_is_chosen_by_content_not_extension(report: Report, tmp_path: pathlib.Path) -> None:
    for name in ("renamed.pop", "report.dat", "no_extension"):
        path = store.write_report(report, tmp_path / name)
        assert_reports_equal(open_report(path), report)


def test_store_report_in_an_engine_subdirectory(report: Report, tmp_path: pathlib.Path) -> None:
    (tmp_path / "training").mkdir()
    store.write_report(report, tmp_path / "training" / "profile.sqlite")
    assert open_report(tmp_path).meta.source == str(tmp_path / "training" / "profile.sqlite")


def test_several_engine_subdirectories_are_ambiguous(report: Report, tmp_path: pathlib.Path) -> None:
    for engine in ("training", "inference"):
        (tmp_path / engine).mkdir()
        store.write_report(report, tmp_path / engine / "profile.sqlite")
    with pytest.raises(ReportFormatError, match="several reports.*inference/profile.sqlite.*training/profile.sqlite"):
        open_report(tmp_path)


@pytest.mark.parametrize("status", ["failed", "oom"])
def test_run_without_report_reports_the_run_error(tmp_path: pathlib.Path, status: str) -> None:
    write_run(tmp_path, status=status, error="IpuOutOfMemoryError: tile 17 needs 700000 bytes")
    with pytest.raises(ReportFormatError, match=f"run {status} without a report: IpuOutOfMemoryError: tile 17"):
        open_report(tmp_path)


def test_oom_run_with_report_is_flagged_oom(report: Report, tmp_path: pathlib.Path) -> None:
    store.write_report(Report.build(report.meta.replace(oom=False)), tmp_path / "profile.sqlite")
    write_run(tmp_path, status="oom", error="does not fit")
    assert open_report(tmp_path).meta.oom is True


def _corrupt(kind: str, path: pathlib.Path, report: Report) -> pathlib.Path:
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "random":
        path.write_bytes(os.urandom(5000))
    elif kind == "json":
        path.write_text('{"not": "a report"}')
    elif kind in ("truncated", "flipped"):
        store.write_report(report, path)
        data = bytearray(path.read_bytes())
        if kind == "truncated":
            data = data[: len(data) // 2]
        else:
            for offset in range(0, len(data), 97):
                data[offset] ^= 0x5A
        path.write_bytes(bytes(data))
    elif kind == "foreign_sqlite":
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE people (name TEXT)")
        con.commit()
        con.close()
    return path


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("empty", "empty file"),
        ("random", "not a report"),
        ("json", "a JSON file, not a report"),
        ("truncated", "truncated"),
        ("flipped", "not a report|corrupt"),
        ("foreign_sqlite", "SQLite database but neither a profcompare report nor a Poplar profile"),
    ],
)
def test_bad_files_raise_a_format_error_naming_the_file(
    report: Report, tmp_path: pathlib.Path, kind: str, message: str
) -> None:
    path = _corrupt(kind, tmp_path / "profile.sqlite", report)
    with pytest.raises(ReportFormatError, match=message) as info:
        open_report(path)
    assert str(info.value).startswith(str(path))
    # the same through the directory
    with pytest.raises(ReportFormatError, match=message):
        open_report(tmp_path)


def test_missing_path(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ReportFormatError, match="no such file or directory"):
        open_report(tmp_path / "nope")


def test_directory_without_report(tmp_path: pathlib.Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "empty_sub").mkdir()
    with pytest.raises(ReportFormatError, match=r"no report found \(expected profile.sqlite or profile.pop"):
        open_report(tmp_path)


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", "\xff\xfe"])
def test_run_json_that_is_not_a_json_object(tmp_path: pathlib.Path, content: str) -> None:
    (tmp_path / "run.json").write_bytes(content.encode("latin-1"))
    with pytest.raises(ReportFormatError, match=r"run\.json: "):
        open_report(tmp_path)


def test_pop_file_that_is_not_sqlite(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "profile.pop"
    path.write_bytes(b"\x00" * 512)
    with pytest.raises(ReportFormatError, match="not a Poplar profile"):
        open_report(path)


def test_debug_cbor_given_instead_of_the_profile(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "debug.cbor"
    path.write_bytes(b"\xa1\x61a\x01")
    with pytest.raises(ReportFormatError, match="debug information, not a profile"):
        open_report(path)


@pytest.mark.parametrize("empty", ["", "  "])
def test_empty_path_is_refused_rather_than_read_as_the_current_directory(
    empty: str, report: Report, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # even where a report would be found
    store.write_report(report, tmp_path / "profile.sqlite")
    with pytest.raises(ReportFormatError, match="empty report path"):
        open_report(empty)


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ({"samples_per_step": -4}, r"run\.json: meta\.samples_per_step must be between 1 and 2\*\*53"),
        ({"samples_per_step": 2**60}, r"run\.json: meta\.samples_per_step must be between 1 and 2\*\*53"),
        ({"samples_per_step": "32"}, r"run\.json: samples_per_step must be a positive integer"),
        ({"samples_per_step": True}, r"run\.json: samples_per_step must be a positive integer"),
        ({"variant": 7}, r"run\.json: variant must be a string"),
        ({"config": [1, 2]}, r"run\.json: config must be an object"),
    ],
)
def test_run_json_overrides_are_range_checked(report: Report, tmp_path: pathlib.Path, run: dict, message: str) -> None:
    store.write_report(report, tmp_path / "profile.sqlite")
    (tmp_path / "run.json").write_text(json.dumps({"status": "ok", **run}))
    with pytest.raises(ReportFormatError, match=message):
        open_report(tmp_path)


def test_deeply_nested_run_json_is_a_format_error(report: Report, tmp_path: pathlib.Path) -> None:
    store.write_report(report, tmp_path / "profile.sqlite")
    (tmp_path / "run.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(ReportFormatError, match="nested too deeply"):
        open_report(tmp_path)
