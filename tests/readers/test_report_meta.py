"""A report's meta read alone (store.read_meta, readers.open_report_meta): the same meta the
whole report gives, verified as strictly, without reading the tables."""

from __future__ import annotations

import json
import pathlib

import pytest
from store_mutations import edit_store

from profcompare.errors import ReportFormatError
from profcompare.model import Report
from profcompare.readers import open_report, open_report_meta, store


def test_meta_alone_is_the_reports_meta(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    assert store.read_meta(path) == store.read_report(path).meta
    assert open_report_meta(tmp_path) == open_report(tmp_path).meta
    for flag in (False, True):
        (tmp_path / str(flag)).mkdir()
        tables = {t: getattr(report, t) for t in ("tiles", "categories", "variables", "liveness", "code",
                                                  "execution", "remote_buffers")}
        store.write_report(Report.build(report.meta.replace(oom=flag), **tables), tmp_path / str(flag) / "profile.sqlite")
        assert open_report_meta(tmp_path / str(flag)).oom is flag


def test_meta_alone_does_not_read_the_tables(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    edit_store(path, "UPDATE variables SET bytes = bytes + 1 WHERE rowid = 5")
    assert store.read_meta(path) == report.meta.replace(source=str(path))
    opened = open_report(tmp_path)  # opening reads no table either: the edited one fails when read
    assert opened.tiles.equals(report.tiles)
    with pytest.raises(ReportFormatError, match="checksum mismatch in variables"):
        _ = opened.variables


def test_an_edited_meta_is_refused(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    edit_store(path, "UPDATE meta SET value = 'false' WHERE key = 'oom'")
    with pytest.raises(ReportFormatError, match="checksum mismatch in meta"):
        store.read_meta(path)
    with pytest.raises(ReportFormatError, match="not a profcompare report"):
        store.read_meta(pathlib.Path(__file__))


def test_a_run_directory_gives_the_meta_its_run_json_amends(report: Report, tmp_path: pathlib.Path) -> None:
    store.write_report(report, tmp_path / "profile.sqlite")
    (tmp_path / "run.json").write_text(json.dumps({"status": "oom", "report_files": ["profile.sqlite"],
                                                   "workload": "w", "variant": "v", "config": {}}))
    assert open_report_meta(tmp_path) == open_report(tmp_path).meta
    with pytest.raises(ReportFormatError, match="no such file"):
        open_report_meta(tmp_path / "missing")
