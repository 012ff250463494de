"""The ledger sections: for one report, the memory ledger and what is live at the
not-always-live peak; for a comparison, where the memory moved, the ledger by parameter and what
changed the peak."""

from __future__ import annotations

from typing import Any

from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison
from profcompare.model import LOCATIONS, Report
from profcompare.render.format import format_bytes, format_count
from profcompare.render.ledger_words import (
    LOCATION_WORDS,
    TONE_LEGEND,
    MOVES_SHOWN,
    location_title,
    move_sentence,
    parameter_text,
    peak_change_notes,
    steps_text,
)
from profcompare.render.sections.document import (
    Cell,
    Column,
    Section,
    Table,
    _cut_note,
    _empty_note,
    _live_steps,
    _num,
    _other_label,
    _str,
)


def _rows_text(count: int) -> str:
    return f"{count:,} row" + ("" if count == 1 else "s")


def _ledger_section(report: Report, top: int | None) -> Section:
    from profcompare.analysis.ledger import unattributed_bytes

    title = "Memory ledger"
    frame = report.ledger()
    if not len(frame):
        return Section(title, notes=(_empty_note(report.meta, "variables", "Nothing to attribute: no variables "
                                                 "and no remote buffers in this report."),))
    view = analysis.top_n(frame, top, "bytes", label_column="parameter", sum_columns=("bytes", "bytes_at_peak", "rows"))
    rows: list[tuple[Cell, ...]] = [
        (
            Cell(parameter_text(r.parameter, r.role)),
            Cell(_str(r.role)),
            Cell(LOCATION_WORDS.get(str(r.location), str(r.location))),
            _num(format_bytes(r.bytes)),
            _num(format_bytes(r.bytes_at_peak)),
            Cell(steps_text(r.first_step, r.last_step)),
            _num(format_count(r.rows)),
        )
        for r in view.shown_rows.itertuples(index=False)
    ]
    if view.has_other:
        assert view.other is not None
        m = "muted"
        rows.append((Cell(_other_label(view.cut, "ledger rows"), tone=m), Cell("", tone=m), Cell("", tone=m),
                     _num(format_bytes(view.other["bytes"]), m), _num(format_bytes(view.other["bytes_at_peak"]), m),
                     Cell("", tone=m), _num(format_count(view.other["rows"]), m)))
    table = Table.of((Column("Parameter"), Column("Role"), Column("Location"), Column("Bytes", True),
                      Column("At peak", True), Column("Steps"), Column("Rows", True)), tuple(rows))
    unattributed = frame[(frame["parameter"] == "") & (frame["role"] == "other")]
    notes = [
        _cut_note(view, "ledger rows"),
        "Bytes per replica, largest first; not-always-live: the most the rows hold at once; at peak: tile "
        "memory live at the not-always-live peak step.",
        (f"Unattributed (no parameter, role other): {format_bytes(unattributed_bytes(frame))} in "
         f"{_rows_text(int(unattributed['rows'].sum()))}." if len(unattributed) else "Every row is attributed."),
    ]
    return Section(title, (table,), tuple(notes))


def _live_at_peak_section(report: Report, top: int | None) -> Section:
    from profcompare.analysis.ledger import peak_step

    title = "Live at the not-always-live peak"
    step = peak_step(report)
    if step is None:
        return Section(title, notes=(_empty_note(report.meta, "liveness", "No program steps in this report."),))
    live = report.live_at_peak()
    program = report.liveness.loc[report.liveness["step"] == step, "program"]
    where = f"step {step}" + (f" ({program.iloc[0]})" if len(program) else "")
    if not len(live):
        return Section(title, notes=(f"No listed variable is live at the peak, {where}.",))
    view = analysis.top_n(live, top, "bytes", label_column="name", sum_columns=("bytes",))
    rows: list[tuple[Cell, ...]] = [
        (
            Cell(str(r.name)),
            Cell(parameter_text(r.parameter, r.role)),
            Cell(_str(r.role)),
            _num(format_bytes(r.bytes)),
            Cell(_live_steps(r.first_step, r.last_step, False)),
        )
        for r in view.shown_rows.itertuples(index=False)
    ]
    if view.has_other:
        assert view.other is not None
        m = "muted"
        rows.append((Cell(_other_label(view.cut, "variables"), tone=m), Cell("", tone=m), Cell("", tone=m),
                     _num(format_bytes(view.other["bytes"]), m), Cell("", tone=m)))
    table = Table.of((Column("Variable"), Column("Parameter"), Column("Role"), Column("Bytes", True),
                   Column("Live steps")), tuple(rows))
    peak_bytes = int(report.liveness["not_always_live_bytes"].max())
    listed = int(live["bytes"].sum())
    notes = [
        _cut_note(view, "variables"),
        f"At {where}: {len(live):,} variables, {format_bytes(listed)} of the peak's {format_bytes(peak_bytes)}.",
    ]
    if listed != peak_bytes:
        notes.append(f"{format_bytes(peak_bytes - listed)} of the peak is not listed in the variables table.")
    return Section(title, (table,), tuple(notes))


