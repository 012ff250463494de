"""What a human-readable report says, independent of how it is drawn.

The text (terminal) and markdown renderers show the same content; this module prepares it
once, as plain frozen dataclasses (:class:`Document` -> :class:`Section` -> :class:`Table` of
formatted :class:`Cell` strings), and each renderer only draws it. All numbers are formatted
here with :mod:`profcompare.render.format`, so both outputs read alike.

Every table is cut to the top N rows; when rows were cut the table ends with one "other" row
(muted) aggregating them, and a note says what was cut.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from profcompare import analysis
from profcompare.analysis import TopN
from profcompare.compare import STATUSES, Comparison
from profcompare.model import METRICS, Report, ReportMeta, variables_convention
from profcompare.render.ipu_sections import comparison_ipu_section, report_ipu_section
from profcompare.render.format import (
    describe_report,
    describe_target,
    format_bytes,
    format_count,
    format_cycles,
    format_metric,
    format_pct,
    is_missing,
    metric_label,
    metric_tone,
    status_tone,
)
from profcompare.render.ledger_words import (
    LOCATION_WORDS,
    MOVES_SHOWN,
    location_title,
    move_sentence,
    parameter_text,
    peak_change_notes,
    peak_text,
    steps_text,
)

#: tones a cell may carry: growth that costs ("bad"), savings ("good"), aggregate rows ("muted")
TONES = ("bad", "good", "muted")


@dataclass(frozen=True)
class Cell:
    """One formatted table cell; ``tone`` is None or one of :data:`TONES`."""

    text: str
    tone: str | None = None


@dataclass(frozen=True)
class Column:
    """A table column: its header and whether it holds numbers (drawn right-aligned)."""

    header: str
    numeric: bool = False


@dataclass(frozen=True)
class Table:
    """A table of formatted cells (every row has one cell per column)."""

    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]


@dataclass(frozen=True)
class Section:
    """A titled part of a document: plain ``lines`` (a list: one statement each), an optional
    table, then note lines."""

    title: str
    table: Table | None = None
    notes: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class Document:
    """A whole human-readable report.

    ``facts`` are (key, value) header lines (which report, from where, for which device);
    ``warnings`` are lines a reader must not miss (out of memory, simulated vs hardware).
    """

    title: str
    facts: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]
    sections: tuple[Section, ...]


@dataclass(frozen=True, eq=False)
class VariablesView:
    """The ``variables`` command's result: a report's variables filtered, sorted and cut.

    ``view`` comes from :func:`profcompare.analysis.variables_view`; the other fields record how
    it was asked for, so renderers can say so.
    """

    report: Report
    view: TopN
    sort: str = "bytes"
    filter_regex: str | None = None
    always_live: bool | None = None


def limit(top: int | None) -> int | None:
    """Return the row limit for ``top``: None (all rows) when ``top`` is None or 0."""
    if top is None or top <= 0:
        return None
    return int(top)


def _num(text: str, tone: str | None = None) -> Cell:
    return Cell(text, tone)


def _other_label(cut: int, noun: str) -> str:
    return f"other ({cut:,} {noun})"


def _cut_note(view: TopN, noun: str, total_bytes: Any = None) -> str:
    if not view.cut:
        return f"All {view.total:,} {noun} shown."
    note = f"Top {view.shown:,} of {view.total:,} {noun} shown; {view.cut:,} more in the 'other' row"
    if total_bytes is not None:
        note += f" ({format_bytes(total_bytes)})"
    return note + "."


def _pct_of(delta: Any, base: Any) -> float:
    if is_missing(delta) or is_missing(base) or float(base) == 0:
        return float("nan")
    return 100.0 * float(delta) / float(base)


def _str(value: Any) -> str:
    return "" if is_missing(value) else str(value)


#: what each optional Report table records, for "not in this report" notes
_TABLE_WHAT = {
    "tiles": "per-tile memory",
    "categories": "memory categories",
    "variables": "variables",
    "liveness": "liveness (program steps)",
    "code": "code attribution",
    "execution": "an execution profile",
    "remote_buffers": "remote buffers (Streaming Memory)",
}


def _empty_note(meta: ReportMeta, table: str, empty: str) -> str:
    """The note for an empty table: ``empty`` when the report records the table, else that it
    does not (an SDK profile may lack a table: that is not the same as having none)."""
    if table not in meta.capabilities:
        return f"This report does not record {_TABLE_WHAT[table]}."
    return empty


def _missing_sides(cmp: Comparison, table: str) -> tuple[str, ...]:
    """Notes for the sides of a comparison that do not record ``table`` (their values read 0)."""
    return tuple(
        f"The {role} report does not record {_TABLE_WHAT[table]}; its side reads 0."
        for role, meta in (("base", cmp.base.meta), ("new", cmp.new.meta))
        if table not in meta.capabilities
    )


# --------------------------------------------------------------------------- one report


def _report_facts(meta: ReportMeta, role: str = "report") -> list[tuple[str, str]]:
    facts = [(role, describe_report(meta))]
    if meta.source:
        facts.append((f"{role} source" if role != "report" else "source", meta.source))
    return facts


def _workload_fact(meta: ReportMeta) -> str | None:
    if not meta.workload and not meta.config:
        return None
    parts = []
    if meta.workload:
        parts.append(meta.workload + (f" {meta.variant}" if meta.variant else ""))
    if meta.config:
        parts.append(", ".join(f"{k}={v}" for k, v in sorted(meta.config.items())))
    return "; ".join(parts)


def _simulated_warning(meta: ReportMeta, role: str) -> str | None:
    if meta.simulated:
        name = "This report" if role == "report" else f"The {role} report"
        return (
            f"SIMULATED: {name} comes from the profcompare simulator's model of a Poplar compile, "
            "not from Poplar; treat its figures as estimates."
        )
    return None


def _oom_warning(meta: ReportMeta, role: str) -> str | None:
    if meta.oom:
        name = "This report" if role == "report" else f"The {role} report"
        return f"OUT OF MEMORY: {name}'s program does not fit in tile memory."
    return None


CONFIDENCE_LEGEND = (
    "Confidence: exact = follows from the program (shapes, dtypes, replicas); modelled = rests on the "
    "simulator's model constants (code size, layout, cycles, time; see docs/ipu-model.md), an estimate, "
    "not a measurement; measured = read from a real Poplar profile."
)


def _confidence_cell(level: str) -> Cell:
    return Cell(level, "muted" if level == "modelled" else None)


def _summary_section(report: Report) -> Section:
    summary = report.summary()
    confidence = report.confidence()
    rows = tuple(
        (Cell(metric_label(m)), _num(format_metric(m, summary[m])), _confidence_cell(confidence[m])) for m in METRICS
    )
    table = Table((Column("Metric"), Column("Value", numeric=True), Column("Confidence")), rows)
    notes = []
    if is_missing(summary["cycles_per_step"]):
        notes.append("Cycles and throughput need an execution profile, which this report does not have.")
    notes.append(CONFIDENCE_LEGEND)
    return Section("Summary", table, tuple(notes))


def _categories_section(report: Report) -> Section:
    breakdown = analysis.category_breakdown(report)
    if not len(breakdown):
        return Section("Memory by category", None, (_empty_note(report.meta, "categories", "No memory categories in this report."),))
    rows = tuple(
        (Cell(str(r.category)), Cell(str(r.group)), _num(format_bytes(r.bytes)), _num(format_pct(r.pct, signed=False)))
        for r in breakdown.itertuples(index=False)
    )
    table = Table((Column("Category"), Column("Group"), Column("Bytes", True), Column("Share", True)), rows)
    return Section("Memory by category", table, (f"Total over categories: {format_bytes(breakdown['bytes'].sum())}.",))


def _live_steps(first: Any, last: Any, always_live: Any) -> str:
    if always_live is True:
        return "always"
    if is_missing(first) or is_missing(last):
        return ""
    return f"{int(first)}-{int(last)}"


def _variables_table(view: TopN) -> Table:
    rows: list[tuple[Cell, ...]] = []
    for r in view.shown_rows.itertuples(index=False):
        rows.append(
            (
                Cell(str(r.name)),
                Cell(_str(r.kind)),
                _num(format_bytes(r.bytes)),
                Cell("yes" if bool(r.always_live) else "no"),
                Cell(_str(r.dtype)),
                Cell(_str(r.shape)),
                _num(format_count(r.tiles)),
                Cell(_live_steps(r.first_step, r.last_step, bool(r.always_live))),
            )
        )
    if view.has_other:
        other = view.other
        assert other is not None
        muted = "muted"
        rows.append(
            (Cell(_other_label(view.cut, "variables"), muted), Cell("", muted), _num(format_bytes(other["bytes"]), muted))
            + tuple(Cell("", muted) for _ in range(5))
        )
    columns = (
        Column("Variable"),
        Column("Kind"),
        Column("Bytes", True),
        Column("Always-live"),
        Column("Dtype"),
        Column("Shape"),
        Column("Tiles", True),
        Column("Live steps"),
    )
    return Table(columns, tuple(rows))


def _variables_section(report: Report, top: int | None) -> Section:
    view = analysis.variables_view(report, top=top)
    if not view.total:
        return Section("Largest variables", None, (_empty_note(report.meta, "variables", "No variables in this report."),))
    other_bytes = view.other["bytes"] if view.other is not None else None
    return Section("Largest variables", _variables_table(view), (_cut_note(view, "variables", other_bytes),))


def _liveness_section(report: Report) -> Section:
    peak = analysis.liveness_peak(report)
    if peak["step"] is None:
        return Section("Liveness", None, (_empty_note(report.meta, "liveness", "No program steps in this report."),))
    notes = (
        (
            f"Not-always-live memory peaks at {format_bytes(peak['not_always_live_bytes'])} in step {peak['step']} "
            f"({peak['program']}, {peak['program_type']})."
        ),
        (
            f"Always-live memory: {format_bytes(peak['always_live_bytes'])}; "
            f"peak liveness (always-live + not-always-live peak): {format_bytes(peak['peak_liveness_bytes'])}."
        ),
    )
    return Section("Liveness", None, notes)


def _tiles_section(report: Report, top: int | None) -> Section:
    worst = min(top or 10, 10)
    stats = analysis.tile_stats(report, worst=worst)
    if not stats["tiles"]:
        return Section("Tiles", None, (_empty_note(report.meta, "tiles", "No tiles in this report."),))
    notes = (
        (
            f"{stats['tiles']:,} tiles of {format_bytes(stats['bytes_per_tile'])}: "
            f"min {format_bytes(stats['min_bytes'])}, median {format_bytes(stats['median_bytes'])}, "
            f"max {format_bytes(stats['max_bytes'])}; {stats['tiles_over_budget']:,} over budget."
        ),
    )
    rows = tuple(
        (
            _num(str(int(r.tile))),
            _num(str(int(r.ipu))),
            _num(format_bytes(r.bytes), "bad" if r.bytes > stats["bytes_per_tile"] else None),
            _num(format_pct(r.pct_of_budget, signed=False)),
            _num(format_bytes(r.always_live_bytes)),
            _num(format_bytes(r.not_always_live_peak_bytes)),
        )
        for r in stats["worst_tiles"].itertuples(index=False)
    )
    table = Table(
        (
            Column("Tile", True),
            Column("IPU", True),
            Column("Bytes", True),
            Column("Of budget", True),
            Column("Always-live", True),
            Column("Not-always-live peak", True),
        ),
        rows,
    )
    return Section(f"Fullest tiles (top {len(rows)})", table, notes)


def _code_section(report: Report, top: int | None) -> Section:
    code = analysis.code_by_program(report)
    if not len(code):
        return Section("Code by program", None, (_empty_note(report.meta, "code", "No code attribution in this report."),))
    view = analysis.top_n(code, top, "code_bytes", label_column="name", sum_columns=("code_bytes",))
    rows: list[tuple[Cell, ...]] = [
        (Cell(str(r.name)), Cell(_str(r.type)), _num(format_bytes(r.code_bytes)))
        for r in view.shown_rows.itertuples(index=False)
    ]
    if view.has_other:
        assert view.other is not None
        rows.append((Cell(_other_label(view.cut, "programs"), "muted"), Cell("", "muted"),
                     _num(format_bytes(view.other["code_bytes"]), "muted")))
    table = Table((Column("Program"), Column("Type"), Column("Code bytes", True)), tuple(rows))
    return Section("Code by program", table, (_cut_note(view, "programs"),))


def _remote_section(report: Report, top: int | None) -> Section:
    remote = report.remote_buffers
    title = "Streaming Memory (remote buffers)"
    if not len(remote):
        note = _empty_note(report.meta, "remote_buffers", "No remote buffers: nothing is kept in Streaming Memory.")
        return Section(title, None, (note,))
    view = analysis.top_n(remote, top, "bytes", label_column="name", sum_columns=("bytes", "entries"))
    rows: list[tuple[Cell, ...]] = [
        (
            Cell(str(r.name)),
            _num(format_count(r.entries)),
            Cell(_str(r.shape)),
            Cell(_str(r.dtype)),
            Cell("yes" if bool(r.sharded) else "no"),
            _num(format_bytes(r.bytes)),
        )
        for r in view.shown_rows.itertuples(index=False)
    ]
    if view.has_other:
        assert view.other is not None
        m = "muted"
        rows.append((Cell(_other_label(view.cut, "buffers"), m), _num(format_count(view.other["entries"]), m),
                     Cell("", m), Cell("", m), Cell("", m), _num(format_bytes(view.other["bytes"]), m)))
    table = Table(
        (Column("Buffer"), Column("Entries", True), Column("Entry shape"), Column("Dtype"), Column("Sharded"),
         Column("Bytes", True)),
        tuple(rows),
    )
    notes = (
        (
            f"Total per replica: {format_bytes(remote['bytes'].sum())} in {len(remote):,} buffers "
            f"({int(remote['sharded'].sum()):,} replica-sharded). Streaming Memory is not tile memory."
        ),
    )
    return Section(title, table, notes)


def _execution_section(report: Report) -> Section:
    phases = analysis.execution_by_phase(report)
    title = "Execution cycles by phase"
    if not len(phases):
        return Section(title, None, (_empty_note(report.meta, "execution", "No execution profile in this report."),))
    rows = tuple(
        (Cell(str(r.phase)), _num(format_cycles(r.cycles)), _num(format_pct(r.pct, signed=False)))
        for r in phases.itertuples(index=False)
    )
    table = Table((Column("Phase"), Column("Cycles per step", True), Column("Share", True)), rows)
    return Section(title, table, (f"Total: {format_cycles(phases['cycles'].sum())} cycles per step.",))


def _rows_text(count: int) -> str:
    return f"{count:,} row" + ("" if count == 1 else "s")


def _ledger_section(report: Report, top: int | None) -> Section:
    from profcompare.ledger import unattributed_bytes

    title = "Memory ledger"
    frame = report.ledger()
    if not len(frame):
        return Section(title, None, (_empty_note(report.meta, "variables", "Nothing to attribute: no variables "
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
        rows.append((Cell(_other_label(view.cut, "ledger rows"), m), Cell("", m), Cell("", m),
                     _num(format_bytes(view.other["bytes"]), m), _num(format_bytes(view.other["bytes_at_peak"]), m),
                     Cell("", m), _num(format_count(view.other["rows"]), m)))
    table = Table(
        (Column("Parameter"), Column("Role"), Column("Location"), Column("Bytes", True), Column("At peak", True),
         Column("Steps"), Column("Rows", True)),
        tuple(rows),
    )
    unattributed = frame[(frame["parameter"] == "") & (frame["role"] == "other")]
    notes = [
        _cut_note(view, "ledger rows"),
        "Bytes per replica, largest first; not-always-live: the most the rows hold at once; at peak: tile "
        "memory live at the not-always-live peak step.",
        (f"Unattributed (no parameter, role other): {format_bytes(unattributed_bytes(frame))} in "
         f"{_rows_text(int(unattributed['rows'].sum()))}." if len(unattributed) else "Every row is attributed."),
    ]
    return Section(title, table, tuple(notes))


def _live_at_peak_section(report: Report, top: int | None) -> Section:
    from profcompare.ledger import peak_step

    title = "Live at the not-always-live peak"
    step = peak_step(report)
    if step is None:
        return Section(title, None, (_empty_note(report.meta, "liveness", "No program steps in this report."),))
    live = report.live_at_peak()
    program = report.liveness.loc[report.liveness["step"] == step, "program"]
    where = f"step {step}" + (f" ({program.iloc[0]})" if len(program) else "")
    if not len(live):
        return Section(title, None, (f"No listed variable is live at the peak, {where}.",))
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
        rows.append((Cell(_other_label(view.cut, "variables"), m), Cell("", m), Cell("", m),
                     _num(format_bytes(view.other["bytes"]), m), Cell("", m)))
    table = Table((Column("Variable"), Column("Parameter"), Column("Role"), Column("Bytes", True),
                   Column("Live steps")), tuple(rows))
    peak_bytes = int(report.liveness["not_always_live_bytes"].max())
    listed = int(live["bytes"].sum())
    notes = [
        _cut_note(view, "variables"),
        f"At {where}: {len(live):,} variables, {format_bytes(listed)} of the peak's {format_bytes(peak_bytes)}.",
    ]
    if listed != peak_bytes:
        notes.append(f"{format_bytes(peak_bytes - listed)} of the peak is not listed in the variables table.")
    return Section(title, table, tuple(notes))


_CONVENTION_TEXT = {
    "always_live": "model state always-live (as for variables created with initial values)",
    "written_from_host": "model state not always-live (written from the host, live from that step, as popxl does)",
}


def report_document(report: Report, *, top: int | None = 20) -> Document:
    """Return the document for one report (``show``): header facts, warnings and sections.

    Sections: Summary, Memory ledger, Live at the not-always-live peak, Memory by category,
    Largest variables, Liveness, Fullest tiles, Code by program, Streaming Memory (remote
    buffers), Execution cycles by phase. ``top`` cuts the
    long tables (None or 0 = all rows).
    """
    top = limit(top)
    meta = report.meta
    facts = _report_facts(meta)
    facts.append(("target", describe_target(meta)))
    workload = _workload_fact(meta)
    if workload:
        facts.append(("workload", workload))
    if meta.created:
        facts.append(("created", meta.created))
    convention = _CONVENTION_TEXT.get(variables_convention(report.variables))
    if convention:
        facts.append(("variables", convention))
    warnings = [w for w in (_oom_warning(meta, "report"), _simulated_warning(meta, "report")) if w]
    sections = (
        _summary_section(report),
        _ledger_section(report, top),
        _live_at_peak_section(report, top),
        _categories_section(report),
        _variables_section(report, top),
        _liveness_section(report),
        _tiles_section(report, top),
        _code_section(report, top),
        _remote_section(report, top),
        _execution_section(report),
    )
    ipu_section = report_ipu_section(report)  # only with more than one IPU per replica
    if ipu_section is not None:
        sections = (sections[0], ipu_section, *sections[1:])
    return Document(f"profcompare report: {meta.label}", tuple(facts), tuple(warnings), sections)


def variables_document(result: VariablesView) -> Document:
    """Return the document for the ``variables`` command: header facts and one variables table."""
    meta = result.report.meta
    facts = _report_facts(meta)
    how = [f"sorted by {result.sort}"]
    if result.filter_regex is not None:
        how.append(f"names matching /{result.filter_regex}/")
    if result.always_live is not None:
        how.append("always-live only" if result.always_live else "not-always-live only")
    facts.append(("selection", ", ".join(how)))
    warnings = [w for w in (_oom_warning(meta, "report"), _simulated_warning(meta, "report")) if w]
    view = result.view
    if not view.total:
        section = Section("Variables", None, (_empty_note(meta, "variables", "No variables match."),))
    else:
        other_bytes = view.other["bytes"] if view.other is not None else None
        shown_bytes = int(view.rows["bytes"].sum())
        section = Section(
            "Variables",
            _variables_table(view),
            (_cut_note(view, "variables", other_bytes), f"Total of the selection: {format_bytes(shown_bytes)}."),
        )
    return Document(f"profcompare variables: {meta.label}", tuple(facts), tuple(warnings), (section,))


# --------------------------------------------------------------------------- two reports


def _status_cell(status: Any, *, higher_is_better: bool = False) -> Cell:
    text = _str(status)
    return Cell(text, status_tone(text, higher_is_better=higher_is_better))


def _delta_cells(base: Any, new: Any, delta: Any, pct: Any, status: Any, fmt: Any, *,
                 higher_is_better: bool = False) -> tuple[Cell, ...]:
    tone = status_tone(_str(status), higher_is_better=higher_is_better)
    return (
        _num(fmt(base)),
        _num(fmt(new)),
        _num(fmt(delta, signed=True), tone),
        _num(format_pct(pct), tone),
        _status_cell(status, higher_is_better=higher_is_better),
    )


_DELTA_COLUMNS = (Column("Base", True), Column("New", True), Column("Delta", True), Column("Delta %", True),
                  Column("Status"))


def _status_counts(statuses: pd.Series) -> str:
    counts = statuses.astype(str).value_counts()
    return ", ".join(f"{int(counts.get(s, 0)):,} {s}" for s in STATUSES)


def _comparison_summary_section(cmp: Comparison) -> Section:
    rows = []
    for metric in cmp.summary.index:
        r = cmp.summary.loc[metric]

        def fmt(value: Any, *, signed: bool = False, _m: str = str(metric)) -> str:
            return format_metric(_m, value, signed=signed)

        tone = metric_tone(str(metric), _str(r["status"]))
        rows.append(
            (
                Cell(metric_label(str(metric))),
                _num(fmt(r["base"])),
                _num(fmt(r["new"])),
                _num(fmt(r["delta"], signed=True), tone),
                _num(format_pct(r["delta_pct"]), tone),
                Cell(_str(r["status"]), tone),
                _confidence_cell(_str(r["confidence"])),
            )
        )
    table = Table((Column("Metric"),) + _DELTA_COLUMNS + (Column("Confidence"),), tuple(rows))
    return Section("Summary", table, (CONFIDENCE_LEGEND,))


def _comparison_categories_section(cmp: Comparison) -> Section:
    cats = cmp.categories
    if len(cats):
        cats = cats[(cats["base_bytes"] != 0) | (cats["new_bytes"] != 0)]
    if not len(cats):
        return Section("Memory by category", None, ("No memory categories in either report.", *_missing_sides(cmp, "categories")))
    rows = tuple(
        (Cell(str(r.category)), Cell(_str(r.group)))
        + _delta_cells(r.base_bytes, r.new_bytes, r.delta_bytes, r.delta_pct, r.status, format_bytes)
        for r in cats.itertuples(index=False)
    )
    table = Table((Column("Category"), Column("Group")) + _DELTA_COLUMNS, rows)
    return Section("Memory by category", table, _missing_sides(cmp, "categories"))


def _aggregate_row(view: TopN, label: str, n_text_columns: int, sums: Sequence[str], fmt: Any,
                   trailing: int = 0) -> tuple[Cell, ...]:
    other = view.other
    assert other is not None
    m = "muted"
    base, new, delta = (other[c] for c in sums)
    cells = [Cell(label, m)] + [Cell("", m) for _ in range(n_text_columns - 1)]
    cells += [_num(fmt(base), m), _num(fmt(new), m), _num(fmt(delta, signed=True), m),
              _num(format_pct(_pct_of(delta, base)), m), Cell("", m)]
    cells += [Cell("", m) for _ in range(trailing)]
    return tuple(cells)


def comparison_variables_view(cmp: Comparison, top: int | None) -> TopN:
    """Return the variable diff cut to the ``top`` largest changes (by |delta_bytes|, then name).

    Rows are :attr:`Comparison.variables` rows; the "other" row sums base_bytes, new_bytes and
    delta_bytes of the cut rows. ``top`` None or 0 keeps all rows.
    """
    return cmp.top("variables", limit(top))


def _match_text(r: Any) -> str:
    match = _str(r.match)
    if match == "normalised" and _str(r.base_name) and _str(r.new_name) and r.base_name != r.new_name:
        return f"normalised (base: {r.base_name})"
    return match


def _comparison_variables_section(cmp: Comparison, top: int | None) -> Section:
    title = "Variables (largest changes)"
    if not len(cmp.variables):
        return Section(title, None, ("No variables in either report.", *_missing_sides(cmp, "variables")))
    view = comparison_variables_view(cmp, top)
    rows: list[tuple[Cell, ...]] = []
    for r in view.shown_rows.itertuples(index=False):
        rows.append(
            (Cell(str(r.name)), Cell(_str(r.kind)))
            + _delta_cells(r.base_bytes, r.new_bytes, r.delta_bytes, r.delta_pct, r.status, format_bytes)
            + (Cell(_match_text(r)),)
        )
    if view.has_other:
        rows.append(_aggregate_row(view, _other_label(view.cut, "variables"), 2,
                                   ("base_bytes", "new_bytes", "delta_bytes"), format_bytes, trailing=1))
    table = Table((Column("Variable"), Column("Kind")) + _DELTA_COLUMNS + (Column("Match"),), tuple(rows))
    notes = (
        _cut_note(view, "variables"),
        f"Status over all variables: {_status_counts(cmp.variables['status'])}.",
        *_missing_sides(cmp, "variables"),
    )
    return Section(title, table, notes)


def _side_by_side(label: str, base: Any, new: Any, fmt: Any) -> tuple[Cell, ...]:
    delta = float("nan") if is_missing(base) or is_missing(new) else float(new) - float(base)
    return (Cell(label), _num(fmt(base)), _num(fmt(new)), _num(fmt(delta, signed=True)),
            _num(format_pct(_pct_of(delta, base))))


_SIDE_COLUMNS = (Column("Base", True), Column("New", True), Column("Delta", True), Column("Delta %", True))


def _comparison_liveness_section(cmp: Comparison) -> Section:
    base, new = analysis.liveness_peak(cmp.base), analysis.liveness_peak(cmp.new)
    rows = (
        _side_by_side("Always-live", base["always_live_bytes"], new["always_live_bytes"], format_bytes),
        _side_by_side("Not-always-live peak", base["not_always_live_bytes"], new["not_always_live_bytes"], format_bytes),
        _side_by_side("Peak liveness", base["peak_liveness_bytes"], new["peak_liveness_bytes"], format_bytes),
        _side_by_side("Program steps", len(cmp.base.liveness), len(cmp.new.liveness), format_count),
    )
    table = Table((Column("Quantity"),) + _SIDE_COLUMNS, rows)
    notes = (
        f"Not-always-live peak: base at {peak_text(base)}, new at {peak_text(new)}.",
        *_missing_sides(cmp, "liveness"),
    )
    return Section("Liveness", table, notes)


def _comparison_tiles_section(cmp: Comparison) -> Section:
    base, new = analysis.tile_stats(cmp.base, worst=1), analysis.tile_stats(cmp.new, worst=1)
    rows = (
        _side_by_side("Min tile", base["min_bytes"], new["min_bytes"], format_bytes),
        _side_by_side("Median tile", base["median_bytes"], new["median_bytes"], format_bytes),
        _side_by_side("Max tile", base["max_bytes"], new["max_bytes"], format_bytes),
        _side_by_side("Tiles over budget", base["tiles_over_budget"], new["tiles_over_budget"], format_count),
    )
    table = Table((Column("Quantity"),) + _SIDE_COLUMNS, rows)
    notes = [f"Tile budget: base {format_bytes(base['bytes_per_tile'])}, new {format_bytes(new['bytes_per_tile'])}."]
    if len(cmp.tiles):
        changed = cmp.tiles[cmp.tiles["status"].astype(str) != "unchanged"]
        notes.append(f"{len(changed):,} of {len(cmp.tiles):,} tiles changed beyond the noise threshold.")
    return Section("Tiles", table, (*notes, *_missing_sides(cmp, "tiles")))


def _comparison_code_section(cmp: Comparison, top: int | None) -> Section:
    title = "Code by program"
    if not len(cmp.code):
        return Section(title, None, ("No code attribution in either report.", *_missing_sides(cmp, "code")))
    view = cmp.top("code", top)
    rows: list[tuple[Cell, ...]] = [
        (Cell(str(r.name)), Cell(_str(r.type)))
        + _delta_cells(r.base_code_bytes, r.new_code_bytes, r.delta_code_bytes, r.delta_pct, r.status, format_bytes)
        for r in view.shown_rows.itertuples(index=False)
    ]
    if view.has_other:
        rows.append(_aggregate_row(view, _other_label(view.cut, "programs"), 2,
                                   ("base_code_bytes", "new_code_bytes", "delta_code_bytes"), format_bytes))
    table = Table((Column("Program"), Column("Type")) + _DELTA_COLUMNS, tuple(rows))
    return Section(title, table, (_cut_note(view, "programs"), *_missing_sides(cmp, "code")))


def _sharded_text(base: Any, new: Any) -> str:
    def one(v: Any) -> str:
        return "-" if is_missing(v) else ("yes" if bool(v) else "no")

    if is_missing(base):
        return one(new)
    if is_missing(new):
        return one(base)
    b, n = one(base), one(new)
    return b if b == n else f"{b} -> {n}"


def _comparison_remote_section(cmp: Comparison, top: int | None) -> Section:
    title = "Streaming Memory (remote buffers)"
    remote = cmp.remote_buffers
    if not len(remote):
        missing = _missing_sides(cmp, "remote_buffers")
        if len(missing) == 2:
            return Section(title, None, ("Neither report records remote buffers.",))
        return Section(title, None, ("Neither report keeps anything in Streaming Memory.", *missing))
    view = cmp.top("remote_buffers", top)
    rows: list[tuple[Cell, ...]] = [
        (Cell(str(r.name)),)
        + _delta_cells(r.base_bytes, r.new_bytes, r.delta_bytes, r.delta_pct, r.status, format_bytes)
        + (Cell(_sharded_text(r.base_sharded, r.new_sharded)),)
        for r in view.shown_rows.itertuples(index=False)
    ]
    if view.has_other:
        rows.append(_aggregate_row(view, _other_label(view.cut, "buffers"), 1,
                                   ("base_bytes", "new_bytes", "delta_bytes"), format_bytes, trailing=1))
    table = Table((Column("Buffer"),) + _DELTA_COLUMNS + (Column("Sharded"),), tuple(rows))
    notes = (
        _cut_note(view, "buffers"),
        (
            "Streaming Memory is not tile memory: moving state there frees tile memory at the cost of "
            "remote transfers."
        ),
        *_missing_sides(cmp, "remote_buffers"),
    )
    return Section(title, table, notes)


def _comparison_execution_section(cmp: Comparison) -> Section:
    title = "Execution cycles by phase"
    execution = cmp.execution
    if not len(execution):
        return Section(title, None, ("Neither report has an execution profile.",))
    rows = tuple(
        (Cell(str(r.phase)),)
        + _delta_cells(r.base_cycles, r.new_cycles, r.delta_cycles, r.delta_pct, r.status, format_cycles)
        for r in execution.itertuples(index=False)
    )
    table = Table((Column("Phase"),) + _DELTA_COLUMNS, rows)
    notes = []
    for role, report in (("base", cmp.base), ("new", cmp.new)):
        if not len(report.execution):
            notes.append(f"The {role} report has no execution profile; its cycles read 0.")
    return Section(title, table, tuple(notes))



def _ledger_moves_section(cmp: Comparison) -> Section:
    title = "Where the memory moved"
    everything = cmp.ledger_moves(None)
    if not len(everything):
        note = "No parameter's bytes changed between the reports." if len(cmp.ledger) else \
            "Neither report attributes memory to parameters (no variables, no remote buffers)."
        return Section(title, None, (note,))
    moves = everything.head(MOVES_SHOWN)
    notes = [
        (f"The {len(moves):,} largest of {len(everything):,} (parameter, role) moves, by bytes moved (the sum of "
         "|delta| over locations); bytes per replica." if len(everything) > len(moves)
         else f"All {len(everything):,} (parameter, role) moves, largest first; bytes per replica."),
    ]
    return Section(title, None, tuple(notes), tuple(move_sentence(m) for m in moves.itertuples(index=False)))


def _ledger_cell(base: Any, new: Any, delta: Any) -> Cell:
    if not int(base) and not int(new):
        return _num("")
    if not int(delta):
        return _num(format_bytes(new))
    return _num(f"{format_bytes(base)} -> {format_bytes(new)} ({format_bytes(delta, signed=True)})")


def _ledger_by_parameter_section(cmp: Comparison, top: int | None) -> Section:
    from profcompare.model import LOCATIONS

    title = "Ledger by parameter"
    frame = cmp.ledger_by_parameter()
    if not len(frame):
        return Section(title, None, ("Neither report attributes memory to parameters.",))
    sums = tuple(f"{side}_{loc}" for loc in (*LOCATIONS, "total") for side in ("base", "new", "delta"))
    view = analysis.top_n(frame, top, "delta_total", label_column="parameter", sum_columns=sums, key=abs)
    rows: list[tuple[Cell, ...]] = []
    for r in view.shown_rows.itertuples(index=False):
        rows.append(
            (Cell(parameter_text(r.parameter)),)
            + tuple(_ledger_cell(getattr(r, f"base_{loc}"), getattr(r, f"new_{loc}"), getattr(r, f"delta_{loc}"))
                    for loc in LOCATIONS)
            + (_num(format_bytes(r.base_total)), _num(format_bytes(r.new_total)),
               _num(format_bytes(r.delta_total, signed=True)))
        )
    if view.has_other:
        other = view.other
        assert other is not None
        m = "muted"
        rows.append(
            (Cell(_other_label(view.cut, "parameters"), m),)
            + tuple(Cell(_ledger_cell(other[f"base_{loc}"], other[f"new_{loc}"], other[f"delta_{loc}"]).text, m)
                    for loc in LOCATIONS)
            + (_num(format_bytes(other["base_total"]), m), _num(format_bytes(other["new_total"]), m),
               _num(format_bytes(other["delta_total"], signed=True), m))
        )
    columns = (Column("Parameter"),) + tuple(Column(location_title(loc), True) for loc in LOCATIONS)
    columns += (Column("Base total", True), Column("New total", True), Column("Delta", True))
    notes = (
        _cut_note(view, "parameters"),
        "Per location: base -> new (delta), bytes per replica, roles summed; one figure when unchanged. "
        "Not-always-live: the most held at once. Streaming Memory is not tile memory.",
    )
    return Section(title, Table(columns, tuple(rows)), notes)


def _peak_composition_section(cmp: Comparison, top: int | None) -> Section:
    title = "What changed the not-always-live peak"
    frame = cmp.peak_composition()
    base_peak, new_peak = analysis.liveness_peak(cmp.base), analysis.liveness_peak(cmp.new)
    if base_peak["step"] is None and new_peak["step"] is None:
        return Section(title, None, ("Neither report records program steps.",))
    if not len(frame):
        return Section(title, None, ("No listed variable is live at either report's peak.",))
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
        rows.append((Cell(_other_label(view.cut, "rows"), m), Cell("", m), _num(format_bytes(other["base_bytes"]), m),
                     _num(format_bytes(other["new_bytes"]), m),
                     _num(format_bytes(other["delta_bytes"], signed=True), m)))
    table = Table((Column("Parameter"), Column("Role"), Column("Base", True), Column("New", True),
                   Column("Delta", True)), tuple(rows))
    notes = (_cut_note(view, "rows"), *peak_change_notes(base_peak, new_peak, int(frame["delta_bytes"].sum())))
    return Section(title, table, tuple(notes))


def comparison_warnings(cmp: Comparison) -> tuple[str, ...]:
    """Return the lines a reader of a comparison must not miss (oom, simulated, different devices)."""
    base, new = cmp.base.meta, cmp.new.meta
    warnings: list[str] = []
    for meta, role in ((base, "base"), (new, "new")):
        w = _oom_warning(meta, role)
        if w:
            warnings.append(w)
    if base.simulated and new.simulated:
        warnings.append(
            "SIMULATED: both reports come from the profcompare simulator's model of a Poplar compile, "
            "not from Poplar; treat absolute figures as estimates."
        )
    elif base.simulated != new.simulated:
        sim_role = "base" if base.simulated else "new"
        warnings.append(
            f"SIMULATED vs Poplar: the {sim_role} report is simulated and the other comes from Poplar; "
            "deltas mix real changes with the simulator's error."
        )
    if base.target != new.target:
        warnings.append(
            f"Different targets: base {describe_target(base)}; new {describe_target(new)}."
        )
    return tuple(warnings)


def comparison_document(cmp: Comparison, *, top: int | None = 20) -> Document:
    """Return the document for a comparison (``compare``): which report is base and which new,
    warnings, and sections led by the ledger (Where the memory moved, Ledger by parameter, What
    changed the not-always-live peak), then Summary, Memory by category, Variables (largest
    changes), Liveness,
    Tiles, Code by program, Streaming Memory (remote buffers), Execution cycles by phase.
    ``top`` cuts the long tables (None or 0 = all rows).
    """
    top = limit(top)
    base, new = cmp.base.meta, cmp.new.meta
    facts = _report_facts(base, "base") + _report_facts(new, "new")
    facts.append(
        (
            "delta",
            (
                f"new - base; a change within {format_bytes(cmp.noise_bytes)} and within {cmp.noise_pct:g}% of base "
                "counts as unchanged (noise)"
            ),
        )
    )
    if base.target == new.target:
        facts.append(("target", describe_target(base)))
    sections = (
        _ledger_moves_section(cmp),
        _ledger_by_parameter_section(cmp, top),
        _peak_composition_section(cmp, top),
        _comparison_summary_section(cmp),
        _comparison_categories_section(cmp),
        _comparison_variables_section(cmp, top),
        _comparison_liveness_section(cmp),
        _comparison_tiles_section(cmp),
        _comparison_code_section(cmp, top),
        _comparison_remote_section(cmp, top),
        _comparison_execution_section(cmp),
    )
    ipu_section = comparison_ipu_section(cmp.base, cmp.new)  # only with more than one IPU per replica
    if ipu_section is not None:
        sections = (*sections[:4], ipu_section, *sections[4:])
    title = f"profcompare comparison: {base.label} (base) vs {new.label} (new)"
    return Document(title, tuple(facts), comparison_warnings(cmp), sections)


def build_document(obj: Report | Comparison | VariablesView, *, top: int | None = 20) -> Document:
    """Return the :class:`Document` for a Report, a Comparison or a VariablesView."""
    if isinstance(obj, Comparison):
        return comparison_document(obj, top=top)
    if isinstance(obj, Report):
        return report_document(obj, top=top)
    if isinstance(obj, VariablesView):
        return variables_document(obj)
    raise TypeError(f"cannot render a {type(obj).__name__}; expected a Report, Comparison or VariablesView")


__all__ = [
    "TONES",
    "Cell",
    "Column",
    "Document",
    "Section",
    "Table",
    "VariablesView",
    "build_document",
    "comparison_document",
    "comparison_variables_view",
    "comparison_warnings",
    "limit",
    "report_document",
    "variables_document",
]
