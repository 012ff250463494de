"""Writing a store: a Report encoded column by column (:func:`_encode_column`), small tables
as SQL rows, large ones packed, one transaction in a temporary file renamed into place
(:func:`write_report`), or only the changed tables rewritten in a copy (:func:`write_report_kept`)."""

from __future__ import annotations

import json
import os
import pathlib
import secrets
import shutil
import sqlite3
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from profcompare._version import __version__
from profcompare.base.report_values import check_report_values
from profcompare.errors import (
    OutputExistsError,
    ProfcompareError,
)
from profcompare.model import (
    TABLES,
    Report,
    validate_frame,
)
from profcompare.readers.store_format import (
    _BOOLEAN,
    _DICTIONARY,
    _INTEGER,
    _NULLABLE_INTEGER,
    _PACK_LEVEL,
    _TEXT,
    APPLICATION_ID,
    PACKED_FROM_ROWS,
    SCHEMA_VERSION,
    StoredColumn,
    _catalogue_checksum,
    _Checksum,
    _checksums_checksum,
    _column_plan,
    _deltas,
    _dictionary_checksum,
    _meta_checksum,
    _meta_items,
    _narrowest,
    _quote,
    _sql_type,
    _text_bytes,
)

# --------------------------------------------------------------------------------------------
# writing


@dataclass(frozen=True)
class _Encoded:
    """One column encoded for storage: the values to insert (:meth:`sql_values`) or pack
    (``parts``), its canonical checksum bytes and its dictionary levels (None if not encoded)."""

    spec: StoredColumn
    parts: Mapping[str, np.ndarray | bytes]  # "values" (int64 / uint8 / codes), "mask", "lengths", "text"
    canonical: tuple[bytes | np.ndarray, ...]  # the checksum's bytes, piece by piece
    levels: list[str] | None
    texts: list[Any] | None = None  # a text column's values (str or None)

    def sql_values(self) -> list[Any]:
        """The column as SQL values: None for a missing value (NULL)."""
        if self.texts is not None:
            return self.texts
        values = self.parts["values"]
        assert isinstance(values, np.ndarray)
        listed: list[Any] = values.astype(bool).tolist() if self.spec.storage == _BOOLEAN else values.tolist()
        mask = self.parts.get("mask")
        if isinstance(mask, np.ndarray) and mask.any():
            listed = [None if missing else v for v, missing in zip(listed, mask.tolist())]
        elif self.spec.storage == _DICTIONARY and len(values) and values.min() < 0:
            listed = [None if c < 0 else c for c in listed]
        return listed


def _encode_column(spec: StoredColumn, series: pd.Series) -> _Encoded:
    """The column encoded as ``spec`` says (see :class:`_Encoded`)."""
    if spec.storage == _INTEGER:
        array = series.to_numpy(dtype=np.int64)
        return _Encoded(spec, {"values": array}, (array,), None)
    if spec.storage == _BOOLEAN:
        flags = series.to_numpy(dtype=bool).astype(np.uint8)
        return _Encoded(spec, {"values": flags}, (flags,), None)
    if spec.storage == _NULLABLE_INTEGER:
        mask = series.isna().to_numpy().astype(np.uint8)
        filled = series.fillna(0).to_numpy(dtype=np.int64)
        return _Encoded(spec, {"values": filled, "mask": mask}, (filled, mask), None)
    if spec.storage == _TEXT:
        values = series.to_numpy(dtype=object, na_value=None).tolist()
        return _Encoded(spec, {}, (_text_bytes(values),), None, texts=values)
    # dictionary
    if spec.dtype == "category":
        codes = series.cat.codes.to_numpy().astype(np.int64)
        levels = [str(v) for v in series.cat.categories]
    else:
        codes, uniques = _factorize_in_chunks(series.to_numpy(dtype=object))
        levels = [str(v) for v in uniques]
    return _Encoded(spec, {"values": codes}, (codes,), levels)


#: rows of a text column factorized at a time (:func:`_factorize_in_chunks`)
_FACTORIZE_ROWS = 1 << 20


