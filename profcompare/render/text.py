"""Terminal text (rich): ``profcompare show``/``compare``/``variables`` without ``--format``.

Colour is off unless asked for (the CLI asks only when writing to a terminal). The width is
that of the reader's screen when there is one: tables are fitted to it by
:mod:`profcompare.render.table_fit` (columns left out in a stated order, long names shortened in
the middle, a note saying so; a number or a name is never split across lines) and prose wraps at
spaces. Without a width (a file, a pipe) nothing is fitted or wrapped: every table is whole.
"""

from __future__ import annotations

import io
from collections.abc import Collection
from dataclasses import replace
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from profcompare.render.control_chars import visible_document
from profcompare.render.page.model import drawn_rows
from profcompare.render.sections import Document, Table, build_document
from profcompare.render.table_fit import FittedTable, fit_table, squeeze_note, wrap_text

if TYPE_CHECKING:
    from profcompare.comparison import Comparison
    from profcompare.model import Report
    from profcompare.render.sections import VariablesView

#: width when none is given: unbounded (None), so that nothing is ever cut from a file
DEFAULT_WIDTH: int | None = None

_TONE_STYLES = {"bad": "red", "good": "green", "muted": "dim"}


class TextRenderer:
    """Render a report, a comparison or a variables view as terminal tables."""

    name = "text"
    file_extension = ".txt"

    def __init__(self, *, color: bool = False, width: int | None = DEFAULT_WIDTH) -> None:
        self.color = color
        self.width = width

    def render(self, obj: Report | Comparison | VariablesView, *, top: int = 20) -> str:
        """Return the document as text (ANSI colour codes only when ``color`` was asked for)."""
        return render_document(build_document(obj, top=top), color=self.color, width=self.width)


class _Lines:
    """Where the document's lines go: plain text, or through rich for colour (ANSI codes).

    Every line is laid out here before it is printed, so rich never wraps anything; without
    colour rich is not needed at all (and a table of many thousand rows stays quick)."""

    def __init__(self, color: bool) -> None:
        self.buffer = io.StringIO()
        self.console = None if not color else Console(
            file=self.buffer,
            width=1 << 16,
            color_system="standard",
            force_terminal=True,
            force_jupyter=False,
            force_interactive=False,
            highlight=False,
            markup=False,
            emoji=False,
            legacy_windows=False,
            soft_wrap=True,
        )

    def print(self, text: Text | str = "") -> None:
        if self.console is not None:
            self.console.print(text)
        else:
            self.buffer.write((text.plain if isinstance(text, Text) else text) + "\n")

    def value(self) -> str:
        # trailing spaces only make diffs noisy
        return "\n".join(line.rstrip() for line in self.buffer.getvalue().splitlines()) + "\n"


def table_lines(fitted: FittedTable, *, color: bool = False) -> list[Text | str]:
    """The lines of a fitted table: the header (bold in colour), a rule, then the rows; figures
    right-aligned, cells of several lines side by side. Without ``color`` plain strings; with
    it rich Texts, each cell in its tone's colour."""
    gap = " " * fitted.gap
    lines: list[Text | str] = []
    height = max((len(h) for h in fitted.headers), default=1)
    for index in range(height):
        parts = []
        for k, header in enumerate(fitted.headers):
            # headers of several lines sit on the rule, like the cells under them
            text = header[index - (height - len(header))] if index >= height - len(header) else ""
            parts.append((text.rjust if fitted.numeric[k] else text.ljust)(fitted.widths[k]))
        lines.append(Text(gap.join(parts), style="bold") if color else gap.join(parts))
    lines.append("\u2500" * fitted.width)
    for cells, tones in zip(fitted.rows, fitted.tones):
        for index in range(max(len(cell) for cell in cells)):
            padded = [
                (cell[index] if index < len(cell) else "").rjust(fitted.widths[k]) if fitted.numeric[k]
                else (cell[index] if index < len(cell) else "").ljust(fitted.widths[k])
                for k, cell in enumerate(cells)
            ]
            if not color:
                lines.append(gap.join(padded))
                continue
            line = Text()
            for k, text in enumerate(padded):
                line.append(gap if k else "")
                line.append(text, style=_TONE_STYLES.get(tones[k] or "", ""))
            lines.append(line)
    return lines


def render_table(table: Table, *, color: bool = False, width: int | None = None) -> str:
    """Return ``table`` alone drawn as terminal text fitted to ``width`` (None: whole), with the
    note saying what was left out when it had to be squeezed; control characters made visible."""
    out = _Lines(color)
    _print_table(out, visible_document(table), color, width)
    return out.value()


def _print_table(out: _Lines, table: Table, color: bool, width: int | None) -> None:
    if not table.rows and not table.footer:
        _print_wrapped(out, f"({table.empty})", width, style="dim")
        return
    fitted = fit_table(replace(table, rows=drawn_rows(table), footer=()), width)
    lines = table_lines(fitted, color=color)
    # one print for the whole table: rich's cost is per print call
    out.print(Text("\n").join(Text(x) if isinstance(x, str) else x for x in lines) if color else "\n".join(map(str, lines)))
    note = squeeze_note(fitted, width) if width is not None else None
    if note is not None:
        _print_wrapped(out, note, width, style="dim")
    if table.note:
        _print_wrapped(out, table.note, width, style="dim")


def _print_wrapped(out: _Lines, text: str, width: int | None, *, style: str = "", first: str = "",
                   rest: str = "", fold: bool = True) -> None:
    for line in wrap_text(text, width, first=first, rest=rest, fold=fold):
        out.print(Text(line, style=style))


def render_document(document: Document, *, color: bool = False, width: int | None = DEFAULT_WIDTH,
                    unfolded: Collection[str] = ()) -> str:
    """Return ``document`` drawn as terminal text fitted to ``width`` characters (None: nothing
    fitted or wrapped); names are made visible first: control characters from a report never
    reach the terminal. The lines of the sections titled in ``unfolded`` wrap at spaces only: a
    path or a command wider than the screen stays whole on its own line, to be copied."""
    document = visible_document(document)
    out = _Lines(color)
    _print_wrapped(out, document.title, width, style="bold")
    key_width = max((len(key) for key, _ in document.facts), default=0)
    for key, value in document.facts:
        # the value's continuation lines line up under its first line
        lines = wrap_text(value, width, first=f"{key + ':':<{key_width + 1}} ", rest=" " * (key_width + 2))
        for index, line in enumerate(lines):
            text = Text(line[: key_width + 2], style="bold" if color and index == 0 else "")
            text.append(line[key_width + 2:])
            out.print(text)
    for warning in document.warnings:
        _print_wrapped(out, warning, width, style="yellow")
    for section in document.sections:
        out.print()
        out.print(Text(section.title, style="bold underline" if color else ""))
        if not color:
            out.print("-" * len(section.title))
        if section.text:
            _print_wrapped(out, section.text, width)
        for line in section.items:
            _print_wrapped(out, line, width, first="- ", rest="  ", fold=section.title not in unfolded)
        for index, table in enumerate(section.tables):
            if index:
                out.print()  # a blank line between two tables of a section
            _print_table(out, table, color, width)
        for note in section.notes:
            _print_wrapped(out, note, width, style="dim")
    return out.value()


__all__ = ["DEFAULT_WIDTH", "TextRenderer", "render_document", "render_table", "table_lines"]
