"""The Liveness section of every medium: the memory live over the program's steps in a few
figures (always-live memory, the not-always-live peak, peak liveness, how many steps) and where
the peak is; for a comparison, base and new side by side with the delta.

The memory figures are the summary's (:meth:`profcompare.model.Report.summary`, n/a where a report
records none), so they read the same here as in the Summary. The page's liveness chart is attached
by the page, not here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from profcompare.analysis import views as analysis
from profcompare.model import Report
from profcompare.render.format import format_bytes, format_count, format_pct, is_missing, metric_label, metric_tone
from profcompare.render.html_model import sort_key
from profcompare.render.ledger_words import peak_text
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.sections.document import _empty_note, _missing_sides

if TYPE_CHECKING:
    from profcompare.comparison import Comparison

#: The section's title and page anchor.
LIVENESS_TITLE = "Liveness"
LIVENESS_ID = "liveness"

#: The summary metrics the table shows, in its order (then the number of program steps).
LIVENESS_METRICS = ("always_live_bytes", "not_always_live_peak_bytes", "peak_liveness_bytes")

#: The label of the row counting program steps.
PROGRAM_STEPS = "Program steps"

_QUANTITY = Column("Quantity", key="quantity")


def _figure(value: Any, fmt: Any, *, signed: bool = False, tone: str | None = None) -> Cell:
    return Cell(fmt(value, signed=signed), sort_key(value), tone)


def report_liveness_section(report: Report) -> Section:
    """The liveness of one report: Quantity, Value (always-live memory, not-always-live peak,
    peak liveness, program steps) and a note saying at which step and program the
    not-always-live memory peaks."""
    summary = report.summary()
    rows = tuple(Row((Cell(metric_label(m)), _figure(summary[m], format_bytes)), {"quantity": m})
                 for m in LIVENESS_METRICS)
    steps = len(report.liveness_per_step())
    rows += (Row((Cell(PROGRAM_STEPS), _figure(steps, format_count)), {"quantity": "program_steps"}),)
    table = Table((_QUANTITY, Column("Value", True, key="value")), rows, id="liveness-table", sortable=False)
    peak = analysis.liveness_peak(report)
    if peak["step"] is None:
        note = _empty_note(report.meta, "liveness", "No program steps in this report.")
    else:
        note = (f"Not-always-live memory peaks at {format_bytes(peak['not_always_live_bytes'])} in step "
                f"{peak['step']} ({peak['program']}, {peak['program_type']}).")
    return Section(LIVENESS_TITLE, (table,), (note,), id=LIVENESS_ID)


def _delta_row(label: str, key: str, base: Any, new: Any, delta: Any, pct: Any, fmt: Any,
               tone: str | None = None) -> Row:
    return Row((Cell(label), _figure(base, fmt), _figure(new, fmt), _figure(delta, fmt, signed=True, tone=tone),
                Cell(format_pct(pct), sort_key(pct), tone)), {"quantity": key})


def comparison_liveness_section(cmp: Comparison) -> Section:
    """The liveness of a comparison: Quantity, Base, New, Delta, Delta % (the memory figures and
    their colour as in the Summary; the program steps), and a note saying where each report's
    not-always-live memory peaks."""
    rows = []
    for metric in LIVENESS_METRICS:
        r = cmp.summary.loc[metric]
        status = "" if is_missing(r["status"]) else str(r["status"])
        tone = metric_tone(metric, status) if status else None
        rows.append(_delta_row(metric_label(metric), metric, r["base"], r["new"], r["delta"], r["delta_pct"],
                               format_bytes, tone))
    base_steps, new_steps = len(cmp.base.liveness_per_step()), len(cmp.new.liveness_per_step())
    pct = 100.0 * (new_steps - base_steps) / base_steps if base_steps else float("nan")
    rows.append(_delta_row(PROGRAM_STEPS, "program_steps", base_steps, new_steps, new_steps - base_steps, pct,
                           format_count))
    columns = (_QUANTITY, Column("Base", True, key="base"), Column("New", True, key="new"),
               Column("Delta", True, key="delta"), Column("Delta %", True, key="delta_pct"))
    table = Table(columns, tuple(rows), id="liveness-table", sortable=False)
    base, new = analysis.liveness_peak(cmp.base), analysis.liveness_peak(cmp.new)
    notes = (f"Not-always-live peak: base at {peak_text(base)}, new at {peak_text(new)}.",
             *_missing_sides(cmp, "liveness"))
    return Section(LIVENESS_TITLE, (table,), notes, id=LIVENESS_ID)


__all__ = ["LIVENESS_ID", "LIVENESS_METRICS", "LIVENESS_TITLE", "PROGRAM_STEPS", "comparison_liveness_section",
           "report_liveness_section"]
