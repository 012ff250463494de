"""Our open report format: one SQLite file (normally ``profile.sqlite``) holding a whole Report.

The layout is documented in ``docs/report-format.md``; in short:

* ``PRAGMA application_id`` = :data:`APPLICATION_ID` and ``PRAGMA user_version`` =
  :data:`SCHEMA_VERSION`, so any SQLite file can be recognised (or rejected) from its first
  100 bytes without opening it;
* ``meta(key, value)``: one JSON value per :class:`~profcompare.model.ReportMeta` field plus
  ``schema_version`` and ``writer``;
* ``columns``: a catalogue of every stored column (table, position, name, storage, pandas
  dtype), which is how the reader knows the optional per-category columns of ``tiles``;
* one table per Report table (``tiles``, ``categories``, ``variables``, ``liveness``, ``code``,
  ``execution``, ``remote_buffers``, ``trace`` (version 4), ``programs`` (version 7), ``operations`` (version 8), ``vertices``, ``compute_sets``, ``exchanges`` (version 9); the ``parameter`` and ``role`` columns of ``operations`` version 9). Category columns and repetitive text columns are
  dictionary encoded: the table holds an integer code, ``dictionary`` holds the strings, and
  a ``<table>_text`` view shows the decoded values for people exploring with ``sqlite3``;
* ``packed(table_name, column_name, part, raw_bytes, data)`` (version 5): a table of more than
  :data:`PACKED_FROM_ROWS` rows is stored here column by column, each part of a column one
  zlib-compressed array (its SQL table keeps its columns and holds no rows), so the millions of
  program steps of a large program are written and read as arrays, not row by row;
* ``checksums(table_name, rows, crc32)``: row counts and CRC-32 of the decoded content of
  every table, of ``meta``, ``dictionary``, the ``columns`` catalogue and (row ``checksums``)
  of its own other rows, so a truncated, bit-flipped or edited file is reported instead of
  read wrongly. The reader verifies the checksums table first, then ``meta`` before parsing
  any of it, and compares every recorded row count with the table's real one before sizing
  anything from it.

A report is written in one transaction into a temporary file in the destination directory,
flushed to disk and then renamed, so a crash never leaves a file that opens as a report. A report
written again over the file an earlier write of this process made, with some of the same frames
(:func:`write_report_kept`), starts its temporary file as a copy of that file and writes only the
other tables and the shared rows again; the file holds what a whole write would.

Reading materialises each table column-wise: ``numpy.fromiter`` consumes the cursor straight
into a structured array (no list of row tuples is kept), categorical columns are rebuilt from
their integer codes with :meth:`pandas.Categorical.from_codes` (no string hashing), and
dictionary-encoded text columns are a single ``take``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import secrets
import shutil
import sqlite3
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from profcompare.perf import collector
from profcompare._version import __version__
from profcompare.errors import (
    OutputExistsError,
    ProfcompareError,
    ReportFormatError,
    UnsupportedReportVersion,
)
from profcompare.model import (
    CATEGORY_GROUPS,
    COLUMN_DEFAULTS,
    SCHEMAS,
    TABLES,
    Report,
    ReportMeta,
    Target,
    validate_frame,
)
from profcompare.readers.sqlite_uri import read_only_uri
from profcompare.base.report_values import check_report_values

#: Version of the layout written by :func:`write_report`. Readers accept every version up to
#: this one; anything newer raises :class:`~profcompare.errors.UnsupportedReportVersion`.
SCHEMA_VERSION = 9

#: From this schema version on, a report table of more than :data:`PACKED_FROM_ROWS` rows is
#: stored *packed*: column by column, each column's encoded values one compressed array in the
#: ``packed`` table, its SQL table left without rows (version 5).
PACKED_SINCE_VERSION = 5

#: From this schema version on, a packed integer column (``integer``, ``nullable_integer``) may
#: hold its values as ``start`` (the first value, one int64) and ``deltas`` (0, then each value
#: minus the one before) when those fit in a narrower integer than the values (version 6): steps
#: and cycle intervals, which grow row by row, then take one to four bytes a row instead of eight
#: and compress quickly.
DELTAS_SINCE_VERSION = 6

#: Tables with more rows than this are stored packed: SQLite inserts a few hundred thousand rows
#: a second from Python, a packed column is one array (a program of millions of steps writes and
#: reads its report in seconds, and the file is several times smaller).
PACKED_FROM_ROWS = 100_000

#: From this schema version on, ``checksums`` also covers the ``columns`` catalogue and
#: itself (its row ``checksums``), so no edit of any table reads silently.
SEALED_SINCE_VERSION = 2

#: Columns added after schema version 1, with the version that added them. Older stores read
#: them as unknown (<NA>).
COLUMNS_SINCE: Mapping[tuple[str, str], int] = {
    ("execution", "cycles_from"): 2, ("execution", "cycles_to"): 2,
    # version 3: the attribution of the memory ledger (older stores read as unattributed)
    ("variables", "parameter"): 3, ("variables", "role"): 3, ("variables", "which"): 3,
    ("remote_buffers", "parameter"): 3, ("remote_buffers", "role"): 3, ("remote_buffers", "which"): 3,
    # version 8: memory by region and gaps per tile (older stores read them as unknown)
    ("tiles", "non_interleaved_bytes"): 8, ("tiles", "interleaved_bytes"): 8,
    ("tiles", "overflow_bytes"): 8, ("tiles", "gap_bytes"): 8,
    # version 9: liveness per IPU (older stores read as the whole replica, <NA>) and the run of
    # each trace block (older stores held one run: 0)
    ("liveness", "ipu"): 9, ("trace", "run"): 9,
    # version 9: the parameter and role each op acts on (older stores read them as unknown, "")
    ("operations", "parameter"): 9, ("operations", "role"): 9,
    # version 9: the bytes each executed step moves (older stores read them as unrecorded, <NA>)
    ("execution", "bytes_moved"): 9,
}

#: Tables added after schema version 1, with the version that added them. Older stores read
#: them as empty (version 4: the execution trace; version 7: the program tree; version 8: the
#: operations; version 9: which tiles hold each variable, the vertex types, compute sets and
#: exchanges).
TABLES_SINCE: Mapping[str, int] = {"trace": 4, "programs": 7, "operations": 8, "variable_tiles": 9, "vertices": 9,
                                   "compute_sets": 9, "exchanges": 9}

#: At most this many rows in ``checksums`` (one per table, plus meta, dictionary, columns and
#: itself): more is corruption, refused before anything is sized from it.
_MAX_CHECKSUM_ROWS = 64

#: ``PRAGMA application_id`` of our files: the ASCII bytes "PrfC" as a big-endian int32.
APPLICATION_ID = int.from_bytes(b"PrfC", "big")

#: Default file name of a store report inside a report or run directory.
DEFAULT_FILENAME = "profile.sqlite"

SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100

#: Text columns stored dictionary encoded although their model dtype is ``object``: they
#: repeat a lot (shapes, program names), so decoding them is one ``take`` instead of one
#: Python string per row. Category columns are always dictionary encoded.
DICTIONARY_TEXT_COLUMNS: frozenset[tuple[str, str]] = frozenset(
    {
        ("variables", "shape"),
        ("variables", "parameter"),
        ("remote_buffers", "parameter"),
        ("liveness", "program"),
        ("code", "name"),
        ("execution", "program"),
        ("remote_buffers", "shape"),
        ("trace", "name"),
        ("trace", "program"),
        ("trace", "parent"),
        ("programs", "op"),
        ("operations", "layer"),
        ("operations", "source"),
        ("compute_sets", "op"),
        ("exchanges", "op"),
    }
)

# storage kinds (the ``columns.storage`` values)
_INTEGER = "integer"  # int64, NOT NULL
_BOOLEAN = "boolean"  # 0/1, NOT NULL
_NULLABLE_INTEGER = "nullable_integer"  # pandas Int64, NULL = <NA>
_TEXT = "text"  # TEXT, NULL = None
_DICTIONARY = "dictionary"  # INTEGER code into ``dictionary``, NULL = NaN / None
_STORAGES = (_INTEGER, _BOOLEAN, _NULLABLE_INTEGER, _TEXT, _DICTIONARY)

_META_FIELDS = (
    "format",
    "producer",
    "simulated",
    "target",
    "oom",
    "capabilities",
    "workload",
    "variant",
    "config",
    "samples_per_step",
    "created",
)
#: meta fields added later: written always, optional when read (older stores lack them)
_OPTIONAL_META_FIELDS = ("addons_generation", "execution", "session_options", "replication", "layout")


@dataclass(frozen=True)
class StoredColumn:
    """How one column of a Report table is stored (one row of the ``columns`` catalogue)."""

    table: str
    position: int
    name: str
    storage: str
    dtype: str  # pandas dtype name to restore: int64, Int64, bool, object, str, string, category
    categories_dtype: str | None = None  # dtype of a categorical's categories (str | object)
    ordered: bool = False


# --------------------------------------------------------------------------------------------
# sniffing


def read_header(path: str | os.PathLike[str]) -> bytes:
    """Return the first 100 bytes of ``path`` (fewer if the file is shorter)."""
    with open(path, "rb") as handle:
        return handle.read(_HEADER_SIZE)


def is_sqlite_header(header: bytes) -> bool:
    """True when ``header`` starts with the SQLite 3 magic string."""
    return header.startswith(SQLITE_MAGIC)


def header_application_id(header: bytes) -> int | None:
    """The ``application_id`` stored at offset 68 of an SQLite header, or None if too short."""
    if len(header) < 72 or not is_sqlite_header(header):
        return None
    return int.from_bytes(header[68:72], "big", signed=True)


def is_store_header(header: bytes) -> bool:
    """True when ``header`` is the header of one of our store files (magic + application id)."""
    return header_application_id(header) == APPLICATION_ID


# --------------------------------------------------------------------------------------------
# column catalogue and canonical content (shared by writer and reader so checksums agree)


def _column_plan(table: str, frame: pd.DataFrame) -> list[StoredColumn]:
    schema = {c.name: c for c in SCHEMAS[table]}
    plan = []
    for position, name in enumerate(frame.columns):
        series = frame[name]
        col = schema.get(name)
        model_dtype = col.dtype if col is not None else "int64"  # tiles category columns
        if model_dtype == "int64":
            plan.append(StoredColumn(table, position, name, _INTEGER, "int64"))
        elif model_dtype == "Int64":
            plan.append(StoredColumn(table, position, name, _NULLABLE_INTEGER, "Int64"))
        elif model_dtype == "bool":
            plan.append(StoredColumn(table, position, name, _BOOLEAN, "bool"))
        elif model_dtype == "category":
            cats = series.cat.categories
            plan.append(
                StoredColumn(
                    table,
                    position,
                    name,
                    _DICTIONARY,
                    "category",
                    categories_dtype=str(cats.dtype),
                    ordered=bool(series.cat.ordered),
                )
            )
        else:
            storage = _DICTIONARY if (table, name) in DICTIONARY_TEXT_COLUMNS else _TEXT
            plan.append(StoredColumn(table, position, name, storage, str(series.dtype)))
    return plan


def _text_bytes(values: Sequence[Any] | np.ndarray) -> bytes:
    """Canonical bytes of a text column: values joined by NUL, None spelled as \\x01."""
    try:
        joined = "\x00".join(values)
    except TypeError:
        joined = "\x00".join("\x01" if v is None else str(v) for v in values)
    return joined.encode("utf-8", "surrogatepass")


class _Checksum:
    def __init__(self, label: str, rows: int) -> None:
        self.value = zlib.crc32(f"{label}\x00{rows}".encode())

    def add(self, *pieces: bytes | np.ndarray) -> None:
        """Add the bytes of ``pieces`` one after the other (an array's are its memory, as
        ``tobytes`` would give them: CRC-32 runs over a stream, so nothing is joined or copied)."""
        for data in pieces:
            if isinstance(data, np.ndarray):
                data = np.ascontiguousarray(data)
            # numpy's stubs declare ndarray a buffer only from Python 3.12 (PEP 688's __buffer__)
            self.value = zlib.crc32(data, self.value)  # type: ignore[arg-type]


def _meta_items(meta: ReportMeta) -> list[tuple[str, str]]:
    values: dict[str, Any] = {
        "format": meta.format,
        "producer": meta.producer,
        "simulated": bool(meta.simulated),
        "target": meta.target.to_dict(),
        "oom": bool(meta.oom),
        "capabilities": sorted(meta.capabilities),
        "workload": meta.workload,
        "variant": meta.variant,
        "config": dict(meta.config),
        "samples_per_step": meta.samples_per_step,
        "created": meta.created,
        "addons_generation": meta.addons_generation,
        "execution": meta.execution,
        "session_options": dict(meta.session_options),
        "replication": dict(meta.replication),
        "layout": dict(meta.layout),
    }
    items = []
    for key in (*_META_FIELDS, *_OPTIONAL_META_FIELDS):
        try:
            items.append((key, json.dumps(values[key], sort_keys=True, default=_json_default)))
        except (TypeError, ValueError) as exc:
            raise ProfcompareError(f"meta.{key} cannot be stored as JSON: {exc}") from None
    return items


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _meta_checksum(items: Sequence[tuple[str, str]]) -> int:
    check = _Checksum("meta", len(items))
    for key, value in sorted(items):
        check.add(f"{key}\x00{value}\x00".encode("utf-8", "surrogatepass"))
    return check.value


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


#: the integer widths of a packed part's elements, narrowest first (little-endian, signed)
_PACKED_WIDTHS = (np.dtype("<i1"), np.dtype("<i2"), np.dtype("<i4"), np.dtype("<i8"))


def _narrowest(values: np.ndarray) -> np.ndarray:
    """``values`` (integers) in the narrowest of :data:`_PACKED_WIDTHS` holding every one of them:
    less to compress and to store (codes, steps and flags fit in one or two bytes)."""
    if not len(values):
        return values.astype(_PACKED_WIDTHS[-1])
    low, high = int(values.min()), int(values.max())
    for dtype in _PACKED_WIDTHS:
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype)
    return values.astype(_PACKED_WIDTHS[-1])


def _deltas(values: np.ndarray) -> np.ndarray:
    """0, then each value minus the one before (int64, wrapping as the cumulative sum that
    restores them from the first value wraps)."""
    out = np.zeros(len(values), dtype=np.int64)
    if len(values):
        np.subtract(values[1:], values[:-1], out=out[1:])
    return out


def _from_deltas(start: int, deltas: np.ndarray) -> np.ndarray:
    """The values :func:`_deltas` was given, from their first value and their deltas."""
    values = np.cumsum(deltas, dtype=np.int64)  # wraps around as the differences did
    values += np.int64(start)
    return values


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
    blobs = [b"" if v is None else str(v).encode("utf-8", "surrogatepass") for v in encoded.texts]
    lengths = np.fromiter((-1 if v is None else len(b) for v, b in zip(encoded.texts, blobs)), dtype=np.int64,
                          count=len(blobs))
    return {"lengths": _narrowest(lengths).tobytes(), "text": b"".join(blobs)}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_type(spec: StoredColumn) -> str:
    if spec.storage in (_INTEGER, _BOOLEAN):
        return "INTEGER NOT NULL"
    if spec.storage in (_NULLABLE_INTEGER, _DICTIONARY):
        return "INTEGER"
    return "TEXT"


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
_PACK_LEVEL = 1
#: zlib never expands more than about 1032 to 1: a part claiming more is corrupt
_MAX_ZLIB_RATIO = 1032


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


def _dictionary_checksum(rows: Sequence[tuple[str, str, int, str]]) -> int:
    check = _Checksum("dictionary", len(rows))
    for table, column, code, value in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
        check.add(f"{table}\x00{column}\x00{code}\x00{value}\x00".encode("utf-8", "surrogatepass"))
    return check.value


def _catalogue_checksum(rows: Sequence[Sequence[Any]]) -> int:
    check = _Checksum("columns", len(rows))
    for row in sorted(rows, key=lambda r: (str(r[0]), int(r[1]))):
        check.add("\x00".join("" if v is None else str(v) for v in row).encode("utf-8", "surrogatepass") + b"\x01")
    return check.value


def _checksums_checksum(rows: Sequence[tuple[str, int, int]]) -> int:
    """CRC-32 of the checksums table's rows other than its own (sorted by table name)."""
    check = _Checksum("checksums", len(rows))
    for name, count, crc in sorted(rows, key=lambda r: str(r[0])):
        check.add(f"{name}\x00{count}\x00{crc}\x00".encode("utf-8", "surrogatepass"))
    return check.value


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


