"""Terminal tables (rich): ``profcompare show``/``compare``/``variables`` without ``--format``.

Colour is off unless asked for (the CLI asks only when writing to a terminal); without colour
the output is plain text of a fixed width, so it is stable for golden tests and pipes. Long
names are folded onto several lines, never cut.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from profcompare.render.control_chars import visible_document
from profcompare.render.sections import Document, Table, build_document

if TYPE_CHECKING:
    from profcompare.compare import Comparison
    from profcompare.model import Report
    from profcompare.render.sections import VariablesView

#: width of plain (non-terminal) output in characters
DEFAULT_WIDTH = 160

_TONE_STYLES = {"bad": "red", "good": "green", "muted": "dim"}


class TextRenderer:
    """Render a report, a comparison or a variables view as terminal tables."""

    name = "text"
    file_extension = ".txt"

    def __init__(self, *, color: bool = False, width: int | None = None) -> None:
        self.color = color
        self.width = width or DEFAULT_WIDTH

    def render(self, obj: Report | Comparison | VariablesView, *, top: int = 20) -> str:
        """Return the document as text (ANSI colour codes only when ``color`` was asked for)."""
        return render_document(build_document(obj, top=top), color=self.color, width=self.width)


_COLUMN_GAP = 3  # SIMPLE_HEAD without edges: one space of padding, the rule, one space


def _column_widths(table: Table, width: int) -> tuple[list[int] | None, int]:
    """Fixed column widths when the table does not fit in ``width`` at its natural size.

    Returns (None, natural width) when it fits. Otherwise numbers keep their full width, the
    descriptive columns are folded at 18 characters and the first column (the row's name) takes
    the rest, at least 16; the table may then be wider than ``width`` rather than drop columns.
    """
    natural = []
    for index, column in enumerate(table.columns):
        cells = [len(row[index].text) for row in table.rows]
        natural.append(max([len(column.header), *cells]))
    gaps = _COLUMN_GAP * max(len(natural) - 1, 0)
    if sum(natural) + gaps <= width:
        return None, sum(natural) + gaps
    widths = []
    for index, column in enumerate(table.columns):
        if column.numeric or index == 0:
            widths.append(natural[index])
        else:
            # short labels (kind, status, match: at most 17 characters) stay whole
            widths.append(min(natural[index], 18))
    rest = sum(widths[1:]) + gaps
    widths[0] = min(natural[0], max(width - rest, 16))
    return widths, sum(widths) + gaps


def _rich_table(table: Table, color: bool, widths: list[int] | None) -> RichTable:
    rich_table = RichTable(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        header_style="bold" if color else "",
        expand=False,
    )
    for index, column in enumerate(table.columns):
        fixed = widths[index] if widths else None
        if column.numeric:
            rich_table.add_column(column.header, justify="right", no_wrap=True, width=fixed)
        else:
            rich_table.add_column(column.header, justify="left", overflow="fold", width=fixed)
    for row in table.rows:
        rich_table.add_row(*(Text(cell.text, style=_TONE_STYLES.get(cell.tone or "", "")) for cell in row))
    return rich_table


def render_document(document: Document, *, color: bool = False, width: int = DEFAULT_WIDTH) -> str:
    """Return ``document`` drawn as terminal text ``width`` characters wide (names made visible:
    control characters from a report never reach the terminal)."""
    document = visible_document(document)
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width,
        color_system="standard" if color else None,
        force_terminal=color,
        force_jupyter=False,
        force_interactive=False,
        no_color=not color,
        highlight=False,
        markup=False,
        emoji=False,
        legacy_windows=False,
        soft_wrap=False,
    )
    console.print(Text(document.title, style="bold"))
    key_width = max((len(key) for key, _ in document.facts), default=0)
    for key, value in document.facts:
        line = Text(f"{key + ':':<{key_width + 1}} ", style="bold" if color else "")
        line.append(value)
        console.print(line)
    for warning in document.warnings:
        console.print(Text(warning, style="yellow"))
    for section in document.sections:
        console.print()
        console.print(Text(section.title, style="bold underline" if color else ""))
        if not color:
            console.print("-" * len(section.title))
        for line in section.lines:
            console.print(Text("- " + line))
        if section.table is not None:
            widths, needed = _column_widths(section.table, width)
            # rich would drop whole columns of a table that cannot fit; rather be wider
            console.width = max(width, needed)
            console.print(_rich_table(section.table, color, widths))
            console.width = width
        for note in section.notes:
            console.print(Text(note, style="dim"))
    # rich pads table lines to the table width; trailing spaces only make diffs noisy
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


__all__ = ["DEFAULT_WIDTH", "TextRenderer", "render_document"]
