"""Folding runs of like siblings of a program tree into one row (the "Program tree" section).

A compiled program repeats itself: the WeightsFromHost Sequence holds one host copy (Begin,
Mid, End) per variable, an optimizer holds one remote load and store per variable, a replicated
program one all-reduce per gradient. Listed one by one such a run fills a table and hides what
follows it; folded it is one row, ``24 × WeightsFromHost/…/{Begin, Mid, End}``.

The rule (:func:`fold_runs`):

- Two programs are *alike* when they have the same kind, the same name pattern
  (:func:`name_pattern`: every run of digits is ``#``, and a name of three or more ``/``-parts
  keeps only its first and last part around ``…``) and, in a comparison, the same status.
  A ``changed`` program (one enclosing a difference of the two trees) is never alike to any:
  a reader has to reach what differs inside it.
- A *run* is a stretch of consecutive siblings (children of one program, or the roots) made of
  one group of 1 to :data:`MAX_PERIOD` siblings repeated, alike position by position, at least
  :data:`MIN_REPEATS` times. At each sibling the longest such stretch starting there is taken
  (the shorter group on a tie); a sibling starting none stays a row of its own.
- A run is one row standing for its members and everything under them: its figures are the sums
  of its members' subtrees. What is under the members is not listed (the HTML page lists the
  members themselves under the folded row, up to a budget).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

#: fewest repeats of a group for a run: two like siblings stay two rows
MIN_REPEATS = 3
#: the longest group a run repeats (3: a host copy's Begin, Mid and End)
MAX_PERIOD = 3

_DIGITS = re.compile(r"\d+")
ELLIPSIS = "\u2026"
TIMES = "\u00d7"


def name_pattern(name: str) -> str:
    """The pattern two alike programs' names share: digits as ``#``, and the parts between the
    first and the last ``/``-part as one ``…`` (``WeightsFromHost/fc1.bias/Begin`` ->
    ``WeightsFromHost/…/Begin``, ``matmul/100`` -> ``matmul/#``)."""
    normal = _DIGITS.sub("#", name)
    if normal.count("/") < 2:
        return normal
    return normal.partition("/")[0] + "/" + ELLIPSIS + "/" + normal.rpartition("/")[2]


def name_patterns(names: Sequence[str]) -> list[str]:
    """:func:`name_pattern` of every name."""
    return [name_pattern(str(name)) for name in names]


def parents_of(depth: Sequence[int] | np.ndarray) -> np.ndarray:
    """The row of each row's parent in a tree in tree order (-1 for a root)."""
    parents = [-1] * len(depth)
    path: list[int] = []  # the rows enclosing the current one, one per depth
    for row, d in enumerate(np.asarray(depth, dtype=np.int64).tolist()):
        del path[d:]
        if path:
            parents[row] = path[-1]
        path.append(row)
    return np.asarray(parents, dtype=np.int64)


def subtree_ends(depth: Sequence[int] | np.ndarray) -> np.ndarray:
    """For each row of a tree in tree order, the row after its subtree (its subtree is rows
    ``row .. end - 1``)."""
    levels = np.asarray(depth, dtype=np.int64).tolist()
    ends = [len(levels)] * len(levels)
    open_rows: list[int] = []
    for row, level in enumerate(levels):
        while open_rows and levels[open_rows[-1]] >= level:
            ends[open_rows.pop()] = row
        open_rows.append(row)
    return np.asarray(ends, dtype=np.int64)


@dataclass(frozen=True)
class Unit:
    """One row of a folded tree: ``members`` (the rows of the programs it stands for, siblings
    in order; one row for a program not folded), the group length ``period`` (0 when not
    folded) and ``end`` (the row after the last member's subtree)."""

    members: tuple[int, ...]
    period: int
    end: int

    @property
    def folded(self) -> bool:
        """Whether the unit is a run of several programs."""
        return self.period > 0

    @property
    def repeats(self) -> int:
        """How many times the run repeats its group (1 for a program not folded)."""
        return len(self.members) // self.period if self.period else 1


def _run_at(keys: Sequence[Hashable | None], start: int, status: Sequence[Hashable]) -> tuple[int, int]:
    """The longest run of ``keys`` starting at ``start`` whose group is of one ``status``:
    (period, length); (0, 1) for none."""
    best = (0, 1)
    for period in range(1, MAX_PERIOD + 1):
        if start + period >= len(keys) or keys[start + period] != keys[start]:
            continue  # the group does not even start again
        group = keys[start:start + period]
        if len(group) < period or any(k is None for k in group) or len(set(status[start:start + period])) > 1:
            break
        end = start + period
        while end < len(keys) and keys[end] is not None and keys[end] == keys[end - period]:
            end += 1
        length = (end - start) // period * period
        if length // period >= MIN_REPEATS and length > best[1]:
            best = (period, length)
    return best


def fold_runs(depth: Sequence[int] | np.ndarray, keys: Sequence[Hashable | None],
              status: Sequence[Hashable] | None = None) -> tuple[Unit, ...]:
    """The rows of a tree (``depth`` per row, in tree order) as folded for a table: one
    :class:`Unit` per row shown, in tree order, runs of alike siblings folded (module docstring).

    ``keys`` holds each row's likeness key (rows with equal keys are alike; None: alike to none);
    ``status`` each row's status, one for all members of a run (a run's group is of one status,
    so a run has one). Rows under a folded run's members belong to the run and have no unit of their own."""
    d = np.asarray(depth, dtype=np.int64)
    parents = parents_of(d)
    ends = subtree_ends(d)
    statuses: Sequence[Hashable] = [""] * len(d) if status is None else status
    siblings: dict[int, list[int]] = {}
    for row, parent in enumerate(parents.tolist()):
        siblings.setdefault(parent, []).append(row)
    run_of: dict[int, tuple[tuple[int, ...], int]] = {}  # first member -> (members, period)
    for rows in siblings.values():
        row_keys = [keys[r] for r in rows]
        row_status = [statuses[r] for r in rows]
        at = 0
        while at < len(rows):
            period, length = _run_at(row_keys, at, row_status)
            if period:
                run_of[rows[at]] = (tuple(rows[at:at + length]), period)
            at += length
    units: list[Unit] = []
    row = 0
    while row < len(d):
        if row in run_of:
            members, period = run_of[row]
            end = int(ends[members[-1]])
            units.append(Unit(members, period, end))
            row = end
        else:
            units.append(Unit((row,), 0, int(ends[row])))
            row += 1
    return tuple(units)


def _braced(parts: Sequence[str], separator: str) -> str:
    """Distinct ``parts`` in order as one text: the one part, or their longest common prefix
    ending at ``separator`` (or at any character when ``separator`` is empty) followed by the
    rest in braces (``WeightsFromHost/…/{Begin, Mid, End}``, ``StreamCopy{Begin, Mid, End}``)."""
    distinct = list(dict.fromkeys(parts))
    if len(distinct) == 1:
        return distinct[0]
    shared = 0
    while all(len(p) > shared and p[shared] == distinct[0][shared] for p in distinct):
        shared += 1
    if separator:
        shared = distinct[0].rfind(separator, 0, shared) + 1
    return distinct[0][:shared] + "{" + ", ".join(p[shared:] for p in distinct) + "}"


def run_name(names: Sequence[str], period: int) -> str:
    """What a folded run is called: its repeats, ``×``, and its group's name patterns
    (``5 × relu/#``, ``24 × WeightsFromHost/…/{Begin, Mid, End}``)."""
    repeats = len(names) // period
    return f"{repeats} {TIMES} " + _braced([name_pattern(n) for n in names[:period]], "/")


def run_kind(kinds: Sequence[str], period: int) -> str:
    """The kind of a folded run: its group's kinds (``StreamCopy{Begin, Mid, End}``)."""
    return _braced(list(kinds[:period]), "")


__all__ = ["ELLIPSIS", "MAX_PERIOD", "MIN_REPEATS", "TIMES", "Unit", "fold_runs", "name_pattern", "name_patterns", "parents_of",
           "run_kind", "run_name", "subtree_ends"]
