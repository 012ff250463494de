"""The document every text and markdown output is drawn from (a :class:`Document` of sections of
the one page model, :mod:`profcompare.render.page.model`), and the cells, notes and header lines
that the report, comparison and ledger sections share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from profcompare.analysis.views import TopN
from profcompare.comparison import Comparison
from profcompare.model import CAPABILITIES, Report, ReportMeta
from profcompare.render.format import describe_report, is_missing
from profcompare.render.page.notes import cut_note
from profcompare.render.page.model import TONES as TONES
from profcompare.render.page.model import Cell as Cell
from profcompare.render.page.model import Column as Column
from profcompare.render.page.model import Section as Section
from profcompare.render.page.model import Table as Table

@dataclass(frozen=True)
class Document:
    """A whole human-readable report.

    ``facts`` are (key, value) header lines (which report, from where, for which device);
    ``warnings`` are lines a reader must not miss (out of memory, simulated vs hardware);
    ``headline`` is the one sentence that answers the question (a comparison's
    :func:`~profcompare.render.verdict_words.headline`), drawn first under the title; "" for none.
    """

    title: str
    facts: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...]
    sections: tuple[Section, ...]
    headline: str = ""


@dataclass(frozen=True, eq=False)
class VariablesView:
    """The ``variables`` command's result: a report's variables filtered, sorted and cut.

    ``view`` comes from :func:`profcompare.analysis.views.variables_view`; the other fields record how
    it was asked for, so renderers can say so.
    """

    report: Report
    view: TopN
    sort: str = "bytes"
    filter_regex: str | None = None
    always_live: bool | None = None


def limit(top: int | None) -> int | None:
    """Return the row limit for ``top``: None (all rows) when ``top`` is None or 0."""
    if top is None or top <= 0:
        return None
    return int(top)


def _num(text: str, tone: str | None = None) -> Cell:
    return Cell(text, tone=tone)


_cut_note = cut_note


def _pct_of(delta: Any, base: Any) -> float:
    if is_missing(delta) or is_missing(base) or float(base) == 0:
        return float("nan")
    return 100.0 * float(delta) / float(base)


def _str(value: Any) -> str:
    return "" if is_missing(value) else str(value)


#: what each optional Report table records, for "not in this report" notes
_TABLE_WHAT = {
    "tiles": "per-tile memory",
    "categories": "memory categories",
    "variables": "variables",
    "liveness": "liveness (program steps)",
    "code": "code attribution",
    "execution": "an execution profile",
    "remote_buffers": "remote buffers (Streaming Memory)",
    "programs": "a program tree",
    "operations": "operations",
    "vertices": "vertex types, compute sets and exchanges",
}


def _empty_note(meta: ReportMeta, table: str, empty: str) -> str:
    """The note for an empty table: ``empty`` when the report records the table, else that it
    does not (an SDK profile may lack a table: that is not the same as having none)."""
    if table not in meta.capabilities:
        return f"This report does not record {_TABLE_WHAT[table]}."
    return empty


def _missing_sides(cmp: Comparison, table: str) -> tuple[str, ...]:
    """Notes for the sides of a comparison that do not record ``table`` (their values read 0)."""
    return tuple(
        f"The {role} report does not record {_TABLE_WHAT[table]}; its side reads 0."
        for role, meta in (("base", cmp.base.meta), ("new", cmp.new.meta))
        if table not in meta.capabilities
    )


def _report_facts(meta: ReportMeta, role: str = "report") -> list[tuple[str, str]]:
    facts = [(role, describe_report(meta))]
    if meta.source:
        facts.append((f"{role} source" if role != "report" else "source", meta.source))
    return facts


def _simulated_warning(meta: ReportMeta, role: str) -> str | None:
    if meta.simulated:
        name = "This report" if role == "report" else f"The {role} report"
        return (
            f"SIMULATED: {name} comes from the profcompare simulator's model of a Poplar compile, "
            "not from Poplar; treat its figures as estimates."
        )
    return None


#: the banner of a compile-only report, beside the simulated one
COMPILE_ONLY_BANNER = "compile only: memory and time modelled, no values computed"


def _compile_only_warning(meta: ReportMeta, role: str) -> str | None:
    if meta.execution == "compile-only":
        name = "This report" if role == "report" else f"The {role} report"
        return f"COMPILE ONLY: {name} is {COMPILE_ONLY_BANNER}."
    return None


def _oom_warning(meta: ReportMeta, role: str) -> str | None:
    if meta.oom:
        name = "This report" if role == "report" else f"The {role} report"
        return f"OUT OF MEMORY: {name}'s program does not fit in tile memory."
    return None


def _live_steps(first: Any, last: Any, always_live: Any) -> str:
    if always_live is True:
        return "always"
    if is_missing(first) or is_missing(last):
        return ""
    return f"{int(first)}-{int(last)}"


#: What each optional Report table holds, in the one line that says what a report does not record.
_TABLE_WORDS = {
    "tiles": "per-tile memory",
    "categories": "memory categories",
    "variables": "variables",
    "liveness": "liveness (program steps)",
    "code": "code",
    "execution": "an execution profile",
    "remote_buffers": "remote buffers (Streaming Memory)",
    "trace": "an execution trace",
    "programs": "a program tree",
    "operations": "operations",
    "vertices": "vertex types, compute sets and exchanges",
}


def unrecorded_tables(report: Report) -> tuple[str, ...]:
    """The optional tables ``report`` does not record (empty and not in ``meta.capabilities``),
    in :data:`profcompare.model.CAPABILITIES` order; () for a report that records them all."""
    return tuple(t for t in CAPABILITIES if t not in report.meta.capabilities and not len(getattr(report, t)))


def unrecorded_note(report: Report) -> str:
    """One line saying what ``report`` does not record and that the outputs leave it out."""
    words = [_TABLE_WORDS[t] for t in unrecorded_tables(report)]
    listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
    return f"This report does not record {listed}: the figures and sections that need them are left out."
