"""JSON output for scripts and CI (``--format json``); every document carries ``schema_version``.

Shapes (schema_version 1):

``show``::

    {"schema_version": 1, "meta": {ReportMeta.to_dict()}, "summary": {"<metric>": value, ...}}

``compare``::

    {"schema_version": 1, "base": {meta}, "new": {meta},
     "summary": {"<metric>": {"base", "new", "delta", "delta_pct", "status"}, ...},
     "variables": [one object per Comparison.variables column, for the top-N changes]}

``variables``::

    {"schema_version": 1, "meta": {meta},
     "selection": {"sort", "filter", "always_live", "top"},
     "total": int, "shown": int, "cut": int, "other_bytes": int | null,
     "variables": [one object per Report.variables column, for the rows shown]}

Numbers: byte, tile, entry and step figures are integers; cycles, rates and percentages are
floats. NaN, infinities and missing values become ``null``. The top-N lists hold real rows
only; what was cut is never a fake "other" entry (``variables`` says how much was cut).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from profcompare.compare import Comparison
from profcompare.model import METRIC_UNITS, METRICS, Report
from profcompare.render.format import is_missing
from profcompare.render.sections import VariablesView, comparison_variables_view, limit

SCHEMA_VERSION = 1

#: metric units whose values are whole numbers
_INTEGER_UNITS = frozenset({"bytes", "tiles"})


def jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON data: numpy scalars become Python numbers, NaN/inf/<NA>
    become None, mappings become dicts and sequences/sets become lists (sets sorted)."""
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


def metric_value(metric: str, value: Any) -> int | float | None:
    """Return a summary metric's value for JSON/CSV: int for bytes and tiles, float otherwise,
    None when missing or not finite."""
    if is_missing(value) or not math.isfinite(float(value)):
        return None
    if METRIC_UNITS.get(metric) in _INTEGER_UNITS:
        return round(float(value))
    return float(value)


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


def report_json(report: Report) -> dict[str, Any]:
    """Return the ``show --format json`` document (see the module docstring)."""
    summary = report.summary()
    return {
        "schema_version": SCHEMA_VERSION,
        "meta": jsonable(report.meta.to_dict()),
        "summary": {m: metric_value(m, summary[m]) for m in METRICS},
    }


def comparison_json(cmp: Comparison, *, top: int | None = 20) -> dict[str, Any]:
    """Return the ``compare --format json`` document (see the module docstring)."""
    summary: dict[str, Any] = {}
    for metric in cmp.summary.index:
        row = cmp.summary.loc[metric]
        m = str(metric)
        summary[m] = {
            "base": metric_value(m, row["base"]),
            "new": metric_value(m, row["new"]),
            "delta": metric_value(m, row["delta"]),
            "delta_pct": None if is_missing(row["delta_pct"]) or not math.isfinite(float(row["delta_pct"]))
            else float(row["delta_pct"]),
            "status": None if is_missing(row["status"]) else str(row["status"]),
        }
    view = comparison_variables_view(cmp, top)
    return {
        "schema_version": SCHEMA_VERSION,
        "base": jsonable(cmp.base.meta.to_dict()),
        "new": jsonable(cmp.new.meta.to_dict()),
        "summary": summary,
        "variables": frame_records(view.shown_rows),
    }


def variables_json(result: VariablesView) -> dict[str, Any]:
    """Return the ``variables --format json`` document (see the module docstring)."""
    view = result.view
    other = view.other
    return {
        "schema_version": SCHEMA_VERSION,
        "meta": jsonable(result.report.meta.to_dict()),
        "selection": {
            "sort": result.sort,
            "filter": result.filter_regex,
            "always_live": result.always_live,
            "top": view.shown if view.cut else None,
        },
        "total": view.total,
        "shown": view.shown,
        "cut": view.cut,
        "other_bytes": None if other is None else int(other["bytes"]),
        "variables": frame_records(view.shown_rows),
    }


class JsonRenderer:
    """Render a report, a comparison or a variables view as an indented JSON document."""

    name = "json"
    file_extension = ".json"

    def render(self, obj: Report | Comparison | VariablesView, *, top: int = 20) -> str:
        """Return the JSON text (ends with a newline; ``allow_nan`` is off, NaN is null)."""
        if isinstance(obj, Comparison):
            data = comparison_json(obj, top=limit(top))
        elif isinstance(obj, Report):
            data = report_json(obj)
        elif isinstance(obj, VariablesView):
            data = variables_json(obj)
        else:
            raise TypeError(f"cannot render a {type(obj).__name__} as JSON")
        return json.dumps(data, indent=2, allow_nan=False, ensure_ascii=False) + "\n"


__all__ = [
    "SCHEMA_VERSION",
    "JsonRenderer",
    "comparison_json",
    "frame_records",
    "jsonable",
    "metric_value",
    "report_json",
    "variables_json",
]
