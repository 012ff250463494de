"""Fitting terminal tables and prose to a width, without ever splitting a number or a name.

Pure layout: :func:`fit_table` takes a :class:`~profcompare.render.sections.Table` and a width
and returns a :class:`FittedTable` (which columns, how wide, each cell as lines); the text
renderer only draws it. A width of None means unbounded: everything at its natural width (a
file or a pipe, where nothing should be cut).

A table that does not fit is made narrower in this order, stopping as soon as it fits:

1. the spaces between columns shrink from 3 to 2, long headers wrap at spaces and hyphens and
   a few are abbreviated (:data:`HEADER_ABBREVIATIONS`);
2. text columns shrink to :data:`NAME_MIN_SOFT` characters: a cell of several words wraps at
   its spaces, a single name longer than the column is shortened in the middle with an
   ellipsis (``fc1.weight_sh…all_gathered``), keeping its end, which tells similar names apart;
3. columns are left out in the order of :data:`DROP_ORDER` (the least needed to read a row);
4. cells of several figures (``8.5 MiB -> 5.4 MiB (-3.1 MiB)``) wrap between figures, and text
   columns shrink down to :data:`NAME_MIN_HARD`;
5. the rightmost columns are left out, keeping the first two.

A figure and its unit (``3.1 MiB``, ``+12.0%``) are one unbreakable piece; a number is never cut.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from profcompare.render.sections import Table
from profcompare.render.shorten import BOUNDARY, ELLIPSIS, shorten_name

#: spaces between columns at natural width, and when a table is squeezed
GAP = 3
TIGHT_GAP = 2

#: text columns shrink to this many characters before any column is left out
NAME_MIN_SOFT = 24
#: ... and to this many as the last resort before the rightmost columns go
NAME_MIN_HARD = 12

#: columns left out when a table still does not fit, first to last: each is a detail of a row
#: that the other columns (the figures, the delta and its status) already let a reader follow
#: (a variable's shape and liveness, a remote buffer's entries; the ledger's base and new bytes
#: moved, whose delta stays);
#: in the tables of run, runs and sweep: the timings, the backend, cycles per step (samples per
#: second says it), code (part of always-live) and host/runtime time (part of time per session.run)
DROP_ORDER = ("Confidence", "Match", "Shape", "Always-live", "Entries", "Group", "Delta %", "Base total", "New total", "Base bytes moved", "New bytes moved", "Share", "Of budget", "Rows",
              "Base steps", "New steps",
              "Dtype", "Tiles", "Status", "compile s", "run s", "samples/step", "backend", "cycles/step", "code",
              "Device cycles per step", "Code", "Host/runtime time per step")

#: shorter headers used when a table is squeezed
HEADER_ABBREVIATIONS = {
    "Confidence": "Conf.",
    "Cycles per step": "Cycles/step",
    "Code bytes": "Code",
    "Entry shape": "Shape",
    "samples/step": "samples",
    "report / error": "report",
}

_UNIT = re.compile(r"^(B|KiB|MiB|GiB|TiB|PiB|ms|s|%|x)[)\],.;:]*$")


def atoms(text: str) -> list[str]:
    """Return ``text`` split at spaces into pieces that must stay whole: a figure keeps its unit
    (``3.1 MiB``) and an arrow stays with the figure before it (``8.5 MiB ->``)."""
    pieces: list[str] = []
    for word in text.split():
        if pieces and (_UNIT.match(word) or word in ("->", "\u2192")):
            pieces[-1] += " " + word
        else:
            pieces.append(word)
    return pieces


def fold_word(word: str, width: int) -> list[str]:
    """Return a word longer than ``width`` (a path, a long name in prose) in pieces of at most
    ``width`` characters, each ending at a ``/ . _ -`` boundary when there is one."""
    pieces = []
    while len(word) > width:
        cut = max((i + 1 for i in range(width) if word[i] in BOUNDARY), default=width)
        if cut < width // 2:
            cut = width
        pieces.append(word[:cut])
        word = word[cut:]
    return pieces + ([word] if word else [])


def wrap_pieces(pieces: Sequence[str], width: int, *, shorten: bool = False,
                fold: bool = True) -> tuple[list[str], bool]:
    """Pack ``pieces`` greedily into lines of at most ``width`` characters, one space apart.

    A piece longer than ``width`` is shortened in the middle (``shorten``), folded at name
    boundaries (``fold``) or else kept whole on a line of its own (a path to copy); returns
    (lines, whether any piece was shortened)."""
    lines: list[str] = []
    shortened = False
    for piece in pieces:
        if len(piece) > width:
            if shorten:
                piece = shorten_name(piece, width)
                shortened = True
            elif fold:
                lines.extend(fold_word(piece, width))
                continue
            else:
                lines.append(piece)
                continue
        if lines and len(lines[-1]) + 1 + len(piece) <= width:
            lines[-1] += " " + piece
        else:
            lines.append(piece)
    return lines or [""], shortened


def wrap_text(text: str, width: int | None, *, first: str = "", rest: str = "", fold: bool = True) -> list[str]:
    """Return ``text`` wrapped at spaces to ``width`` (None: one line), the first line starting
    with ``first`` and the others with ``rest`` (a hanging indent). Figures keep their units;
    a word longer than a line is folded at ``/ . _ -`` boundaries, or without ``fold`` kept
    whole on a line of its own (a path or a command to copy, wider than the screen)."""
    if width is None or len(first) + len(text) <= width:
        return [first + text]
    room = max(width - max(len(first), len(rest)), 8)
    lines, _ = wrap_pieces(atoms(text), room, fold=fold)
    return [(first if i == 0 else rest) + line for i, line in enumerate(lines)]


def _header_pieces(header: str) -> list[str]:
    """A header's words, split at spaces and after hyphens (headers are words, not names)."""
    return [piece for word in header.split() for piece in re.findall(r"[^-]+-?|-", word)]


