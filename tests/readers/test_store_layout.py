"""A report's ``meta.layout`` (the layout its variant chose) survives the store and comes from
run.json; stores written before it open with an empty layout."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from profcompare.errors import ReportFormatError, ReportValidationError
from profcompare.readers import open_report, store
from profcompare.readers.store import read_report, write_report
from tests.readers.readers_builders import build_report

LAYOUT = {"optimizer_state": "offchip", "rts": True, "sharded_threshold": 512, "replicas": 4, "amp": 0.6}


def _with_layout(layout: dict[str, object]):
    report = build_report()
    return report.with_meta(report.meta.replace(layout=layout))


def _edit_meta(path: Path, sql: str) -> None:
    """Apply ``sql`` to the meta table and reseal its checksums (as an older writer would have)."""
    con = sqlite3.connect(path)
    con.execute(sql)
    items = con.execute("SELECT key, value FROM meta").fetchall()
    con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = 'meta'", (len(items), store._meta_checksum(items)))
    others = [r for r in con.execute("SELECT table_name, rows, crc32 FROM checksums") if r[0] != "checksums"]
    con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = 'checksums'", (store._checksums_checksum(others),))
    con.commit()
    con.close()


def test_the_store_keeps_the_layout(tmp_path: Path) -> None:
    write_report(_with_layout(LAYOUT), tmp_path / "profile.sqlite")
    meta = read_report(tmp_path / "profile.sqlite").meta
    assert dict(meta.layout) == LAYOUT and meta.to_dict()["layout"] == LAYOUT


def test_a_store_written_before_the_field_opens_with_no_layout(tmp_path: Path) -> None:
    path = tmp_path / "profile.sqlite"
    write_report(_with_layout(LAYOUT), path)
    _edit_meta(path, "DELETE FROM meta WHERE key = 'layout'")
    assert dict(read_report(path).meta.layout) == {}


def test_a_stored_layout_must_be_an_object(tmp_path: Path) -> None:
    path = tmp_path / "profile.sqlite"
    write_report(build_report(), path)
    _edit_meta(path, "UPDATE meta SET value = '[1, 2]' WHERE key = 'layout'")
    with pytest.raises(ReportFormatError, match="meta.layout is a list, expected an object"):
        read_report(path)


def test_run_json_supplies_the_layout_and_is_checked(tmp_path: Path) -> None:
    write_report(build_report(), tmp_path / "profile.sqlite")
    (tmp_path / "run.json").write_text(json.dumps({"variant": "v", "layout": LAYOUT}))
    assert dict(open_report(tmp_path).meta.layout) == LAYOUT
    (tmp_path / "run.json").write_text(json.dumps({"variant": "v", "layout": ["rts"]}))
    with pytest.raises(ReportFormatError, match="layout must be an object, got list"):
        open_report(tmp_path)
    (tmp_path / "run.json").write_text(json.dumps({"variant": "v", "layout": {"rts": [True]}}))
    with pytest.raises(ReportFormatError, match=r"meta.layout.rts must be a boolean, number or string"):
        open_report(tmp_path)


def test_layout_values_are_plain() -> None:
    with pytest.raises(ReportValidationError, match="meta.layout.rts must be a boolean, number or string"):
        build_report().meta.replace(layout={"rts": {"on": True}})
