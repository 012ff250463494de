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
from profcompare.render.sections.document import (
    Document,
    _compile_only_warning,
    _oom_warning,
    _report_facts,
    limit,
)


def comparison_warnings(cmp: Comparison) -> tuple[str, ...]:
    """Return the lines a reader of a comparison must not miss (oom, simulated, different devices)."""
    base, new = cmp.base.meta, cmp.new.meta
    warnings: list[str] = []
    for meta, role in ((base, "base"), (new, "new")):
        w = _oom_warning(meta, role)
        if w:
            warnings.append(w)
    if base.simulated and new.simulated:
        warnings.append(
            "SIMULATED: both reports come from the profcompare simulator's model of a Poplar compile, "
            "not from Poplar; treat absolute figures as estimates."
        )
    elif base.simulated != new.simulated:
        sim_role = "base" if base.simulated else "new"
        warnings.append(
            f"SIMULATED vs Poplar: the {sim_role} report is simulated and the other comes from Poplar; "
            "deltas mix real changes with the simulator's error."
        )
    for meta, role in ((base, "base"), (new, "new")):
        w = _compile_only_warning(meta, role)
        if w:
            warnings.append(w)
    if base.target != new.target:
        warnings.append(
            f"Different targets: base {describe_target(base)}; new {describe_target(new)}."
        )
    return tuple(warnings)


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
    facts = _report_facts(base, "base") + _report_facts(new, "new")
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
    return Document(title, tuple(facts), comparison_warnings(cmp), sections, headline)
