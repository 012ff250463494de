"""Comparing two program trees (``Report.programs``): the trees aligned, subtrees marked.

Two programs are the same program when their paths from the root match: at every level the
same kind and the same normalised name (:func:`normalise_program_name`: every run of digits
stands for any number, so ``matmul/100/Conv_1`` of one compile is ``matmul/102/Conv_1`` of the
next), and among the siblings with that kind and normalised name the same occurrence (the
first with the first, ...). A program only one side has is ``added`` or ``removed`` with its
whole subtree; a program both have is ``changed`` when anything in its subtree was added or
removed, else ``unchanged``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from profcompare.model import Report

#: Statuses of a program tree row (a tree has no grew / shrank: a subtree differs or not).
PROGRAM_STATUSES: tuple[str, ...] = ("added", "removed", "changed", "unchanged")
_STATUS_DTYPE = pd.CategoricalDtype(list(PROGRAM_STATUSES))

#: The columns of :func:`compare_programs`, in order.
PROGRAM_COLUMNS: tuple[str, ...] = (
    "depth", "kind", "name", "op", "base_name", "new_name", "base_id", "new_id",
    "base_programs", "new_programs", "delta_programs", "status",
)

_DIGITS = re.compile(r"\d+")

#: One node's key among its siblings: (kind, normalised name, occurrence).
_Key = tuple[str, str, int]


def normalise_program_name(name: str) -> str:
    """The name used to pair programs of two compiles: every run of digits becomes ``#``."""
    return _DIGITS.sub("#", name)


class _Tree:
    """One side's programs table as children lists keyed by :data:`_Key` (row indices)."""

    def __init__(self, programs: pd.DataFrame) -> None:
        self.ids = programs["id"].to_numpy(dtype="int64")
        parents = programs["parent"].to_numpy(dtype="int64", na_value=-1)
        self.names = programs["name"].astype(str).to_numpy(dtype=object)
        self.ops = programs["op"].astype(str).to_numpy(dtype=object)
        kinds = programs["kind"].astype(str).to_numpy(dtype=object)
        row_of = {int(pid): row for row, pid in enumerate(self.ids.tolist())}
        parent_rows = [row_of.get(int(p), -1) if p >= 0 else -1 for p in parents.tolist()]
        self.children: dict[int, dict[_Key, int]] = {}  # parent row (-1: the roots) -> {key: row}
        seen: dict[tuple[int, str, str], int] = {}
        for row, at in enumerate(parent_rows):
            kind, normal = str(kinds[row]), normalise_program_name(str(self.names[row]))
            occurrence = seen.get((at, kind, normal), 0)
            seen[(at, kind, normal)] = occurrence + 1
            self.children.setdefault(at, {})[(kind, normal, occurrence)] = row
        # programs in each row's subtree (itself included); children follow their parent
        self.size = np.ones(len(self.ids), dtype=np.int64)
        for row in range(len(self.ids) - 1, -1, -1):
            if parent_rows[row] >= 0:
                self.size[parent_rows[row]] += self.size[row]

    def kids(self, row: int | None) -> dict[_Key, int]:
        """The children of ``row`` (None: the roots) by key."""
        return self.children.get(-1 if row is None else row, {})


def _merged_keys(base: Sequence[_Key], new: Sequence[_Key]) -> list[_Key]:
    """Both sides' sibling keys in one order, as a diff lays them out: the longest run of common
    keys in order, and between them base's removed keys before new's added ones. A key both
    sides have out of order comes once, at new's place."""
    in_new = set(new)
    out: list[_Key] = []
    matcher = difflib.SequenceMatcher(a=list(base), b=list(new), autojunk=False)
    for _tag, b0, b1, n0, n1 in matcher.get_opcodes():
        if _tag == "equal":
            out.extend(new[n0:n1])
            continue
        out.extend(k for k in base[b0:b1] if k not in in_new)
        out.extend(new[n0:n1])
    return out


def compare_programs(base: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """The two program trees ``base`` and ``new`` (``programs`` tables) aligned, one row per
    program of either, in tree order (a program, then its children), depth first.

    Columns: depth (int64), kind (str), name (new's name where new has the program, else
    base's), op (likewise), base_name / new_name (str; None on the side without it), base_id /
    new_id (Int64; <NA> likewise), base_programs / new_programs (int64: programs in its subtree,
    itself included; 0 on the side without it), delta_programs (new - base), status
    (categorical :data:`PROGRAM_STATUSES`: added, removed, changed -- a subtree whose programs
    differ -- or unchanged).
    """
    old, now = _Tree(base), _Tree(new)
    rows: list[tuple[int, str, str, str, str | None, str | None, int | None, int | None, int, int, str]] = []

    def visit(base_kids: dict[_Key, int], new_kids: dict[_Key, int], depth: int) -> bool:
        """Emit the aligned programs of two sibling lists with their subtrees; whether any differs."""
        differs = False
        for key in _merged_keys(list(base_kids), list(new_kids)):
            b, n = base_kids.get(key), new_kids.get(key)
            at = len(rows)
            shown, row = (now, n) if n is not None else (old, b if b is not None else 0)
            rows.append((depth, key[0], str(shown.names[row]), str(shown.ops[row]),
                         None if b is None else str(old.names[b]), None if n is None else str(now.names[n]),
                         None if b is None else int(old.ids[b]), None if n is None else int(now.ids[n]),
                         0 if b is None else int(old.size[b]), 0 if n is None else int(now.size[n]), ""))
            below = visit(old.kids(b) if b is not None else {}, now.kids(n) if n is not None else {}, depth + 1)
            status = "added" if b is None else "removed" if n is None else "changed" if below else "unchanged"
            rows[at] = (*rows[at][:-1], status)
            differs = differs or status != "unchanged"
        return differs

    visit(old.kids(None), now.kids(None), 0)
    columns = list(zip(*rows)) if rows else [()] * 11
    frame = pd.DataFrame({
        "depth": np.asarray(columns[0], dtype=np.int64),
        "kind": pd.Series(columns[1], dtype=object),
        "name": pd.Series(columns[2], dtype=object),
        "op": pd.Series(columns[3], dtype=object),
        "base_name": pd.Series(columns[4], dtype=object),
        "new_name": pd.Series(columns[5], dtype=object),
        "base_id": pd.array(columns[6], dtype="Int64"),
        "new_id": pd.array(columns[7], dtype="Int64"),
        "base_programs": np.asarray(columns[8], dtype=np.int64),
        "new_programs": np.asarray(columns[9], dtype=np.int64),
    })
    frame["delta_programs"] = frame["new_programs"] - frame["base_programs"]
    frame["status"] = pd.Categorical(list(columns[10]), dtype=_STATUS_DTYPE)
    return frame[list(PROGRAM_COLUMNS)]


def _compare_programs(base: Report, new: Report) -> pd.DataFrame:
    """:func:`compare_programs` of two reports' program trees."""
    return compare_programs(base.programs, new.programs)


__all__ = ["PROGRAM_COLUMNS", "PROGRAM_STATUSES", "compare_programs", "normalise_program_name"]
