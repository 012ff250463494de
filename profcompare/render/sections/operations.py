"""The "Operations" section of a report and of a comparison (Graph Analyser's Operations
summary), drawn alike by the terminal and the Markdown: per op its code, vertex state and
exchange code bytes, cycles of one run, FLOPs and tiles -- or, for a comparison, its code and
cycles on each side with the delta and status -- the largest first, an "other" row summing the
rest and a "total" row that reconciles with the report's code bytes and device cycles.

:func:`operations_document` wraps the section in a document (``profcompare ops``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison
from profcompare.model import UNATTRIBUTED_OPERATION, Report
from profcompare.render.format import format_count, format_cycles, is_missing, status_tone
from profcompare.render.html_model import bytes_cell, sort_key, status_cell, text_cell
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.page.notes import cut_note
from profcompare.render.sections.header import comparison_header, report_header
from profcompare.render.sections.document import (
    Document,
    _missing_sides,
    limit,
)
from profcompare.render.sections.listing import empty_word, other_label
from profcompare.render.sections.operation_detail import comparison_operation_details, report_operation_details

#: the title of the section in every medium, and its anchor on a page
OPERATIONS_TITLE = "Operations"
OPERATIONS_ID = "operations"
_TABLE_ID = "operations-table"

#: what the remainder row is, said under the table when it is shown
REMAINDER_NOTE = (f"'{UNATTRIBUTED_OPERATION}' holds what no op is given (code every op shares, the program's own "
                  "control code and copies), so the columns add up to the report's code bytes and device cycles.")

_SUMMED = ("code_bytes", "vertex_state_bytes", "exchange_code_bytes", "cycles")


def _count_cell(value: Any, *, signed: bool = False, tone: str | None = None) -> Cell:
    return Cell(format_count(value, signed=signed), sort_key(value), tone)


def _cycles_cell(value: Any, *, signed: bool = False, tone: str | None = None) -> Cell:
    return Cell(format_cycles(value, signed=signed), sort_key(value), tone)


def _total(frame: pd.DataFrame, column: str) -> Any:
    """The column's sum, <NA> when no row knows it."""
    values = frame[column]
    return values.sum() if values.notna().any() else pd.NA


def report_operations_section(report: Report, top: int | None = None) -> Section:
    """Return the "Operations" section of one report: its ``top`` ops of the most code bytes
    (None: all), an "other" footer row summing the rest, a "total" row and notes saying what
    was cut and what the remainder row holds."""
    ops = report.operations
    view = analysis.top_n(ops, limit(top), "code_bytes", label_column="name", sum_columns=_SUMMED)
    shown = view.shown_rows.to_dict("records")
    details = report_operation_details(report, [str(r["name"]) for r in shown])
    rows = tuple(
        Row((text_cell(r["name"]), text_cell(r["type"]), bytes_cell(r["code_bytes"]),
             bytes_cell(r["vertex_state_bytes"]), bytes_cell(r["exchange_code_bytes"]), _cycles_cell(r["cycles"]),
             _count_cell(r["flops"]), _count_cell(r["tiles"])), detail=detail)
        for r, detail in zip(shown, details, strict=True)
    )
    # a page starts with the breakdown of the code (vertex state, exchange code) hidden: the
    # column chooser shows it, the op's detail holds it
    columns = (
        Column("Op", key="name"), Column("Type", key="type"), Column("Code bytes", True, key="code_bytes"),
        Column("Vertex state", True, key="vertex_state_bytes", hidden=True),
        Column("Exchange code", True, key="exchange_code_bytes", hidden=True), Column("Cycles", True, key="cycles"),
        Column("FLOPs", True, key="flops"), Column("Tiles", True, key="tiles"),
    )
    footer: list[Row] = []
    if view.has_other:
        other = view.other
        assert other is not None
        footer.append(Row((Cell(other_label(view, "ops")), Cell(""), bytes_cell(other["code_bytes"]),
                           bytes_cell(other["vertex_state_bytes"]), bytes_cell(other["exchange_code_bytes"]),
                           _cycles_cell(other["cycles"]), Cell(""), Cell(""))))
    if len(ops):
        footer.append(Row((Cell("total"), Cell(""), bytes_cell(_total(ops, "code_bytes")),
                           bytes_cell(_total(ops, "vertex_state_bytes")), bytes_cell(_total(ops, "exchange_code_bytes")),
                           _cycles_cell(_total(ops, "cycles")), Cell(""), Cell(""))))
    table = Table(columns, rows, id=_TABLE_ID, footer=tuple(footer),
                  empty=empty_word(report.meta, "operations", "No operations in this report."), column_chooser=True)
    notes: tuple[str, ...] = ()
    if len(ops):
        notes = (cut_note(view, "ops"),)
        if (ops["name"] == UNATTRIBUTED_OPERATION).any():
            notes += (REMAINDER_NOTE,)
    return Section(OPERATIONS_TITLE, (table,), notes, id=OPERATIONS_ID, notes_on_table=True)


