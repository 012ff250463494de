"""The store's format, shared by its writer and its reader: versions, the column catalogue
(:class:`StoredColumn`, :func:`_column_plan`), the canonical bytes and CRC-32 checksums of every
part, the integer widths of packed columns, and recognising a store from its first 100 bytes.
The layout itself is described in :mod:`profcompare.readers.store` and ``docs/report-format.md``."""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from profcompare.errors import (
    ProfcompareError,
)
from profcompare.model import (
    SCHEMAS,
    ReportMeta,
)

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




#: the integer widths of a packed part's elements, narrowest first (little-endian, signed)
_PACKED_WIDTHS = (np.dtype("<i1"), np.dtype("<i2"), np.dtype("<i4"), np.dtype("<i8"))


def _narrowest(values: np.ndarray) -> np.ndarray:
    """``values`` (integers) in the narrowest of :data:`_PACKED_WIDTHS` holding every one of them:
    less to compress and to store (codes, steps and flags fit in one or two bytes)."""
    # ``values`` itself when it is of that width already (the callers only read it): no copy of
    # a column of tens of millions of rows
    if not len(values):
        return values.astype(_PACKED_WIDTHS[-1], copy=False)
    low, high = int(values.min()), int(values.max())
    for dtype in _PACKED_WIDTHS:
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return values.astype(dtype, copy=False)
    return values.astype(_PACKED_WIDTHS[-1], copy=False)


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


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _sql_type(spec: StoredColumn) -> str:
    if spec.storage in (_INTEGER, _BOOLEAN):
        return "INTEGER NOT NULL"
    if spec.storage in (_NULLABLE_INTEGER, _DICTIONARY):
        return "INTEGER"
    return "TEXT"


_PACK_LEVEL = 1
#: zlib never expands more than about 1032 to 1: a part claiming more is corrupt
_MAX_ZLIB_RATIO = 1032


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


