"""Reading a store: the header, the checksummed catalogues (meta, dictionary, columns), then
each table's columns selected or unpacked, checked against its checksum and decoded into a frame."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import sqlite3
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from profcompare.errors import (
    ProfcompareError,
    ReportFormatError,
    UnsupportedReportVersion,
)
from profcompare.base.tables import COMPACT_TEXT_COLUMNS
from profcompare.model import (
    CATEGORY_GROUPS,
    COLUMN_DEFAULTS,
    SCHEMAS,
    TABLES,
    Report,
    ReportMeta,
    Target,
    empty_frame,
)
from profcompare.perf import collector
from profcompare.readers.sqlite_uri import read_only_uri
from profcompare.readers.store_format import (
    _BOOLEAN,
    _DICTIONARY,
    _HEADER_SIZE,
    _INTEGER,
    _MAX_CHECKSUM_ROWS,
    _MAX_ZLIB_RATIO,
    _META_FIELDS,
    _NULLABLE_INTEGER,
    _OPTIONAL_META_FIELDS,
    _PACKED_WIDTHS,
    _STORAGES,
    _TEXT,
    APPLICATION_ID,
    COLUMNS_SINCE,
    DELTAS_SINCE_VERSION,
    PACKED_SINCE_VERSION,
    SCHEMA_VERSION,
    SEALED_SINCE_VERSION,
    TABLES_SINCE,
    StoredColumn,
    _catalogue_checksum,
    _Checksum,
    _checksums_checksum,
    _dictionary_checksum,
    _from_deltas,
    _meta_checksum,
    _quote,
    _text_bytes,
    header_application_id,
    is_sqlite_header,
    read_header,
)

# --------------------------------------------------------------------------------------------
# reading


def _connect_read_only(path: pathlib.Path) -> sqlite3.Connection:
    uri = read_only_uri(path)
    return sqlite3.connect(uri, uri=True)


def check_file_header(file: pathlib.Path) -> None:
    """Raise :class:`ReportFormatError` naming ``file`` unless it starts with a store's header
    and is as long as the header says (``_check_header``)."""
    try:
        header = read_header(file)
        size = file.stat().st_size
    except OSError as exc:
        raise ReportFormatError(f"{file}: cannot read: {exc.strerror or exc}") from None
    _check_header(file, header, size)


def checked_file(path: str | os.PathLike[str]) -> pathlib.Path:
    """``path`` as a Path once it names an existing file with a store's header; otherwise
    :class:`ReportFormatError` naming it (missing, not a file, not one of our stores)."""
    file = pathlib.Path(path)
    if not file.exists():
        raise ReportFormatError(f"{file}: no such file")
    if not file.is_file():
        raise ReportFormatError(f"{file}: not a file")
    check_file_header(file)
    return file


def read_report(path: str | os.PathLike[str]) -> Report:
    """Read a store file written by :func:`write_report` and return the Report.

    ``meta.source`` is ``path`` and ``meta.format`` is ``"store"``. Raises
    :class:`ReportFormatError` naming the file when it is missing, not one of our files,
    truncated or corrupt, and :class:`UnsupportedReportVersion` when it was written by a newer
    schema version.
    """
    file = checked_file(path)
    # materialising a million rows allocates millions of short-lived objects; the cyclic
    # collector would rescan them repeatedly for nothing (none of them form cycles)
    with collector.paused():
        return _read_checked(file, lambda con: _read_database(con, file))


def read_meta(path: str | os.PathLike[str]) -> ReportMeta:
    """The ``meta`` of a store file, read and verified as :func:`read_report` reads it, without
    reading its tables (what a caller needs to tell, say, whether the program fits). Raises as
    :func:`read_report` does for a file that is not a complete store."""
    file = pathlib.Path(path)
    check_file_header(file)

    def meta_of(con: sqlite3.Connection) -> ReportMeta:
        _, _, meta_values, _ = _read_verified_meta(con, file)
        return _decode_meta(file, meta_values)

    return _read_checked(file, meta_of)



_T = TypeVar("_T")

def _read_checked(file: pathlib.Path, read: Callable[[sqlite3.Connection], _T], *, at: pathlib.Path | None = None) -> _T:
    """``read(connection)`` on a read-only connection to the store ``file`` (its header already
    checked; ``at``: where the file is now, when it moved since it was opened), with every
    failure of a file that is not a valid report as one ReportFormatError."""

    def connected() -> _T:
        con = _connect_read_only(at or file)
        try:
            return read(con)
        finally:
            con.close()

    return as_store_errors(file, connected)


def as_store_errors(file: pathlib.Path, action: Callable[[], _T]) -> _T:
    """``action()``, with every failure of a file that is not a valid report (a corrupt
    database, an invalid value, a ReportValidationError) raised as one ReportFormatError naming
    ``file``."""
    try:
        return action()
    except ProfcompareError as exc:
        if isinstance(exc, ReportFormatError):
            raise
        raise ReportFormatError(f"{file}: invalid report content: {exc}") from None
    except RecursionError:
        raise ReportFormatError(f"{file}: corrupt report (nesting too deep)") from None
    except (sqlite3.Error, ValueError, TypeError, KeyError, IndexError, OverflowError, UnicodeError) as exc:
        raise ReportFormatError(f"{file}: corrupt report ({type(exc).__name__}: {exc})") from None


def _check_header(file: pathlib.Path, header: bytes, size: int) -> None:
    if size == 0:
        raise ReportFormatError(f"{file}: empty file")
    if not is_sqlite_header(header):
        raise ReportFormatError(f"{file}: not a profcompare report (not an SQLite database)")
    if len(header) < _HEADER_SIZE:
        raise ReportFormatError(f"{file}: truncated ({size} bytes, shorter than an SQLite header)")
    app_id = header_application_id(header)
    if app_id != APPLICATION_ID:
        raise ReportFormatError(
            f"{file}: an SQLite database but not a profcompare report (application_id {app_id}, expected {APPLICATION_ID})"
        )
    version = int.from_bytes(header[60:64], "big", signed=True)
    if version > SCHEMA_VERSION:
        raise UnsupportedReportVersion(
            f"{file}: written by report schema version {version}; this profcompare reads up to version {SCHEMA_VERSION} (upgrade profcompare)"
        )
    if version < 1:
        raise ReportFormatError(f"{file}: corrupt report (schema version {version} in header)")
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    if page_size < 512 or page_size & (page_size - 1):
        raise ReportFormatError(f"{file}: corrupt report (invalid page size {page_size} in header)")
    if pages and size < pages * page_size:
        raise ReportFormatError(f"{file}: truncated ({size} bytes, the header says {pages * page_size})")


def _read_verified_meta(
    con: sqlite3.Connection, file: pathlib.Path
) -> tuple[set[str], dict[str, tuple[int, int]], dict[str, str], int]:
    """(table names, checksums, meta key -> JSON text, schema version) of a store, the tables
    checked complete and meta verified against its checksum (before any value is parsed: an
    edited meta never reaches the JSON parser)."""
    tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    header_version = con.execute("PRAGMA user_version").fetchone()[0]
    expected = [t for t in TABLES if TABLES_SINCE.get(t, 1) <= header_version]
    if header_version >= PACKED_SINCE_VERSION:
        expected.append("packed")
    missing = [t for t in ("meta", "columns", "dictionary", "checksums", *expected) if t not in tables]
    if missing:
        raise ReportFormatError(f"{file}: not a complete profcompare report (missing table(s) {', '.join(missing)})")
    checksums = _read_checksums(con, file, sealed=header_version >= SEALED_SINCE_VERSION)
    _verify_count(con, file, "meta", checksums)
    meta_items = con.execute("SELECT key, value FROM meta").fetchall()
    _verify(file, "meta", checksums, len(meta_items), _meta_checksum(meta_items))
    meta_values = dict(meta_items)
    version = _json_value(file, "schema_version", meta_values.get("schema_version", "null"))
    if not isinstance(version, int) or isinstance(version, bool):
        raise ReportFormatError(f"{file}: corrupt report (no schema_version in meta)")
    if version > SCHEMA_VERSION:
        raise UnsupportedReportVersion(
            f"{file}: written by report schema version {version}; this profcompare reads up to version {SCHEMA_VERSION} (upgrade profcompare)"
        )
    if version != header_version:
        raise ReportFormatError(f"{file}: corrupt report (schema version {version} in meta, {header_version} in header)")
    return tables, checksums, meta_values, version


@dataclass(frozen=True)
class OpenedStore:
    """What opening a store reads and verifies before any table: its version, the checksums, the
    dictionary levels, the column catalogue and which tables are packed (every table's columns
    checked against the catalogue), and its meta (JSON text per key, verified)."""

    version: int
    checksums: Mapping[str, tuple[int, int]]
    levels: Mapping[tuple[str, str], list[str]]
    catalogue: Mapping[str, list[StoredColumn]]
    packed: frozenset[str]
    meta_values: Mapping[str, str]

    def stored(self, table: str) -> bool:
        """Whether the store holds ``table`` (an older store lacks tables added since)."""
        return TABLES_SINCE.get(table, 1) <= self.version

    def rows(self, table: str) -> int:
        """The recorded row count of ``table`` (0 for a table the store's version lacks)."""
        return self.checksums[table][0] if self.stored(table) else 0


def _open_database(con: sqlite3.Connection, file: pathlib.Path,
                   visit: Callable[[OpenedStore, str], None] | None = None) -> OpenedStore:
    """The :class:`OpenedStore` of ``con``: everything but the tables' rows read and verified;
    ``visit(opened, table)`` is called for each table the store holds as soon as its columns are
    checked (the eager reader reads it then: a file wrong in several places is reported for
    the first, in table order)."""
    tables, checksums, meta_values, version = _read_verified_meta(con, file)

    _verify_count(con, file, "dictionary", checksums)
    dictionary_rows = con.execute(
        "SELECT table_name, column_name, code, value FROM dictionary ORDER BY table_name, column_name, code"
    ).fetchall()
    _verify(file, "dictionary", checksums, len(dictionary_rows), _dictionary_checksum(dictionary_rows))
    levels: dict[tuple[str, str], list[str]] = {}
    for table, column, code, value in dictionary_rows:
        bucket = levels.setdefault((table, column), [])
        if code != len(bucket):
            raise ReportFormatError(f"{file}: corrupt report (dictionary of {table}.{column} has a gap at code {code})")
        bucket.append(value)

    catalogue: dict[str, list[StoredColumn]] = {}
    if version >= SEALED_SINCE_VERSION:
        _verify_count(con, file, "columns", checksums)
    catalogue_rows = con.execute(
        "SELECT table_name, position, column_name, storage, dtype, categories_dtype, ordered FROM columns ORDER BY table_name, position"
    ).fetchall()
    if version >= SEALED_SINCE_VERSION:
        _verify(file, "columns", checksums, len(catalogue_rows), _catalogue_checksum(catalogue_rows))
    for row in catalogue_rows:
        spec = StoredColumn(row[0], int(row[1]), row[2], row[3], row[4], row[5], bool(row[6]))
        if spec.storage not in _STORAGES:
            raise ReportFormatError(f"{file}: corrupt report (unknown storage {spec.storage!r} for {spec.table}.{spec.name})")
        catalogue.setdefault(spec.table, []).append(spec)

    packed_tables: set[str] = set()
    if version >= PACKED_SINCE_VERSION:
        packed_tables = {row[0] for row in con.execute("SELECT DISTINCT table_name FROM packed")}
        unknown = packed_tables - set(TABLES)
        if unknown:
            raise ReportFormatError(f"{file}: corrupt report (packed columns of unknown table(s) {', '.join(sorted(map(str, unknown)))})")
    opened = OpenedStore(version, checksums, levels, catalogue, frozenset(packed_tables), meta_values)
    for table in TABLES:
        if TABLES_SINCE.get(table, 1) > version:
            if table in tables or table in catalogue or table in checksums:
                raise ReportFormatError(f"{file}: corrupt report (table {table} in a version {version} store)")
            continue  # an older store: the table reads as empty
        _check_plan(file, con, table, catalogue.get(table, []), version)
        if table not in checksums:
            raise ReportFormatError(f"{file}: corrupt report (no checksum for table {table})")
        if visit is not None:
            visit(opened, table)
    return opened


def _read_table(con: sqlite3.Connection, file: pathlib.Path, opened: OpenedStore, table: str) -> pd.DataFrame:
    """The frame of ``table``, read, checked against its checksum and decoded (not validated:
    the Report does that); an empty frame for a table the store's version lacks."""
    if not opened.stored(table):
        return empty_frame(table)
    plan = opened.catalogue.get(table, [])
    if table in opened.packed:
        columns = _unpack_table(con, file, table, plan, opened.checksums, opened.version)
        rows = opened.checksums[table][0]
    else:
        rows = _verify_count(con, file, table, opened.checksums)
        columns = _select_table(con, file, table, plan, rows)
    return _with_later_columns(table, _decode_table(file, table, plan, rows, columns, opened.levels, opened.checksums))


def _read_database(con: sqlite3.Connection, file: pathlib.Path) -> Report:
    frames: dict[str, pd.DataFrame] = {}

    def read(opened: OpenedStore, table: str) -> None:
        frames[table] = _read_table(con, file, opened, table)

    opened = _open_database(con, file, read)
    meta = _decode_meta(file, opened.meta_values)
    return Report.build(meta, **frames)


def _read_checksums(con: sqlite3.Connection, file: pathlib.Path, *, sealed: bool) -> dict[str, tuple[int, int]]:
    """The checksums table, bounded in size and (from SEALED_SINCE_VERSION) verified against its own row."""
    rows = con.execute(f"SELECT table_name, rows, crc32 FROM checksums LIMIT {_MAX_CHECKSUM_ROWS + 1}").fetchall()
    if len(rows) > _MAX_CHECKSUM_ROWS:
        raise ReportFormatError(f"{file}: corrupt report (more than {_MAX_CHECKSUM_ROWS} rows in checksums)")
    checksums: dict[str, tuple[int, int]] = {}
    for name, count, crc in rows:
        if not isinstance(name, str) or not isinstance(count, int) or not isinstance(crc, int):
            raise ReportFormatError(f"{file}: corrupt report (malformed row in checksums)")
        checksums[name] = (count, crc)
    if sealed:
        others = [(n, c, k) for n, (c, k) in checksums.items() if n != "checksums"]
        _verify(file, "checksums", checksums, len(others), _checksums_checksum(others))
    return checksums


def _verify_count(con: sqlite3.Connection, file: pathlib.Path, name: str, checksums: Mapping[str, tuple[int, int]]) -> int:
    """The recorded row count of table ``name``, checked against the table's real count.

    Nothing is sized from a recorded count before this check, so an edited count can never
    make the reader allocate for rows that are not there.
    """
    if name not in checksums:
        raise ReportFormatError(f"{file}: corrupt report (no checksum for {name})")
    recorded = checksums[name][0]
    actual = con.execute(f"SELECT COUNT(*) FROM {_quote(name)}").fetchone()[0]
    if recorded != actual:
        raise ReportFormatError(f"{file}: corrupt report ({name} has {actual} rows, expected {recorded})")
    return int(recorded)


def _json_value(file: pathlib.Path, key: str, text: str) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        raise ReportFormatError(f"{file}: corrupt report (meta.{key} is nested too deeply)") from None
    except ValueError:
        raise ReportFormatError(f"{file}: corrupt report (meta.{key} is not valid JSON)") from None


def _verify(file: pathlib.Path, name: str, checksums: Mapping[str, tuple[int, int]], rows: int, crc: int) -> None:
    if name not in checksums:
        raise ReportFormatError(f"{file}: corrupt report (no checksum for {name})")
    want_rows, want_crc = checksums[name]
    if want_rows != rows:
        raise ReportFormatError(f"{file}: corrupt report ({name} has {rows} rows, expected {want_rows})")
    if want_crc != crc:
        raise ReportFormatError(f"{file}: corrupt report (checksum mismatch in {name})")


def _with_later_columns(table: str, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with the columns its (older) store did not have, in schema order: <NA> for
    nullable integers, the model's default for the attribution columns (unattributed)."""
    missing = [c for c in SCHEMAS[table] if c.name not in frame.columns]
    if not missing:
        return frame
    for column in missing:
        if (table, column.name) in COLUMN_DEFAULTS:
            values = pd.Series([COLUMN_DEFAULTS[(table, column.name)]] * len(frame), dtype=object)
            frame[column.name] = values.astype(column.dtype) if column.dtype in ("category", "int64") else values
        else:
            frame[column.name] = pd.array([pd.NA] * len(frame), dtype="Int64")
    fixed = [c.name for c in SCHEMAS[table]]
    return frame[fixed + [c for c in frame.columns if c not in fixed]]


def _check_plan(file: pathlib.Path, con: sqlite3.Connection, table: str, plan: Sequence[StoredColumn],
                version: int = SCHEMA_VERSION) -> None:
    actual = [row[1] for row in con.execute(f"PRAGMA table_info({table})")]
    if actual != [s.name for s in plan]:
        raise ReportFormatError(f"{file}: corrupt report (columns of {table} do not match its catalogue)")
    fixed = [c.name for c in SCHEMAS[table] if COLUMNS_SINCE.get((table, c.name), 1) <= version]
    names = [s.name for s in plan]
    extra = names[len(fixed) :]
    if names[: len(fixed)] != fixed or (extra and (table != "tiles" or any(n not in CATEGORY_GROUPS for n in extra))):
        raise ReportFormatError(f"{file}: table {table} has columns {names}, expected {fixed}")


_FIELD_DTYPES = {_INTEGER: np.int64, _BOOLEAN: np.int64, _NULLABLE_INTEGER: np.int64, _DICTIONARY: np.int64, _TEXT: object}


#: a column as read, before decoding: (values, null mask or None) per column position
_RawColumns = dict[int, tuple[np.ndarray, "np.ndarray | None"]]


def _select_table(con: sqlite3.Connection, file: pathlib.Path, table: str, plan: Sequence[StoredColumn],
                  rows: int) -> _RawColumns:
    """The columns of a table stored as SQL rows."""
    selects: list[str] = []
    fields: list[tuple[str, Any]] = []
    for spec in plan:
        quoted = _quote(spec.name)
        if spec.storage == _NULLABLE_INTEGER:
            selects += [f"ifnull({quoted}, 0)", f"{quoted} IS NULL"]
            fields += [(f"v{spec.position}", np.int64), (f"m{spec.position}", np.bool_)]
        elif spec.storage == _DICTIONARY:
            selects.append(f"ifnull({quoted}, -1)")
            fields.append((f"v{spec.position}", np.int64))
        else:
            selects.append(quoted)
            fields.append((f"v{spec.position}", _FIELD_DTYPES[spec.storage]))
    cursor = con.execute(f"SELECT {', '.join(selects)} FROM {table}")
    try:
        # count=rows: fewer rows than the checksum table records fail here, more just below.
        records = np.fromiter(cursor, dtype=np.dtype(fields), count=rows)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ReportFormatError(f"{file}: corrupt report (table {table}: {exc})") from None
    if cursor.fetchone() is not None:
        raise ReportFormatError(f"{file}: corrupt report ({table} has more rows than recorded)")
    return {spec.position: (np.ascontiguousarray(records[f"v{spec.position}"]),
                            np.ascontiguousarray(records[f"m{spec.position}"]) if spec.storage == _NULLABLE_INTEGER
                            else None)
            for spec in plan}


#: the parts of a packed column by storage (every part but ``text`` an integer array)
_PACKED_PARTS: Mapping[str, tuple[str, ...]] = {
    _INTEGER: ("values",),
    _BOOLEAN: ("values",),
    _NULLABLE_INTEGER: ("values", "mask"),
    _DICTIONARY: ("values",),
    _TEXT: ("lengths", "text"),
}


def _unpack_table(con: sqlite3.Connection, file: pathlib.Path, table: str, plan: Sequence[StoredColumn],
                  checksums: Mapping[str, tuple[int, int]], version: int = SCHEMA_VERSION) -> _RawColumns:
    """The columns of a packed table (its SQL table empty, its columns in ``packed``), each part
    checked to be exactly the size the recorded row count makes before anything is sized from it
    (``version``: the store's, which says whether an integer column may be stored as deltas)."""
    if table not in checksums:
        raise ReportFormatError(f"{file}: corrupt report (no checksum for table {table})")
    rows = checksums[table][0]
    if con.execute(f"SELECT COUNT(*) FROM {_quote(table)}").fetchone()[0]:
        raise ReportFormatError(f"{file}: corrupt report (table {table} is packed and has rows)")
    stored: dict[tuple[str, str], tuple[int, bytes]] = {}
    for column, part, raw_bytes, data in con.execute(
            "SELECT column_name, part, raw_bytes, data FROM packed WHERE table_name = ?", (table,)):
        if not isinstance(raw_bytes, int) or not isinstance(data, bytes):
            raise ReportFormatError(f"{file}: corrupt report (malformed packed column of {table})")
        stored[(column, part)] = (raw_bytes, data)
    deltas_allowed = version >= DELTAS_SINCE_VERSION
    as_deltas = {spec.name for spec in plan if deltas_allowed and spec.storage in (_INTEGER, _NULLABLE_INTEGER)
                 and (spec.name, "deltas") in stored}
    wanted = {(spec.name, part) for spec in plan for part in _PACKED_PARTS[spec.storage]}
    wanted = {(name, part) for name, part in wanted if not (part == "values" and name in as_deltas)}
    wanted |= {(name, part) for name in as_deltas for part in ("start", "deltas")}
    if set(stored) != wanted:
        raise ReportFormatError(f"{file}: corrupt report (packed columns of {table} do not match its catalogue)")

    def width(column: str, part: str) -> np.dtype:
        """The element type of an integer part: the width its size gives for the rows."""
        raw_bytes = stored[(column, part)][0]
        for dtype in _PACKED_WIDTHS:
            if raw_bytes == rows * dtype.itemsize:
                return dtype
        raise ReportFormatError(f"{file}: corrupt report ({table}.{column} is not {rows} rows)")

    def unpack(column: str, part: str, size: int) -> bytes:
        raw_bytes, data = stored[(column, part)]
        if raw_bytes != size or raw_bytes < 0 or raw_bytes > len(data) * _MAX_ZLIB_RATIO + 64:
            raise ReportFormatError(f"{file}: corrupt report ({table}.{column} is not {rows} rows)")
        inflate = zlib.decompressobj()
        try:
            raw = inflate.decompress(data, raw_bytes) if raw_bytes else inflate.decompress(data, 1)
        except zlib.error as exc:
            raise ReportFormatError(f"{file}: corrupt report ({table}.{column}: {exc})") from None
        if len(raw) != raw_bytes or not inflate.eof or inflate.unconsumed_tail or inflate.unused_data:
            raise ReportFormatError(f"{file}: corrupt report ({table}.{column} is not {rows} rows)")
        return raw

    columns: _RawColumns = {}
    for spec in plan:
        if spec.storage == _TEXT:
            kind = width(spec.name, "lengths")
            lengths = np.frombuffer(unpack(spec.name, "lengths", rows * kind.itemsize), dtype=kind).astype(np.int64)
            if len(lengths) and lengths.min() < -1:
                raise ReportFormatError(f"{file}: corrupt report ({table}.{spec.name} has a negative length)")
            ends = np.cumsum(np.maximum(lengths, 0))
            text = unpack(spec.name, "text", int(ends[-1]) if len(ends) else 0)
            share = (table, spec.name) in SHARED_TEXT_COLUMNS
            columns[spec.position] = (_split_text(text, lengths, ends, share=share), None)
            continue
        arrays = {}
        for part in _PACKED_PARTS[spec.storage]:
            stored_part = "deltas" if part == "values" and spec.name in as_deltas else part
            kind = width(spec.name, stored_part)
            arrays[part] = np.frombuffer(unpack(spec.name, stored_part, rows * kind.itemsize), dtype=kind)
        if spec.name in as_deltas:
            start = np.frombuffer(unpack(spec.name, "start", 8), dtype="<i8")
            values = _from_deltas(int(start[0]), arrays["values"])
        else:
            values = arrays["values"].astype(np.int64)
        mask = arrays["mask"].astype(bool) if "mask" in arrays else None
        if mask is not None and len(arrays["mask"]) and (arrays["mask"].min() < 0 or arrays["mask"].max() > 1):
            raise ReportFormatError(f"{file}: corrupt report ({table}.{spec.name} has a malformed null mask)")
        columns[spec.position] = (values, mask)
    return columns


#: Text columns whose values repeat (a variable's name once per run of its tiles): read back, a
#: value is one string object shared by its rows (8 bytes a row; hundreds of thousands of rows).
#: Not dictionary encoded in the file: ``dictionary`` is read whole when a store opens.
SHARED_TEXT_COLUMNS: frozenset[tuple[str, str]] = frozenset({("variable_tiles", "variable")})


def _split_text(text: bytes, lengths: np.ndarray, ends: np.ndarray, *, share: bool = False) -> np.ndarray:
    """The values of a packed text column: ``text`` cut at ``ends`` (a length of -1 is None).
    ASCII text (names, shapes: nearly always) is decoded in one call and sliced; with ``share``
    equal values are one string object."""
    starts = (ends - np.maximum(lengths, 0)).tolist()
    stops = ends.tolist()
    if text.isascii():
        whole = text.decode("ascii")
        pieces = [whole[a:b] for a, b in zip(starts, stops)]
    else:
        pieces = [text[a:b].decode("utf-8", "surrogatepass") for a, b in zip(starts, stops)]
    if share:
        shared: dict[str, str] = {}
        pieces = [shared.setdefault(piece, piece) for piece in pieces]
    values = np.empty(len(pieces), dtype=object)
    values[:] = pieces
    if len(lengths) and lengths.min() < 0:
        values[lengths < 0] = None
    return values


def _decode_table(
    file: pathlib.Path,
    table: str,
    plan: Sequence[StoredColumn],
    rows: int,
    raw_columns: _RawColumns,
    levels: Mapping[tuple[str, str], list[str]],
    checksums: Mapping[str, tuple[int, int]],
) -> pd.DataFrame:
    """The frame of a table from its stored columns, checked against its checksum."""
    check = _Checksum(table, rows)
    columns: dict[str, Any] = {}
    for spec in plan:
        values, stored_mask = raw_columns[spec.position]
        if spec.storage == _INTEGER:
            check.add(spec.name.encode() + b"\x00", values)
            columns[spec.name] = values
        elif spec.storage == _BOOLEAN:
            flags = values.astype(np.uint8)
            if len(values) and (values.min() < 0 or values.max() > 1):
                raise ReportFormatError(f"{file}: corrupt report ({table}.{spec.name} is not boolean)")
            check.add(spec.name.encode() + b"\x00", flags)
            columns[spec.name] = flags.astype(bool)
        elif spec.storage == _NULLABLE_INTEGER:
            assert stored_mask is not None
            mask = stored_mask.astype(bool)
            check.add(spec.name.encode() + b"\x00", values, mask.astype(np.uint8))
            columns[spec.name] = pd.arrays.IntegerArray(values, mask)
        elif spec.storage == _TEXT:
            check.add(spec.name.encode() + b"\x00", _text_bytes(values))
            columns[spec.name] = _restore_text(values, spec.dtype)
        else:
            check.add(spec.name.encode() + b"\x00", values)
            columns[spec.name] = _decode_dictionary(file, spec, values, levels.get((table, spec.name), []))
    _verify(file, table, checksums, rows, check.value)
    return pd.DataFrame(columns, copy=False)


def _restore_text(values: np.ndarray, dtype: str) -> pd.Series:
    # An explicit object Series: a bare object array would be re-inferred as pandas' str dtype.
    series = pd.Series(values, dtype=object, copy=False)
    return series if dtype == "object" else series.astype(pd.api.types.pandas_dtype(dtype))


def _decode_dictionary(file: pathlib.Path, spec: StoredColumn, codes: np.ndarray, levels: list[str]) -> Any:
    if len(codes) and (codes.min() < -1 or codes.max() >= len(levels)):
        raise ReportFormatError(f"{file}: corrupt report ({spec.table}.{spec.name} has codes outside its dictionary)")
    if spec.dtype == "category":
        categories = pd.Index(levels, dtype=spec.categories_dtype or "object")
        dtype = pd.CategoricalDtype(categories, ordered=spec.ordered)
        return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)
    if spec.dtype == "object" and (spec.table, spec.name) in COMPACT_TEXT_COLUMNS:
        return _compact_text(codes, levels)
    lookup = np.empty(len(levels) + 1, dtype=object)
    lookup[: len(levels)] = levels
    lookup[-1] = None  # code -1 (NULL) -> None
    return _restore_text(lookup.take(codes), spec.dtype)


def _compact_text(codes: np.ndarray, levels: list[str]) -> pd.Categorical:
    """The values ``levels[codes]`` (-1: missing) as a categorical with the categories
    ``astype("category")`` of them as objects gives (the names used, sorted): the codes recoded
    once into the narrowest integer type, no string per row."""
    present = codes[codes >= 0] if len(codes) and codes.min() < 0 else codes
    used = np.flatnonzero(np.bincount(present, minlength=len(levels)))
    del present
    kept = [levels[i] for i in used.tolist()]
    dtype = pd.Series(kept, dtype=object).astype("category").dtype
    width = np.int8 if len(kept) < 2**7 else np.int16 if len(kept) < 2**15 else np.int32
    # old code -> new code; -1 (a missing value) stays -1: the extra last entry
    recode = np.full(len(levels) + 1, -1, dtype=width)
    recode[used] = dtype.categories.get_indexer(kept)
    return pd.Categorical.from_codes(recode[codes], dtype=dtype, validate=False)


#: The fields of ``meta.target``, all required.
TARGET_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Target))


