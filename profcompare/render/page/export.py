"""The page model's tables as plain data: what ``--format json`` (its ``sections`` key) and
``--format csv --table ID`` export, so every table a page shows is in the exports with the same
figures, by construction.

A cell exports as its value: the sort key of a figure (the exact number behind "1.2 MiB", the
byte count) where it has one, else its text. Footer rows ("other", "total") export apart from the
body rows; an exporter never mistakes an aggregate for a real row.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from profcompare.render.format import MISSING
from profcompare.render.page.model import Cell, Column, Row, Section, Table


def cell_value(cell: Cell, column: Column) -> float | int | str | None:
    """A cell's exported value: a numeric column's sort key (its exact figure; None for a blank or
    "n/a" figure), else the cell's text."""
    if column.numeric:
        if isinstance(cell.sort, int | float) and not isinstance(cell.sort, bool):
            value = cell.sort
            if isinstance(value, float) and value != value:  # NaN: the figure is not known
                return None
            return int(value) if isinstance(value, float) and value.is_integer() and abs(value) < 2**53 else value
        return None if cell.text in ("", MISSING, "–") else cell.text
    return cell.text


def _rows(rows: Iterable[Row], columns: Sequence[Column]) -> list[list[Any]]:
    return [[cell_value(cell, column) for cell, column in zip(row.cells, columns, strict=False)] for row in rows]


def table_data(table: Table) -> dict[str, Any]:
    """One table as plain data: id, column headers and keys, body rows, footer rows and note."""
    return {
        "id": table.id,
        "columns": [column.header for column in table.columns],
        "keys": [column.key for column in table.columns],
        "numeric": [column.numeric for column in table.columns],
        "rows": _rows(table.rows, table.columns),
        "footer": _rows(table.footer, table.columns),
        "note": table.note,
    }


def section_data(section: Section) -> dict[str, Any]:
    """One section as plain data: its id, title, lead text, statements, tables and notes."""
    return {
        "id": section.id,
        "title": section.title,
        "text": section.text,
        "items": list(section.items),
        "tables": [table_data(table) for table in section.tables],
        "notes": list(section.notes),
    }


def sections_data(sections: Iterable[Section]) -> list[dict[str, Any]]:
    """Every section as plain data, in page order."""
    return [section_data(section) for section in sections]


def table_ids(sections: Iterable[Section]) -> tuple[str, ...]:
    """The ids of the page tables ``sections`` hold (those with an id), in page order."""
    return tuple(table.id for section in sections for table in section.tables if table.id)


def find_table(sections: Iterable[Section], table_id: str) -> Table | None:
    """The table of ``sections`` whose id is ``table_id``; None when none has it."""
    return next((t for section in sections for t in section.tables if t.id == table_id), None)


def table_rows(table: Table) -> tuple[list[str], list[list[Any]]]:
    """A table as CSV rows: the column headers, then the body rows, then the footer rows (its
    first cell says what it sums, e.g. "other (12 programs)" or "total")."""
    return [column.header for column in table.columns], _rows((*table.rows, *table.footer), table.columns)


__all__ = ["cell_value", "find_table", "section_data", "sections_data", "table_data", "table_ids", "table_rows"]
