"""The popxl-addons generation a report's workload spoke survives the store and run.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profcompare.errors import ReportFormatError, ReportValidationError
from profcompare.model import TABLES
from profcompare.readers import open_report
from profcompare.readers.store import read_report, write_report
from tests.readers.readers_builders import build_report


@pytest.mark.parametrize("generation", ["3.0", "3.4", None])
def test_the_store_keeps_the_generation(tmp_path: Path, generation: str | None) -> None:
    report = build_report()
    report = type(report)(meta=report.meta.replace(addons_generation=generation),
                          **{t: getattr(report, t) for t in TABLES})
    write_report(report, tmp_path / "profile.sqlite")
    assert read_report(tmp_path / "profile.sqlite").meta.addons_generation == generation


def test_run_json_supplies_the_generation_and_is_checked(tmp_path: Path) -> None:
    write_report(build_report(), tmp_path / "profile.sqlite")
    (tmp_path / "run.json").write_text(json.dumps({"variant": "v", "addons_generation": "3.4"}))
    assert open_report(tmp_path).meta.addons_generation == "3.4"
    (tmp_path / "run.json").write_text(json.dumps({"variant": "v", "addons_generation": 3.4}))
    with pytest.raises(ReportFormatError, match="addons_generation must be a string"):
        open_report(tmp_path)


def test_the_generation_must_be_text() -> None:
    with pytest.raises(ReportValidationError, match="meta.addons_generation must be a string"):
        build_report().meta.replace(addons_generation=3.4)
