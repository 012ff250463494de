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

Opening a store (:func:`open_store`, what :func:`profcompare.readers.open_report` does) reads
and verifies the small parts -- header, ``checksums``, ``meta``, ``dictionary``, the
``columns`` catalogue -- and no table: each table is read when the Report is first asked for
it, checked against its checksum as it is decoded and validated then
(:mod:`profcompare.readers.store_lazy`). :func:`read_report` reads every table at once.

The code is split by stage: :mod:`~profcompare.readers.store_format` (versions, catalogue,
checksums), :mod:`~profcompare.readers.store_write`, :mod:`~profcompare.readers.store_read`
(decoding) and :mod:`~profcompare.readers.store_lazy` (tables read on first use); this module
is their public face.

Reading materialises each table column-wise: ``numpy.fromiter`` consumes the cursor straight
into a structured array (no list of row tuples is kept), categorical columns are rebuilt from
their integer codes with :meth:`pandas.Categorical.from_codes` (no string hashing), and
dictionary-encoded text columns are a single ``take``.
"""

from __future__ import annotations

from profcompare.base.report_values import check_report_values
from profcompare.errors import ReportFormatError
from profcompare.model import TABLES
from profcompare.readers.store_format import (
    APPLICATION_ID,
    COLUMNS_SINCE,
    DEFAULT_FILENAME,
    DELTAS_SINCE_VERSION,
    DICTIONARY_TEXT_COLUMNS,
    PACKED_FROM_ROWS,
    PACKED_SINCE_VERSION,
    SCHEMA_VERSION,
    SEALED_SINCE_VERSION,
    TABLES_SINCE,
    StoredColumn,
    _catalogue_checksum,
    _Checksum,
    _checksums_checksum,
    _column_plan,
    _deltas,
    _dictionary_checksum,
    _from_deltas,
    _meta_checksum,
    _narrowest,
    header_application_id,
    is_sqlite_header,
    is_store_header,
    read_header,
)
from profcompare.readers.store_lazy import open_store
from profcompare.readers.store_read import TARGET_FIELDS, read_meta, read_report
from profcompare.readers.store_write import (
    WrittenStore,
    _encode_column,
    _write_database,
    file_identity,
    write_report,
    write_report_kept,
)

__all__ = [
    "file_identity",
    "APPLICATION_ID",
    "COLUMNS_SINCE",
    "DEFAULT_FILENAME",
    "DELTAS_SINCE_VERSION",
    "DICTIONARY_TEXT_COLUMNS",
    "PACKED_FROM_ROWS",
    "PACKED_SINCE_VERSION",
    "SCHEMA_VERSION",
    "SEALED_SINCE_VERSION",
    "TABLES",
    "TABLES_SINCE",
    "TARGET_FIELDS",
    "ReportFormatError",
    "StoredColumn",
    "WrittenStore",
    "check_report_values",
    "header_application_id",
    "is_sqlite_header",
    "is_store_header",
    "open_store",
    "read_header",
    "read_meta",
    "read_report",
    "write_report",
    "write_report_kept",
    "_Checksum",
    "_catalogue_checksum",
    "_checksums_checksum",
    "_column_plan",
    "_deltas",
    "_dictionary_checksum",
    "_encode_column",
    "_from_deltas",
    "_meta_checksum",
    "_narrowest",
    "_write_database",
]
