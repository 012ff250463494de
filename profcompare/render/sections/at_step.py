"""The document of ``compare --at``: what is live at one step of each report, aligned.

Built from a :class:`~profcompare.comparison.at_step.AtStepComparison` as a :class:`Document` of
the one page model, so the terminal text and the Markdown draw the same sections: the chosen
steps and their totals (opened by the headline sentence), the live bytes per parameter and
role, the live variables, and each report's highest peaks.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from profcompare.comparison.at_step import AtStepComparison, StepSide
from profcompare.render.format import format_bytes, format_pct, is_missing, status_tone
from profcompare.render.labels import parameter_label
from profcompare.render.html_model import bytes_cell, status_cell
from profcompare.render.page.model import Cell, Column, Section, Table
from profcompare.render.sections import Document, limit
from profcompare.render.sections.header import comparison_header

#: the section titles, in document order
STEPS_TITLE = "Live at the chosen steps"
BY_PARAMETER_TITLE = "Live bytes by parameter and role"
VARIABLES_TITLE = "Live variables"
PEAKS_TITLE = "Highest not-always-live peaks"
PER_IPU_TITLE = "Not-always-live per IPU at the chosen steps"

#: how each side's step was chosen, in words
_HOW_WORDS = {
    "peak": "its not-always-live peak",
    "step": "the step asked for",
    "match": "the first program matching {selector}",
    "aligned": "aligned by program with the other report's step",
}


def _pct(base: int, new: int) -> str:
    return format_pct(100.0 * (new - base) / base) if base else "n/a"


def change_words(row: Any) -> str:
    """A (parameter, role) row's change: "layer0.weight remote_staging +588.0 KiB"."""
    return f"{parameter_label(row['parameter'])} {row['role']} {format_bytes(row['delta_bytes'], signed=True)}"


def at_step_headline(result: AtStepComparison) -> str:
    """The view in one sentence: where each step is, the not-always-live bytes there and the
    largest change, e.g. "At the peak, step 8 (base, layer3/bwd/matmul) / 16 (new,
    optimizer/adam): not-always-live 214.3 KiB -> 2.4 MiB (+1033.2%); largest change:
    layer0.weight remote_staging +588.0 KiB"."""
    base, new = result.base, result.new
    where = f"step {base.step} (base, {base.choice.program}) / {new.step} (new, {new.choice.program})"
    if base.choice.how == "peak" and new.choice.how == "peak":
        where = f"the peak, {where}"
    change = result.largest_change
    largest = change_words(change) if change is not None else "no listed variable changed"
    return (f"At {where}: not-always-live {format_bytes(base.not_always_live_bytes)} -> "
            f"{format_bytes(new.not_always_live_bytes)} ({_pct(base.not_always_live_bytes, new.not_always_live_bytes)}); "
            f"largest change: {largest}")


def _side_line(role: str, side: StepSide, selector: str) -> str:
    how = _HOW_WORDS[side.choice.how].format(selector=repr(selector))
    return (f"{role}: step {side.step}, {side.choice.program} ({side.choice.program_type}), {how}")


def _delta_cells(base: Any, new: Any) -> tuple[Cell, Cell, Cell]:
    """Base, new and delta bytes (exact figures as sort keys, as every table's): growth costs."""
    delta = int(new) - int(base)
    tone = "bad" if delta > 0 else ("good" if delta < 0 else None)
    return bytes_cell(base), bytes_cell(new), bytes_cell(delta, signed=True, tone=tone)