def _wrap_header(header: str, width: int) -> list[str]:
    if len(header) <= width:
        return [header]
    lines: list[str] = []
    for piece in _header_pieces(header):
        glue = "" if lines and lines[-1].endswith("-") else " "
        if lines and len(lines[-1]) + len(glue) + len(piece) <= width:
            lines[-1] += glue + piece
        else:
            lines.append(piece)
    return lines


@dataclass(frozen=True)
class FittedTable:
    """A table laid out for a width: the kept columns' headers and cells as lines.

    ``widths`` are the kept columns' widths and ``gap`` the spaces between them; ``rows`` hold,
    per row and kept column, the cell's lines; ``tones`` the cells' tones. ``dropped`` names the
    columns left out and ``shortened`` says whether a name was cut with an ellipsis.
    """

    headers: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...]
    widths: tuple[int, ...]
    rows: tuple[tuple[tuple[str, ...], ...], ...]
    tones: tuple[tuple[str | None, ...], ...]
    gap: int
    dropped: tuple[str, ...] = ()
    shortened: bool = False

    @property
    def width(self) -> int:
        """The table's width in characters."""
        return sum(self.widths) + self.gap * max(len(self.widths) - 1, 0)

    @property
    def squeezed(self) -> bool:
        """True when columns were left out or names shortened to fit."""
        return bool(self.dropped) or self.shortened


def _water_fill(widths: list[int], floors: list[int], members: Sequence[int], excess: int) -> int:
    """Narrow the ``members`` columns, widest first, by up to ``excess`` in total, none below its
    floor; returns what is still in excess."""
    while excess > 0:
        movable = [i for i in members if widths[i] > floors[i]]
        if not movable:
            break
        widest = max(movable, key=lambda i: (widths[i], -i))
        widths[widest] -= 1
        excess -= 1
    return excess


def _allocate(table: Table, kept: Sequence[int], headers: Sequence[str], width: int, gap: int,
              hard: bool) -> list[int] | None:
    """Column widths of the ``kept`` columns within ``width``, or None when they cannot fit.

    Headers wrap first, then text columns shrink to :data:`NAME_MIN_SOFT`; ``hard`` goes on to
    wrap cells of several figures and then to shrink text columns to :data:`NAME_MIN_HARD`."""
    cells = [[row[i].text for row in table.rows] for i in kept]
    positions = range(len(kept))
    natural = [max([len(headers[k]), *map(len, cells[k])]) for k in positions]
    header_floor = [max(map(len, _header_pieces(headers[k]) or [""])) for k in positions]
    cell_natural = [max(map(len, column), default=0) for column in cells]
    text_columns = [k for k in positions if not table.columns[kept[k]].numeric]
    figure_columns = [k for k in positions if table.columns[kept[k]].numeric]
    widths = list(natural)
    excess = sum(widths) + gap * (len(kept) - 1) - width
    floors = [max(cell_natural[k], header_floor[k]) for k in positions]
    excess = _water_fill(widths, floors, positions, excess)
    floors = [max(min(cell_natural[k], NAME_MIN_SOFT), header_floor[k]) for k in positions]
    excess = _water_fill(widths, floors, text_columns, excess)
    if hard and excess > 0:
        floors = [max([header_floor[k], *(len(p) for text in cells[k] for p in atoms(text))]) for k in positions]
        excess = _water_fill(widths, floors, figure_columns, excess)
        floors = [max(min(cell_natural[k], NAME_MIN_HARD), header_floor[k]) for k in positions]
        excess = _water_fill(widths, floors, text_columns, excess)
    return widths if excess <= 0 else None


