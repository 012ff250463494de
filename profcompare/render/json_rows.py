"""A large table's rows in the JSON export, written column by column.

:func:`profcompare.render.json_out.frame_records` makes one Python dictionary per row and the
writer encodes each: for a T5-size report's 800,000 liveness steps that is gigabytes of objects
and most of the export's time. :class:`Rows` keeps the frame and writes the same characters
(``json.dumps(frame_records(frame), indent=2)`` at its depth) from whole columns: each number
column turned to text by numpy, each text column's distinct values encoded once and taken by
code, and one format per row. :func:`records` picks it for tables longer than
:data:`ROWS_AS_TEXT`; shorter ones stay plain lists of dictionaries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from profcompare.render.json_text import Prerendered
from profcompare.render.json_values import frame_records, jsonable

#: Tables with more rows than this are written by :class:`Rows` (shorter ones as dictionaries).
ROWS_AS_TEXT = 5000

_INDENT = 2
_NULL = "null"
#: Rows formatted at a time (bounds the per-value texts alive at once).
_CHUNK = 65536


def _ints(values: pd.Series) -> list[str]:
    """The texts of an integer column (``null`` where missing)."""
    missing = values.isna().to_numpy(dtype=bool)
    texts: list[str] = values.to_numpy(dtype="int64", na_value=0).astype(str).tolist()
    for k in np.flatnonzero(missing).tolist():
        texts[k] = _NULL
    return texts


def _floats(values: pd.Series) -> list[str]:
    """The texts of a float column: ``float.__repr__`` as ``json`` writes it, ``null`` where
    missing or not finite."""
    array = values.to_numpy(dtype="float64", na_value=np.nan)
    texts = list(map(float.__repr__, array.tolist()))
    for k in np.flatnonzero(~np.isfinite(array)).tolist():
        texts[k] = _NULL
    return texts


def _bools(values: pd.Series) -> list[str]:
    """The texts of a boolean column (``null`` where missing)."""
    missing = values.isna().to_numpy(dtype=bool)
    truth = values.to_numpy(dtype=bool, na_value=False)
    texts: list[str] = np.where(missing, _NULL, np.where(truth, "true", "false")).tolist()
    return texts


def _scalar_text(value: Any, string: Callable[[str], str]) -> str:
    """A plain scalar's JSON text (``jsonable`` has made it str, int, float, bool or None)."""
    if value is None:
        return _NULL
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, str):
        return string(value)
    if isinstance(value, int):
        return int.__repr__(value)
    return float.__repr__(value)


class _Plain:
    """A number or boolean column, turned to text a slice at a time by ``convert``."""

    def __init__(self, series: pd.Series, convert: Callable[[pd.Series], list[str]]) -> None:
        self.series = series
        self.convert = convert

    def texts(self, lo: int, hi: int, string: Callable[[str], str]) -> list[str]:
        return self.convert(self.series.iloc[lo:hi])


class _Coded:
    """A text column as codes (-1: missing) into its distinct values (already ``jsonable``),
    each value's text made once."""

    def __init__(self, codes: np.ndarray, values: list[Any]) -> None:
        self.codes = codes
        self.values = values
        self._table: tuple[Callable[[str], str], np.ndarray] | None = None

    def texts(self, lo: int, hi: int, string: Callable[[str], str]) -> list[str]:
        if self._table is None or self._table[0] is not string:
            self._table = (string, np.asarray([_scalar_text(v, string) for v in self.values] + [_NULL], dtype=object))
        codes = self.codes[lo:hi]
        return self._table[1][np.where(codes < 0, len(self.values), codes)].tolist()  # type: ignore[no-any-return]


def _coded(series: pd.Series) -> _Coded | None:
    """A categorical or all-text column by its distinct values; None for any other column (a
    mix of types, which ``factorize`` could merge: 1 and 1.0 and True are one key)."""

    if isinstance(series.dtype, pd.CategoricalDtype):
        codes = series.cat.codes.to_numpy(dtype="int64")
        values = [jsonable(v) for v in series.cat.categories.tolist()]
    else:
        if pd.api.types.infer_dtype(series, skipna=True) not in ("string", "empty"):
            return None
        found, uniques = pd.factorize(series, use_na_sentinel=True)
        codes = np.asarray(found, dtype="int64")
        values = [str(v) for v in list(uniques)]
    if not all(v is None or isinstance(v, (str, int, float, bool)) for v in values):
        return None
    return _Coded(codes, values)


