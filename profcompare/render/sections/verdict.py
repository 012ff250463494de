"""The Verdict section every comparison opens with, in every medium: what moved where, what it
did to tile memory and to time, in two or three sentences
(:mod:`profcompare.render.verdict_words`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from profcompare.comparison.verdict import ComparisonVerdict, comparison_verdict
from profcompare.render.page.model import Section
from profcompare.render.verdict_words import comparison_sentences

if TYPE_CHECKING:
    from profcompare.comparison import Comparison

#: The section's title and page anchor.
VERDICT_TITLE = "Verdict"
VERDICT_ID = "verdict"


def verdict_lines(cmp: Comparison) -> tuple[str, ...]:
    """The verdict of a comparison in words (see :mod:`profcompare.render.verdict_words`)."""
    return comparison_sentences(comparison_verdict(cmp))


def has_modelled_figures(cmp: Comparison) -> bool:
    """Whether any summary figure of ``cmp`` is modelled (an estimate, not a measurement)."""
    return bool((cmp.summary["confidence"].astype(str) == "modelled").any())


def comparison_verdict_section(cmp: Comparison, verdict: ComparisonVerdict | None = None, *,
                               first_screen: bool = False) -> Section:
    """The verdict of ``cmp`` as items, with a note that it is written from the figures below,
    per replica (and that modelled figures are estimates, where there are any). ``verdict``:
    the comparison's verdict when the caller has it already (computed here otherwise).
    ``first_screen``: for the first screen of ``run`` and ``compare``, which shows no figures
    below it: the note says only that modelled figures are estimates (no note without any)."""
    sentences = comparison_sentences(comparison_verdict(cmp) if verdict is None else verdict)
    modelled = has_modelled_figures(cmp)
    if first_screen:
        notes = ("Modelled figures are estimates.",) if modelled else ()
    else:
        notes = ("Written from the figures below; bytes per replica."
                 + (" Modelled figures are estimates (see the Confidence column of the Summary)." if modelled else ""),)
    return Section(VERDICT_TITLE, notes=notes, items=sentences, id=VERDICT_ID)


__all__ = ["VERDICT_ID", "VERDICT_TITLE", "comparison_verdict_section", "has_modelled_figures", "verdict_lines"]
