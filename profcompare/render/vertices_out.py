"""``profcompare ops --vertices`` in each format: the vertices, compute sets and exchanges of a
report (or a comparison's paired rows) as text or Markdown, or their records as JSON.

JSON shape (``schema_version`` as :data:`profcompare.render.json_out.SCHEMA_VERSION`)::

    {"schema_version": int, "view": "vertices", "reports": {"report": label} | {"base": label, "new": label},
     "vertices": [{column: value, ...}, ...], "compute_sets": [...], "exchanges": [...],
     "shown": {table: int}, "total": {table: int}}

The records hold each table's columns (``Report.vertices`` ... or ``Comparison.vertices`` ...),
in the section's order, every row unless ``top`` cuts them. CSV holds one table per output: the
section's tables are ``show`` / ``compare --format csv --table vertices-vertices`` (and
``vertices-compute-sets``, ``vertices-exchanges``).
"""

from __future__ import annotations

from typing import Any

from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.json_out import SCHEMA_VERSION
from profcompare.render.json_values import frame_records
from profcompare.render.json_text import dumps_indented
from profcompare.render.sections.vertices import ranked_rows, vertices_document

#: the formats ``profcompare ops --vertices`` writes
VERTICES_FORMATS = ("text", "markdown", "json")

_TABLES = ("vertices", "compute_sets", "exchanges")


def vertices_json(obj: Report | Comparison, top: int | None = None) -> str:
    """The three tables of ``obj`` as a JSON document (see the module docstring)."""
    reports: dict[str, Any] = ({"base": obj.base.label, "new": obj.new.label} if isinstance(obj, Comparison)
                               else {"report": obj.label})
    rows = {table: ranked_rows(obj, table, top) for table in _TABLES}
    data: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "view": "vertices", "reports": reports}
    data.update({table: frame_records(frame) for table, frame in rows.items()})
    data["shown"] = {table: len(frame) for table, frame in rows.items()}
    data["total"] = {table: len(getattr(obj, table)) for table in _TABLES}
    return dumps_indented(data, ensure_ascii=False) + "\n"


def render_vertices(fmt: str, obj: Report | Comparison, *, top: int | None, color: bool = False,
                    width: int | None = None) -> str:
    """``obj``'s vertices, compute sets and exchanges in ``fmt`` (:data:`VERTICES_FORMATS`): the
    document cut to ``top`` rows a table for text and Markdown, the records for json."""
    if fmt == "json":
        return vertices_json(obj, top)
    document = vertices_document(obj, top=top)
    if fmt == "markdown":
        from profcompare.render.markdown import render_document as markdown_document

        return markdown_document(document)
    from profcompare.render.text import render_document as text_document

    return text_document(document, color=color, width=width)


__all__ = ["VERTICES_FORMATS", "render_vertices", "vertices_json"]
