"""The sections of a comparison (``compare``), its warnings and its document."""

from __future__ import annotations

from collections.abc import Collection

from profcompare.comparison import Comparison
from profcompare.render.format import (
    describe_target,
    format_bytes,
)
from profcompare.model import variables_convention
from profcompare.render.ledger_words import liveness_rule
from profcompare.render.sections.order import RowLimits, comparison_sections
from profcompare.render.verdict_words import comparison_headline
from profcompare.render.sections.document import Document, limit
from profcompare.render.sections.header import comparison_header


def comparison_document(cmp: Comparison, *, top: int | None = 20, names: Collection[str] | None = None) -> Document:
    """Return the document for a comparison (``compare``): which report is base and which new,
    the liveness rule the reports follow, warnings, and the sections of
    :func:`~profcompare.render.sections.order.comparison_sections`, led by the Verdict.
    ``top`` cuts the long tables (None or 0 = all rows). ``names`` (``--section`` names), when
    given, keeps only those sections, in their order, and builds no other (a summary that shows
    a few sections does not pay for the rest).
    """
    top = limit(top)
    base, new = cmp.base.meta, cmp.new.meta
    facts, warnings = comparison_header(cmp)
    facts.append(
        (
            "delta",
            (
                f"new - base; a change within {format_bytes(cmp.noise_bytes)} and within {cmp.noise_pct:g}% of base "
                "counts as unchanged (noise)"
            ),
        )
    )
    if base.target == new.target:
        facts.append(("target", describe_target(base)))
    rule = liveness_rule((variables_convention(cmp.base.variables), variables_convention(cmp.new.variables)))
    if rule:
        facts.append(("liveness", rule))
    sections = comparison_sections(cmp, RowLimits.every(top), names=names)
    title = f"profcompare comparison: {base.label} (base) vs {new.label} (new)"
    # the whole document opens with the headline; a few named sections stand without it
    headline = comparison_headline(cmp) if names is None else ""
    return Document(title, tuple(facts), warnings, sections, headline)
