"""What replica and which replica groups the figures are for, in every output: the scope line,
the "Replicas and collectives" section and the "Code loaded at run time" section.

One function prepares each view's rows as display strings (:func:`replicas_rows`,
:func:`loaded_code_rows`) and one builds each section of the page model from them, which the
terminal, the markdown and the HTML page all draw, so they say the same figures.
"""

from __future__ import annotations

from profcompare.analysis import replicas
from profcompare.model import Report
from profcompare.render.format import format_bytes, format_count, format_cycles, format_pct, is_missing, replica_scope
from profcompare.render.page.model import Cell, Column, Row, Section, Table

#: the columns of the "Replicas and collectives" table
REPLICAS_HEADERS = ("Replica grouping", "Groups", "Replica 0's group", "Collectives per step",
                    "Collectives' cycles per step", "Share of device cycles")
#: the columns of the "Code loaded at run time" table
LOADED_CODE_HEADERS = ("Graph (phase)", "Tile memory", "Loads", "Live steps")

_MAX_MEMBERS = 8


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


def replicas_rows(report: Report) -> tuple[tuple[str, ...], ...]:
    """The rows of the "Replicas and collectives" table (display strings, :data:`REPLICAS_HEADERS`)."""
    count = int(report.meta.target.num_replicas or 1)
    total = report.summary().get("cycles_per_step")
    rows = []
    for g in replicas.groupings(report):
        share = "" if is_missing(total) or not total else format_pct(100.0 * g.cycles / float(total), signed=False)
        rows.append((grouping_label(g, count), format_count(g.num_groups), _members(g), format_count(g.collectives),
                     format_cycles(g.cycles), share))
    return tuple(rows)


def replicas_notes(report: Report) -> tuple[str, ...]:
    """The notes under the "Replicas and collectives" table."""
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


def has_replicas_view(report: Report) -> bool:
    """Whether a report records the replica groupings of more than one replica."""
    return int(report.meta.target.num_replicas or 1) > 1 and bool(replicas.groupings(report))


def loaded_code_rows(report: Report) -> tuple[tuple[str, ...], ...]:
    """The rows of the "Code loaded at run time" table (display strings, :data:`LOADED_CODE_HEADERS`)."""
    frame = replicas.loaded_code(report)
    rows = []
    for r in frame.itertuples(index=False):
        steps = "" if is_missing(r.first_step) else f"{int(r.first_step)}-{int(r.last_step)}"
        rows.append((str(r.graph), format_bytes(r.bytes), format_count(r.loads), steps))
    return tuple(rows)


LOADED_CODE_NOTE = ("Code of the graphs the program loads with remote_code_load (one phase each): tile memory per "
                    "replica while loaded, not-always-live over the steps shown; it is in Streaming Memory in "
                    "between. Modelled.")


#: the columns of a comparison's "Replicas and collectives" table
COMPARISON_REPLICAS_HEADERS = ("Replica grouping", "Collectives base", "Collectives new", "Collectives' cycles base",
                               "Collectives' cycles new", "Collectives' cycles delta")


def comparison_replicas_rows(base: Report, new: Report) -> tuple[tuple[str, ...], ...]:
    """The rows of a comparison's "Replicas and collectives" table: every grouping of either
    report (a grouping one lacks counts 0 there), by group size then stride."""
    count = int(base.meta.target.num_replicas or 1)
    rows = []
    for r in replicas.compare_groupings(base, new).to_dict("records"):
        g = replicas.Grouping(int(r["stride"]), int(r["group_size"]), int(r["num_groups"]), 0, 0)
        rows.append((grouping_label(g, count), format_count(r["base_collectives"]), format_count(r["new_collectives"]),
                     format_cycles(r["base_cycles"]), format_cycles(r["new_cycles"]),
                     format_cycles(r["delta_cycles"], signed=True)))
    return tuple(rows)


def has_comparison_replicas_view(base: Report, new: Report) -> bool:
    """Whether either report records the replica groupings of more than one replica."""
    return has_replicas_view(base) or has_replicas_view(new)


COMPARISON_REPLICAS_NOTE = ("Per replica (replica 0; every replica runs the same program on the same layout): the "
                            "collectives of one run of the main program over each replica grouping (exact) and their "
                            "cycles (modelled), base and new.")


def _collective_phase_cycles(report: Report) -> float | None:
    """The collective phase's device cycles per step (Execution), or None without it."""
    from profcompare.analysis.views import execution_by_phase

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


def comparison_replicas_notes(base: Report, new: Report) -> tuple[str, ...]:
    """The notes under a comparison's "Replicas and collectives" table: what it holds and how its
    cycles differ from the collective phase under Execution."""
    cycles_note = collectives_cycles_note((base, new))
    return (COMPARISON_REPLICAS_NOTE, cycles_note) if cycles_note else (COMPARISON_REPLICAS_NOTE,)


# -- the sections, drawn by text, Markdown and the HTML page alike -------------------------------------


def _table(table_id: str, headers: tuple[str, ...], numeric: tuple[bool, ...],
           rows: tuple[tuple[str, ...], ...]) -> Table:
    columns = tuple(Column(h, n, key=f"c{i}") for i, (h, n) in enumerate(zip(headers, numeric, strict=True)))
    return Table(columns, tuple(Row(tuple(Cell(c) for c in row)) for row in rows), id=table_id)


def report_replicas_section(report: Report) -> Section | None:
    """The "Replicas and collectives" section of one report, or None (one replica, or no groupings)."""
    if not has_replicas_view(report):
        return None
    table = _table("replicas-table", REPLICAS_HEADERS, (False, True, False, True, True, True), replicas_rows(report))
    return Section("Replicas and collectives", (table,), replicas_notes(report), id="replicas")


def comparison_replicas_section(base: Report, new: Report) -> Section | None:
    """A comparison's "Replicas and collectives" section, or None."""
    if not has_comparison_replicas_view(base, new):
        return None
    table = _table("replicas-table", COMPARISON_REPLICAS_HEADERS, (False, True, True, True, True, True),
                   comparison_replicas_rows(base, new))
    return Section("Replicas and collectives", (table,), comparison_replicas_notes(base, new), id="replicas",
                   notes_on_table=True)


def report_loaded_code_section(report: Report) -> Section | None:
    """The "Code loaded at run time" section of one report, or None when no code is loaded."""
    rows = loaded_code_rows(report)
    if not rows:
        return None
    table = _table("loaded-code-table", LOADED_CODE_HEADERS, (False, True, True, False), rows)
    return Section("Code loaded at run time", (table,), (LOADED_CODE_NOTE,), id="loaded-code", notes_on_table=True)


__all__ = ["collectives_cycles_note", "comparison_replicas_notes",
           "COMPARISON_REPLICAS_HEADERS", "LOADED_CODE_HEADERS", "REPLICAS_HEADERS", "comparison_replicas_rows",
           "comparison_replicas_section", "has_comparison_replicas_view", "grouping_label", "has_replicas_view",
           "loaded_code_rows", "replica_scope", "replicas_notes", "replicas_rows",
           "report_loaded_code_section", "report_replicas_section"]
