"""Mutations of valid store files, shared by the fuzz test and benchmarks/fuzz_reports.py.

Each mutation takes a pristine store file and a random generator and writes a damaged copy:
bit flips, truncations, SQL edits of values and of the catalogue (checksums left stale), the
same SQL edits sealed again (:func:`edited_store`: checksums that match the edit) and value
edits written with fresh checksums (so only value validation can refuse them), and nested
meta with a fresh seal. :func:`classify` reads the result the way a user's command does
(open, show, compare) and names the outcome.
"""

from __future__ import annotations

import dataclasses
import pathlib
import random
import shutil
import sqlite3
import warnings
from collections.abc import Callable
from typing import Any
from unittest import mock

import numpy as np

from profcompare.errors import ProfcompareError
from profcompare.model import TABLES, TILE_REGION_COLUMNS, Report
from profcompare.readers import store, store_read

_ODD_VALUES = (-1, 0, 1, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 3.5, float("nan"), "", "x" * 5000,
               "\x1b[31m", None, b"\x00\xff", "[" * 2000 + "]" * 2000)


def bit_flips(src: pathlib.Path, dst: pathlib.Path, rng: random.Random) -> str:
    data = bytearray(src.read_bytes())
    for _ in range(rng.randint(1, 8)):
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    dst.write_bytes(bytes(data))
    return "bit_flips"


def truncation(src: pathlib.Path, dst: pathlib.Path, rng: random.Random) -> str:
    data = src.read_bytes()
    dst.write_bytes(data[: rng.randrange(len(data))])
    return "truncation"


def _tables_and_columns(con: sqlite3.Connection) -> list[tuple[str, str]]:
    pairs = []
    for table in (*TABLES, "meta", "columns", "dictionary", "checksums"):
        for row in con.execute(f"PRAGMA table_info({table})"):
            pairs.append((table, row[1]))
    return pairs


def sql_edit(src: pathlib.Path, dst: pathlib.Path, rng: random.Random) -> str:
    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    try:
        table, column = rng.choice(_tables_and_columns(con))
        value = rng.choice(_ODD_VALUES)
        action = rng.choice(("update", "delete", "duplicate"))
        if action == "update":
            con.execute(f'UPDATE {table} SET "{column}" = ? WHERE rowid IN (SELECT rowid FROM {table} ORDER BY random() LIMIT 1)'
                        if table != "dictionary" else f'UPDATE {table} SET "{column}" = ? WHERE code = 0', (value,))
        elif action == "delete" and table != "dictionary":
            con.execute(f"DELETE FROM {table} WHERE rowid IN (SELECT rowid FROM {table} ORDER BY random() LIMIT 1)")
        else:
            con.execute(f"INSERT OR IGNORE INTO {table} SELECT * FROM {table} LIMIT 1")
        con.commit()
    except sqlite3.Error:
        pass  # a constraint refused the edit: the file stays valid, which is an outcome too
    finally:
        con.close()
    return "sql_edit"


def _content_checksums(path: pathlib.Path) -> dict[str, tuple[int, int]]:
    """(rows, crc) of meta, dictionary, the catalogue and every table, as the reader computes them."""
    seen: dict[str, tuple[int, int]] = {}

    def record(file: Any, name: str, checksums: Any, rows: int, crc: int) -> None:
        seen[name] = (rows, crc)

    with mock.patch.object(store_read, "_verify", record):
        try:
            store.read_report(path)  # every table is read (and recorded) before meta is decoded
        except ProfcompareError:
            pass
    return seen


def edit_store(path: pathlib.Path, *statements: str, parameters: tuple[Any, ...] = ()) -> None:
    """Run SQL ``statements`` on store ``path`` as they are (no reseal: what a damaged or edited
    file looks like); ``parameters`` go to the statements that have placeholders."""
    con = sqlite3.connect(path)
    try:
        for statement in statements:
            con.execute(statement, parameters if "?" in statement else ())
        con.commit()
    finally:
        con.close()


#: Columns schema version 9 added: (table, column).
VERSION_9_COLUMNS: tuple[tuple[str, str], ...] = (("liveness", "ipu"), ("trace", "run"), ("execution", "bytes_moved"))


def drop_tile_regions(con: sqlite3.Connection) -> None:
    """Remove the region columns of ``tiles`` (schema version 8) and the columns of version 9 from
    an open store, SQL columns, catalogue and packed parts, as a writer before version 8 wrote it (the catalogue resealed, the
    other checksums left stale: :func:`reseal` them)."""
    dropped = [("tiles", column) for column in TILE_REGION_COLUMNS] + list(VERSION_9_COLUMNS)
    for table, column in dropped:
        con.execute(f"DROP VIEW IF EXISTS {table}_text")
        if column not in [row[1] for row in con.execute(f"PRAGMA table_info({table})")]:
            continue
        con.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        con.execute("DELETE FROM columns WHERE table_name = ? AND column_name = ?", (table, column))
        con.execute("DELETE FROM packed WHERE table_name = ? AND column_name = ?", (table, column))
    catalogue = con.execute("SELECT table_name, position, column_name, storage, dtype, categories_dtype, ordered "
                            "FROM columns ORDER BY table_name, position").fetchall()
    con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = 'columns'",
                (len(catalogue), store._catalogue_checksum(catalogue)))


