"""Long names shortened in the middle, keeping their start and their end (what tells similar
names apart): the terminal's tables (:mod:`profcompare.render.table_fit`) and the page's name
columns (:mod:`profcompare.render.templates_env`) both cut names this way."""

from __future__ import annotations

#: what marks the middle of a shortened name
ELLIPSIS = "\u2026"

#: characters a name is made of parts by (a shortened name's end starts after one)
BOUNDARY = "/._-@()[]:"


def shorten_name(name: str, width: int) -> str:
    """Return ``name`` in at most ``width`` characters: its start, an ellipsis and its end (the
    end starts at a ``/ . _`` boundary when one is near the cut)."""
    if len(name) <= width:
        return name
    if width <= 1:
        return ELLIPSIS[:width]
    budget = width - 1
    head = budget // 2
    start = len(name) - (budget - head)
    # start the end part just after a boundary when one is among its first 3 characters; the
    # characters saved go to the start part
    for offset in range(min(3, len(name) - start)):
        if name[start + offset] in BOUNDARY and len(name) - start - offset > 2:
            head += offset + 1
            start += offset + 1
            break
    return name[:head] + ELLIPSIS + name[start:]


__all__ = ["BOUNDARY", "ELLIPSIS", "shorten_name"]