def _ledger_moves_section(cmp: Comparison, shown: int = MOVES_SHOWN) -> Section:
    title = "Where the memory moved"
    everything = cmp.ledger_moves(None)
    if not len(everything):
        note = "No parameter's bytes changed between the reports." if len(cmp.ledger) else \
            "Neither report attributes memory to parameters (no variables, no remote buffers)."
        return Section(title, notes=(note,))
    moves = everything.head(shown)
    notes = [
        (f"The {len(moves):,} largest of {len(everything):,} (parameter, role) moves, by bytes moved (the sum of "
         "|delta| over locations); bytes per replica." if len(everything) > len(moves)
         else f"All {len(everything):,} (parameter, role) moves, largest first; bytes per replica."),
    ]
    return Section(title, notes=tuple(notes), items=tuple(move_sentence(m) for m in moves.itertuples(index=False)))


def _ledger_cell(base: Any, new: Any, delta: Any) -> Cell:
    if not int(base) and not int(new):
        return _num("")
    if not int(delta):
        return _num(format_bytes(new))
    return _num(f"{format_bytes(base)} -> {format_bytes(new)} ({format_bytes(delta, signed=True)})")


def _tile_tone(delta: Any) -> str | None:
    """A tile-memory change costs (``bad``) or frees (``good``) tile memory."""
    delta = int(delta)
    return "bad" if delta > 0 else ("good" if delta < 0 else None)


def _ledger_by_parameter_section(cmp: Comparison, top: int | None) -> Section:
    from profcompare.analysis.ledger import TILE_LOCATIONS

    title = "Ledger by parameter"
    frame = cmp.ledger_by_parameter()
    if not len(frame):
        return Section(title, notes=("Neither report attributes memory to parameters.",))
    sums = tuple(f"{side}_{loc}" for loc in (*LOCATIONS, "tile_memory") for side in ("base", "new", "delta"))
    view = analysis.top_n(frame, top, "delta_tile_memory", label_column="parameter", sum_columns=sums, key=abs)

    def cells(r: Any, muted: bool) -> tuple[Cell, ...]:
        m = "muted" if muted else None
        out = tuple(Cell(_ledger_cell(r[f"base_{loc}"], r[f"new_{loc}"], r[f"delta_{loc}"]).text, tone=m)
                    for loc in TILE_LOCATIONS)
        out += (_num(format_bytes(r["base_tile_memory"]), m), _num(format_bytes(r["new_tile_memory"]), m),
                _num(format_bytes(r["delta_tile_memory"], signed=True), m or _tile_tone(r["delta_tile_memory"])))
        # Streaming Memory is off chip: its change is never coloured as a cost of tile memory
        return out + (Cell(_ledger_cell(r["base_streaming_memory"], r["new_streaming_memory"],
                                        r["delta_streaming_memory"]).text, tone=m),)

    rows: list[tuple[Cell, ...]] = [(Cell(parameter_text(r["parameter"])),) + cells(r, False)
                                    for r in view.shown_rows.to_dict("records")]
    if view.has_other:
        other = view.other
        assert other is not None
        rows.append((Cell(_other_label(view.cut, "parameters"), tone="muted"),) + cells(other, True))
    columns = (Column("Parameter"),) + tuple(Column(location_title(loc), True) for loc in TILE_LOCATIONS)
    columns += (Column("Base tile memory", True), Column("New tile memory", True), Column("Delta tile memory", True),
                Column(location_title("streaming_memory"), True))
    notes = (
        _cut_note(view, "parameters"),
        "Per location: base -> new (delta), bytes per replica, roles summed; one figure when unchanged. "
        "Not-always-live: the most held at once. Tile memory = always-live + not-always-live; Streaming Memory "
        "is off chip, not tile memory, and not in the tile totals.",
        TONE_LEGEND,
    )
    return Section(title, (Table.of(columns, tuple(rows)),), notes)


def _peak_composition_section(cmp: Comparison, top: int | None) -> Section:
    title = "What changed the not-always-live peak"
    frame = cmp.peak_composition()
    base_peak, new_peak = analysis.liveness_peak(cmp.base), analysis.liveness_peak(cmp.new)
    if base_peak["step"] is None and new_peak["step"] is None:
        return Section(title, notes=("Neither report records program steps.",))
    if not len(frame):
        return Section(title, notes=("No listed variable is live at either report's peak.",))
    view = analysis.top_n(frame, top, "delta_bytes", label_column="parameter",
                          sum_columns=("base_bytes", "new_bytes", "delta_bytes"), key=abs)
    rows: list[tuple[Cell, ...]] = []
    for r in view.shown_rows.itertuples(index=False):
        tone = "bad" if r.delta_bytes > 0 else ("good" if r.delta_bytes < 0 else None)
        rows.append((Cell(parameter_text(r.parameter, r.role)), Cell(_str(r.role)),
                     _num(format_bytes(r.base_bytes)), _num(format_bytes(r.new_bytes)),
                     _num(format_bytes(r.delta_bytes, signed=True), tone)))
    if view.has_other:
        other = view.other
        assert other is not None
        m = "muted"
        rows.append((Cell(_other_label(view.cut, "rows"), tone=m), Cell("", tone=m),
                     _num(format_bytes(other["base_bytes"]), m),
                     _num(format_bytes(other["new_bytes"]), m),
                     _num(format_bytes(other["delta_bytes"], signed=True), m)))
    table = Table.of((Column("Parameter"), Column("Role"), Column("Base", True), Column("New", True),
                   Column("Delta", True)), tuple(rows))
    notes = (_cut_note(view, "rows"), *peak_change_notes(base_peak, new_peak, int(frame["delta_bytes"].sum())))
    return Section(title, (table,), tuple(notes))
