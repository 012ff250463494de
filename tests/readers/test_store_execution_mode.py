"""``meta.execution`` (numeric | compile-only) survives the store; older stores read as numeric."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from profcompare.errors import ReportFormatError, ReportValidationError
from profcompare.model import TABLES
from profcompare.readers import store
from profcompare.readers.store import read_report, write_report
from profcompare.render.notebook import report_repr_html
from tests.readers.readers_builders import build_report


def _with_execution(execution: str):
    report = build_report()
    return type(report)(meta=report.meta.replace(execution=execution), **{t: getattr(report, t) for t in TABLES})


def _edit_meta(path: Path, sql: str, *params: str) -> None:
    """Apply ``sql`` to the meta table and reseal its checksums (as a writer of that layout would)."""
    con = sqlite3.connect(path)
    con.execute(sql, params)
    items = con.execute("SELECT key, value FROM meta").fetchall()
    con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = 'meta'", (len(items), store._meta_checksum(items)))
    others = [r for r in con.execute("SELECT table_name, rows, crc32 FROM checksums") if r[0] != "checksums"]
    con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = 'checksums'", (store._checksums_checksum(others),))
    con.commit()
    con.close()


@pytest.mark.parametrize("execution", ["numeric", "compile-only"])
def test_the_store_keeps_the_execution_mode(tmp_path: Path, execution: str) -> None:
    write_report(_with_execution(execution), tmp_path / "profile.sqlite")
    meta = read_report(tmp_path / "profile.sqlite").meta
    assert meta.execution == execution and meta.to_dict()["execution"] == execution


def test_a_store_written_before_the_field_reads_as_numeric(tmp_path: Path) -> None:
    path = tmp_path / "profile.sqlite"
    write_report(_with_execution("compile-only"), path)
    _edit_meta(path, "DELETE FROM meta WHERE key = 'execution'")
    assert read_report(path).meta.execution == "numeric"


def test_a_stored_mode_must_be_known(tmp_path: Path) -> None:
    path = tmp_path / "profile.sqlite"
    write_report(build_report(), path)
    _edit_meta(path, "UPDATE meta SET value = ? WHERE key = 'execution'", '"partly"')
    with pytest.raises(ReportFormatError):
        read_report(path)
    with pytest.raises(ReportValidationError, match="meta.execution must be 'numeric' or 'compile-only', got 1"):
        build_report().meta.replace(execution=1)


def test_the_notebook_card_says_compile_only() -> None:
    assert "COMPILE ONLY" in report_repr_html(_with_execution("compile-only"))
    assert "COMPILE ONLY" not in report_repr_html(_with_execution("numeric"))
