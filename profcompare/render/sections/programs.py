"""The "Program tree" section of a report and of a comparison (Graph Analyser's Program Tree),
drawn alike by the terminal, the Markdown, the HTML page and the exports: the programs in tree
order, each name indented under the program that encloses it, a program's Programs column
counting its subtree (itself included).

Runs of alike siblings are folded first (:mod:`profcompare.render.sections.program_runs`):
consecutive siblings repeating one group of 1 to 3 programs at least 3 times, alike position by
position (same kind, same name but for digits and middle ``/``-parts, in a comparison the same
status, never ``changed``), are one row such as ``24 × WeightsFromHost/…/{Begin, Mid, End}``
whose figures are the sums of the members' subtrees. The HTML page lists a run's members under
it, hidden until its toggle opens them (at most :data:`PAGE_MEMBERS` members in a page; a run
beyond that stays folded and says so).

Then a long tree is shown from its top, level by level, until the table holds its row limit: the
roots, then for a comparison the programs enclosing a difference of the two trees, then each
level in tree order, the added or removed programs first, so a reader sees where the trees part.
Every shown row's parent is shown too, and an "other" row counts the programs left out. A run
counts as one row, so a long run no longer eats the row limit.

On the HTML page the table is a tree: each row carries ``data-id``, ``data-parent``,
``data-depth`` and ``data-open`` (whether the page opens it: the roots, and in a comparison every
program enclosing a difference); rows with children get a toggle; a kind the execution trace
draws gets the trace's colour as a swatch before it (:func:`profcompare.render.trace_chart.program_colour`).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import SupportsInt, cast

import numpy as np
import pandas as pd

from profcompare.analysis.views import TopN
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.format import format_count, is_missing, status_tone
from profcompare.render.page.model import Cell, Column, Row, Section, Table, TableFilter
from profcompare.render.page.notes import cut_note
from profcompare.render.sections.document import _missing_sides, limit
from profcompare.render.sections.program_runs import (
    TIMES,
    Unit,
    fold_runs,
    name_patterns,
    parents_of,
    run_kind,
    run_name,
    subtree_ends,
)
from profcompare.render.trace_chart import program_colour

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
                   Column("IPU", True, key="ipu"), Column("Programs", True, key="programs"))
_COMPARISON_COLUMNS = (Column("Program", key="name"), Column("Kind", key="kind"),
                       Column("Base programs", True, key="base_programs"),
                       Column("New programs", True, key="new_programs"),
                       Column("Delta", True, key="delta_programs"), Column("Status", key="status"))
_DIFFERING = ("added", "removed", "changed")

#: a page opens the rows above this depth (the roots), and in a comparison every program
#: enclosing a difference; the rest start closed
OPEN_DEPTH = 1
#: the most members of folded runs a page lists (hidden until opened): a run past it stays folded
PAGE_MEMBERS = 300
#: the sentence saying what a folded row is, when the table has one
FOLD_SENTENCE = f"\"n {TIMES} name\": 1 to 3 like siblings repeated n times, their subtrees summed."


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
    parents = parents_of(depth)
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


def _notes(shown: int, total: int, cut: TreeCut, differing: bool, folded: bool) -> tuple[str, ...]:
    """The cut note (with how deep the tree is shown), what a folded row is (when one is shown)
    and what the tree is."""
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
    return (note, FOLD_SENTENCE, TREE_SENTENCE) if folded else (note, TREE_SENTENCE)


@dataclass(frozen=True, eq=False)
class _Folded:
    """A tree (rows in tree order) folded and cut for a table: its ``units`` (rows of the table
    before the cut), the ``cut`` over them, each row's unit (``unit_of``), each unit's parent
    unit (-1 for a root) and the rows the kept units stand for (``shown``)."""

    units: tuple[Unit, ...]
    cut: TreeCut
    unit_of: np.ndarray
    parent: np.ndarray
    shown: np.ndarray


def _fold_and_cut(depth: np.ndarray, keys: Sequence[Hashable | None], top: int | None, *,
                  status: Sequence[str] | None = None, enclosing: np.ndarray | None = None,
                  first: np.ndarray | None = None) -> _Folded:
    """Fold the tree's runs (``keys``: each row's likeness key, None for none) and cut the folded
    tree to ``top`` rows (:func:`tree_top`; ``enclosing`` and ``first`` are per row and taken from
    each unit's first member)."""
    units = fold_runs(depth, keys, status)
    heads = np.asarray([u.members[0] for u in units], dtype=np.int64)
    unit_of = np.zeros(len(depth), dtype=np.int64)
    for index, unit in enumerate(units):
        if unit.folded:
            unit_of[unit.members[0]:unit.end] = index
        else:
            unit_of[unit.members[0]] = index
    parent_rows = parents_of(depth)[heads] if len(heads) else heads
    parent = np.where(parent_rows >= 0, unit_of[np.maximum(parent_rows, 0)], -1)
    cut = tree_top(depth[heads], top, enclosing=None if enclosing is None else enclosing[heads],
                   first=None if first is None else first[heads])
    return _Folded(units, cut, unit_of, parent, cut.keep[unit_of] if len(depth) else np.zeros(0, dtype=bool))


def _subtree_sizes(depth: np.ndarray) -> np.ndarray:
    """The programs in each row's subtree, itself included (rows in tree order)."""
    return subtree_ends(depth) - np.arange(len(depth))


def _tree_data(folded: _Folded, index: int, depth: int, opened: bool) -> dict[str, str]:
    """A row's tree attributes on a page: its id, its parent's id, depth and whether it opens."""
    parent = int(folded.parent[index])
    data = {"id": f"p{index}", "parent": f"p{parent}" if parent >= 0 else "", "depth": str(depth),
            "open": "true" if opened else "false"}
    unit = folded.units[index]
    if unit.folded:
        data["count"] = str(len(unit.members))
    return data


def _fold_title(names: Sequence[str], listed: bool) -> str:
    """The tooltip of a folded row: how many programs, the first and the last."""
    title = f"{len(names):,} programs, from {names[0]} to {names[-1]}"
    return title if listed else title + f" (not listed in this page: over {PAGE_MEMBERS} folded programs)"


def _member_data(unit_id: str, k: int, depth: int, name: str, status: str | None = None) -> dict[str, str]:
    """The page attributes of the ``k``-th program of the folded row ``unit_id``: a child of that row."""
    data = {"name": name} if status is None else {"name": name, "status": status}
    data.update({"id": f"{unit_id}.{k}", "parent": unit_id, "depth": str(depth), "open": "false", "member": "true"})
    return data


def _budget_rows(folded: _Folded) -> set[int]:
    """The kept folded units whose members a page lists: in table order, while :data:`PAGE_MEMBERS` holds them."""
    listed: set[int] = set()
    room = PAGE_MEMBERS
    for index, unit in enumerate(folded.units):
        if unit.folded and folded.cut.keep[index] and len(unit.members) <= room:
            listed.add(index)
            room -= len(unit.members)
    return listed


def _kind_cell(kind: str, first_kind: str, first_name: str) -> Cell:
    """The Kind cell: the kind as text, after a swatch of the colour the trace draws the (first)
    program's kind in."""
    return Cell(kind, swatch=program_colour(first_kind, first_name))


def _report_cells(name: str, title: str, kind: Cell, op: str, ipu: object, size: int, depth: int) -> tuple[Cell, ...]:
    """The cells of a report's row: program, kind, op, IPU, programs of its subtree."""
    number = None if ipu is None or is_missing(ipu) else int(cast(SupportsInt, ipu))
    return (Cell(indented(name, depth), title=title), kind, Cell(op),
            Cell("" if number is None else str(number), number), _count_cell(size))


def _any_fold_shown(folded: _Folded) -> bool:
    """Whether a kept row of the table is a folded run."""
    return any(unit.folded and keep for unit, keep in zip(folded.units, folded.cut.keep.tolist(), strict=True))


def _unlisted_note(folded: _Folded, listed: set[int]) -> tuple[str, ...]:
    """A note when a shown folded run's programs are not in the page (past :data:`PAGE_MEMBERS`)."""
    unlisted = sum(1 for index, unit in enumerate(folded.units)
                   if unit.folded and folded.cut.keep[index] and index not in listed)
    if not unlisted:
        return ()
    return (f"The HTML page lists the programs of folded runs up to {PAGE_MEMBERS:,}; "
            f"{unlisted:,} {'run stays' if unlisted == 1 else 'runs stay'} folded there.",)


def _shared(values: Sequence[object]) -> object:
    """The one value all ``values`` have, else None."""
    first = values[0]
    if is_missing(first):
        return first if all(is_missing(v) for v in values) else None
    return first if all(not is_missing(v) and v == first for v in values) else None


def report_programs_section(report: Report, top: int | None = 20) -> Section | None:
    """Return the "Program tree" section of one report: its programs in tree order, names indented
    by depth, with kind, op, IPU and the programs of its subtree (Programs), runs of like siblings
    folded into one row (module docstring), cut to at most ``top`` rows (None: all) from the top
    of the tree, an "other" footer row counting the programs left out; None when the report has
    no program tree."""
    programs = report.programs
    if not len(programs):
        return None
    depth = programs["depth"].to_numpy(dtype=np.int64)
    kinds = programs["kind"].astype(str).tolist()
    names = programs["name"].astype(str).tolist()
    ops = programs["op"].astype(str).tolist()
    ipus = programs["ipu"].tolist()
    sizes = _subtree_sizes(depth)
    folded = _fold_and_cut(depth, list(zip(kinds, name_patterns(names), strict=True)), top)
    listed = _budget_rows(folded)
    rows = []
    for index, unit in enumerate(folded.units):
        if not folded.cut.keep[index]:
            continue
        head = unit.members[0]
        d = int(depth[head])
        data = {"name": names[head], **_tree_data(folded, index, d, d < OPEN_DEPTH)}
        if not unit.folded:
            rows.append(Row(_report_cells(names[head], names[head], _kind_cell(kinds[head], kinds[head], names[head]),
                                          ops[head], ipus[head], int(sizes[head]), d), data))
            continue
        member_names = [names[m] for m in unit.members]
        label = run_name(member_names, unit.period)
        data["name"] = label
        op, ipu = _shared([ops[m] for m in unit.members]), _shared([ipus[m] for m in unit.members])
        members = tuple(Row(_report_cells(names[m], names[m], _kind_cell(kinds[m], kinds[m], names[m]), ops[m], ipus[m],
                                          int(sizes[m]), d + 1), _member_data(data["id"], k, d + 1, names[m]))
                        for k, m in enumerate(unit.members)) if index in listed else ()
        kind = _kind_cell(run_kind([kinds[m] for m in unit.members], unit.period), kinds[head], names[head])
        rows.append(Row(_report_cells(label, _fold_title(member_names, index in listed), kind,
                                      "" if op is None else str(op), ipu, int(sizes[list(unit.members)].sum()), d),
                        data, members))
    left = len(programs) - int(folded.shown.sum())
    footer = (Row((Cell(f"other ({left:,} programs)"), Cell(""), Cell(""), Cell(""), _count_cell(left))),) if left else ()
    table = Table(_REPORT_COLUMNS, tuple(rows), id=PROGRAMS_TABLE_ID, footer=footer, sortable=False,
                  filter=TableFilter("program name (substring)"), tree=True)
    notes = _notes(int(folded.shown.sum()), len(programs), folded.cut, False, _any_fold_shown(folded)) + _unlisted_note(folded, listed)
    return Section(PROGRAMS_TITLE, (table,), notes, id=PROGRAMS_ID, notes_on_table=True)


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


def _comparison_cells(name: str, title: str, kind: Cell, base: int, new: int, status: str,
                      depth: int) -> tuple[Cell, ...]:
    """The cells of a comparison's row: program, kind, base / new programs, delta, status."""
    tone = status_tone(status)
    return (Cell(indented(name, depth), title=title), kind, _count_cell(base), _count_cell(new),
            _count_cell(new - base, signed=True, tone=tone), Cell(status, status, tone))


def comparison_programs_section(cmp: Comparison, top: int | None = 20) -> Section | None:
    """Return the "Program tree" section of a comparison: the two trees aligned, in tree order,
    names indented by depth, with kind, the programs of each side's subtree, their change
    (Delta: new - base) and status (added, removed, changed: a subtree whose programs differ,
    unchanged); runs of like siblings of one status folded into one row (module docstring);
    cut to at most ``top`` rows (None: all), the rows where the trees differ first, and an
    "other" footer row counting the programs of each side left out. None when neither report
    has a program tree."""
    frame = cmp.programs
    if not len(frame):
        return None
    differing = _differing(frame)
    depth = frame["depth"].to_numpy(dtype=np.int64)
    kinds = frame["kind"].astype(str).tolist()
    names = frame["name"].astype(str).tolist()
    statuses = frame["status"].astype(str).tolist()
    base_names, new_names = frame["base_name"].tolist(), frame["new_name"].tolist()
    base_sizes = frame["base_programs"].to_numpy(dtype=np.int64)
    new_sizes = frame["new_programs"].to_numpy(dtype=np.int64)
    keys = [None if st == "changed" else (k, n, st) for k, n, st in zip(kinds, name_patterns(names), statuses, strict=True)]
    changed = np.asarray([st == "changed" for st in statuses], dtype=bool)
    folded = _fold_and_cut(depth, keys, top, status=statuses, enclosing=changed, first=differing)
    listed = _budget_rows(folded)
    rows = []
    for index, unit in enumerate(folded.units):
        if not folded.cut.keep[index]:
            continue
        head = unit.members[0]
        d, status = int(depth[head]), statuses[head]
        data = {"name": names[head], "status": status, **_tree_data(folded, index, d, d < OPEN_DEPTH or status == "changed")}
        if not unit.folded:
            base_name, new_name = base_names[head], new_names[head]
            title = (f"base: {base_name}; new: {new_name}" if not is_missing(base_name) and not is_missing(new_name)
                     and base_name != new_name else names[head])
            rows.append(Row(_comparison_cells(names[head], title, _kind_cell(kinds[head], kinds[head], names[head]),
                                              int(base_sizes[head]), int(new_sizes[head]), status, d), data,
                            classes=(f"status-{status}",)))
            continue
        member_names = [names[m] for m in unit.members]
        label = run_name(member_names, unit.period)
        data["name"] = label
        members = tuple(Row(_comparison_cells(names[m], names[m], _kind_cell(kinds[m], kinds[m], names[m]),
                                              int(base_sizes[m]), int(new_sizes[m]), status, d + 1),
                            _member_data(data["id"], k, d + 1, names[m], status), classes=(f"status-{status}",))
                        for k, m in enumerate(unit.members)) if index in listed else ()
        at = list(unit.members)
        kind = _kind_cell(run_kind([kinds[m] for m in at], unit.period), kinds[head], names[head])
        rows.append(Row(_comparison_cells(label, _fold_title(member_names, index in listed), kind,
                                          int(base_sizes[at].sum()), int(new_sizes[at].sum()), status, d),
                        data, members, (f"status-{status}",)))
    left = frame[~folded.shown]
    footer: tuple[Row, ...] = ()
    if len(left):
        base_left, new_left = int(left["base_id"].notna().sum()), int(left["new_id"].notna().sum())
        footer = (Row((Cell(f"other ({len(left):,} programs)"), Cell(""), _count_cell(base_left),
                       _count_cell(new_left), _count_cell(new_left - base_left, signed=True), Cell(""))),)
    present = set(statuses)
    table = Table(_COMPARISON_COLUMNS, tuple(rows), id=PROGRAMS_TABLE_ID, footer=footer, sortable=False,
                  filter=TableFilter("program name (substring)",
                                     (("status", "Status", tuple(s for s in (*_DIFFERING, "unchanged") if s in present)),)),
                  tree=True)
    notes = (_notes(int(folded.shown.sum()), len(frame), folded.cut, bool(differing.any()), _any_fold_shown(folded))
             + _unlisted_note(folded, listed))
    return Section(PROGRAMS_TITLE, (table,), notes + _missing_sides(cmp, "programs"), id=PROGRAMS_ID,
                   notes_on_table=True)


__all__ = ["FOLD_SENTENCE", "PAGE_MEMBERS", "PROGRAMS_ID", "PROGRAMS_TABLE_ID", "PROGRAMS_TITLE", "TREE_SENTENCE", "TreeCut",
           "comparison_programs_section", "indented", "report_programs_section", "tree_top"]
