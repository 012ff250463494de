"""The sections of a comparison (``compare``), its warnings and its document."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison
from profcompare.render.format import (
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
from profcompare.render.replica_sections import comparison_replicas_section
from profcompare.render.ipu_sections import comparison_ipu_section
from profcompare.model import DEVICE_PHASES, variables_convention
from profcompare.render.ledger_words import liveness_rule, peak_text
from profcompare.render.sections.time import DEVICE_PHASES_NOTE, EXECUTION_TITLE, time_per_run_text, verdict_section
from profcompare.render.labels import TOTAL_VS_PEAK_NOTE, phase_label
from profcompare.render.verdict_words import comparison_headline
from profcompare.render.sections.document import (
    CONFIDENCE_LEGEND,
    Cell,
    Column,
    Document,
    Section,
    Table,
    _compile_only_warning,
    _confidence_cell,
    _missing_sides,
    _num,
    _oom_warning,
    _pct_of,
    _report_facts,
    _str,
    limit,
)
from profcompare.render.sections.code import CODE_TITLE, comparison_code_section
from profcompare.render.sections.ledger import (
    _ledger_by_parameter_section,
    _ledger_moves_section,
    _peak_composition_section,
)
from profcompare.render.sections.streaming import STREAMING_TITLE, comparison_streaming_section
from profcompare.render.sections.variables import VARIABLES_TITLE, comparison_variables_section


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
                Cell(_str(r["status"]), tone=tone),
                _confidence_cell(_str(r["confidence"])),
            )
        )
    table = Table.of((Column("Metric"),) + _DELTA_COLUMNS + (Column("Confidence"),), tuple(rows))
    return Section("Summary", (table,), (TOTAL_VS_PEAK_NOTE, CONFIDENCE_LEGEND))


def _comparison_categories_section(cmp: Comparison) -> Section:
    cats = cmp.categories
    if len(cats):
        cats = cats[(cats["base_bytes"] != 0) | (cats["new_bytes"] != 0)]
    if not len(cats):
        return Section("Memory by category",
                       notes=("No memory categories in either report.", *_missing_sides(cmp, "categories")))
    rows = tuple(
        (Cell(str(r.category)), Cell(_str(r.group)))
        + _delta_cells(r.base_bytes, r.new_bytes, r.delta_bytes, r.delta_pct, r.status, format_bytes)
        for r in cats.itertuples(index=False)
    )
    table = Table.of((Column("Category"), Column("Group")) + _DELTA_COLUMNS, rows)
    return Section("Memory by category", (table,), _missing_sides(cmp, "categories"))


def _side_by_side(label: str, base: Any, new: Any, fmt: Any) -> tuple[Cell, ...]:
    delta = float("nan") if is_missing(base) or is_missing(new) else float(new) - float(base)
    return (Cell(label), _num(fmt(base)), _num(fmt(new)), _num(fmt(delta, signed=True)),
            _num(format_pct(_pct_of(delta, base))))


_SIDE_COLUMNS = (Column("Base", True), Column("New", True), Column("Delta", True), Column("Delta %", True))


def _comparison_liveness_section(cmp: Comparison) -> Section:
    base, new = analysis.liveness_peak(cmp.base), analysis.liveness_peak(cmp.new)
    rows = (
        _side_by_side(metric_label("always_live_bytes"), base["always_live_bytes"], new["always_live_bytes"],
                      format_bytes),
        _side_by_side("Not-always-live peak", base["not_always_live_bytes"], new["not_always_live_bytes"], format_bytes),
        _side_by_side("Peak liveness", base["peak_liveness_bytes"], new["peak_liveness_bytes"], format_bytes),
        _side_by_side("Program steps", len(cmp.base.liveness), len(cmp.new.liveness), format_count),
    )
    table = Table.of((Column("Quantity"),) + _SIDE_COLUMNS, rows)
    notes = (
        f"Not-always-live peak: base at {peak_text(base)}, new at {peak_text(new)}.",
        *_missing_sides(cmp, "liveness"),
    )
    return Section("Liveness", (table,), notes)


def _comparison_tiles_section(cmp: Comparison) -> Section:
    base, new = analysis.tile_stats(cmp.base, worst=1), analysis.tile_stats(cmp.new, worst=1)
    rows = (
        _side_by_side("Min tile memory", base["min_bytes"], new["min_bytes"], format_bytes),
        _side_by_side("Median tile memory", base["median_bytes"], new["median_bytes"], format_bytes),
        _side_by_side(metric_label("max_tile_bytes"), base["max_bytes"], new["max_bytes"], format_bytes),
        _side_by_side("Tiles over budget", base["tiles_over_budget"], new["tiles_over_budget"], format_count),
    )
    table = Table.of((Column("Quantity"),) + _SIDE_COLUMNS, rows)
    notes = [f"Tile budget: base {format_bytes(base['bytes_per_tile'])}, new {format_bytes(new['bytes_per_tile'])}."]
    if len(cmp.tiles):
        changed = cmp.tiles[cmp.tiles["status"].astype(str) != "unchanged"]
        notes.append(f"{len(changed):,} of {len(cmp.tiles):,} tiles changed beyond the noise threshold.")
    return Section("Tiles", (table,), (*notes, *_missing_sides(cmp, "tiles")))


def _comparison_execution_section(cmp: Comparison) -> Section:
    title = EXECUTION_TITLE
    execution = cmp.execution
    if not len(execution):
        return Section(title, notes=("Neither report has an execution profile.",))
    device = execution[execution["phase"].astype(str).isin(DEVICE_PHASES)]
    rows = [
        (Cell(phase_label(r.phase)),)
        + _delta_cells(r.base_cycles, r.new_cycles, r.delta_cycles, r.delta_pct, r.status, format_cycles)
        for r in device.itertuples(index=False)
    ]
    total = cmp.summary.loc["cycles_per_step"]
    tone = metric_tone("cycles_per_step", _str(total["status"]))
    rows.append((Cell(metric_label("cycles_per_step")), _num(format_cycles(total["base"])),
                 _num(format_cycles(total["new"])), _num(format_cycles(total["delta"], signed=True), tone),
                 _num(format_pct(total["delta_pct"]), tone), Cell(_str(total["status"]), tone=tone)))
    table = Table.of((Column("Device phase"),) + _DELTA_COLUMNS, tuple(rows))
    notes = [DEVICE_PHASES_NOTE]
    notes += [f"{role.capitalize()}: {time_per_run_text(cmp.summary[role], report.meta.target.clock_hz)}"
              for role, report in (("base", cmp.base), ("new", cmp.new))]
    for role, report in (("base", cmp.base), ("new", cmp.new)):
        if not len(report.execution):
            notes.append(f"The {role} report has no execution profile; its cycles read 0.")
    return Section(title, (table,), tuple(notes))


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
    Ledger by parameter, What changed the not-always-live peak), then Summary, Memory by
    category, Variables, Liveness, Tiles, Code by program, Streaming Memory, Execution: device
    cycles by phase.
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
        ("Verdict", lambda: verdict_section(cmp)),
        ("Where the memory moved", lambda: _ledger_moves_section(cmp)),
        ("Ledger by parameter", lambda: _ledger_by_parameter_section(cmp, top)),
        ("What changed the not-always-live peak", lambda: _peak_composition_section(cmp, top)),
        ("Summary", lambda: _comparison_summary_section(cmp)),
        # only with more than one IPU per replica
        ("Memory per IPU", lambda: comparison_ipu_section(cmp.base, cmp.new)),
        ("Memory by category", lambda: _comparison_categories_section(cmp)),
        (VARIABLES_TITLE, lambda: comparison_variables_section(cmp, top)),
        ("Liveness", lambda: _comparison_liveness_section(cmp)),
        ("Tiles", lambda: _comparison_tiles_section(cmp)),
        (CODE_TITLE, lambda: comparison_code_section(cmp, top)),
        (STREAMING_TITLE, lambda: comparison_streaming_section(cmp, top)),
        (EXECUTION_TITLE, lambda: _comparison_execution_section(cmp)),
        ("Replicas and collectives", lambda: comparison_replicas_section(cmp.base, cmp.new)),  # with replica groupings
    )
    built = (build() for title, build in builders if titles is None or title in titles)
    sections = tuple(section for section in built if section is not None)
    title = f"profcompare comparison: {base.label} (base) vs {new.label} (new)"
    # the whole document opens with the headline; a few named sections stand without it
    headline = comparison_headline(cmp) if titles is None else ""
    return Document(title, tuple(facts), comparison_warnings(cmp), sections, headline)
