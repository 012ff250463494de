"""Compact HTML for notebooks: what ``Report._repr_html_`` and ``Comparison._repr_html_`` show.

Not the full page (that is :class:`profcompare.render.html.HtmlRenderer`): one line per report
(name, SIMULATED / OUT OF MEMORY badges, producer, target), a comparison's verdict in words, the
liveness rule of the reports and the summary-metrics table, with deltas and coloured statuses for
a comparison. Built from the same page model and the same
autoescaping Jinja2 environment as the full page.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from profcompare.model import Report, variables_convention
from profcompare.render import html
from profcompare.render.ledger_words import TONE_LEGEND, liveness_rule
from profcompare.render.sections.time import verdict_lines

if TYPE_CHECKING:
    from profcompare.compare import Comparison

#: Statuses counted in the comparison's footnote, in this order.
_COUNTED = ("grew", "shrank", "added", "removed")


def report_repr_html(report: Report) -> str:
    """Return an HTML fragment: the report's header line and its summary metrics table."""
    table = html.summary_table(report)
    rule = liveness_rule((variables_convention(report.variables),))
    return html.render_template(
        "notebook.html.j2",
        cards=html.report_cards(report),
        rows=table.rows,
        comparison=False,
        verdict=(),
        liveness_rule=rule or "",
        footnote="Figures per replica. Full page: HtmlRenderer().render(report) or `profcompare show --format html`.",
    )


def comparison_repr_html(comparison: Comparison) -> str:
    """Return an HTML fragment: base/new header lines and the summary table with diff and status."""
    table = html.summary_table(comparison)
    variables = comparison.variables
    counts = variables["status"].astype(str).value_counts() if len(variables) else None
    parts = [f"{int(counts[s]):,} {s}" for s in _COUNTED if counts is not None and s in counts.index]
    footnote = f"Variables: {', '.join(parts)}." if parts else "No variable changed."
    footnote += " Diff = new - base, per replica. " + TONE_LEGEND
    rule = liveness_rule((variables_convention(comparison.base.variables),
                          variables_convention(comparison.new.variables)))
    return html.render_template(
        "notebook.html.j2",
        cards=html.report_cards(comparison),
        rows=table.rows,
        comparison=True,
        verdict=verdict_lines(comparison),
        liveness_rule=rule or "",
        footnote=footnote,
    )


__all__ = ["comparison_repr_html", "report_repr_html"]
