"""``profcompare ops`` in each format: the Operations document as text or Markdown, the
operations table (a report's, or a comparison's paired ops) as JSON records or CSV.

JSON shape (``schema_version`` as :data:`profcompare.render.json_out.SCHEMA_VERSION`)::

    {"schema_version": int, "view": "operations", "reports": {"report": label} | {"base": label, "new": label},
     "operations": [{column: value, ...}, ...], "shown": int, "total": int, "cut": int}

The records hold the table's columns (``Report.operations`` or ``Comparison.operations``), every
row unless ``top`` cuts them (a report's largest code first; a comparison's order)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.csv_out import _frame_csv
from profcompare.render.json_out import SCHEMA_VERSION
from profcompare.render.json_values import frame_records
from profcompare.render.json_text import dumps_indented
from profcompare.render.sections.document import limit
from profcompare.render.sections.operations import operations_document

#: the formats ``profcompare ops`` writes
OPERATIONS_FORMATS = ("text", "markdown", "json", "csv")


def operations_rows(obj: Report | Comparison, top: int | None = None) -> pd.DataFrame:
    """The rows an export holds: a report's ops, the most code first, or a comparison's paired
    ops in their order; the first ``top`` (None or 0: all)."""
    if isinstance(obj, Comparison):
        frame = obj.operations
    else:
        frame = obj.operations.sort_values(["code_bytes", "name"], ascending=[False, True], kind="stable")
    n = limit(top)
    return (frame if n is None else frame.iloc[:n]).reset_index(drop=True)


def operations_json(obj: Report | Comparison, top: int | None = None) -> str:
    """The operations of ``obj`` as a JSON document (see the module docstring)."""
    rows = operations_rows(obj, top)
    total = len(obj.operations)
    reports: dict[str, Any] = ({"base": obj.base.label, "new": obj.new.label} if isinstance(obj, Comparison)
                               else {"report": obj.label})
    data = {"schema_version": SCHEMA_VERSION, "view": "operations", "reports": reports,
            "operations": frame_records(rows), "shown": len(rows), "total": total, "cut": total - len(rows)}
    return dumps_indented(data, ensure_ascii=False) + "\n"


def operations_csv(obj: Report | Comparison, top: int | None = None) -> str:
    """The operations of ``obj`` as CSV: the table's columns, one line per op."""
    return _frame_csv(operations_rows(obj, top))


def render_operations(fmt: str, obj: Report | Comparison, *, top: int | None, color: bool = False,
                      width: int | None = None) -> str:
    """``obj``'s operations in ``fmt`` (:data:`OPERATIONS_FORMATS`): the document cut to ``top``
    rows for text and Markdown, the records for json and csv."""
    if fmt == "json":
        return operations_json(obj, top)
    if fmt == "csv":
        return operations_csv(obj, top)
    document = operations_document(obj, top=top)
    if fmt == "markdown":
        from profcompare.render.markdown import render_document as markdown_document

        return markdown_document(document)
    from profcompare.render.text import render_document as text_document

    return text_document(document, color=color, width=width)


__all__ = ["OPERATIONS_FORMATS", "operations_csv", "operations_json", "operations_rows", "render_operations"]
