"""Packed tables of the SQLite store (version 5): a table of more than ``PACKED_FROM_ROWS`` rows is
stored column by column as compressed arrays; it reads back exactly, and a damaged part is refused.
Version 6 stores a growing integer column as its differences when they are narrower."""

from __future__ import annotations

import dataclasses
import pathlib
import sqlite3
import zlib

import numpy as np
import pytest
from store_mutations import edit_store as _edit
from store_mutations import drop_tile_regions, reseal
from readers_builders import assert_reports_equal

from profcompare.errors import ReportFormatError
from profcompare.model import Report, make_frame
from profcompare.readers import store, store_write


@pytest.fixture
def packed_path(report: Report, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    monkeypatch.setattr(store_write, "PACKED_FROM_ROWS", 0)  # every table with a row is packed
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


def _growing_report(report: Report) -> Report:
    """``report`` with a liveness table of 1,000 steps whose bytes grow by a few bytes a step from
    2**40: the values take eight bytes a row, their differences one."""
    n = 1000
    liveness = make_frame("liveness", {
        "step": np.arange(n, dtype=np.int64),
        "program": [f"p{i % 7}" for i in range(n)],
        "program_type": ["OnTileExecute"] * n,
        "not_always_live_bytes": 2**40 + 3 * np.arange(n, dtype=np.int64) + np.arange(n, dtype=np.int64) % 5,
    })
    return dataclasses.replace(report, liveness=liveness)


def _parts(path: pathlib.Path, table: str, column: str) -> set[str]:
    con = sqlite3.connect(path)
    try:
        return {row[0] for row in con.execute("SELECT part FROM packed WHERE table_name = ? AND column_name = ?",
                                               (table, column))}
    finally:
        con.close()


def test_growing_integer_columns_are_stored_as_deltas_and_read_back_exactly(
        report: Report, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_write, "PACKED_FROM_ROWS", 0)
    grown = _growing_report(report)
    path = store.write_report(grown, tmp_path / "profile.sqlite")
    assert _parts(path, "liveness", "not_always_live_bytes") == {"start", "deltas"}
    assert _parts(path, "liveness", "step") == {"start", "deltas"}  # 0..999: two bytes a row as values, one as deltas
    assert _parts(path, "variables", "first_step") in ({"values", "mask"}, {"start", "deltas", "mask"})
    assert_reports_equal(grown, store.read_report(path))


@pytest.mark.parametrize("values", [
    [0, 2**63 - 1, -(2**63), 5, -1],  # differences that wrap around int64
    [7],
    [],
])
def test_deltas_restore_every_int64_exactly(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    start = int(array[0]) if len(array) else 0
    assert np.array_equal(store._from_deltas(start, store._deltas(array)), array)


def _as_version_5(path: pathlib.Path) -> None:
    """Rewrite every ``deltas`` part of store ``path`` as the ``values`` part version 5 has, and
    mark the file version 5 (meta and checksums resealed): the layout version 5 writers made,
    without the program tree (version 7), the operations and the tile regions (version 8)."""
    con = sqlite3.connect(path)
    try:
        drop_tile_regions(con)
        for newer in ("programs", "operations", "variable_tiles", "vertices", "compute_sets", "exchanges"):
            con.execute(f"DROP VIEW IF EXISTS {newer}_text")
            con.execute(f"DROP TABLE {newer}")
            for table in ("columns", "dictionary", "checksums", "packed"):
                con.execute(f"DELETE FROM {table} WHERE table_name = ?", (newer,))
            con.execute("UPDATE checksums SET rows = rows - 1 WHERE table_name = 'checksums'")
        catalogue = con.execute("SELECT table_name, position, column_name, storage, dtype, categories_dtype, ordered "
                                "FROM columns ORDER BY table_name, position").fetchall()
        con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = 'columns'",
                    (len(catalogue), store._catalogue_checksum(catalogue)))
        words = con.execute("SELECT table_name, column_name, code, value FROM dictionary "
                            "ORDER BY table_name, column_name, code").fetchall()
        con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = 'dictionary'",
                    (len(words), store._dictionary_checksum(words)))
        for table, column, raw_bytes, data in con.execute(
                "SELECT table_name, column_name, raw_bytes, data FROM packed WHERE part = 'deltas'").fetchall():
            rows = con.execute("SELECT rows FROM checksums WHERE table_name = ?", (table,)).fetchone()[0]
            deltas = np.frombuffer(zlib.decompress(data), dtype=np.dtype(f"<i{raw_bytes // rows}"))
            start = con.execute("SELECT data FROM packed WHERE table_name = ? AND column_name = ? AND part = 'start'",
                                (table, column)).fetchone()[0]
            values = store._narrowest(store._from_deltas(int(np.frombuffer(zlib.decompress(start), "<i8")[0]),
                                                         deltas)).tobytes()
            con.execute("UPDATE packed SET part = 'values', raw_bytes = ?, data = ? WHERE table_name = ? AND "
                        "column_name = ? AND part = 'deltas'", (len(values), zlib.compress(values), table, column))
            con.execute("DELETE FROM packed WHERE table_name = ? AND column_name = ? AND part = 'start'", (table, column))
        con.execute("PRAGMA user_version = 5")
        con.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
        con.commit()
    finally:
        con.close()
    reseal(path)