def _json_kind(value: Any) -> str:
    """A stored JSON value as a message names it: literals as written, anything else by kind
    (a stored string may be long or hostile, so it is never shown)."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return repr(value)
    kinds: dict[type, str] = {str: "a string", list: "a list", dict: "an object"}
    return kinds.get(type(value), type(value).__name__)


def _decode_meta(file: pathlib.Path, values: Mapping[str, str]) -> ReportMeta:
    missing = [k for k in _META_FIELDS if k not in values]
    if missing:
        raise ReportFormatError(f"{file}: corrupt report (meta lacks {', '.join(missing)})")
    meta = {k: _json_value(file, k, values[k]) for k in _META_FIELDS}
    for k in _OPTIONAL_META_FIELDS:
        meta[k] = _json_value(file, k, values[k]) if k in values else None
    target = meta["target"]
    if not isinstance(target, dict):
        raise ReportFormatError(f"{file}: corrupt report (meta.target is not an object)")
    # every field of the target has been stored since schema version 1: none may be absent
    lacking = [name for name in TARGET_FIELDS if name not in target]
    if lacking:
        raise ReportFormatError(f"{file}: corrupt report (meta.target lacks {', '.join(lacking)})")
    for key in ("simulated", "oom"):
        if not isinstance(meta[key], bool):
            raise ReportFormatError(f"{file}: corrupt report (meta.{key} is {_json_kind(meta[key])}, expected true or false)")
    capabilities = meta["capabilities"]
    if not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities):
        raise ReportFormatError(f"{file}: corrupt report (meta.capabilities is {_json_kind(capabilities)}, "
                                "expected a list of table names)")
    session_options = {} if meta["session_options"] is None else meta["session_options"]
    if not isinstance(session_options, dict):
        raise ReportFormatError(f"{file}: corrupt report (meta.session_options is {_json_kind(session_options)}, "
                                "expected an object)")
    replication = {} if meta["replication"] is None else meta["replication"]
    if not isinstance(replication, dict):
        raise ReportFormatError(f"{file}: corrupt report (meta.replication is {_json_kind(replication)}, "
                                "expected an object)")
    layout = {} if meta["layout"] is None else meta["layout"]
    if not isinstance(layout, dict):
        raise ReportFormatError(f"{file}: corrupt report (meta.layout is {_json_kind(layout)}, expected an object)")
    config = meta["config"]
    if not isinstance(config, dict):
        raise ReportFormatError(f"{file}: corrupt report (meta.config is not an object)")
    samples = meta["samples_per_step"]
    if samples is not None and (not isinstance(samples, int) or isinstance(samples, bool)):
        if isinstance(samples, float) and math.isfinite(samples) and samples.is_integer():
            samples = int(samples)
        else:
            raise ReportFormatError(f"{file}: corrupt report (meta.samples_per_step is {samples!r})")
    return ReportMeta(
        source=str(file),
        format="store",
        producer=meta["producer"],
        simulated=meta["simulated"],
        target=Target.from_dict(target),
        oom=meta["oom"],
        capabilities=frozenset(capabilities),
        workload=meta["workload"],
        variant=meta["variant"],
        config=config,
        samples_per_step=samples,
        created=meta["created"],
        addons_generation=meta["addons_generation"],
        execution="numeric" if meta["execution"] is None else meta["execution"],
        session_options=session_options,
        replication=replication,
        layout=layout,
    )


