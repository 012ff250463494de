"""The HTML page: its header cards and the page itself (:class:`ReportCard`, :class:`Page`),
drawn around sections of the one page model (:mod:`profcompare.render.page.model`), and the
cell builders every HTML section uses.

Building these is data preparation only; :mod:`profcompare.render.html` fills the template.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any


from profcompare._version import __version__
from profcompare.model import Report
from profcompare.render.page.notes import cut_note as cut_note
from profcompare.render.page.model import (
    FOLD_OVER,
    FOLDED_ROWS,
    Cell,
    Column,
    Row,
    Section,
    Table,
    TableFilter,
)
from profcompare.render.format import (
    describe_origin,
    describe_target,
    format_bytes,
    format_pct,
    is_missing,
    status_tone,
)

if TYPE_CHECKING:
    from profcompare.comparison import Comparison


# --------------------------------------------------------------------------- page model

# The cells, rows, tables and sections are the one page model's (every medium draws them); the
# names are kept here for the HTML builders and for code that imports them from this module.


@dataclass(frozen=True)
class ReportCard:
    """The header card of one report: role (base/new/report), name, origin, target, flags."""

    role: str
    label: str
    simulated: bool
    oom: bool
    compile_only: bool
    origin: str
    target: str
    source: str
    workload: str
    config: str
    created: str


@dataclass(frozen=True)
class Page:
    """Everything the page template shows; built by :func:`build_page`."""

    title: str
    is_comparison: bool
    cards: tuple[ReportCard, ...]
    sections: tuple[Section, ...]
    variables: Table
    variable_filter: tuple[str, tuple[str, ...]]  # (data attribute, options) of the select box
    data: Mapping[str, Any]
    version: str = __version__
    headline: str = ""  # a comparison's one-sentence answer, first under the title ("" for a report)
    #: the sections the page folds (detail views: closed until opened), id -> their one-line
    #: headline (:mod:`profcompare.render.page.fold`)
    folds: Mapping[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- helpers


def sort_key(value: Any) -> float | None:
    """A finite float for a sort key / JSON, or None when missing."""
    if is_missing(value):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def bytes_cell(value: Any, *, signed: bool = False, tone: str | None = None) -> Cell:
    return Cell(
        format_bytes(value, signed=signed), sort_key(value), tone, None if is_missing(value) else f"{int(value):,} B"
    )


def pct_cell(value: Any, tone: str | None = None, *, signed: bool = True) -> Cell:
    return Cell(format_pct(value, signed=signed), sort_key(value), tone)


def status_cell(status: Any, tone: str | None) -> Cell:
    text = "" if is_missing(status) else str(status)
    return Cell(text, text, tone)


def text_cell(value: Any) -> Cell:
    text = "" if is_missing(value) else str(value)
    return Cell(text, text)


def roles_of(obj: Report | Comparison) -> tuple[list[Report], list[str]]:
    if isinstance(obj, Report):
        return [obj], ["report"]
    return [obj.base, obj.new], ["base", "new"]


def report_card(report: Report, role: str) -> ReportCard:
    meta = report.meta
    config = ", ".join(f"{k}={v}" for k, v in meta.config.items())
    workload = " / ".join(x for x in (meta.workload, meta.variant) if x)
    return ReportCard(
        role=role,
        label=report.label,
        simulated=meta.simulated,
        oom=meta.oom,
        compile_only=meta.execution == "compile-only",
        origin=describe_origin(meta),
        target=describe_target(meta),
        source=meta.source or "(in memory)",
        workload=workload,
        config=config,
        created=meta.created or "",
    )


def report_cards(obj: Report | Comparison) -> tuple[ReportCard, ...]:
    """The header cards: one per report, with role ``report`` or ``base``/``new``."""
    reports, roles = roles_of(obj)
    return tuple(report_card(r, role) for r, role in zip(reports, roles, strict=True))


def diff_cols(unit_title: str) -> tuple[Column, ...]:
    return (
        Column(f"Base {unit_title}", True, key="base"),
        Column(f"New {unit_title}", True, key="new"),
        Column("Delta", True, key="delta"),
        Column("Delta %", True, key="delta_pct"),
        Column("Status", key="status"),
    )


def diff_cells(
    row: Any,
    prefix: str = "",
    suffix: str = "bytes",
    fmt: Callable[..., str] = format_bytes,
    higher_is_better: bool = False,
) -> tuple[Cell, ...]:
    status = row["status"]
    tone = None if is_missing(status) else status_tone(str(status), higher_is_better=higher_is_better)
    base, new, delta = row[f"base_{prefix}{suffix}"], row[f"new_{prefix}{suffix}"], row[f"delta_{prefix}{suffix}"]

    def cell(value: Any, signed: bool = False, cell_tone: str | None = None) -> Cell:
        return Cell(fmt(value, signed=signed), sort_key(value), cell_tone)

    return (
        cell(base),
        cell(new),
        cell(delta, True, tone),
        pct_cell(row["delta_pct"], tone),
        status_cell(status, tone),
    )


#: Rows of the variables table embedded in a page: every variable up to this bound (about 1.7 MB
#: of HTML at the bound, leaving room in the 5 MB page budget for the ledger, the charts and BokehJS); beyond it the page says how many were left
#: out and that ``--format json`` / ``csv`` have them all.
HTML_MAX_VARIABLE_ROWS = 4_000


__all__ = [
    "FOLD_OVER",
    "FOLDED_ROWS",
    "HTML_MAX_VARIABLE_ROWS",
    "Cell",
    "Column",
    "Page",
    "ReportCard",
    "Row",
    "Section",
    "Table",
    "TableFilter",
    "bytes_cell",
    "cut_note",
    "diff_cells",
    "diff_cols",
    "pct_cell",
    "report_card",
    "report_cards",
    "roles_of",
    "sort_key",
    "status_cell",
    "text_cell",
]
