"""The sections of a comparison (``compare``), its warnings and its document."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Any

import pandas as pd

from profcompare.analysis import views as analysis
from profcompare.analysis.views import TopN
from profcompare.comparison import STATUSES, Comparison
from profcompare.render.format import (
    describe_target,
    format_bytes,
    format_pct,
    is_missing,
    status_tone,
)
from profcompare.render.replica_sections import comparison_streaming_totals_note
from profcompare.model import variables_convention
from profcompare.render.ledger_words import liveness_rule
from profcompare.render.verdict_words import comparison_headline
from profcompare.render.sections.document import (
    Cell,
    Column,
    Document,
    Section,
    Table,
    _compile_only_warning,
    _cut_note,
    _missing_sides,
    _num,
    _oom_warning,
    _other_label,
    _pct_of,
    _report_facts,
    _str,
    limit,
)
from profcompare.render.sections.categories import comparison_categories_section
from profcompare.render.sections.liveness import comparison_liveness_section
from profcompare.render.sections.summary import comparison_summary_section
from profcompare.render.sections.verdict import comparison_verdict_section
from profcompare.render.sections.execution import EXECUTION_TITLE, comparison_execution_section
from profcompare.render.sections.ipus import comparison_ipu_section
from profcompare.render.sections.ledger import (
    comparison_ledger_section,
    comparison_moves_section,
    comparison_peak_section,
)
from profcompare.render.sections.replicas import comparison_replicas_section
from profcompare.render.sections.tiles import comparison_tiles_section
from profcompare.render.sections.trace import TRACE_TITLE, comparison_trace_section


def _status_cell(status: Any, *, higher_is_better: bool = False) -> Cell:
    text = _str(status)
    return Cell(text, tone=status_tone(text, higher_is_better=higher_is_better))


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


def _aggregate_row(view: TopN, label: str, n_text_columns: int, sums: Sequence[str], fmt: Any,
                   trailing: int = 0) -> tuple[Cell, ...]:
    other = view.other
    assert other is not None
    m = "muted"
    base, new, delta = (other[c] for c in sums)
    cells = [Cell(label, tone=m)] + [Cell("", tone=m) for _ in range(n_text_columns - 1)]
    cells += [_num(fmt(base), m), _num(fmt(new), m), _num(fmt(delta, signed=True), m),
              _num(format_pct(_pct_of(delta, base)), m), Cell("", tone=m)]
    cells += [Cell("", tone=m) for _ in range(trailing)]
    return tuple(cells)


def comparison_variables_view(cmp: Comparison, top: int | None) -> TopN:
    """Return the variable diff cut to the ``top`` largest changes (by |delta_bytes|, then name).

    Rows are :attr:`Comparison.variables` rows; the "other" row sums base_bytes, new_bytes and
    delta_bytes of the cut rows. ``top`` None or 0 keeps all rows.
    """
    return cmp.top("variables", limit(top))


#: the order of the variables table: changes of matched pairs (0), then variables in one report
#: only (1), then the unchanged (2); within each, the largest |delta_bytes| first
_VARIABLE_GROUPS = {"grew": 0, "shrank": 0, "added": 1, "removed": 1}


def _ranked_variables(cmp: Comparison) -> pd.DataFrame:
    """:attr:`Comparison.variables` in the order of :func:`matched_changes_first` (index 0..n-1)."""
    frame = cmp.variables
    order = pd.DataFrame({
        "group": frame["status"].astype(str).map(_VARIABLE_GROUPS).fillna(2).to_numpy(),
        "magnitude": -frame["delta_bytes"].abs().to_numpy(dtype="float64"),
        "name": frame["name"].astype(str).to_numpy(),
    }).sort_values(["group", "magnitude", "name"], kind="mergesort").index.to_numpy()
    return frame.iloc[order].reset_index(drop=True)


def matched_changes_first(cmp: Comparison, top: int | None) -> TopN:
    """Return the variable diff ordered for reading and cut to ``top`` rows: the variables found
    in both reports that grew or shrank first, then those in one report only (added, removed),
    then the unchanged; within each group by |delta_bytes| descending, then name.

    Rows are :attr:`Comparison.variables` rows; the "other" row sums base_bytes, new_bytes and
    delta_bytes of the cut rows (its delta_pct recomputed from the sums). ``top`` None or 0
    keeps all rows.
    """
    ranked = _ranked_variables(cmp)
    ranked.insert(len(ranked.columns), "_rank", range(len(ranked)))
    view = analysis.top_n(ranked, limit(top), "_rank", label_column="name", ascending=True,
                          sum_columns=("base_bytes", "new_bytes", "delta_bytes"))
    rows = view.rows.drop(columns="_rank")
    if view.cut:
        last = rows.index[-1]
        base_sum, delta_sum = float(rows.at[last, "base_bytes"]), float(rows.at[last, "delta_bytes"])
        rows.at[last, "delta_pct"] = 100.0 * delta_sum / base_sum if base_sum else float("nan")
    return TopN(rows=rows, shown=view.shown, total=view.total, cut=view.cut)


def _match_text(r: Any) -> str:
    match = _str(r.match)
    if match == "normalised" and _str(r.base_name) and _str(r.new_name) and r.base_name != r.new_name:
        return f"normalised (base: {r.base_name})"
    return match


def _variables_other_note(cmp: Comparison, view: TopN) -> str:
    """Why the "other" row's bytes can exceed the memory in use beside it: it sums the sizes of
    the variables left out, and those overlap in memory (not-always-live variables live at
    different steps share addresses; a tensor of a graph called from several sites is listed
    once per call)."""
    rest = _ranked_variables(cmp).iloc[view.shown:]
    not_always = int(((rest["base_always_live"] == False) | (rest["new_always_live"] == False))  # noqa: E712
                     .fillna(False).to_numpy(dtype=bool).sum())
    names = rest["name"].astype(str)
    instances = int((analysis.call_instance_stems(names) != names).sum())
    reasons = []
    if not_always:
        reasons.append(f"{not_always:,} are not-always-live, each live over its own steps (variables live at "
                       "different steps share addresses)")
    if instances:
        reasons.append(f"{instances:,} are call instances (name@1, name@2, ...) of a tensor listed once per call")
    peak = cmp.summary.loc["peak_liveness_bytes"]
    text = f"The 'other' row sums the sizes of the {view.cut:,} variables not shown"
    if reasons:
        text += ", which is not memory in use: " + " and ".join(reasons)
    return (text + f". Memory in use is peak liveness, {format_bytes(peak['base'])} -> {format_bytes(peak['new'])} "
            "(see the Summary).")


def _comparison_variables_section(cmp: Comparison, top: int | None) -> Section:
    title = "Variables (largest changes)"
    if not len(cmp.variables):
        return Section(title, notes=("No variables in either report.", *_missing_sides(cmp, "variables")))
    view = matched_changes_first(cmp, top)
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
    table = Table.of((Column("Variable"), Column("Kind")) + _DELTA_COLUMNS + (Column("Match"),), tuple(rows))
    notes = [
        "Variables found in both reports that grew or shrank first, then those in one report only (added, "
        "removed), then the unchanged; each group by |Delta|.",
        _cut_note(view, "variables"),
    ]
    if view.has_other:
        notes.append(_variables_other_note(cmp, view))
    notes += [f"Status over all variables: {_status_counts(cmp.variables['status'])}.", *_missing_sides(cmp, "variables")]
    return Section(title, (table,), tuple(notes))


def _side_by_side(label: str, base: Any, new: Any, fmt: Any) -> tuple[Cell, ...]:
    delta = float("nan") if is_missing(base) or is_missing(new) else float(new) - float(base)
    return (Cell(label), _num(fmt(base)), _num(fmt(new)), _num(fmt(delta, signed=True)),
            _num(format_pct(_pct_of(delta, base))))


_SIDE_COLUMNS = (Column("Base", True), Column("New", True), Column("Delta", True), Column("Delta %", True))




def _comparison_code_section(cmp: Comparison, top: int | None) -> Section:
    title = "Code by program"
    if not len(cmp.code):
        return Section(title, notes=("No code attribution in either report.", *_missing_sides(cmp, "code")))
    view = cmp.top("code", top)
    rows: list[tuple[Cell, ...]] = [
        (Cell(str(r.name)), Cell(_str(r.type)))
        + _delta_cells(r.base_code_bytes, r.new_code_bytes, r.delta_code_bytes, r.delta_pct, r.status, format_bytes)
        for r in view.shown_rows.itertuples(index=False)
    ]
    if view.has_other:
        rows.append(_aggregate_row(view, _other_label(view.cut, "programs"), 2,
                                   ("base_code_bytes", "new_code_bytes", "delta_code_bytes"), format_bytes))
    table = Table.of((Column("Program"), Column("Type")) + _DELTA_COLUMNS, tuple(rows))
    return Section(title, (table,), (_cut_note(view, "programs"), *_missing_sides(cmp, "code")))


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
            return Section(title, notes=("Neither report records remote buffers.",))
        return Section(title, notes=("Neither report keeps anything in Streaming Memory.", *missing))
    view = cmp.top("remote_buffers", top)
    # off chip: a change of Streaming Memory costs no tile memory, so it is not coloured
    rows: list[tuple[Cell, ...]] = [
        (Cell(str(r.name)),)
        + tuple(Cell(c.text) for c in _delta_cells(r.base_bytes, r.new_bytes, r.delta_bytes, r.delta_pct, r.status,
                                                    format_bytes))
        + (Cell(_sharded_text(r.base_sharded, r.new_sharded)),)
        for r in view.shown_rows.itertuples(index=False)
    ]
    if view.has_other:
        rows.append(_aggregate_row(view, _other_label(view.cut, "buffers"), 1,
                                   ("base_bytes", "new_bytes", "delta_bytes"), format_bytes, trailing=1))
    table = Table.of((Column("Remote buffer"),) + _DELTA_COLUMNS + (Column("Sharded"),), tuple(rows))
    notes = (
        _cut_note(view, "buffers"),
        (
            "Streaming Memory is not tile memory: moving state there frees tile memory at the cost of "
            "remote transfers."
        ),
        *_missing_sides(cmp, "remote_buffers"),
    )
    totals = comparison_streaming_totals_note(cmp.base, cmp.new)
    if totals:
        notes = (*notes, totals)
    return Section(title, (table,), notes)


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
    for meta, role in ((base, "base"), (new, "new")):
        w = _compile_only_warning(meta, role)
        if w:
            warnings.append(w)
    if base.target != new.target:
        warnings.append(
            f"Different targets: base {describe_target(base)}; new {describe_target(new)}."
        )
    return tuple(warnings)


def comparison_document(cmp: Comparison, *, top: int | None = 20, titles: Collection[str] | None = None) -> Document:
    """Return the document for a comparison (``compare``): which report is base and which new,
    the liveness rule the reports follow, warnings, and sections led by the Verdict (what moved
    where, what it did to peak tile memory and to time), then the ledger (Where the memory moved,
    Memory ledger, What changed the not-always-live peak), then Summary, Memory by
    category, Variables (largest changes), Liveness, Tiles, Code by program, Streaming Memory
    (remote buffers), Execution, Execution trace, Replicas and collectives.
    ``top`` cuts the long tables (None or 0 = all rows). ``titles``, when given, keeps only the
    sections of those titles, in the order above, and builds no other (a summary that shows a few
    sections does not pay for the rest).
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
    rule = liveness_rule((variables_convention(cmp.base.variables), variables_convention(cmp.new.variables)))
    if rule:
        facts.append(("liveness", rule))
    # each section's title (as the section says it) and how to build it (None: nothing to show)
    builders: tuple[tuple[str, Callable[[], Section | None]], ...] = (
        ("Verdict", lambda: comparison_verdict_section(cmp)),
        ("Where the memory moved", lambda: comparison_moves_section(cmp)),
        ("Memory ledger", lambda: comparison_ledger_section(cmp, top)),
        ("What changed the not-always-live peak", lambda: comparison_peak_section(cmp, top)),
        ("Summary", lambda: comparison_summary_section(cmp)),
        # only with more than one IPU per replica
        ("Memory per IPU", lambda: comparison_ipu_section(cmp)),
        ("Memory by category", lambda: comparison_categories_section(cmp)),
        ("Variables (largest changes)", lambda: _comparison_variables_section(cmp, top)),
        ("Liveness", lambda: comparison_liveness_section(cmp)),
        ("Tiles", lambda: comparison_tiles_section(cmp, top)),
        ("Code by program", lambda: _comparison_code_section(cmp, top)),
        ("Streaming Memory (remote buffers)", lambda: _comparison_remote_section(cmp, top)),
        (EXECUTION_TITLE, lambda: comparison_execution_section(cmp)),
        (TRACE_TITLE, lambda: comparison_trace_section(cmp)),  # only with an execution trace
        ("Replicas and collectives", lambda: comparison_replicas_section(cmp)),  # with replica groupings
    )
    built = (build() for title, build in builders if titles is None or title in titles)
    sections = tuple(section for section in built if section is not None)
    title = f"profcompare comparison: {base.label} (base) vs {new.label} (new)"
    # the whole document opens with the headline; a few named sections stand without it
    headline = comparison_headline(cmp) if titles is None else ""
    return Document(title, tuple(facts), comparison_warnings(cmp), sections, headline)
