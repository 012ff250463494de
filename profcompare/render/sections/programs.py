"""The "Program tree" section of a report and of a comparison (Graph Analyser's Program Tree),
drawn alike by the terminal, the Markdown and the HTML page: the programs in tree order, each
name indented under the program that encloses it.

A long tree is shown from its top, level by level, until the table holds its row limit: the roots,
then for a comparison the programs enclosing a difference of the two trees, then each level in
tree order, the added or removed programs first, so a reader sees where the trees part. Every
shown program's parent is shown too, and an "other" row counts the rest.
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


@dataclass(frozen=True, eq=False)
class TreeCut:
    """What a table of a long tree shows: ``keep`` (one flag per row, in tree order), ``level``
    (the deepest depth shown in full; -1 when not even every root is), and of depth ``level + 1``
    how many programs are shown (``partial``) of how many (``next_level``)."""

    keep: np.ndarray
    level: int
    partial: int = 0
    next_level: int = 0


def _parents(depth: np.ndarray) -> np.ndarray:
    """The row of each row's parent in a tree in tree order (-1 for a root)."""
    parents = np.full(len(depth), -1, dtype=np.int64)
    path: list[int] = []  # the rows enclosing the current one, one per depth
    for row, d in enumerate(depth.tolist()):
        del path[d:]
        parents[row] = path[-1] if path else -1
        path.append(row)
    return parents


def tree_top(depths: Sequence[int] | np.ndarray, top: int | None, *, enclosing: np.ndarray | None = None,
             first: np.ndarray | None = None) -> TreeCut:
    """Which rows of a tree (``depths``, in tree order) a table of at most ``top`` rows (None:
    every row) shows: the roots, then the ``enclosing`` rows (a set closed under parents, e.g. the
    programs enclosing a difference of two trees), shallowest first, then the tree level by level,
    at each level the ``first`` rows (e.g. added or removed programs) before the others, each in
    tree order, until the table is full. A row shown has its parent shown."""
    depth = np.asarray(depths, dtype=np.int64)
    none = np.zeros(len(depth), dtype=bool)
    enclosing = none if enclosing is None else np.asarray(enclosing, dtype=bool)
    first = none if first is None else np.asarray(first, dtype=bool)
    deepest = int(depth.max()) if len(depth) else 0
    bound = limit(top)
    if bound is None or len(depth) <= bound:
        return TreeCut(np.ones(len(depth), dtype=bool), deepest)
    parents = _parents(depth)
    keep = none.copy()
    rows = np.arange(len(depth))

    def take(candidates: np.ndarray) -> None:
        """Keep ``candidates`` (row numbers, in the order to keep them) while the table has room."""
        room = bound - int(keep.sum())
        keep[candidates[:max(room, 0)]] = True

    def level_rows(d: int) -> np.ndarray:
        """The rows of depth ``d`` not kept whose parent is: the ``first`` or ``enclosing`` ones first."""
        at = rows[(depth == d) & ~keep & ((parents < 0) | keep[np.maximum(parents, 0)])]
        return np.concatenate([at[(first | enclosing)[at]], at[~(first | enclosing)[at]]])

    take(level_rows(0))
    for row in rows[enclosing][np.argsort(depth[enclosing], kind="stable")]:
        if int(keep.sum()) >= bound:
            break
        keep[row] = keep[row] or parents[row] < 0 or bool(keep[parents[row]])
    for d in range(1, deepest + 1):
        take(level_rows(d))
    full = [d for d in range(deepest + 1) if keep[depth <= d].all()]
    level = full[-1] if full else -1
    below = depth == level + 1
    return TreeCut(keep, level, int(keep[below].sum()), int(below.sum()))


def _view(shown: int, total: int) -> TopN:
    """The cut as a :class:`TopN` (its counts only), for the notes' common wording."""
    return TopN(pd.DataFrame(), shown, total, total - shown)


def _notes(shown: int, total: int, cut: TreeCut, differing: bool) -> tuple[str, ...]:
    """The cut note (with how deep the tree is shown) and what the tree is."""
    note = cut_note(_view(shown, total), "programs")
    if shown < total:
        part = f"{cut.partial:,} of the {cut.next_level:,}"
        shown_where = f"every program down to depth {cut.level} (0: a root)" if cut.level >= 0 else f"{part} roots"
        if cut.level >= 0 and cut.partial:
            shown_where += f" and {part} at depth {cut.level + 1}"
        note += f" Shown: {shown_where}."
        if differing:
            note += (" Where the trees differ comes first: the programs enclosing a difference, then at each depth "
                     "the added and removed programs.")
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
    cut = tree_top(frame["depth"].to_numpy(), top, enclosing=(frame["status"] == "changed").to_numpy(),
                   first=differing)
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