def _steps_section(result: AtStepComparison) -> Section:
    base, new = result.base, result.new
    rows = [
        ("Not-always-live (liveness)", base.not_always_live_bytes, new.not_always_live_bytes),
        ("Always-live", base.always_live_bytes, new.always_live_bytes),
        ("Total live", base.total_bytes, new.total_bytes),
        ("Listed variables live", base.listed_bytes, new.listed_bytes),
    ]
    table = Table.of((Column("Memory"), Column("Base", True), Column("New", True), Column("Delta", True),
                      Column("Delta %", True)),
                     ((Cell(label), *_delta_cells(b, n), Cell(_pct(b, n))) for label, b, n in rows))
    notes = ["Bytes per replica. Always-live memory (code, vertex state, constants, always-live variables) is live at "
             "every step; not-always-live is the liveness table's figure at the step."]
    for role, side in (("base", base), ("new", new)):
        unlisted = side.not_always_live_bytes - side.listed_bytes
        if unlisted > 0:
            notes.append(f"At {role}'s step, {format_bytes(unlisted)} of the not-always-live bytes are memory the "
                         "variables table does not list.")
    return Section(STEPS_TITLE, (table,), tuple(notes),
                   items=(_side_line("base", base, result.selector), _side_line("new", new, result.selector)),
                   text=at_step_headline(result))


def _status_cell(status: Any) -> Cell:
    text = "" if is_missing(status) else str(status)
    return status_cell(text, status_tone(text))


