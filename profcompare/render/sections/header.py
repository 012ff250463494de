"""The header every document of one report or of a comparison opens with: which report is
which (its facts lines) and the warnings a reader must not miss. ``show``, ``compare``,
``variables``, ``compare --at``, ``ops`` and ``tiles`` all take it from here, so a report out of
memory, simulated or compile-only says so the same way in every one of them."""

from __future__ import annotations

from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.format import describe_target
from profcompare.render.sections.document import (
    _compile_only_warning,
    _oom_warning,
    _report_facts,
    _simulated_warning,
)


def report_warnings(report: Report) -> tuple[str, ...]:
    """The lines a reader of one report must not miss: out of memory, simulated, compile only."""
    meta = report.meta
    return tuple(w for w in (_oom_warning(meta, "report"), _simulated_warning(meta, "report"),
                             _compile_only_warning(meta, "report")) if w)


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


def report_header(report: Report) -> tuple[list[tuple[str, str]], tuple[str, ...]]:
    """One report's header: its facts lines (what it is, its source) and its warnings."""
    return _report_facts(report.meta), report_warnings(report)


def comparison_header(cmp: Comparison) -> tuple[list[tuple[str, str]], tuple[str, ...]]:
    """A comparison's header: which report is base and which new (what each is, its source) and
    the comparison's warnings."""
    return _report_facts(cmp.base.meta, "base") + _report_facts(cmp.new.meta, "new"), comparison_warnings(cmp)


__all__ = ["comparison_header", "comparison_warnings", "report_header", "report_warnings"]
