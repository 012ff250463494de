"""The "Replicas and collectives" section (a report's replica groupings and their collectives,
or a comparison's side by side) and the "Code loaded at run time" section of a report, in every
output (terminal, Markdown, HTML). Present only when there is something to show: more than one
replica with groupings, code loaded by ``remote_code_load``."""

from __future__ import annotations

from profcompare.analysis import replicas
from profcompare.analysis.views import execution_by_phase
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.format import format_count, format_cycles, format_pct, is_missing
from profcompare.render.html_model import bytes_cell, sort_key
from profcompare.render.page.model import Cell, Column, Row, Section, Table

#: The titles of the two sections in every output.
REPLICAS_TITLE = "Replicas and collectives"
LOADED_CODE_TITLE = "Code loaded at run time"

_MAX_MEMBERS = 8

LOADED_CODE_NOTE = ("Code of the graphs the program loads with remote_code_load (one phase each): tile memory per "
                    "replica while loaded, not-always-live over the steps shown; it is in Streaming Memory in "
                    "between. Modelled.")

COMPARISON_REPLICAS_NOTE = ("Per replica (replica 0; every replica runs the same program on the same layout): the "
                            "collectives of one run of the main program over each replica grouping (exact) and their "
                            "cycles (modelled), base and new.")


def grouping_label(g: replicas.Grouping, count: int) -> str:
    """``"stride 1, size 2"`` (``"all replicas"`` for one group of every replica)."""
    if g.num_groups == 1 and g.group_size == count:
        return f"all {count} replicas"
    return f"stride {g.stride}, size {g.group_size}"


def _members(g: replicas.Grouping) -> str:
    members = g.members(0)
    if len(members) <= _MAX_MEMBERS:
        return ", ".join(str(m) for m in members)
    return ", ".join(str(m) for m in members[:_MAX_MEMBERS - 1]) + f", ... {members[-1]}"


def _count_cell(value: object, *, signed: bool = False) -> Cell:
    return Cell(format_count(value, signed=signed), sort_key(value))


def _cycles_cell(value: object, *, signed: bool = False) -> Cell:
    return Cell(format_cycles(value, signed=signed), sort_key(value))


def _has_groupings(report: Report) -> bool:
    """Whether a report records the replica groupings of more than one replica."""
    return int(report.meta.target.num_replicas or 1) > 1 and bool(replicas.groupings(report))


def _collective_phase_cycles(report: Report) -> float | None:
    """The collective phase's device cycles per step (Execution), or None without it."""
    phases = execution_by_phase(report)
    found = phases.loc[phases["phase"].astype(str) == "collective", "cycles"]
    return float(found.iloc[0]) if len(found) else None


def collectives_cycles_note(reports: tuple[Report, ...]) -> str | None:
    """How the collectives' cycles differ from the collective phase under Execution, with both
    figures of each report (base first), or None when no report has both.

    The collectives' cycles are every step of the collective programs (their exchanges and
    reductions, and their internal syncs and on-tile copies); the collective phase counts the
    exchange and reduce steps only: the syncs are under sync, the copies under compute."""
    parts = []
    for report in reports:
        found = replicas.groupings(report)
        phase = _collective_phase_cycles(report)
        if not found or phase is None:
            continue
        whole = sum(g.cycles for g in found)
        parts.append(f"{format_cycles(whole)} = {format_cycles(phase)} collective phase + "
                     f"{format_cycles(whole - phase)} of other phases")
    if not parts:
        return None
    which = parts[0] if len(parts) == 1 else f"base {parts[0]}; new {parts[1]}"
    return ("Collectives' cycles are every step of the collective programs; the collective phase under Execution "
            "counts only their exchanges and reductions, their internal syncs and on-tile copies being under sync "
            f"and compute there: {which}.")


def _replicas_notes(report: Report) -> tuple[str, ...]:
    count = int(report.meta.target.num_replicas or 1)
    io = replicas.io_tiles_per_ipu(report)
    notes = [
        f"Every figure of this report is per replica: replica 0's; all {count} replicas run the same program on "
        "the same layout (the same memory per IPU and per tile), each in its own group of every grouping.",
        "A grouping of size g and stride s makes groups of g replicas s apart (popxl ReplicaGrouping): stride 1 "
        "groups consecutive replicas (tensor parallelism in a TP x DP program), stride TP the data-parallel "
        "replicas. A collective runs in every group of its grouping at once; collectives per step and their "
        "cycles are for one run of the main program: counts exact, cycles modelled.",
    ]
    cycles_note = collectives_cycles_note((report,))
    if cycles_note:
        notes.append(cycles_note)
    if io:
        notes.append(f"I/O tiles: the first {io} tiles of each IPU (memory per IPU shows them apart).")
    return tuple(notes)


