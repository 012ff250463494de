"""The "Program tree" section of a report and of a comparison (Graph Analyser's Program Tree),
drawn alike by the terminal, the Markdown and the HTML page: the programs in tree order, each
name indented under the program that encloses it.

A long tree is shown from its top: every program down to the deepest level that keeps the table
within its row limit, the rows left filled with the first programs of the next level, and for a
comparison first the programs where the two trees differ (each
added or removed subtree's root and the changed programs enclosing it), so a reader sees where the
trees part. Whatever is shown, every shown program's parent is shown too, and an "other" row
counts the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from profcompare.analysis.views import TopN
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.format import format_count, is_missing, status_tone
from profcompare.render.page.model import Cell, Column, Row, Section, Table, TableFilter
from profcompare.render.page.notes import cut_note
from profcompare.render.sections.document import _missing_sides, limit

#: the title of the section in every medium, and its anchor and table id on a page
PROGRAMS_TITLE = "Program tree"
PROGRAMS_ID = "programs"
PROGRAMS_TABLE_ID = "programs-table"

#: the one sentence saying what the tree is, after the note on what was cut
TREE_SENTENCE = ("Poplar's program tree: the programs the compiled graph runs, nested as Poplar nests them; "
                 "each op lowers to a Sequence of steps.")

#: what the indentation is made of: a non-breaking space pair per level below the first (so a page
#: and Markdown keep it), and a corner before every program that has a parent
_INDENT = "\u00a0\u00a0"
_BRANCH = "\u2514 "

_REPORT_COLUMNS = (Column("Program", key="name"), Column("Kind", key="kind"), Column("Op", key="op"),
                   Column("IPU", True, key="ipu"))
_COMPARISON_COLUMNS = (Column("Program", key="name"), Column("Kind", key="kind"),
                       Column("Base programs", True, key="base_programs"),
                       Column("New programs", True, key="new_programs"),
                       Column("Delta", True, key="delta_programs"), Column("Status", key="status"))
_DIFFERING = ("added", "removed", "changed")


def indented(name: str, depth: int) -> str:
    """``name`` as the tree shows it at ``depth``: as is for a root, else after ``└ `` indented by
    two spaces per level below the first (``└ relu`` at depth 1, ``  └ relu`` at depth 2)."""
    if depth <= 0:
        return name
    return _INDENT * (depth - 1) + _BRANCH + name


def _first(mask: np.ndarray, count: int) -> np.ndarray:
    """``mask`` keeping only its first ``count`` True entries."""
    kept = mask & (np.cumsum(mask) <= count)
    return np.asarray(kept, dtype=bool)


@dataclass(frozen=True, eq=False)
class TreeCut:
    """What a table of a long tree shows: ``keep`` (one flag per row, in tree order), ``level``
    (the deepest depth shown in full; -1 when not even every root is) and ``partial`` (how many
    programs of depth ``level + 1`` the rest of the table's rows hold, its first in tree order)."""

    keep: np.ndarray
    level: int
    partial: int = 0


def tree_top(depths: Sequence[int] | np.ndarray, top: int | None, first: np.ndarray | None = None) -> TreeCut:
    """Which rows of a tree (``depths``, in tree order) a table of at most ``top`` rows (None:
    every row) shows.

    ``first``: rows to keep before any other (a set closed under parents, e.g. where two trees
    differ), cut to ``top`` in tree order. Then every row down to the deepest level that keeps the
    table within ``top`` rows, and the rows left fill with the first programs of the next level.
    A row shown has its parent shown: tree order puts a parent before its children."""
    depth = np.asarray(depths, dtype=np.int64)
    deepest = int(depth.max()) if len(depth) else 0
    bound = limit(top)
    if bound is None or len(depth) <= bound:
        return TreeCut(np.ones(len(depth), dtype=bool), deepest)
    keep = _first(np.zeros(len(depth), dtype=bool) if first is None else np.asarray(first, dtype=bool), bound)
    level = -1
    for d in range(deepest + 1):
        wider = keep | (depth <= d)
        if int(wider.sum()) > bound:
            break
        keep, level = wider, d
    fill = _first((depth == level + 1) & ~keep, bound - int(keep.sum()))
    return TreeCut(keep | fill, level, int(fill.sum()))


def _view(shown: int, total: int) -> TopN:
    """The cut as a :class:`TopN` (its counts only), for the notes' common wording."""
    return TopN(pd.DataFrame(), shown, total, total - shown)


def _notes(shown: int, total: int, cut: TreeCut, differing: bool) -> tuple[str, ...]:
    """The cut note (with how deep the tree is shown) and what the tree is."""
    note = cut_note(_view(shown, total), "programs")
    if shown < total:
        parts = [f"every program down to depth {cut.level} (0: a root)"] if cut.level >= 0 else []
        if cut.partial:
            parts.append(f"the first {cut.partial:,} at depth {cut.level + 1}" if cut.level >= 0
                         else f"the first {cut.partial:,} roots")
        if differing:
            parts.insert(0, "each added or removed subtree's root and the programs enclosing it")
        note += f" Shown: {', then '.join(parts)}." if parts else ""
    return (note, TREE_SENTENCE)


def report_programs_section(report: Report, top: int | None = 20) -> Section | None:
    """Return the "Program tree" section of one report: its programs in tree order, names indented
    by depth, with kind, op and IPU, cut to at most ``top`` rows (None: all) from the top of the
    tree, an "other" footer row counting the rest; None when the report has no program tree."""
    programs = report.programs
    if not len(programs):
        return None
    cut = tree_top(programs["depth"].to_numpy(), top)
    keep = cut.keep
    rows = []
    for r in programs[keep].to_dict("records"):
        name = str(r["name"])
        ipu = r["ipu"]
        rows.append(Row((Cell(indented(name, int(r["depth"])), title=name), Cell(str(r["kind"])), Cell(str(r["op"])),
                         Cell("" if is_missing(ipu) else str(int(ipu)), None if is_missing(ipu) else int(ipu))),
                        {"name": name}))
    left = len(programs) - len(rows)
    footer = (Row((Cell(f"other ({left:,} programs)"), Cell(""), Cell(""), Cell(""))),) if left else ()
    table = Table(_REPORT_COLUMNS, tuple(rows), id=PROGRAMS_TABLE_ID, footer=footer, sortable=False,
                  filter=TableFilter("program name (substring)"))
    return Section(PROGRAMS_TITLE, (table,), _notes(len(rows), len(programs), cut, False), id=PROGRAMS_ID,
                   notes_on_table=True)


def _differing(frame: pd.DataFrame) -> np.ndarray:
    """The rows where two aligned trees part: each added or removed subtree's root (its parent
    is not added or removed alike) and every changed program (those enclosing such a root)."""
    status = frame["status"].astype(str).to_numpy()
    depth = frame["depth"].to_numpy(dtype=np.int64)
    out = np.zeros(len(frame), dtype=bool)
    parent_status: dict[int, str] = {}  # depth -> status of the last row seen at that depth
    for row in range(len(frame)):
        d, s = int(depth[row]), str(status[row])
        above = parent_status.get(d - 1, "") if d > 0 else ""
        out[row] = s == "changed" or (s in ("added", "removed") and above != s)
        parent_status[d] = s
    return out


def _count_cell(value: int, *, signed: bool = False, tone: str | None = None) -> Cell:
    return Cell(format_count(value, signed=signed), int(value), tone)


def comparison_programs_section(cmp: Comparison, top: int | None = 20) -> Section | None:
    """Return the "Program tree" section of a comparison: the two trees aligned, in tree order,
    names indented by depth, with kind, the programs of each side's subtree, their change
    (Delta: new - base) and status (added, removed, changed: a subtree whose programs differ,
    unchanged); cut to at most ``top`` rows (None: all), the rows where the trees differ first,
    and an "other" footer row counting the programs of each side left out. None when neither
    report has a program tree."""
    frame = cmp.programs
    if not len(frame):
        return None
    differing = _differing(frame)
    cut = tree_top(frame["depth"].to_numpy(), top, differing)
    keep = cut.keep
    rows = []
    for r in frame[keep].to_dict("records"):
        name, status = str(r["name"]), str(r["status"])
        tone = status_tone(status)
        base_name, new_name = r["base_name"], r["new_name"]
        title = (f"base: {base_name}; new: {new_name}"
                 if not is_missing(base_name) and not is_missing(new_name) and base_name != new_name else name)
        rows.append(Row((Cell(indented(name, int(r["depth"])), title=title), Cell(str(r["kind"])),
                         _count_cell(r["base_programs"]), _count_cell(r["new_programs"]),
                         _count_cell(r["delta_programs"], signed=True, tone=tone), Cell(status, status, tone)),
                        {"name": name, "status": status}))
    left = frame[~keep]
    footer: tuple[Row, ...] = ()
    if len(left):
        base_left, new_left = int(left["base_id"].notna().sum()), int(left["new_id"].notna().sum())
        footer = (Row((Cell(f"other ({len(left):,} programs)"), Cell(""), _count_cell(base_left),
                       _count_cell(new_left), _count_cell(new_left - base_left, signed=True), Cell(""))),)
    present = set(frame["status"].astype(str))
    table = Table(_COMPARISON_COLUMNS, tuple(rows), id=PROGRAMS_TABLE_ID, footer=footer, sortable=False,
                  filter=TableFilter("program name (substring)",
                                     (("status", "Status", tuple(s for s in (*_DIFFERING, "unchanged") if s in present)),)))
    notes = _notes(len(rows), len(frame), cut, bool(differing.any())) + _missing_sides(cmp, "programs")
    return Section(PROGRAMS_TITLE, (table,), notes, id=PROGRAMS_ID, notes_on_table=True)


__all__ = ["PROGRAMS_ID", "PROGRAMS_TABLE_ID", "PROGRAMS_TITLE", "TREE_SENTENCE", "TreeCut", "comparison_programs_section",
           "indented", "report_programs_section", "tree_top"]
