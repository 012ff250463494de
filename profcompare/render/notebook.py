"""What notebooks show: the implementations of the display and plot methods of ``Report`` and
``Comparison`` (``_repr_html_``, ``plot_liveness``, ...), registered with
:mod:`profcompare.base.presenters` by :func:`register_presenters` (``import profcompare`` arranges it).

Not the full page (that is :class:`profcompare.render.html.HtmlRenderer`): one line per report
(name, SIMULATED / OUT OF MEMORY badges, producer, target), a comparison's verdict in words, the
liveness rule of the reports and the summary-metrics table, with deltas and coloured statuses for
a comparison. Built from the same page model and the same
autoescaping Jinja2 environment as the full page.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from matplotlib.figure import Figure

from profcompare.base import presenters
from profcompare.model import Report, variables_convention
from profcompare.render import html, plots
from profcompare.render.format import format_metric, replica_scope
from profcompare.render.labels import TOTAL_VS_PEAK_NOTE
from profcompare.render.ledger_words import TONE_LEGEND, liveness_rule
from profcompare.render.sections.summary import comparison_summary_table, report_summary_table
from profcompare.render.sections.verdict import verdict_lines
from profcompare.render.verdict_words import comparison_headline

if TYPE_CHECKING:
    from profcompare.comparison import Comparison

#: Statuses counted in the comparison's footnote, in this order.
_COUNTED = ("grew", "shrank", "added", "removed")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."


def report_repr_html(report: Report) -> str:
    """Return an HTML fragment: the report's header line and its summary metrics table."""
    table = report_summary_table(report)
    rule = liveness_rule((variables_convention(report.variables),))
    return html.render_template(
        "notebook.html.j2",
        cards=html.report_cards(report),
        rows=table.rows,
        comparison=False,
        headline="",
        verdict=(),
        liveness_rule=rule or "",
        footnote=f"{_sentence(replica_scope(report.meta))} {TOTAL_VS_PEAK_NOTE} Full page: "
                 "HtmlRenderer().render(report) or `profcompare show --format html`.",
    )


def comparison_repr_html(comparison: Comparison) -> str:
    """Return an HTML fragment: the headline, base/new header lines, the verdict and the summary
    table with delta and status."""
    table = comparison_summary_table(comparison)
    variables = comparison.variables
    counts = variables["status"].astype(str).value_counts() if len(variables) else None
    parts = [f"{int(counts[s]):,} {s}" for s in _COUNTED if counts is not None and s in counts.index]
    footnote = f"Variables: {', '.join(parts)}." if parts else "No variable changed."
    footnote += f" Delta = new - base, per replica. {TOTAL_VS_PEAK_NOTE} " + TONE_LEGEND
    rule = liveness_rule((variables_convention(comparison.base.variables),
                          variables_convention(comparison.new.variables)))
    return html.render_template(
        "notebook.html.j2",
        cards=html.report_cards(comparison),
        rows=table.rows,
        comparison=True,
        headline=comparison_headline(comparison),
        verdict=verdict_lines(comparison),
        liveness_rule=rule or "",
        footnote=footnote,
    )


def comparison_repr_text(comparison: Comparison) -> str:
    """A short text summary (a plain REPL): which report is which, the summary metrics and
    the tables there are; the full tables are attributes (``diff.variables``, ...)."""

    def side(report: Report) -> str:
        return f"{report.label!r}" + (" (simulated)" if report.meta.simulated else "")

    lines = [f"<Comparison base={side(comparison.base)} new={side(comparison.new)}; delta = new - base, "
             f"noise {comparison.noise_bytes} B or {comparison.noise_pct:g}%>"]
    width = max(len(m) for m in comparison.summary.index)
    for metric, row in comparison.summary.iterrows():
        pct = row["delta_pct"]
        pct_text = "" if pct != pct else f" ({pct:+.1f}%)"
        lines.append(f"  {metric:<{width}}  {format_metric(metric, row['base']):>12} -> "
                     f"{format_metric(metric, row['new']):>12}  {format_metric(metric, row['delta'], signed=True):>12}"
                     f"{pct_text}  {row['status']}")
    tables = ("ledger", "categories", "variables", "tiles", "code", "liveness", "execution", "remote_buffers",
              "operations", "programs")
    lines.append("  tables: " + ", ".join(f"{t} ({len(getattr(comparison, t)):,} rows)" for t in tables))
    return "\n".join(lines)