def _factorize_in_chunks(values: np.ndarray) -> tuple[np.ndarray, list[Any]]:
    """``pd.factorize(values)``'s codes (int64, -1 for a missing value) and uniques, in order of
    first appearance, found a chunk of rows at a time: the hash table of a chunk, not of a
    column of tens of millions of rows (a trace's names), is held at once."""
    if len(values) <= _FACTORIZE_ROWS:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        return codes.astype(np.int64), list(uniques)
    out = np.empty(len(values), dtype=np.int64)
    code_of: dict[Any, int] = {}
    order: list[Any] = []
    for start in range(0, len(values), _FACTORIZE_ROWS):
        chunk_codes, chunk_uniques = pd.factorize(values[start:start + _FACTORIZE_ROWS], use_na_sentinel=True)
        # each of the chunk's values in the column's codes; values new to the column get the
        # next codes in the order the chunk first shows them, which is the column's order
        mapped = np.empty(len(chunk_uniques) + 1, dtype=np.int64)
        mapped[-1] = -1  # a missing value (code -1) stays missing
        for i, value in enumerate(chunk_uniques):
            code = code_of.get(value)
            if code is None:
                code = code_of[value] = len(order)
                order.append(value)
            mapped[i] = code
        out[start:start + len(chunk_codes)] = mapped[chunk_codes]
    return out, order




def _packed_parts(encoded: _Encoded) -> dict[str, bytes]:
    """The raw bytes of each part of a packed column: fixed-width arrays as they are (an integer
    column's values as ``deltas`` when those are narrower); a text column as the UTF-8 byte length
    of every value (-1 for None) and the values' bytes end to end."""
    if encoded.texts is None:
        parts: dict[str, bytes] = {}
        for name, part in encoded.parts.items():
            if not isinstance(part, np.ndarray):
                parts[name] = part
                continue
            narrow = _narrowest(part)
            if name == "values" and encoded.spec.storage in (_INTEGER, _NULLABLE_INTEGER) and narrow.itemsize > 1:
                values = part.astype(np.int64, copy=False)
                deltas = _narrowest(_deltas(values))
                if deltas.itemsize < narrow.itemsize:
                    parts["start"] = np.array([values[0]], dtype="<i8").tobytes()
                    parts["deltas"] = deltas.tobytes()
                    continue
            parts[name] = narrow.tobytes()
        return parts
    return _packed_text(encoded.texts)


def _packed_text(texts: Sequence[Any]) -> dict[str, bytes]:
    """A text column's packed parts: the UTF-8 byte length of every value (-1 for None) and the
    values' bytes end to end. Encoded as one string when every value is a str: then, when that
    string's bytes are as many as its characters (ASCII, as program and variable names are), each
    value's byte length is its length in characters; otherwise value by value (the same bytes:
    UTF-8 encodes a string as its characters' encodings end to end)."""
    missing = [i for i, v in enumerate(texts) if v is None]
    filled = list(texts)
    for i in missing:
        filled[i] = ""
    try:
        joined = "".join(filled)
    except TypeError:  # a value that is not a str: encoded as its str()
        joined = None
    if joined is not None:
        text = joined.encode("utf-8", "surrogatepass")
        if len(text) == len(joined):
            lengths = np.fromiter(map(len, filled), dtype=np.int64, count=len(filled))
            lengths[missing] = -1
            return {"lengths": _narrowest(lengths).tobytes(), "text": text}
    blobs = [b"" if v is None else str(v).encode("utf-8", "surrogatepass") for v in texts]
    lengths = np.fromiter((-1 if v is None else len(b) for v, b in zip(texts, blobs)), dtype=np.int64,
                          count=len(blobs))
    return {"lengths": _narrowest(lengths).tobytes(), "text": b"".join(blobs)}


_FIXED_DDL = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE columns (
    table_name TEXT NOT NULL, position INTEGER NOT NULL, column_name TEXT NOT NULL,
    storage TEXT NOT NULL, dtype TEXT NOT NULL, categories_dtype TEXT, ordered INTEGER NOT NULL,
    PRIMARY KEY (table_name, position));
