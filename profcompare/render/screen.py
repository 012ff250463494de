"""The first screen of ``run`` and ``compare`` in a terminal: what fits one screen of
:data:`SCREEN_LINES` lines and answers the question.

The screen is the brief document of :mod:`profcompare.render.sections.brief` (headline,
warnings, verdict, the ledger's largest moves, the command's own sections, where to look next)
drawn by the text renderer, with as much detail as fits, and closed by the headline again, so
the last line on the screen is the answer. Every table stays one ``--full`` or ``--section
NAME`` away.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TypeVar

from profcompare.comparison import Comparison
from profcompare.comparison.verdict import NWayVerdict
from profcompare.render.ledger_words import MOVES_SHOWN
from profcompare.render.sections import Document, Section
from profcompare.render.sections.brief import NEXT_TITLE, comparison_brief, nway_brief
from profcompare.render.text import render_document

#: the lines of the screen the first output of ``run`` and ``compare`` fits in (at 80 columns)
SCREEN_LINES = 50


_Level = TypeVar("_Level")


def render_screen(build: Callable[[_Level], Document], levels: Sequence[_Level], *, color: bool = False,
                  width: int | None = None, lines: int = SCREEN_LINES) -> str:
    """Return the first screen drawn as terminal text: ``build(level)`` for the first of
    ``levels`` (most detail first) whose drawing, followed by a blank line and the headline
    (the document's title) again, fits in ``lines`` rows of a screen ``width`` wide (see
    :func:`screen_rows`); the last level when none does. The lines under :data:`NEXT_TITLE`
    keep paths and commands whole."""
    text = ""
    for level in levels:
        document = build(level)
        closing = render_document(Document(document.title, (), (), ()), color=color, width=width)
        text = render_document(document, color=color, width=width, unfolded=(NEXT_TITLE,)) + "\n" + closing
        if screen_rows(text, width) <= lines:
            break
    return text


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def screen_rows(text: str, width: int | None) -> int:
    """The rows ``text`` takes on a screen ``width`` columns wide: one per line, more for a line
    wider than the screen (a path kept whole), which the terminal wraps; colour codes take none."""
    rows = 0
    for line in text.splitlines():
        visible = len(_ANSI.sub("", line))
        rows += max(1, -(-visible // width)) if width else 1
    return rows


def comparison_screen(cmp: Comparison, *, sections: Sequence[Section] = (), next_steps: Sequence[str] = (),
                      color: bool = False, width: int | None = None, lines: int = SCREEN_LINES) -> str:
    """Return the first screen of a comparison (:func:`comparison_brief`) as terminal text that
    fits ``lines`` lines at ``width``: as many of the largest moves as fit (at most
    :data:`MOVES_SHOWN`, at least one), then, where even one move does not fit, the verdict's
    time sentence with one cause of the device-time change, then none; the headline first and
    last."""
    levels = [(moves, None) for moves in range(MOVES_SHOWN, 0, -1)] + [(1, 1), (1, 0)]
    return render_screen(lambda level: comparison_brief(cmp, moves=level[0], sections=sections, next_steps=next_steps,
                                                        causes=level[1]),
                         levels, color=color, width=width, lines=lines)


def nway_screen(verdict: NWayVerdict, *, base_status: str = "ok", sections: Sequence[Section] = (),
                next_steps: Sequence[str] = (), color: bool = False, width: int | None = None,
                lines: int = SCREEN_LINES) -> str:
    """Return the first screen of a run of several variants (:func:`nway_brief`) as terminal
    text: with ``sections`` when they fit in ``lines`` lines at ``width``, else without them."""
    return render_screen(lambda keep: nway_brief(verdict, base_status=base_status, sections=sections if keep else (),
                                            next_steps=next_steps),
                         (1, 0), color=color, width=width, lines=lines)


__all__ = ["SCREEN_LINES", "comparison_screen", "nway_screen", "render_screen", "screen_rows"]
