"""The "Vertices, compute sets and exchanges" section of a report and of a comparison, drawn alike
by every medium through the page model: three compact tables, each cut to the top rows with an
"other" row summing the rest --

- vertex types, the most code first (with their instances, vertex state, tiles and the compute
  sets using them), and a note naming the type of the most vertex state;
- compute sets, the most vertex state first (with their op, vertices, cycles and tiles);
- exchanges, the most exchange code first (with their type, cycles and tiles);

and for a comparison the same three paired by name, the largest change first, with base, new and
delta of two figures (:mod:`profcompare.comparison.vertices`) and the status.

Each report table ends with a "total" row that reconciles with the report's vertexCode,
vertexInstanceState and exchange code (the remainder rows hold what no row is given).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd

from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison
from profcompare.comparison.vertices import DIFFED
from profcompare.model import Report
from profcompare.render.format import format_bytes, format_count, format_cycles, is_missing, status_tone
from profcompare.render.html_model import bytes_cell, sort_key, status_cell, text_cell
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.page.notes import cut_note
from profcompare.render.sections.document import Document, _missing_sides, limit
from profcompare.render.sections.header import comparison_header, report_header
from profcompare.render.sections.listing import empty_word, other_label

#: the title of the section in every medium, and its anchor on a page
VERTICES_TITLE = "Vertices, compute sets and exchanges"
VERTICES_ID = "vertices"

#: said under a simulated report's tables: what its rows are
SIMULATED_NOTE = ("Simulated: the vertex types are the simulator's codelet families, and every figure is "
                  "modelled (docs/ipu-model.md).")

#: per table: (first column's header, the noun of its rows, the column it is ranked by)
_TABLES: dict[str, tuple[str, str, str]] = {
    "vertices": ("Vertex type", "vertex types", "code_bytes"),
    "compute_sets": ("Compute set", "compute sets", "vertex_state_bytes"),
    "exchanges": ("Exchange", "exchanges", "code_bytes"),
}


def _count_cell(value: Any, *, signed: bool = False, tone: str | None = None) -> Cell:
    return Cell(format_count(value, signed=signed), sort_key(value), tone)


def _cycles_cell(value: Any, *, signed: bool = False, tone: str | None = None) -> Cell:
    return Cell(format_cycles(value, signed=signed), sort_key(value), tone)


def _figure_cell(column: str) -> Callable[..., Cell]:
    """The cell maker of a figure column: bytes, cycles or a count."""
    if column.endswith("_bytes"):
        return bytes_cell
    return _cycles_cell if column == "cycles" else _count_cell


def _total(frame: pd.DataFrame, column: str) -> Any:
    """The column's sum, <NA> when no row knows it."""
    values = frame[column]
    return values.sum() if values.notna().any() else pd.NA


#: per table: the columns one report's table shows after the name, (header, column)
_REPORT_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "vertices": (("Code bytes", "code_bytes"), ("Vertex state", "vertex_state_bytes"), ("Instances", "instances"),
                 ("Tiles", "tiles"), ("Compute sets", "compute_sets")),
    "compute_sets": (("Vertex state", "vertex_state_bytes"), ("Vertices", "vertices"), ("Cycles", "cycles"),
                     ("Tiles", "tiles")),
    "exchanges": (("Code bytes", "code_bytes"), ("Cycles", "cycles"), ("Tiles", "tiles")),
}
#: the columns summed into the "other" and "total" rows (the rest are left blank there)
_SUMMED = frozenset({"code_bytes", "vertex_state_bytes", "instances", "vertices"})
#: a text column shown after the name: the compute set's op, the exchange's type
_LABEL: dict[str, tuple[str, str]] = {"compute_sets": ("Op", "op"), "exchanges": ("Type", "type")}


def _report_table(report: Report, table: str, top: int | None) -> Table:
    """One report's table ``table`` cut to ``top`` rows, its cut note as the table's note."""
    header, noun, ranked_by = _TABLES[table]
    frame = getattr(report, table)
    figures = _REPORT_COLUMNS[table]
    summed = [c for _, c in figures if c in _SUMMED]
    view = analysis.top_n(frame, limit(top), ranked_by, label_column="name", sum_columns=summed)
    label = _LABEL.get(table)
    columns = (Column(header, key="name"), *((Column(label[0], key=label[1]),) if label else ()),
               *(Column(h, True, key=c) for h, c in figures))

    def cells(first: Cell, values: dict[str, Any], *, aggregate: bool) -> Row:
        row = [first, *((Cell("") if aggregate else text_cell(values[label[1]]),) if label else ())]
        row += [_figure_cell(c)(values[c]) if not aggregate or c in _SUMMED else Cell("") for _, c in figures]
        return Row(tuple(row))

    rows = tuple(cells(text_cell(r["name"]), r, aggregate=False) for r in view.shown_rows.to_dict("records"))
    footer: list[Row] = []
    if view.has_other and view.other is not None:
        footer.append(cells(Cell(other_label(view, noun)), dict(view.other), aggregate=True))
    if len(frame):
        footer.append(cells(Cell("total"), {c: _total(frame, c) for c in summed}, aggregate=True))
    empty = empty_word(report.meta, "vertices", f"No {noun} in this report.")
    table_id = f"{VERTICES_ID}-{table.replace('_', '-')}"
    return Table(columns, rows, id=table_id, footer=tuple(footer), note=cut_note(view, noun), empty=empty)


