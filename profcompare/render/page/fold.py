"""Which sections a page folds, and the one line a folded section shows.

A page answers its question first: a comparison's verdict, what differs, where the memory moved,
the memory ledger, the trace, liveness, what changed the peak, the summary and memory by
category stay open. The detail views after them (:data:`DETAIL_SECTIONS`: memory per IPU, tiles
and tile detail, variables, code, operations, the program tree, vertices, compute sets and
exchanges, Streaming Memory, execution, replicas) are each a closed block on the page: their
title and a headline (:func:`headline`, the section's most important figure) until a click, a
navigation link or the URL's hash opens them.
So each detail view costs the first reader one line of height, and the page keeps within its
height budget as views are added. Printing and a page without JavaScript show every section
open; the terminal, Markdown and JSON are not folded.

A new detail view adds its section id to :data:`DETAIL_SECTIONS`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from profcompare.render.page.model import Cell, Section, Table
from profcompare.render.shorten import shorten_name

#: ids of the sections a page folds (the detail views), in no particular order
DETAIL_SECTIONS = frozenset({
    "memory-per-ipu",
    "tiles",
    "tile-detail",
    "variables",
    "code",
    "loaded-code",
    "operations",
    "programs",
    "vertices",
    "streaming",
    "execution",
    "replicas",
})

#: the most characters of a row's name a headline quotes (cut in the middle beyond)
HEADLINE_NAME_CHARS = 40

#: "Top 20 of 603 ops shown" / "All 16 rows shown": how many rows a table's view is of
_COUNT = re.compile(r"\b(?:Top [\d,]+ of|All) ([\d,]+) ([^;.]*?) shown\b")


def folds(sections: Iterable[Section]) -> dict[str, str]:
    """The sections of ``sections`` a page folds (the detail views, :data:`DETAIL_SECTIONS`):
    section id -> its :func:`headline`, in page order. The sections themselves stay as every
    medium draws them; only the page folds."""
    return {section.id: headline(section) for section in sections if section.id in DETAIL_SECTIONS}


def headline(section: Section) -> str:
    """One line saying what a detail section holds: how many rows its first table is a view of
    (from its cut note: "603 ops"), then its largest change (a comparison: the row of the largest
    |delta|, "largest change all-reduce fc1 -824 KiB code") or its largest figure (a report: in
    its first bytes column, else its first numeric column);
    the section's first note or lead sentence when it has no table. "" when there is nothing to
    say."""
    if section.id == "tiles":
        return _tiles(section)
    if section.id == "tile-detail":
        return _fullest(section)
    parts = [part for part in (_count(section), _largest(section)) if part]
    if parts:
        return "; ".join(parts)
    return _first_sentence(section)


def _notes(section: Section) -> tuple[str, ...]:
    return (*(table.note for table in section.tables), *section.notes, section.text)


def _count(section: Section) -> str:
    for note in _notes(section):
        match = _COUNT.search(note)
        if match:
            return f"{match.group(1)} {match.group(2)}"
    return ""


def _delta_column(table: Table) -> int | None:
    """The first numeric delta column of ``table`` (not its Delta %)."""
    for index, column in enumerate(table.columns):
        key = column.key or column.header.lower()
        if column.numeric and "delta" in key and "pct" not in key and "%" not in column.header:
            return index
    return None


def _number(cell: Cell) -> float | None:
    sort = cell.sort
    if isinstance(sort, bool) or not isinstance(sort, int | float) or sort != sort:
        return None
    return float(sort)


def _unit(table: Table, at: int) -> str:
    """What a delta column counts when the headers say: its own ("Delta code", "Collectives'
    cycles delta": " code", " collectives' cycles") or its base column's ("Base cycles"); ""
    for bytes, which the figure's unit says."""
    def rest(header: str) -> str:
        words = [w for w in header.split() if w.lower() not in ("delta", "base", "new")]
        return " ".join(words)

    own = rest(table.columns[at].header)
    if own:
        return " " + own[0].lower() + own[1:]
    base = next((c.header for c in table.columns if c.header.lower().startswith("base ")), "")
    unit = rest(base)
    return f" {unit}" if unit and unit.lower() not in ("bytes", "tile memory") else ""


def _largest(section: Section) -> str:
    for table in section.tables:
        if not table.rows:
            continue
        at = _delta_column(table)
        if at is not None:
            return _largest_change(table, at)
        numeric = [i for i, c in enumerate(table.columns) if c.numeric and i > 0]
        in_bytes = [i for i in numeric if "bytes" in (table.columns[i].key + table.columns[i].header.lower())]
        if numeric and not table.columns[0].numeric:
            return _largest_figure(table, (in_bytes or numeric)[0])
    return ""


def _largest_change(table: Table, at: int) -> str:
    rows = [(abs(value), row) for row in table.rows if (value := _number(row.cells[at])) is not None]
    if not rows:
        return ""
    size, row = max(rows, key=lambda pair: pair[0])
    if size == 0:
        return "no change"
    name = shorten_name(row.cells[0].text.strip().lstrip("\u00a0\u2514 "), HEADLINE_NAME_CHARS)
    return f"largest change {name} {row.cells[at].text}{_unit(table, at)}"


def _largest_figure(table: Table, at: int) -> str:
    rows = [(value, row) for row in table.rows if (value := _number(row.cells[at])) is not None]
    if not rows:
        return ""
    _, row = max(rows, key=lambda pair: pair[0])
    name = shorten_name(row.cells[0].text.strip().lstrip("\u00a0\u2514 "), HEADLINE_NAME_CHARS)
    header = table.columns[at].header.lower()
    return f"largest {name} {row.cells[at].text}" + ("" if header == "bytes" else f" ({header})")


def _tiles(section: Section) -> str:
    """The Tiles section's line: the fullest tile and the tiles over budget (base -> new on a
    comparison), then how many tiles changed."""
    stats = next((t for t in section.tables if t.id == "tile-stats-table"), None)
    if stats is None:
        return _first_sentence(section)
    figures = {row.data.get("stat"): row for row in stats.rows}
    sides = sum(1 for c in stats.columns if c.numeric and c.key in ("r0", "base", "new"))

    def figure(key: str) -> str:
        row = figures.get(key)
        return "" if row is None else " \u2192 ".join(cell.text for cell in row.cells[1:1 + sides])

    parts = [f"fullest tile {figure('max_bytes')}", f"tiles over budget {figure('tiles_over_budget')}"]
    changed = next((note for note in section.notes if "tiles changed" in note), "")
    if changed:
        parts.append(changed.rstrip("."))
    return "; ".join(parts)


def _fullest(section: Section) -> str:
    """The tile detail's headline: each side's fullest tile, the first clause of its "why" item
    ("tile 0 is the fullest: 103.3 KiB, 6.7x the median tile (15.4 KiB)"), base then new."""
    clauses = [item.split("; ")[0] for item in section.items if "is the fullest" in item]
    return "; ".join(clauses) if clauses else _first_sentence(section)


def _first_sentence(section: Section) -> str:
    for text in (*section.notes, section.text):
        if text:
            sentence = text.split(". ")[0].rstrip(".")
            return sentence if len(sentence) <= 140 else sentence[:139] + "\u2026"
    return ""


__all__ = ["DETAIL_SECTIONS", "HEADLINE_NAME_CHARS", "folds", "headline"]