CREATE TABLE dictionary (
    table_name TEXT NOT NULL, column_name TEXT NOT NULL, code INTEGER NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (table_name, column_name, code)) WITHOUT ROWID;
CREATE TABLE checksums (table_name TEXT PRIMARY KEY, rows INTEGER NOT NULL, crc32 INTEGER NOT NULL);
CREATE TABLE packed (
    table_name TEXT NOT NULL, column_name TEXT NOT NULL, part TEXT NOT NULL, raw_bytes INTEGER NOT NULL,
    data BLOB NOT NULL, PRIMARY KEY (table_name, column_name, part));
"""

#: zlib level of packed columns: the fastest (the arrays are small integers and codes, which
#: compress well at any level)

def write_report(report: Report, path: str | os.PathLike[str], *, overwrite: bool = False) -> pathlib.Path:
    """Write ``report`` to the SQLite store file ``path`` atomically and return the path.

    The file is built in a temporary file in the same directory (one transaction, flushed
    with fsync) and then renamed to ``path``. Raises :class:`OutputExistsError` if ``path``
    exists and ``overwrite`` is false; the parent directory must exist.
    """
    return write_report_kept(report, path, overwrite=overwrite).path


@dataclass(frozen=True)
class _TableRows:
    """What one report table put in a store: its catalogue rows, dictionary rows and checksum."""

    catalogue: tuple[tuple[str, int, str, str, str, str | None, int], ...]
    dictionary: tuple[tuple[str, str, int, str], ...]
    checksum: tuple[str, int, int]


@dataclass(frozen=True)
class WrittenStore:
    """A store file as :func:`write_report_kept` wrote it: the Report, the file's identity right
    after the write and what each table put in it, so that writing the same report again with
    new frames in some tables (the simulator's execution profile after its graph profile)
    rewrites only those tables in a copy of the file (:func:`write_report_kept`'s ``previous``)."""

    path: pathlib.Path  # as written (the rename's target)
    identity: tuple[int, int, int]  # inode, size, modification time in ns
    report: Report
    tables: Mapping[str, _TableRows]


def file_identity(path: pathlib.Path) -> tuple[int, int, int] | None:
    """A file's inode, size and modification time in ns (None when it cannot be read): the same
    identity means the file is as it was when the identity was taken."""
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def write_report_kept(report: Report, path: str | os.PathLike[str], *, overwrite: bool = False,
                      previous: WrittenStore | None = None, checked: bool = False) -> WrittenStore:
    """:func:`write_report`, returning what was written (:class:`WrittenStore`).

    With ``previous`` (what an earlier call wrote to the same ``path``, which must still be that
    file: same inode, size and modification time), the tables whose frame is the very object
    ``previous.report`` held are taken as they are in that file (frames are not modified in place
    once in a Report): the file is copied and only the other tables, ``meta``, the dictionary,
    the catalogue and the checksums are written again; the same content as a whole write, read
    back alike. Otherwise (another path, the file changed, or nothing to keep) the whole report
    is written.

    ``checked`` is the caller's word that ``report`` came from :class:`Report`'s constructor (which
    checks every table and value as this writer does) and that none of its frames changed since:
    the simulator's engine writing the report it has just built. Otherwise the report is
    checked again here.
    """
    # The writer trusts no one by default: a Report assembled around its constructor is checked
    # again here, so a store file never holds what the reader would refuse.
    if not isinstance(report, Report):
        raise ProfcompareError(f"cannot write {type(report).__name__} as a report")
    target = pathlib.Path(path)
    kept: WrittenStore | None = None
    if previous is not None and previous.path == target and file_identity(target) == previous.identity:
        kept = previous
    if not checked:
        for table in TABLES:
            validate_frame(table, getattr(report, table))
        check_report_values(report)
    if os.path.lexists(target) and not overwrite:
        raise OutputExistsError(f"{target} already exists (pass overwrite/--force to replace it)")
    directory = target.parent if str(target.parent) else pathlib.Path(".")
    if not directory.is_dir():
        raise ProfcompareError(f"cannot write {target}: directory {directory} does not exist")
    try:
        tmp = _create_temporary(directory, target.name)
    except OSError as exc:
        raise ProfcompareError(f"cannot write {target}: {exc.strerror or exc}") from None
    try:
        if kept is None:
            tables = _write_database(report, tmp)
        else:
            shutil.copyfile(target, tmp)
            tables = _rewrite_database(report, tmp, kept)
        with open(tmp, "rb") as handle:
            os.fsync(handle.fileno())
        if overwrite:
            os.replace(tmp, target)
        else:
            _rename_no_clobber(tmp, target)
        _fsync_directory(directory)
    except (OSError, sqlite3.Error) as exc:
        message = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ProfcompareError(f"cannot write {target}: {message}") from exc
    finally:
        if tmp.exists():
            tmp.unlink()
    identity = file_identity(target)
    return WrittenStore(target, identity if identity is not None else (-1, -1, -1), report, tables)


def _create_temporary(directory: pathlib.Path, name: str) -> pathlib.Path:
    # os.open with 0o666 (not mkstemp's 0o600) so the final file gets the usual permissions.
    while True:
        tmp = directory / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp


def _rename_no_clobber(tmp: pathlib.Path, target: pathlib.Path) -> None:
    # A hard link fails atomically if the target appeared meanwhile; fall back to a checked
    # rename on file systems without hard links.
    try:
        os.link(tmp, target)
    except FileExistsError:
        raise OutputExistsError(f"{target} already exists (pass overwrite/--force to replace it)") from None
    except OSError:
        if target.exists():
            raise OutputExistsError(f"{target} already exists (pass overwrite/--force to replace it)") from None
        os.replace(tmp, target)
    else:
        tmp.unlink()


def _fsync_directory(directory: pathlib.Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _open_for_writing(path: pathlib.Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, isolation_level=None)
    # The temporary file is discarded on any failure, so no rollback journal is needed;
    # durability comes from the fsync before the rename.
    con.execute("PRAGMA journal_mode = OFF")
    con.execute("PRAGMA synchronous = OFF")
    return con


def _write_database(report: Report, path: pathlib.Path) -> dict[str, _TableRows]:
    con = _open_for_writing(path)
    try:
        con.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        con.execute("BEGIN")
        for statement in _FIXED_DDL.split(";"):
            if statement.strip():
                con.execute(statement)
        tables = {table: _write_table(con, table, getattr(report, table)) for table in TABLES}
        _write_catalogues(con, report, tables)
        con.execute("COMMIT")
    finally:
        con.close()
    return tables


def _rewrite_database(report: Report, path: pathlib.Path, previous: WrittenStore) -> dict[str, _TableRows]:
    """In ``path``, a copy of ``previous``'s file: the tables whose frame changed written again
    (their SQL table, packed columns, dictionary and catalogue rows, text view), then ``meta``,
    ``dictionary``'s and ``columns``' shared rows and the checksums as :func:`_write_database`
    writes them."""
    con = _open_for_writing(path)
    try:
        con.execute("BEGIN")
        tables = dict(previous.tables)
        rewritten: set[str] = set()
        for table in TABLES:
            frame = getattr(report, table)
            if frame is getattr(previous.report, table):
                continue
            rewritten.add(table)
            con.execute(f"DROP VIEW {table}_text")
            con.execute(f"DROP TABLE {table}")
            for shared in ("packed", "dictionary", "columns"):
                con.execute(f"DELETE FROM {shared} WHERE table_name = ?", (table,))
            tables[table] = _write_table(con, table, frame)
        for shared in ("meta", "checksums"):
            con.execute(f"DELETE FROM {shared}")
        _write_catalogues(con, report, tables, rewritten=rewritten)
        con.execute("COMMIT")
    finally:
        con.close()
    return tables


def _write_table(con: sqlite3.Connection, table: str, frame: pd.DataFrame) -> _TableRows:
    """Create ``table`` and its text view and write ``frame``'s rows (or packed columns); its
    dictionary and catalogue rows are returned for :func:`_write_catalogues`."""
    plan = _column_plan(table, frame)
    columns_sql = ", ".join(f"{_quote(s.name)} {_sql_type(s)}" for s in plan)
    con.execute(f"CREATE TABLE {table} ({columns_sql})")
    catalogue = tuple((s.table, s.position, s.name, s.storage, s.dtype, s.categories_dtype, int(s.ordered)) for s in plan)
    check = _Checksum(table, len(frame))
    packed = len(frame) > PACKED_FROM_ROWS
    values: list[list[Any]] = []
    dictionary_rows: list[tuple[str, str, int, str]] = []
    for spec in plan:
        encoded = _encode_column(spec, frame[spec.name])
        check.add(spec.name.encode() + b"\x00", *encoded.canonical)
        if packed:
            con.executemany("INSERT INTO packed VALUES (?, ?, ?, ?, ?)", [
                (table, spec.name, part, len(raw), zlib.compress(raw, _PACK_LEVEL))
                for part, raw in _packed_parts(encoded).items()])
        else:
            values.append(encoded.sql_values())
        if encoded.levels is not None:
            dictionary_rows.extend((table, spec.name, code, value) for code, value in enumerate(encoded.levels))
        del encoded
    if len(frame) and not packed:
        placeholders = ", ".join("?" * len(plan))
        con.executemany(f"INSERT INTO {table} VALUES ({placeholders})", zip(*values))
    _create_text_view(con, table, plan)
    return _TableRows(catalogue, tuple(dictionary_rows), (table, len(frame), check.value))


def _write_catalogues(con: sqlite3.Connection, report: Report, tables: Mapping[str, _TableRows], *,
                      rewritten: set[str] | None = None) -> None:
    """The rows every table shares: ``dictionary`` and ``columns`` (with ``rewritten``, only the
    rows of those tables: the kept tables' rows are in the file already), ``meta`` and
    ``checksums``, each with its checksum (over every table's rows)."""
    dictionary_rows = [row for table in TABLES for row in tables[table].dictionary]
    catalogue = [row for table in TABLES for row in tables[table].catalogue]
    con.executemany("INSERT INTO dictionary VALUES (?, ?, ?, ?)",
                    [row for row in dictionary_rows if rewritten is None or row[0] in rewritten])
    con.executemany("INSERT INTO columns VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [row for row in catalogue if rewritten is None or row[0] in rewritten])
    checksums: list[tuple[str, int, int]] = [tables[table].checksum for table in TABLES]
    checksums.append(("dictionary", len(dictionary_rows), _dictionary_checksum(dictionary_rows)))
    meta_items = [("schema_version", json.dumps(SCHEMA_VERSION)), ("writer", json.dumps(_writer()))]
    meta_items += _meta_items(report.meta)
    con.executemany("INSERT INTO meta VALUES (?, ?)", meta_items)
    checksums.append(("meta", len(meta_items), _meta_checksum(meta_items)))
    checksums.append(("columns", len(catalogue), _catalogue_checksum(catalogue)))
    checksums.append(("checksums", len(checksums), _checksums_checksum(checksums)))
    con.executemany("INSERT INTO checksums VALUES (?, ?, ?)", checksums)


def _writer() -> str:
    return f"profcompare {__version__}"

def _create_text_view(con: sqlite3.Connection, table: str, plan: Sequence[StoredColumn]) -> None:
    selects = []
    joins = []
    for spec in plan:
        if spec.storage == _DICTIONARY:
            alias = f"d{spec.position}"
            joins.append(
                f"LEFT JOIN dictionary AS {alias} ON {alias}.table_name = '{table}' "
                f"AND {alias}.column_name = '{spec.name}' AND {alias}.code = t.{_quote(spec.name)}"
            )
            selects.append(f"{alias}.value AS {_quote(spec.name)}")
        else:
            selects.append(f"t.{_quote(spec.name)}")
    con.execute(f"CREATE VIEW {table}_text AS SELECT {', '.join(selects)} FROM {table} AS t {' '.join(joins)}")


