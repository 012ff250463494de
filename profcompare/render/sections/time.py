"""The words every output uses for time and the verdict section of a comparison.

One vocabulary of time: *device cycles per step* (what Graph Analyser's execution view spans:
the device phases), *host/runtime time per step* (outside the device's program; not device
time) and *time per session.run* = device time + host/runtime time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profcompare.comparison.verdict import comparison_verdict
from profcompare.render.sections.document import Section
from profcompare.render.verdict_words import comparison_sentences

if TYPE_CHECKING:
    from profcompare.comparison import Comparison


def verdict_lines(cmp: Comparison) -> tuple[str, ...]:
    """The verdict of a comparison in words (see :mod:`profcompare.render.verdict_words`)."""
    return comparison_sentences(comparison_verdict(cmp))


def verdict_section(cmp: Comparison) -> Section:
    """The section every comparison opens with: the verdict in two or three sentences."""
    modelled = bool((cmp.summary["confidence"].astype(str) == "modelled").any())
    notes = ("Written from the figures below; bytes per replica."
             + (" Modelled figures are estimates (see the Confidence column of the Summary)." if modelled else ""),)
    return Section("Verdict", notes=notes, items=verdict_lines(cmp))


__all__ = ["verdict_lines", "verdict_section"]
