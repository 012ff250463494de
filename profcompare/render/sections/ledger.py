"""The memory ledger's sections, built once for every medium (terminal, Markdown, the HTML page).

A comparison leads with "Where the memory moved" (its largest (parameter, role) moves in plain
words; the page adds a chart), then the "Memory ledger" (one row per parameter with a column per
location, then every (parameter, role, location) row, then -- when a report records its ops --
the code and cycles per (parameter, role)) and "What changed the not-always-live peak". A single
report shows its "Memory ledger" (every row, then its code and cycles) and what is "Live at the
not-always-live peak". Bytes are per replica, as everywhere. The builders make no chart: the page
attaches its own by section id.

Modules: this one (the moves and the ledger), :mod:`.ledger_rows` (every ledger row as a table,
the page's row bound and the ledger's page data), :mod:`.ledger_code` (the code and cycles table)
and :mod:`.ledger_peak` (the peak sections).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from profcompare.analysis import views as analysis
from profcompare.analysis.ledger import TILE_LOCATIONS, unattributed_bytes
from profcompare.comparison import Comparison
from profcompare.model import LOCATIONS, Report
from profcompare.render.format import format_bytes
from profcompare.render.html_model import Cell, Column, Row, Section, Table, bytes_cell
from profcompare.render.ledger_words import (
    MOVES_SHOWN,
    TONE_LEGEND,
    code_words,
    location_title,
    move_sentence,
    parameter_text,
)
from profcompare.render.sections.ledger_code import (
    comparison_ledger_code_table,
    has_ops,
    report_ledger_code_table,
)
from profcompare.render.sections.ledger_peak import (
    COMPARISON_PEAK_TITLE,
    REPORT_PEAK_TITLE,
    comparison_peak_section,
    report_peak_section,
)
from profcompare.render.sections.ledger_rows import (
    COMPARISON_EMPTY,
    LEDGER_MAX_ROWS,
    comparison_ledger_rows_table,
    cut_sentence,
    ledger_data,
    report_ledger_rows_table,
)

#: the title of the moves section
MOVES_TITLE = "Where the memory moved"

#: the title of the ledger section, a report's and a comparison's
LEDGER_TITLE = "Memory ledger"


def comparison_moves_section(cmp: Comparison, shown: int = MOVES_SHOWN, *, op_name: bool = True) -> Section:
    """The ``shown`` largest (parameter, role) moves of the comparison's ledger, each a sentence
    (:func:`~profcompare.render.ledger_words.move_sentence`), and a note saying how many there are.
    When a report records operations, the top move also says what its ops' code and cycles did
    (:func:`~profcompare.render.ledger_words.code_words`; ``op_name``: naming the op that changed
    most, which the first screen leaves to the ledger for room)."""
    everything = cmp.ledger_moves(None)
    if not len(everything):
        text = ("No parameter's bytes changed between the reports." if len(cmp.ledger)
                else "Neither report attributes memory to parameters (no variables, no remote buffers).")
        return Section(MOVES_TITLE, id="moves", text=text)
    moves = everything.head(shown)
    # a short note: the first screen of run and compare shows it (every move is in the ledger below)
    if len(everything) > len(moves):
        note = (f"The {len(moves):,} largest of {len(everything):,} (parameter, role) moves, by bytes moved (the sum "
                "of |delta| over locations); bytes per replica.")
    else:
        note = f"All {len(everything):,} (parameter, role) moves, largest first; bytes per replica."
    items = [move_sentence(m) for m in moves.itertuples(index=False)]
    if has_ops(cmp):  # the top move names what its ops' code and cycles did
        top = moves.iloc[0]
        code = cmp.ledger_code()
        row = code[(code["parameter"] == top["parameter"]) & (code["role"] == top["role"])]
        words = code_words(row.iloc[0], op_name=op_name) if len(row) else ""
        if words:
            items[0] += f"; {words}"
    return Section(MOVES_TITLE, id="moves", items=tuple(items), notes=(note,))


def report_ledger_section(report: Report, top: int | None) -> Section:
    """The ledger of one report: a lead saying what its locations mean and how much is
    unattributed, then every (parameter, role, location) row cut to ``top`` (None: all)."""
    frame = report.ledger()
    text = ("Per model parameter, where its bytes live (per replica, largest first): always-live, not-always-live "
            "(the most the rows hold at once; at peak: tile memory live at the not-always-live peak step) or "
            "Streaming Memory.")
    unattributed = frame[(frame["parameter"] == "") & (frame["role"] == "other")]
    if len(unattributed):
        rows = int(unattributed["rows"].sum())
        text += (f" Unattributed (no parameter, role other): {format_bytes(unattributed_bytes(frame))} in "
                 f"{rows:,} row{'' if rows == 1 else 's'}.")
    elif len(frame):
        text += " Every row is attributed."
    tables: tuple[Table, ...] = (report_ledger_rows_table(report, top),)
    if has_ops(report):  # the code and cycles of the ops acting on each parameter's data
        tables += (report_ledger_code_table(report, top),)
    return Section(LEDGER_TITLE, id="ledger", tables=tables, text=text)


def _location_cell(base: Any, new: Any, delta: Any, *, toned: bool = True) -> Cell:
    """One location of the per-parameter table: "base -> new (delta)", one figure when unchanged,
    blank when neither report has bytes there; sorts by the delta. ``toned``: coloured by whether
    the change costs tile memory (False for Streaming Memory, which is off chip)."""
    base, new, delta = int(base), int(new), int(delta)
    if not base and not new:
        return Cell("", None)
    tone = None if not toned else "bad" if delta > 0 else ("good" if delta < 0 else None)
    if not delta:
        return Cell(format_bytes(new), 0.0, None, f"{new:,} B in both")
    text = f"{format_bytes(base)} -> {format_bytes(new)} ({format_bytes(delta, signed=True)})"
    return Cell(text, float(delta), tone, f"base {base:,} B, new {new:,} B")


def _by_parameter_cells(r: Any) -> tuple[Cell, ...]:
    delta = int(r["delta_tile_memory"])
    tone = "bad" if delta > 0 else ("good" if delta < 0 else None)
    return (
        *(_location_cell(r[f"base_{loc}"], r[f"new_{loc}"], r[f"delta_{loc}"]) for loc in TILE_LOCATIONS),
        bytes_cell(r["base_tile_memory"]),
        bytes_cell(r["new_tile_memory"]),
        bytes_cell(delta, signed=True, tone=tone),
        # Streaming Memory is off chip: its change is never coloured as a cost of tile memory
        _location_cell(r["base_streaming_memory"], r["new_streaming_memory"], r["delta_streaming_memory"],
                       toned=False),
    )


def comparison_by_parameter_table(cmp: Comparison, top: int | None) -> Table:
    """The ledger per parameter (roles summed), largest |delta| of tile memory first, cut to
    ``top`` (None: all): a column per tile location ("base -> new (delta)"), base, new and delta
    tile memory, then Streaming Memory."""
    frame = cmp.ledger_by_parameter()
    sums = tuple(f"{side}_{loc}" for loc in (*LOCATIONS, "tile_memory") for side in ("base", "new", "delta"))
    view = analysis.top_n(frame, top, "delta_tile_memory", label_column="parameter", sum_columns=sums, key=abs)
    columns = (
        Column("Parameter", key="parameter"),
        *(Column(location_title(loc), True, key=loc) for loc in TILE_LOCATIONS),
        Column("Base tile memory", True, key="base"),
        Column("New tile memory", True, key="new"),
        Column("Delta tile memory", True, key="delta"),
        Column(location_title("streaming_memory"), True, key="streaming_memory"),
    )
    rows = []
    for r in view.shown_rows.to_dict("records"):
        label = parameter_text(r["parameter"])
        rows.append(Row((Cell(label, label), *_by_parameter_cells(r)), {"name": label}))
    footer: tuple[Row, ...] = ()
    if view.cut:
        other = view.other
        assert other is not None
        # an aggregate: its change is no one parameter's cost, so it is not coloured
        cells = tuple(replace(cell, tone=None) for cell in _by_parameter_cells(other))
        footer = (Row((Cell(f"other ({view.cut:,} parameters)"), *cells)),)
    note = ("Per parameter (roles summed), per location: base -> new (delta); one figure when unchanged. "
            "Not-always-live: the most the parameter holds at once. Tile memory = always-live + not-always-live; "
            "Streaming Memory is off chip, not tile memory, and not in the tile totals. "
            + cut_sentence(view, "parameters"))
    return Table(columns, tuple(rows), id="ledger-parameters", footer=footer, note=note, empty=COMPARISON_EMPTY)


def comparison_ledger_section(cmp: Comparison, top: int | None) -> Section:
    """The ledger of a comparison: per parameter, then every (parameter, role, location) row,
    then (when a report records operations) the code and cycles per (parameter, role), each cut
    to ``top`` (None: all), and the legend of the colours."""
    tables: tuple[Table, ...] = (comparison_by_parameter_table(cmp, top), comparison_ledger_rows_table(cmp, top))
    if has_ops(cmp):
        tables += (comparison_ledger_code_table(cmp, top),)
    return Section(LEDGER_TITLE, id="ledger", tables=tables, notes=(TONE_LEGEND,))


def with_liveness_rule(section: Section, rule: str | None) -> Section:
    """``section`` led by the liveness rule (:func:`~profcompare.render.ledger_words.liveness_rule`)
    the reports follow, for a medium with no header to state it in (the page); itself without one."""
    if not rule:
        return section
    return replace(section, text=f"Liveness: {rule}" + (f" {section.text}" if section.text else ""))


__all__ = [
    "COMPARISON_PEAK_TITLE",
    "LEDGER_MAX_ROWS",
    "LEDGER_TITLE",
    "MOVES_TITLE",
    "REPORT_PEAK_TITLE",
    "comparison_by_parameter_table",
    "comparison_ledger_rows_table",
    "comparison_ledger_section",
    "comparison_moves_section",
    "comparison_peak_section",
    "ledger_data",
    "report_ledger_rows_table",
    "report_ledger_section",
    "report_peak_section",
    "with_liveness_rule",
]