def report_replicas_section(report: Report) -> Section | None:
    """The "Replicas and collectives" section of one report: per replica grouping its groups,
    replica 0's group, the collectives per step, their cycles and share of the device cycles;
    None with one replica or no groupings."""
    if not _has_groupings(report):
        return None
    count = int(report.meta.target.num_replicas or 1)
    total = report.summary().get("cycles_per_step")
    rows = []
    for g in replicas.groupings(report):
        share = None if is_missing(total) or not total else 100.0 * g.cycles / float(total)
        rows.append(Row((Cell(grouping_label(g, count)), _count_cell(g.num_groups), Cell(_members(g)),
                         _count_cell(g.collectives), _cycles_cell(g.cycles),
                         Cell("" if share is None else format_pct(share, signed=False), share))))
    columns = (Column("Replica grouping", key="grouping"), Column("Groups", True, key="groups"),
               Column("Replica 0's group", key="members"), Column("Collectives per step", True, key="collectives"),
               Column("Collectives' cycles per step", True, key="cycles"),
               Column("Share of device cycles", True, key="pct"))
    table = Table(columns, tuple(rows), id="replicas-table")
    return Section(REPLICAS_TITLE, (table,), _replicas_notes(report), id="replicas")


def comparison_replicas_section(cmp: Comparison) -> Section | None:
    """A comparison's "Replicas and collectives" section: every replica grouping of either
    report (a grouping one lacks counts 0 there), by group size then stride, with base and new
    collectives and their cycles; None when neither report has groupings of several replicas."""
    base, new = cmp.base, cmp.new
    if not (_has_groupings(base) or _has_groupings(new)):
        return None
    count = int(base.meta.target.num_replicas or 1)
    rows = []
    for r in replicas.compare_groupings(base, new).to_dict("records"):
        g = replicas.Grouping(int(r["stride"]), int(r["group_size"]), int(r["num_groups"]), 0, 0)
        rows.append(Row((Cell(grouping_label(g, count)), _count_cell(r["base_collectives"]),
                         _count_cell(r["new_collectives"]), _cycles_cell(r["base_cycles"]),
                         _cycles_cell(r["new_cycles"]), _cycles_cell(r["delta_cycles"], signed=True))))
    columns = (Column("Replica grouping", key="grouping"), Column("Collectives base", True, key="base_collectives"),
               Column("Collectives new", True, key="new_collectives"),
               Column("Collectives' cycles base", True, key="base_cycles"),
               Column("Collectives' cycles new", True, key="new_cycles"),
               Column("Collectives' cycles delta", True, key="delta_cycles"))
    cycles_note = collectives_cycles_note((base, new))
    notes = (COMPARISON_REPLICAS_NOTE, cycles_note) if cycles_note else (COMPARISON_REPLICAS_NOTE,)
    return Section(REPLICAS_TITLE, (Table(columns, tuple(rows), id="replicas-table"),), notes, id="replicas",
                   notes_on_table=True)


def report_loaded_code_section(report: Report) -> Section | None:
    """The "Code loaded at run time" section of one report: per graph loaded with
    ``remote_code_load`` its tile memory, loads and live steps; None when no code is loaded."""
    frame = replicas.loaded_code(report)
    if not len(frame):
        return None
    rows = tuple(
        Row((Cell(str(r.graph)), bytes_cell(r.bytes), _count_cell(r.loads),
             Cell("" if is_missing(r.first_step) else f"{int(r.first_step)}-{int(r.last_step)}")))
        for r in frame.itertuples(index=False)
    )
    columns = (Column("Graph (phase)", key="graph"), Column("Tile memory", True, key="bytes"),
               Column("Loads", True, key="loads"), Column("Live steps", key="steps"))
    table = Table(columns, rows, id="loaded-code-table")
    return Section(LOADED_CODE_TITLE, (table,), (LOADED_CODE_NOTE,), id="loaded-code", notes_on_table=True)


__all__ = ["LOADED_CODE_TITLE", "REPLICAS_TITLE", "collectives_cycles_note", "comparison_replicas_section",
           "grouping_label", "report_loaded_code_section", "report_replicas_section"]
