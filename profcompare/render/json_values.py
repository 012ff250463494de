"""Plain JSON values of report data: numpy scalars, missing values and frames as the JSON
export writes them (shared by the whole-document writer and the column-wise row writer)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from profcompare.render.format import is_missing


def jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON data: numpy scalars become Python numbers, NaN/inf/<NA>
    become None, mappings become dicts and sequences/sets become lists (sets sorted)."""
    kind = type(value)  # the common plain types first: the Mapping check below is an ABC's, slow
    if kind is str or kind is int or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict or kind is list:
        return {str(k): jsonable(v) for k, v in value.items()} if kind is dict else [jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return [jsonable(v) for v in sorted(value, key=str)]
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return number if math.isfinite(number) else None
    if value is None or is_missing(value):
        return None
    if isinstance(value, str):
        return value
    return str(value)


def _column_values(series: pd.Series) -> list[Any]:
    dtype = series.dtype
    values = series.astype(object).tolist()
    if pd.api.types.is_bool_dtype(dtype):
        return [None if is_missing(v) else bool(v) for v in values]
    if pd.api.types.is_integer_dtype(dtype):
        return [None if is_missing(v) else int(v) for v in values]
    if pd.api.types.is_float_dtype(dtype):
        return [None if is_missing(v) or not math.isfinite(float(v)) else float(v) for v in values]
    return [None if is_missing(v) else jsonable(v) for v in values]


def frame_records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Return ``frame``'s rows as JSON-ready dicts (integer columns as ints, missing as None)."""
    columns = {str(c): _column_values(frame[c]) for c in frame.columns}
    return [{c: columns[c][i] for c in columns} for i in range(len(frame))]
