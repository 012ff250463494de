"""GitHub-flavoured Markdown, for pull-request comments and CI summaries.

Same content as the terminal output (see :mod:`profcompare.render.sections`). Every piece of
text taken from a report (variable and program names, paths) is escaped, so a name such as
``a|b`` or ``<b>x</b>`` cannot break a table or inject markup.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profcompare.render.control_chars import visible
from profcompare.render.ledger_words import BOLD_TONE_LEGEND, TONE_LEGEND
from profcompare.render.page.model import drawn_rows
from profcompare.render.sections import Cell, Document, Table, build_document

if TYPE_CHECKING:
    from profcompare.comparison import Comparison
    from profcompare.model import Report
    from profcompare.render.sections import VariablesView

# characters Markdown could read as syntax anywhere in a line (emphasis, code, links, table
# cells, strikethrough); line-start syntax (#, -, +) cannot occur since every line we write
# starts with our own markup
_ESCAPED = set("\\`*_[]|~")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def escape(text: str) -> str:
    """Return ``text`` safe inside Markdown (and inside a table cell): markup characters are
    backslash-escaped, ``& < >`` become entities, line breaks become spaces and other control
    characters visible escapes (see :func:`profcompare.render.control_chars.visible`)."""
    out = []
    for char in visible(text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")):
        if char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in _ESCAPED:
            out.append("\\" + char)
        else:
            out.append(char)
    return "".join(out)


def _cell(cell: Cell) -> str:
    text = escape(cell.text)
    if not text:
        return ""
    if cell.tone == "bad":
        return f"**{text}**"
    if cell.tone == "muted":
        return f"_{text}_"
    return text


def _table(table: Table) -> list[str]:
    header = "| " + " | ".join(escape(c.header) for c in table.columns) + " |"
    rule = "|" + "|".join("---:" if c.numeric else ":---" for c in table.columns) + "|"
    if not table.rows and not table.footer:
        return [f"_({escape(table.empty)})_"]
    lines = [header, rule]
    for row in drawn_rows(table):
        lines.append("| " + " | ".join(_cell(cell) for cell in row) + " |")
    if table.note:
        lines.extend(["", f"_{escape(table.note)}_"])
    return lines


def render_document(document: Document) -> str:
    """Return ``document`` as GitHub-flavoured Markdown."""
    lines = [f"## {escape(document.title)}", ""]
    if document.headline:
        lines.extend([f"**{escape(document.headline)}**", ""])
    for key, value in document.facts:
        lines.append(f"- **{escape(key)}**: {escape(value)}")
    if document.facts:
        lines.append("")
    for warning in document.warnings:
        lines.append(f"> **Warning:** {escape(warning)}")
        lines.append(">")
    if document.warnings:
        lines.pop()
        lines.append("")
    for section in document.sections:
        lines.append(f"### {escape(section.title)}")
        lines.append("")
        if section.text:
            lines.extend([escape(section.text), ""])
        if section.items:
            lines.extend(f"- {escape(line)}" for line in section.items)
            lines.append("")
        for table in section.tables:
            lines.extend(_table(table))
            lines.append("")
        for note in section.notes:
            # markdown has no colour: a cost is in bold (see _cell), and the legend says so
            note = BOLD_TONE_LEGEND if note == TONE_LEGEND else note
            lines.append(f"_{escape(note)}_")
            lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


class MarkdownRenderer:
    """Render a report, a comparison or a variables view as GitHub Markdown."""

    name = "markdown"
    file_extension = ".md"

    def render(self, obj: Report | Comparison | VariablesView, *, top: int = 20) -> str:
        """Return the Markdown document (tables cut to ``top`` rows plus an "other" row)."""
        return render_document(build_document(obj, top=top))


__all__ = ["MarkdownRenderer", "escape", "render_document"]