def comparison_operations_section(cmp: Comparison, top: int | None = None) -> Section:
    """Return the "Operations" section of a comparison: the ``top`` ops whose code (then cycles)
    changed most (None: all) with base, new and delta code bytes and cycles and the status, an
    "other" footer row summing the rest, and notes saying what was cut and which report records
    no operations."""
    ops = cmp.operations
    n = limit(top)
    shown = ops if n is None else ops.iloc[:n]
    rest = ops.iloc[len(shown):]

    def tone(status: Any) -> str | None:
        return None if is_missing(status) else status_tone(str(status))

    records = shown.to_dict("records")
    details = comparison_operation_details(cmp.base, cmp.new, [str(r["name"]) for r in records])
    rows = tuple(
        Row((text_cell(r["name"]), text_cell(r["type"]), bytes_cell(r["base_code_bytes"]),
             bytes_cell(r["new_code_bytes"]), bytes_cell(r["delta_code_bytes"], signed=True, tone=tone(r["status"])),
             _cycles_cell(r["base_cycles"]), _cycles_cell(r["new_cycles"]),
             _cycles_cell(r["delta_cycles"], signed=True, tone=tone(r["status"])),
             status_cell(r["status"], tone(r["status"]))),
            {"status": str(r["status"])}, detail=detail)
        for r, detail in zip(records, details, strict=True)
    )
    columns = (
        Column("Op", key="name"), Column("Type", key="type", hidden=True),
        Column("Base code", True, key="base_code_bytes"), Column("New code", True, key="new_code_bytes"),
        Column("Delta code", True, key="delta_code_bytes"), Column("Base cycles", True, key="base_cycles"),
        Column("New cycles", True, key="new_cycles"), Column("Delta cycles", True, key="delta_cycles"),
        Column("Status", key="status"),
    )
    footer: tuple[Row, ...] = ()
    if len(rest):
        footer = (Row((Cell(f"other ({len(rest):,} ops)"), Cell(""),
                       *(bytes_cell(_total(rest, f"{side}_code_bytes"), signed=side == "delta")
                         for side in ("base", "new", "delta")),
                       *(_cycles_cell(_total(rest, f"{side}_cycles"), signed=side == "delta")
                         for side in ("base", "new", "delta")),
                       Cell(""))),)
    table = Table(columns, rows, id=_TABLE_ID, footer=footer, empty="no operations in either report",
                  column_chooser=True)
    notes: tuple[str, ...] = ()
    if len(ops):
        notes = (f"All {len(ops):,} ops shown." if not len(rest) else
                 f"Top {len(shown):,} of {len(ops):,} ops shown; {len(rest):,} more in the 'other' row.",)
    notes += _missing_sides(cmp, "operations")
    return Section(OPERATIONS_TITLE, (table,), notes, id=OPERATIONS_ID, notes_on_table=True)


def operations_document(obj: Report | Comparison, *, top: int | None = 20) -> Document:
    """Return the document of ``profcompare ops``: which report(s), their warnings and the
    Operations section of a report or a comparison, cut to ``top`` rows (None or 0: all)."""
    if isinstance(obj, Comparison):
        facts, warnings = comparison_header(obj)
        facts.append(("delta", "new - base"))
        title = f"profcompare ops: {obj.base.label} (base) vs {obj.new.label} (new)"
        return Document(title, tuple(facts), warnings, (comparison_operations_section(obj, top),))
    facts, warnings = report_header(obj)
    return Document(f"profcompare ops: {obj.label}", tuple(facts), warnings, (report_operations_section(obj, top),))


__all__ = [
    "OPERATIONS_ID",
    "OPERATIONS_TITLE",
    "REMAINDER_NOTE",
    "comparison_operations_section",
    "operations_document",
    "report_operations_section",
]