def _layout(table: Table, kept: Sequence[int], headers: Sequence[str], widths: Sequence[int], gap: int,
            dropped: Sequence[str]) -> FittedTable:
    shortened = False
    rows = []
    for row in table.rows:
        cells: list[tuple[str, ...]] = []
        for k, index in enumerate(kept):
            text = row[index].text
            if len(text) <= widths[k]:
                cells.append((text,))
                continue
            lines, cut = wrap_pieces(atoms(text), widths[k], shorten=not table.columns[index].numeric)
            shortened = shortened or cut
            cells.append(tuple(lines))
        rows.append(tuple(cells))
    return FittedTable(
        headers=tuple(tuple(_wrap_header(headers[k], widths[k])) for k in range(len(kept))),
        numeric=tuple(table.columns[i].numeric for i in kept),
        widths=tuple(widths),
        rows=tuple(rows),
        tones=tuple(tuple(row[i].tone for i in kept) for row in table.rows),
        gap=gap,
        dropped=tuple(dropped),
        shortened=shortened,
    )


def fit_table(table: Table, width: int | None) -> FittedTable:
    """Return ``table`` laid out within ``width`` characters (None: at its natural width).

    See the module docstring for the order in which a table is made narrower. Only a table that
    cannot fit even with two columns left is wider than ``width``.
    """
    every = list(range(len(table.columns)))
    headers = [column.header for column in table.columns]
    natural = [max([len(headers[i]), *(len(row[i].text) for row in table.rows)]) for i in every]
    if width is None or sum(natural) + GAP * max(len(every) - 1, 0) <= width:
        return _layout(table, every, headers, natural, GAP, ())
    short = [HEADER_ABBREVIATIONS.get(h, h) for h in headers]
    kept = list(every)
    dropped: list[str] = []
    candidates = [i for name in DROP_ORDER for i in every if i > 0 and headers[i] == name]

    def attempt(hard: bool, within: int = width) -> list[int] | None:
        return _allocate(table, kept, [short[i] for i in kept], within, TIGHT_GAP, hard)

    widths = attempt(False)
    while widths is None and candidates:
        index = candidates.pop(0)
        kept.remove(index)
        dropped.append(headers[index])
        widths = attempt(False)
    if widths is None:
        widths = attempt(True)
    while widths is None and len(kept) > 2:
        dropped.append(headers[kept.pop()])
        widths = attempt(True)
    wider = width
    while widths is None:  # two columns that cannot fit: as narrow as they go
        wider += 1
        widths = attempt(True, wider)
    return _layout(table, kept, [short[i] for i in kept], widths, TIGHT_GAP, dropped)


def squeeze_note(fitted: FittedTable, width: int) -> str | None:
    """The note under a table made to fit ``width`` columns: what was left out or shortened, and
    how to see it all; None when nothing was."""
    if not fitted.squeezed:
        return None
    parts = []
    if fitted.dropped:
        parts.append("columns left out: " + ", ".join(fitted.dropped))
    if fitted.shortened:
        parts.append(f"long names shortened in the middle ({ELLIPSIS})")
    return f"To fit {width} columns, {'; '.join(parts)}. A wider terminal or -o FILE shows the whole table."


__all__ = [
    "DROP_ORDER",
    "ELLIPSIS",
    "FittedTable",
    "HEADER_ABBREVIATIONS",
    "NAME_MIN_HARD",
    "NAME_MIN_SOFT",
    "atoms",
    "fit_table",
    "fold_word",
    "shorten_name",
    "squeeze_note",
    "wrap_pieces",
    "wrap_text",
]
