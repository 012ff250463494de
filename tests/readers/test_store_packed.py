"""Packed tables of the SQLite store (version 5): a table of more than ``PACKED_FROM_ROWS`` rows is
stored column by column as compressed arrays; it reads back exactly, and a damaged part is refused."""

from __future__ import annotations

import pathlib
import sqlite3
import zlib

import pytest
from store_mutations import edit_store as _edit
from readers_builders import assert_reports_equal

from profcompare.errors import ReportFormatError
from profcompare.model import Report
from profcompare.readers import store


@pytest.fixture
def packed_path(report: Report, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.setattr(store, "PACKED_FROM_ROWS", 0)  # every table with a row is packed
    return store.write_report(report, tmp_path / "profile.sqlite")


def test_packed_tables_read_back_exactly(report: Report, packed_path: pathlib.Path) -> None:
    back = store.read_report(packed_path)
    assert_reports_equal(report, back)
    con = sqlite3.connect(packed_path)
    packed = {row[0] for row in con.execute("SELECT DISTINCT table_name FROM packed")}
    rows_in_sql = {t: con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in packed}
    con.close()
    assert {"tiles", "variables", "liveness"} <= packed
    assert set(rows_in_sql.values()) == {0}


def test_small_tables_stay_rows(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    con = sqlite3.connect(path)
    assert con.execute("SELECT COUNT(*) FROM packed").fetchone()[0] == 0
    assert con.execute("SELECT COUNT(*) FROM variables").fetchone()[0] == len(report.variables)
    con.close()


def test_a_flipped_byte_in_a_packed_column_is_refused(packed_path: pathlib.Path) -> None:
    con = sqlite3.connect(packed_path)
    data = con.execute("SELECT data FROM packed WHERE table_name = 'variables' AND column_name = 'bytes'").fetchone()[0]
    con.close()
    raw = bytearray(zlib.decompress(data))
    raw[0] ^= 0x40
    _edit(packed_path, "UPDATE packed SET data = ? WHERE table_name = 'variables' AND column_name = 'bytes'",
          parameters=(zlib.compress(bytes(raw)),))
    with pytest.raises(ReportFormatError, match="checksum mismatch in variables"):
        store.read_report(packed_path)


@pytest.mark.parametrize(("statement", "message"), [
    ("UPDATE packed SET raw_bytes = raw_bytes + 8 WHERE table_name = 'liveness' AND column_name = 'step'",
     r"liveness.step is not \d+ rows"),
    ("UPDATE packed SET data = x'00ff' WHERE table_name = 'liveness' AND column_name = 'step'", r"liveness.step"),
    ("DELETE FROM packed WHERE table_name = 'variables' AND column_name = 'first_step' AND part = 'mask'",
     "packed columns of variables do not match its catalogue"),
    ("UPDATE packed SET table_name = 'nonsense' WHERE table_name = 'code'", "packed columns of unknown table"),
    ("UPDATE checksums SET rows = rows + 1 WHERE table_name = 'liveness'", "corrupt report"),
])
def test_damaged_packed_parts_are_refused(packed_path: pathlib.Path, statement: str, message: str) -> None:
    _edit(packed_path, statement)
    with pytest.raises(ReportFormatError, match=message):
        store.read_report(packed_path)


def test_rows_in_a_packed_table_are_refused(report: Report, packed_path: pathlib.Path) -> None:
    _edit(packed_path, "INSERT INTO categories VALUES ('x', 0, 1)")
    with pytest.raises(ReportFormatError, match="table categories is packed and has rows"):
        store.read_report(packed_path)


def test_a_zlib_bomb_claim_is_refused_before_inflating(packed_path: pathlib.Path) -> None:
    _edit(packed_path, "UPDATE packed SET raw_bytes = 1 << 40 WHERE table_name = 'variables' AND column_name = 'name'"
          " AND part = 'text'")
    with pytest.raises(ReportFormatError, match="variables.name is not"):
        store.read_report(packed_path)