# --------------------------------------------------------------------------------------------
# reading


def _connect_read_only(path: pathlib.Path) -> sqlite3.Connection:
    uri = read_only_uri(path)
    return sqlite3.connect(uri, uri=True)


def read_report(path: str | os.PathLike[str]) -> Report:
    """Read a store file written by :func:`write_report` and return the Report.

    ``meta.source`` is ``path`` and ``meta.format`` is ``"store"``. Raises
    :class:`ReportFormatError` naming the file when it is missing, not one of our files,
    truncated or corrupt, and :class:`UnsupportedReportVersion` when it was written by a newer
    schema version.
    """
    file = pathlib.Path(path)
    if not file.exists():
        raise ReportFormatError(f"{file}: no such file")
    if not file.is_file():
        raise ReportFormatError(f"{file}: not a file")
    try:
        header = read_header(file)
        size = file.stat().st_size
    except OSError as exc:
        raise ReportFormatError(f"{file}: cannot read: {exc.strerror or exc}") from None
    _check_header(file, header, size)
    # materialising a million rows allocates millions of short-lived objects; the cyclic
    # collector would rescan them repeatedly for nothing (none of them form cycles)
    with collector.paused():
        return _read_checked(file, lambda con: _read_database(con, file))


def read_meta(path: str | os.PathLike[str]) -> ReportMeta:
    """The ``meta`` of a store file, read and verified as :func:`read_report` reads it, without
    reading its tables (what a caller needs to tell, say, whether the program fits). Raises as
    :func:`read_report` does for a file that is not a complete store."""
    file = pathlib.Path(path)
    try:
        header = read_header(file)
        size = file.stat().st_size
    except OSError as exc:
        raise ReportFormatError(f"{file}: cannot read: {exc.strerror or exc}") from None
    _check_header(file, header, size)

    def meta_of(con: sqlite3.Connection) -> ReportMeta:
        _, _, meta_values, _ = _read_verified_meta(con, file)
        return _decode_meta(file, meta_values)

    return _read_checked(file, meta_of)