def report_plot_memory_by_category(report: Report) -> Figure:
    """Stacked bar of the report's memory by category."""
    return plots.plot_categories([report])


def report_plot_liveness(report: Report) -> Figure:
    """Not-always-live bytes per program step, always-live level marked."""
    return plots.plot_liveness([report])


def report_plot_tiles(report: Report) -> Figure:
    """Memory per tile with the tile budget line."""
    return plots.plot_tiles([report])


def comparison_plot_lifetimes(comparison: Comparison) -> Figure:
    """:meth:`Comparison.plot_lifetimes`: each (parameter, role)'s live span, base over new."""
    return plots.plot_lifetimes(comparison)


def comparison_plot_ledger(comparison: Comparison) -> Figure:
    """Stacked bar per parameter, base vs new, coloured by location."""
    return plots.plot_ledger(comparison)


def comparison_plot_liveness(comparison: Comparison) -> Figure:
    """Overlay of both liveness curves, always-live levels marked."""
    return plots.plot_liveness([comparison.base, comparison.new], aligned=comparison.liveness)


def comparison_plot_memory_by_category(comparison: Comparison) -> Figure:
    """Stacked memory-by-category bars for both reports."""
    return plots.plot_categories([comparison.base, comparison.new])


def comparison_plot_tiles(comparison: Comparison) -> Figure:
    """Memory per tile for both reports with the tile budget line."""
    return plots.plot_tiles([comparison.base, comparison.new])


def report_plot_trace(report: Report) -> Figure:
    """The report's execution trace: one lane per IPU, blocks coloured by type."""
    from profcompare.render.trace_figure import plot_trace

    return plot_trace([report])


def comparison_plot_trace(comparison: Comparison) -> Figure:
    """Both reports' execution traces, base above new, on the same time axis."""
    from profcompare.render.trace_figure import plot_trace

    return plot_trace([comparison.base, comparison.new], ["base", "new"])


def advise_result_repr_html(result: Any) -> str:
    """An advise result's view in a notebook: the verdict and the Pareto front."""
    from profcompare.render.advise import advise_notebook_html

    return advise_notebook_html(result.points, result.facts, workload=result.workload, directory=str(result.directory),
                                headline=result.space_headline)


#: The implementation of each method :mod:`profcompare.base.presenters` looks up.
PRESENTERS: dict[str, Callable[[Any], Any]] = {
    "Report._repr_html_": report_repr_html,
    "Report.plot_memory_by_category": report_plot_memory_by_category,
    "Report.plot_liveness": report_plot_liveness,
    "Report.plot_tiles": report_plot_tiles,
    "Report.plot_trace": report_plot_trace,
    "Comparison._repr_html_": comparison_repr_html,
    "Comparison.__repr__": comparison_repr_text,
    "Comparison.plot_ledger": comparison_plot_ledger,
    "Comparison.plot_lifetimes": comparison_plot_lifetimes,
    "Comparison.plot_liveness": comparison_plot_liveness,
    "Comparison.plot_memory_by_category": comparison_plot_memory_by_category,
    "Comparison.plot_tiles": comparison_plot_tiles,
    "Comparison.plot_trace": comparison_plot_trace,
    "AdviseResult._repr_html_": advise_result_repr_html,
}


def register_presenters() -> None:
    """Register every implementation of :data:`PRESENTERS` with :mod:`profcompare.base.presenters`."""
    for name, implementation in PRESENTERS.items():
        presenters.register(name, implementation)


__all__ = [
    "PRESENTERS",
    "advise_result_repr_html",
    "comparison_plot_ledger",
    "comparison_plot_lifetimes",
    "comparison_plot_liveness",
    "comparison_plot_memory_by_category",
    "comparison_plot_tiles",
    "comparison_plot_trace",
    "comparison_repr_html",
    "comparison_repr_text",
    "register_presenters",
    "report_plot_liveness",
    "report_plot_memory_by_category",
    "report_plot_tiles",
    "report_plot_trace",
    "report_repr_html",
]
