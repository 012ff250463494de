"""Make untrusted text safe to print: control characters become visible escapes.

Names in a report (variables, programs, buffers, the report's own labels) come from files we
did not write. Printed raw, an ESC/CSI/OSC sequence could recolour, hide or overwrite figures
in a terminal or set its title, and a bidirectional override could reorder what a reader sees.
Every text, markdown and csv output therefore passes names through :func:`visible`, which
spells each such character as a Python-style escape (``\\x1b``, ``\\u202e``): the name stays
recognisable and nothing in it acts on the terminal. HTML does not need this (the browser
shows text, not control sequences); there names are isolated from their surroundings instead
(``unicode-bidi: isolate``).
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

#: C0 controls, DEL, C1 controls, and the Unicode bidirectional formatting characters
#: (LRM/RLM, embeddings/overrides U+202A-U+202E, isolates U+2066-U+2069, ALM U+061C).
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control or bidi-formatting character written as an escape."""
    return _UNSAFE.sub(_escape, text)


def one_line(text: str) -> str:
    """``text`` folded onto one line (line breaks as spaces) with the rest made :func:`visible`."""
    return visible(" ".join(text.splitlines()))


def visible_document(document: Any) -> Any:
    """A copy of a render Document (sections.Document) with every string passed through :func:`visible`."""
    if isinstance(document, str):
        return visible(document)
    if isinstance(document, tuple):
        return tuple(visible_document(item) for item in document)
    if dataclasses.is_dataclass(document) and not isinstance(document, type):
        changes = {f.name: visible_document(getattr(document, f.name)) for f in dataclasses.fields(document)}
        return dataclasses.replace(document, **changes)
    return document


__all__ = ["one_line", "visible", "visible_document"]