def _cut(frame: pd.DataFrame, top: int | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The first ``top`` rows of an already ordered frame (all for None) and the rest."""
    if top is None or top >= len(frame):
        return frame, frame.iloc[:0]
    return frame.iloc[:top], frame.iloc[top:]


def _cut_note(shown: int, total: int, noun: str) -> str:
    if shown == total:
        return f"All {total:,} {noun} shown."
    return f"Top {shown:,} of {total:,} {noun} shown; {total - shown:,} more in the 'other' row."


def _other_row(rest: pd.DataFrame, noun: str, before: int, after: int) -> tuple[Cell, ...]:
    """The muted "other" row summing ``rest``: a label, ``before`` blank cells, the three byte
    cells, ``after`` blank cells."""
    muted = "muted"
    blank = Cell("", tone=muted)
    return (Cell(f"other ({len(rest):,} {noun})", tone=muted), *(blank,) * before,
            Cell(format_bytes(int(rest["base_bytes"].sum())), tone=muted),
            Cell(format_bytes(int(rest["new_bytes"].sum())), tone=muted),
            Cell(format_bytes(int(rest["delta_bytes"].sum()), signed=True), tone=muted), *(blank,) * after)


def _by_parameter_section(result: AtStepComparison, top: int | None) -> Section:
    frame = result.by_parameter
    if not len(frame):
        return Section(BY_PARAMETER_TITLE, notes=("No listed variable is live at either step.",))
    shown, rest = _cut(frame, top)
    rows: list[tuple[Cell, ...]] = []
    for r in shown.to_dict("records"):
        rows.append((Cell(parameter_label(r["parameter"])), Cell(str(r["role"])),
                     *_delta_cells(r["base_bytes"], r["new_bytes"]), _status_cell(r["status"])))
    if len(rest):
        rows.append(_other_row(rest, "rows", 1, 1))
    table = Table.of((Column("Parameter"), Column("Role"), Column("Base", True), Column("New", True),
                      Column("Delta", True), Column("Status")), rows)
    listed = int(frame["delta_bytes"].sum())
    notes = (_cut_note(len(shown), len(frame), "rows"),
             f"These rows change the live bytes by {format_bytes(listed, signed=True)}; added = live only at new's "
             "step, removed = live only at base's.")
    return Section(BY_PARAMETER_TITLE, (table,), notes)


def _steps_text(first: Any, last: Any) -> str:
    if is_missing(first) or is_missing(last):
        return ""
    return f"{int(first)}-{int(last)}"


def _variables_section(result: AtStepComparison, top: int | None) -> Section:
    frame = result.variables
    if not len(frame):
        return Section(VARIABLES_TITLE, notes=("No listed variable is live at either step.",))
    shown, rest = _cut(frame, top)
    rows: list[tuple[Cell, ...]] = []
    for r in shown.to_dict("records"):
        rows.append((Cell(str(r["name"])), Cell(parameter_label(r["parameter"])), Cell(str(r["role"])),
                     *_delta_cells(r["base_bytes"], r["new_bytes"]), _status_cell(r["status"]),
                     Cell(_steps_text(r["base_first_step"], r["base_last_step"])),
                     Cell(_steps_text(r["new_first_step"], r["new_last_step"]))))
    if len(rest):
        rows.append(_other_row(rest, "variables", 2, 3))
    table = Table.of((Column("Variable"), Column("Parameter"), Column("Role"), Column("Base", True),
                      Column("New", True), Column("Delta", True), Column("Status"), Column("Base steps"),
                      Column("New steps")), rows)
    notes = (_cut_note(len(shown), len(frame), "variables"),
             "Paired on parameter, role and name (graph scopes and numeric suffixes ignored); steps: the "
             "first-last steps each side's variable is live.")
    return Section(VARIABLES_TITLE, (table,), notes)


def _peaks_section(result: AtStepComparison) -> Section:
    def cells(frame: pd.DataFrame, rank: int) -> tuple[Cell, Cell, Cell]:
        hit = frame[frame["rank"] == rank]
        if not len(hit):
            return Cell(""), Cell(""), Cell("")
        row = hit.iloc[0]
        return Cell(str(int(row["step"]))), Cell(str(row["program"])), Cell(format_bytes(row["not_always_live_bytes"]))

    ranks = max(len(result.base_peaks), len(result.new_peaks))
    if not ranks:
        return Section(PEAKS_TITLE, notes=("Neither report records program steps.",))
    table = Table.of((Column("Rank", True), Column("Base step", True), Column("Base program"), Column("Base", True),
                      Column("New step", True), Column("New program"), Column("New", True)),
                     ((Cell(str(rank)), *cells(result.base_peaks, rank), *cells(result.new_peaks, rank))
                      for rank in range(1, ranks + 1)))
    note = ("Each report's highest local peaks of not-always-live bytes (a plateau counts once, at its first step); "
            "look at one with --at STEP.")
    return Section(PEAKS_TITLE, (table,), (note,))


def _per_ipu_section(result: AtStepComparison) -> Section | None:
    frame = result.per_ipu
    if not len(frame):
        return None
    table = Table.of((Column("IPU", True), Column("Base", True), Column("New", True), Column("Delta", True)),
                     ((Cell(str(int(r["ipu"]))), *_delta_cells(r["base_bytes"], r["new_bytes"]))
                      for r in frame.to_dict("records")))
    return Section(PER_IPU_TITLE, (table,), ("Each IPU of one replica at each report's step; an IPU a report does "
                                             "not record reads 0 B.",))


def at_step_document(result: AtStepComparison, *, top: int | None = 20) -> Document:
    """The document of ``compare --at``: which report is base and which new, the comparison's
    warnings, then the sections :data:`STEPS_TITLE` (opened by :func:`at_step_headline`),
    :data:`PER_IPU_TITLE` (only where a liveness table has an ``ipu`` column), :data:`BY_PARAMETER_TITLE`, :data:`VARIABLES_TITLE` and :data:`PEAKS_TITLE`. ``top`` cuts
    the two long tables (None or 0: every row)."""
    top = limit(top)
    cmp = result.comparison
    base, new = cmp.base.meta, cmp.new.meta
    facts, warnings = comparison_header(cmp)
    facts.append(("at", f"{result.selector} (delta = new - base; bytes per replica)"))
    per_ipu = _per_ipu_section(result)
    sections = (_steps_section(result), *((per_ipu,) if per_ipu is not None else ()),
                _by_parameter_section(result, top), _variables_section(result, top), _peaks_section(result))
    title = f"profcompare live at a step: {base.label} (base) vs {new.label} (new)"
    return Document(title, tuple(facts), warnings, sections)


__all__ = [
    "BY_PARAMETER_TITLE",
    "PEAKS_TITLE",
    "PER_IPU_TITLE",
    "STEPS_TITLE",
    "VARIABLES_TITLE",
    "at_step_document",
    "at_step_headline",
    "change_words",
]