def report_vertices_section(report: Report, top: int | None = None) -> Section:
    """Return the "Vertices, compute sets and exchanges" section of one report: its vertex types
    (most code first), compute sets (most vertex state first) and exchanges (most code first),
    each cut to ``top`` rows (None: all) with "other" and "total" rows, and notes saying what was
    cut, which vertex type holds the most state, and (simulated) that the figures are modelled."""
    notes: list[str] = []
    tables = [_report_table(report, table, top) for table in _TABLES if len(getattr(report, table))]
    vertices = report.vertices
    if len(vertices) > 1:
        state = vertices.sort_values(["vertex_state_bytes", "name"], ascending=[False, True], kind="stable").iloc[0]
        if int(state["vertex_state_bytes"]):
            notes.append(f"Most vertex state: {state['name']} ({format_bytes(state['vertex_state_bytes'])} in "
                         f"{format_count(state['instances'])} instances).")
    if report.meta.simulated and tables:
        notes.append(SIMULATED_NOTE)
    if not tables:
        tables.append(Table((Column("Vertex type", key="name"),), (),
                            empty=empty_word(report.meta, "vertices", "No vertex types in this report.")))
    return Section(VERTICES_TITLE, tuple(tables), tuple(notes), id=VERTICES_ID)


def _comparison_table(cmp: Comparison, table: str, top: int | None) -> Table:
    """The paired rows of ``table`` cut to ``top`` rows, its cut note as the table's note."""
    header, noun, _ = _TABLES[table]
    first, second, extra = DIFFED[table]
    diff = getattr(cmp, table)
    n = limit(top)
    shown = diff if n is None else diff.iloc[:n]
    rest = diff.iloc[len(shown):]

    def tone(status: Any) -> str | None:
        return None if is_missing(status) else status_tone(str(status))

    def word(figure: str) -> str:
        return {"code_bytes": "code", "vertex_state_bytes": "state", "cycles": "cycles"}[figure]

    figure_columns = tuple(Column(f"{side.capitalize()} {word(figure)}", True, key=f"{side}_{figure}")
                           for figure in (first, second) for side in ("base", "new", "delta"))
    columns = (Column(header, key="name"), *(Column("Type", key=c) for c in extra), *figure_columns,
               Column("Status", key="status"))

    def figures(values: dict[str, Any], status_tone_: str | None) -> list[Cell]:
        return [_figure_cell(figure)(values[f"{side}_{figure}"], **({"signed": True, "tone": status_tone_}
                                                                     if side == "delta" else {}))
                for figure in (first, second) for side in ("base", "new", "delta")]

    rows = tuple(
        Row((text_cell(r["name"]), *(text_cell(r[c]) for c in extra), *figures(r, tone(r["status"])),
             status_cell(r["status"], tone(r["status"]))), {"status": str(r["status"])})
        for r in shown.to_dict("records"))
    footer: tuple[Row, ...] = ()
    if len(rest):
        sums = {f"{side}_{figure}": _total(rest, f"{side}_{figure}")
                for figure in (first, second) for side in ("base", "new", "delta")}
        footer = (Row((Cell(f"other ({len(rest):,} {noun})"), *(Cell("") for _ in extra), *figures(sums, None),
                       Cell(""))),)
    note = (f"All {len(diff):,} {noun} shown." if not len(rest) else
            f"Top {len(shown):,} of {len(diff):,} {noun} shown; {len(rest):,} more in the 'other' row.")
    return Table(columns, rows, id=f"{VERTICES_ID}-{table.replace('_', '-')}", footer=footer, note=note,
                 empty=f"no {noun} in either report")


def comparison_vertices_section(cmp: Comparison, top: int | None = None) -> Section | None:
    """Return the "Vertices, compute sets and exchanges" section of a comparison: the vertex
    types, compute sets and exchanges of either report paired by name, each the ``top`` largest
    changes first (None: all) with an "other" row, and notes saying what was cut and which report
    records none; None when neither report has any."""
    tables = tuple(_comparison_table(cmp, table, top) for table in _TABLES if len(getattr(cmp, table)))
    if not tables:
        return None
    return Section(VERTICES_TITLE, tables, _missing_sides(cmp, "vertices"), id=VERTICES_ID)


def vertices_document(obj: Report | Comparison, *, top: int | None = 20) -> Document:
    """Return the document of ``profcompare ops --vertices``: which report(s), their warnings and
    the vertices, compute sets and exchanges of a report or a comparison, each table cut to
    ``top`` rows (None or 0: all)."""
    if isinstance(obj, Comparison):
        facts, warnings = comparison_header(obj)
        facts.append(("delta", "new - base"))
        title = f"profcompare ops --vertices: {obj.base.label} (base) vs {obj.new.label} (new)"
        section = comparison_vertices_section(obj, top)
        if section is None:
            section = Section(VERTICES_TITLE, (), ("Neither report has vertex types, compute sets or exchanges.",),
                              id=VERTICES_ID)
        return Document(title, tuple(facts), warnings, (section,))
    facts, warnings = report_header(obj)
    return Document(f"profcompare ops --vertices: {obj.label}", tuple(facts), warnings,
                    (report_vertices_section(obj, top),))


def ranked_rows(obj: Report | Comparison, table: str, top: int | None = None) -> pd.DataFrame:
    """The rows of ``table`` (vertices, compute_sets or exchanges) an export holds, in the
    section's order -- a report's largest first by the figure the section ranks by, a
    comparison's largest change first -- the first ``top`` (None or 0: all)."""
    frame = getattr(obj, table)
    if not isinstance(obj, Comparison):
        frame = frame.sort_values([_TABLES[table][2], "name"], ascending=[False, True], kind="stable")
    n = limit(top)
    return (frame if n is None else frame.iloc[:n]).reset_index(drop=True)


__all__ = ["SIMULATED_NOTE", "VERTICES_ID", "VERTICES_TITLE", "comparison_vertices_section", "ranked_rows",
           "report_vertices_section", "vertices_document"]