def _column(series: pd.Series) -> _Plain | _Coded | None:
    """One column as the writer takes it (None: no column-wise form; the rows are dictionaries)."""
    dtype = series.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return _Plain(series, _bools)
    if pd.api.types.is_integer_dtype(dtype):
        if dtype.kind == "u" and dtype.itemsize == 8:  # beyond int64
            return None
        return _Plain(series, _ints)
    if pd.api.types.is_float_dtype(dtype):
        return _Plain(series, _floats)
    return _coded(series)


class Rows(Prerendered, Sequence[dict[str, Any]]):
    """The rows of ``frame`` for the JSON writer: the text ``json.dumps`` writes for
    ``frame_records(frame)``, made column by column, :data:`_CHUNK` rows at a time, when the
    document is written. As a sequence it gives the row dictionaries (made on first use), for
    code that reads the document rather than writes it."""

    def __init__(self, frame: pd.DataFrame, columns: dict[str, _Plain | _Coded]) -> None:
        self._frame = frame
        self._columns = columns
        self._records: list[dict[str, Any]] | None = None

    @classmethod
    def of(cls, frame: pd.DataFrame) -> Rows | None:
        """``frame``'s rows, or None when a column has no column-wise form (or two columns
        have one name as text)."""
        names = [str(c) for c in frame.columns]
        if len(set(names)) != len(names):
            return None
        columns: dict[str, _Plain | _Coded] = {}
        for name, position in zip(names, range(frame.shape[1]), strict=True):
            column = _column(frame.iloc[:, position])
            if column is None:
                return None
            columns[name] = column
        return cls(frame, columns)

    def pieces(self, level: int, string: Callable[[str], str]) -> Iterator[str]:
        """The rows' text at nesting ``level`` (``json.dumps(..., indent=2)``'s characters), one
        piece per :data:`_CHUNK` rows."""
        n = len(self._frame)
        if not n:
            yield "[]"
            return
        row_pad = "\n" + " " * (_INDENT * (level + 1))
        if not self._columns:
            yield "[" + row_pad + ("," + row_pad).join(["{}"] * n) + "\n" + " " * (_INDENT * level) + "]"
            return
        key_pad = "\n" + " " * (_INDENT * (level + 2))
        template = "{" + ",".join(key_pad + string(name).replace("%", "%%") + ": %s" for name in self._columns) \
            + row_pad + "}"
        for lo in range(0, n, _CHUNK):  # a chunk of rows at a time: the texts of one chunk alive at once
            texts = [c.texts(lo, min(lo + _CHUNK, n), string) for c in self._columns.values()]
            yield ("[" if lo == 0 else ",") + row_pad + ("," + row_pad).join(
                [template % row for row in zip(*texts, strict=True)])
        yield "\n" + " " * (_INDENT * level) + "]"

    def _rows(self) -> list[dict[str, Any]]:
        if self._records is None:

            self._records = frame_records(self._frame)
        return self._records

    def __len__(self) -> int:
        return len(self._frame)

    def __getitem__(self, index: Any) -> Any:
        return self._rows()[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._rows())

    def __eq__(self, other: object) -> bool:
        return list(self._rows()) == other if isinstance(other, (list, Rows)) else NotImplemented

    __hash__ = None  # type: ignore[assignment]


def records(frame: pd.DataFrame) -> list[dict[str, Any]] | Rows:
    """``frame``'s rows for the JSON export: :class:`Rows` when longer than
    :data:`ROWS_AS_TEXT` (and every column has a column-wise form), else
    :func:`~profcompare.render.json_out.frame_records`'s dictionaries."""

    if len(frame) > ROWS_AS_TEXT:
        rows = Rows.of(frame)
        if rows is not None:
            return rows
    return frame_records(frame)


__all__ = ["ROWS_AS_TEXT", "Rows", "records"]