_T = TypeVar("_T")

def _read_checked(file: pathlib.Path, read: Callable[[sqlite3.Connection], _T]) -> _T:
    """``read(connection)`` on a read-only connection to the store ``file`` (its header already
    checked), with every failure of a file that is not a valid report as one ReportFormatError."""
    try:
        con = _connect_read_only(file)
        try:
            return read(con)
        finally:
            con.close()
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


def _read_database(con: sqlite3.Connection, file: pathlib.Path) -> Report:
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
    frames = {}
    for table in TABLES:
        if TABLES_SINCE.get(table, 1) > version:
            if table in tables or table in catalogue or table in checksums:
                raise ReportFormatError(f"{file}: corrupt report (table {table} in a version {version} store)")
            continue  # an older store: the table reads as empty
        plan = catalogue.get(table, [])
        _check_plan(file, con, table, plan, version)
        if table not in checksums:
            raise ReportFormatError(f"{file}: corrupt report (no checksum for table {table})")
        if table in packed_tables:
            columns = _unpack_table(con, file, table, plan, checksums, version)
            rows = checksums[table][0]
        else:
            rows = _verify_count(con, file, table, checksums)
            columns = _select_table(con, file, table, plan, rows)
        frames[table] = _with_later_columns(table, _decode_table(file, table, plan, rows, columns, levels, checksums))

    meta = _decode_meta(file, meta_values)
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
            starts = (ends - np.maximum(lengths, 0)).tolist()
            values = np.empty(rows, dtype=object)
            values[:] = [None if n < 0 else text[a:a + n].decode("utf-8", "surrogatepass")
                         for a, n in zip(starts, lengths.tolist())]
            columns[spec.position] = (values, None)
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
    lookup = np.empty(len(levels) + 1, dtype=object)
    lookup[: len(levels)] = levels
    lookup[-1] = None  # code -1 (NULL) -> None
    return _restore_text(lookup.take(codes), spec.dtype)


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


__all__ = [
    "file_identity",
    "APPLICATION_ID",
    "DEFAULT_FILENAME",
    "SCHEMA_VERSION",
    "StoredColumn",
    "WrittenStore",
    "header_application_id",
    "is_sqlite_header",
    "is_store_header",
    "read_header",
    "read_meta",
    "read_report",
    "write_report",
    "write_report_kept",
]