def test_version_5_stores_without_deltas_still_open(report: Report, tmp_path: pathlib.Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_write, "PACKED_FROM_ROWS", 0)
    grown = dataclasses.replace(_growing_report(report), programs=make_frame("programs"),
                                operations=make_frame("operations"), vertices=make_frame("vertices"),
                                compute_sets=make_frame("compute_sets"), exchanges=make_frame("exchanges"))
    path = store.write_report(grown, tmp_path / "profile.sqlite")
    _as_version_5(path)
    assert _parts(path, "liveness", "not_always_live_bytes") == {"values"}
    assert_reports_equal(grown, store.read_report(path))


def test_deltas_in_a_version_5_store_are_refused(report: Report, tmp_path: pathlib.Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_write, "PACKED_FROM_ROWS", 0)
    path = store.write_report(_growing_report(report), tmp_path / "profile.sqlite")
    con = sqlite3.connect(path)
    drop_tile_regions(con)
    con.commit()
    con.close()
    _edit(path, "PRAGMA user_version = 5", "UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    reseal(path)
    with pytest.raises(ReportFormatError, match="packed columns of liveness do not match its catalogue"):
        store.read_report(path)


def test_a_packed_text_column_shares_each_repeated_value(report: Report, tmp_path: pathlib.Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """variable_tiles names a variable once per tile run: read back, the rows of one variable hold
    one string object (8 bytes a row), ASCII or not, and the values are exactly those written."""
    monkeypatch.setattr(store_write, "PACKED_FROM_ROWS", 0)
    names = ["h0.attn.w", "h0.attn.w", "b\u00e9ta.bias", "h0.attn.w", "b\u00e9ta.bias", ""]
    placed = make_frame("variable_tiles", {"variable": names, "ipu": [0] * 6, "first_tile": [0, 2, 0, 4, 3, 1],
                                           "last_tile": [1, 3, 0, 4, 3, 1], "bytes_per_tile": [8] * 6})
    back = store.read_report(store.write_report(dataclasses.replace(report, variable_tiles=placed),
                                                tmp_path / "profile.sqlite"))
    values = back.variable_tiles["variable"].tolist()
    assert values == names
    assert values[0] is values[1] is values[3] and values[2] is values[4]
    ascii_only = store.read_report(store.write_report(
        dataclasses.replace(report, variable_tiles=placed.iloc[[0, 1, 3, 5]].reset_index(drop=True)),
        tmp_path / "ascii.sqlite")).variable_tiles["variable"].tolist()
    assert ascii_only == ["h0.attn.w"] * 3 + [""] and ascii_only[0] is ascii_only[1] is ascii_only[2]