def reseal(path: pathlib.Path) -> None:
    """Rewrite the checksums of store ``path`` to match its content (what a hostile writer does)."""
    sums = _content_checksums(path)
    con = sqlite3.connect(path)
    try:
        for name, (rows, crc) in sums.items():
            if name != "checksums":
                con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = ?", (rows, crc, name))
        others = [r for r in con.execute("SELECT table_name, rows, crc32 FROM checksums") if r[0] != "checksums"]
        con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = 'checksums'", (store._checksums_checksum(others),))
        con.commit()
    finally:
        con.close()


def edited_store(src: str | pathlib.Path, dst: pathlib.Path, *statements: tuple[str, tuple[Any, ...]]) -> pathlib.Path:
    """Copy store ``src`` to ``dst``, run ``statements`` (SQL, parameters) on it, reseal it and
    return ``dst``."""
    shutil.copyfile(src, dst)
    con = sqlite3.connect(dst)
    try:
        for sql, parameters in statements:
            con.execute(sql, parameters)
        con.commit()
    finally:
        con.close()
    reseal(dst)
    return dst


def resealed_sql_edit(src: pathlib.Path, dst: pathlib.Path, rng: random.Random) -> str:
    """One value of a report table, of meta or of the dictionary set to an odd value, sealed again."""
    con = sqlite3.connect(src)
    try:
        pairs = [(t, c) for t, c in _tables_and_columns(con) if t not in ("columns", "checksums")]
    finally:
        con.close()
    table, column = rng.choice(pairs)
    value = rng.choice((*_ODD_VALUES, "null", "0", '"false"', "{}"))
    try:
        edited_store(src, dst, (f'UPDATE {table} SET "{column}" = ? WHERE rowid IN '
                                f"(SELECT rowid FROM {table} ORDER BY random() LIMIT 1)"
                                if table not in ("dictionary",) else
                                f'UPDATE {table} SET "{column}" = ? WHERE code = 0', (value,)))
    except sqlite3.Error:
        shutil.copyfile(src, dst)  # a constraint refused the edit: the file stays valid
    return "resealed_sql_edit"


def resealed_value_edit(src: pathlib.Path, dst: pathlib.Path, rng: random.Random,
                        values: tuple[int, ...] = (-1, -(2**40), 2**53 + 7, 2**62, 10**12, 0)) -> str:
    """Change one integer of a table and write the file with checksums that match (only value
    validation stands between it and the user)."""
    report = store.read_report(src)
    candidates = [(t, c) for t in TABLES for c in getattr(report, t).columns
                  if len(getattr(report, t)) and str(getattr(report, t)[c].dtype) in ("int64", "Int64")]
    table, column = rng.choice(candidates)
    frame = getattr(report, table).copy()
    row = rng.randrange(len(frame))
    frame.loc[frame.index[row], column] = rng.choice(values)
    if table == "tiles" and rng.random() < 0.3:
        frame.loc[frame.index[row], "tile"] = int(frame["tile"].iloc[0])  # duplicate index
    fields = {f.name: getattr(report, f.name) for f in dataclasses.fields(Report)}
    fields[table] = frame
    forged = object.__new__(Report)  # bypass validation: this is what a hostile writer produces
    for name, value in fields.items():
        object.__setattr__(forged, name, value)
    dst.unlink(missing_ok=True)
    store._write_database(forged, dst)
    return "resealed_value_edit"


def nested_meta(src: pathlib.Path, dst: pathlib.Path, rng: random.Random) -> str:
    shutil.copyfile(src, dst)
    depth = rng.choice((50, 2_000, 100_000))
    con = sqlite3.connect(dst)
    con.execute("UPDATE meta SET value = ? WHERE key = ?", ("[" * depth + "]" * depth, rng.choice(("config", "target", "capabilities"))))
    items = con.execute("SELECT key, value FROM meta").fetchall()
    con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = 'meta'", (store._meta_checksum(items),))
    others = [r for r in con.execute("SELECT table_name, rows, crc32 FROM checksums") if r[0] != "checksums"]
    con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = 'checksums'", (store._checksums_checksum(others),))
    con.commit()
    con.close()
    return "nested_meta"


MUTATIONS: tuple[Callable[[pathlib.Path, pathlib.Path, random.Random], str], ...] = (
    bit_flips, truncation, sql_edit, resealed_sql_edit, resealed_value_edit, nested_meta,
)


def classify(path: pathlib.Path) -> str:
    """``rejected`` (a ProfcompareError), ``accepted`` (a report that passes validation again,
    renders and compares), or ``crash: <exception>`` for anything else -- the outcome a user must
    never see."""
    from profcompare.comparison import compare
    from profcompare.render.json_out import JsonRenderer
    from profcompare.render.text import TextRenderer

    try:
        report = store.read_report(path)
    except ProfcompareError:
        return "rejected"
    except Exception as exc:  # noqa: BLE001 - this is what the fuzzer looks for
        return f"crash: {type(exc).__name__}: {exc}"[:200]
    try:
        Report(**{f.name: getattr(report, f.name) for f in dataclasses.fields(Report)})
        summary = report.summary()
        assert np.isfinite(summary[["total_bytes", "always_live_bytes"]].to_numpy()).all()
        TextRenderer().render(report)
        JsonRenderer().render(report)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # compared with itself on purpose
            TextRenderer().render(compare(report, report))
    except Exception as exc:  # noqa: BLE001
        return f"crash: accepted but {type(exc).__name__}: {exc}"[:200]
    return "accepted"
