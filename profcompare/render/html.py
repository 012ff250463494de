"""The HTML renderer: one self-contained page for a report or a comparison of two.

The page has the sections a PopVision user knows (Summary, Memory, Liveness, Tiles, Variables,
Code by program, Streaming Memory, Execution) and the memory ledger (:mod:`profcompare.render.sections.ledger`):
a comparison's page leads with where each parameter's bytes moved, a report's page shows its
ledger after the summary. Comparisons show base and new side by side with a diff column;
PopVision calls them source and target. Everything the page needs is inside the file:
CSS and JavaScript are package data inlined into the page, and every chart is drawn by BokehJS
inlined into the page from its JSON: the liveness and per-tile curves (zoom, pan, hover a step;
see :mod:`profcompare.render.interactive`) and the bar charts of the ledger, memory categories,
code and execution (:mod:`profcompare.render.bar_charts`), so it opens offline and can be
attached to a CI run. Rendering a page imports no matplotlib, and no Bokeh Python module unless
a ``BOKEH_*`` variable or Bokeh's config file can change its settings (:mod:`.bokeh_doc`).

Safety: the page is built only with Jinja2 templates with autoescaping on. Report-derived text
(variable names, programs, paths) reaches the page either as autoescaped template values or as
JSON through Jinja's ``tojson`` filter inside a ``<script type="application/json">`` block (which
escapes ``<``, ``>``, ``&`` and ``'``), never by string splicing.

Size: every table is cut to ``top`` rows plus an "other" row (see
:func:`profcompare.analysis.views.top_n`) and curves are cut into buckets (:mod:`profcompare.render.interactive`),
so two reports with a million variables each still give a page of a few hundred kilobytes.

Data preparation (``build_page``) is kept apart from rendering (``render_page``): the first turns
a Report or Comparison into plain dataclasses of display strings and sort keys (the page model,
:mod:`profcompare.render.page.model`); the second only fills the template. What a report's page
and a comparison's page draw differently comes through one adapter, :class:`PageSide`, chosen
once by :func:`page_side`: the section builders take it and never ask which kind of page it is.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Protocol

import jinja2

from profcompare.render.templates_env import environment
from markupsafe import Markup

from profcompare.analysis import views as analysis
from profcompare._version import __version__
from profcompare.model import METRIC_UNITS, Report, variables_convention
from profcompare.render import bar_charts, interactive
from profcompare.render.labels import live_label
from profcompare.render.ledger_words import liveness_rule
from profcompare.render.sections.ledger import (
    LEDGER_MAX_ROWS,
    comparison_ledger_section,
    comparison_moves_section,
    comparison_peak_section,
    ledger_data,
    report_ledger_section,
    report_peak_section,
    with_liveness_rule,
)
from profcompare.render.page.model import placed_for_page
from profcompare.render.sections.categories import comparison_categories_section, report_categories_section
from profcompare.render.sections.document import unrecorded_tables
from profcompare.render.sections.liveness import comparison_liveness_section, report_liveness_section
from profcompare.render.sections.summary import comparison_summary_section, report_summary_section
from profcompare.render.sections.verdict import comparison_verdict_section
from profcompare.render.sections.execution import comparison_execution_section, report_execution_section
from profcompare.render.sections.ipus import comparison_ipu_section, report_ipu_section
from profcompare.render.sections.replicas import (
    comparison_replicas_section,
    report_loaded_code_section,
    report_replicas_section,
)
from profcompare.render.sections.tiles import comparison_tiles_section, report_tiles_section
from profcompare.render.sections.trace import comparison_trace_section, report_trace_section
from profcompare.render.trace_chart import trace_chart
from profcompare.render.sections.code import comparison_code_section, report_code_section
from profcompare.render.sections.streaming import comparison_streaming_section, report_streaming_section
from profcompare.render.sections.variables import (
    VARIABLES_ID,
    VARIABLES_TITLE,
    comparison_variables_section,
    matched_changes_first,
    report_variables_section,
)
from profcompare.render.html_model import (
    HTML_MAX_VARIABLE_ROWS,
    Cell,
    Column,
    Page,
    ReportCard,
    Row,
    Section,
    Table,
    cut_note,
    report_cards,
)
from profcompare.comparison.verdict import ComparisonVerdict, comparison_verdict
from profcompare.render.json_out import jsonable
from profcompare.render.verdict_words import comparison_sentences, headline

if TYPE_CHECKING:
    import pandas as pd

    from profcompare.comparison import Comparison

#: Statuses a comparison row can have, in the order the filter menu lists them.
STATUS_ORDER = ("added", "removed", "grew", "shrank", "unchanged")



# --------------------------------------------------------------------------- sections


def _memory_section(side: PageSide) -> Section:
    """Memory by category with its chart."""
    return replace(side.categories_section(), charts=(bar_charts.categories_chart(side.reports, side.roles),))


def _liveness_section(side: PageSide) -> Section:
    """The liveness figures with the liveness chart (zoom, pan, hover a step)."""
    chart = interactive.liveness_chart(side.reports, side.roles, aligned=side.aligned_liveness,
                                       chart_id="chart-liveness")
    return replace(side.liveness_section(), charts=(chart,))


def _tiles_section(side: PageSide, top: int) -> Section:
    """The Tiles section with the per-tile chart of the page's reports."""
    chart = interactive.tiles_chart(side.reports, side.roles, chart_id="chart-tiles")
    return replace(side.tiles_section(top), charts=(chart,))


#: Variables columns copied into the page's JSON data block (report / comparison).
_REPORT_VARIABLE_FIELDS = ("name", "kind", "bytes", "always_live", "dtype", "shape")
_COMPARISON_VARIABLE_FIELDS = ("name", "kind", "base_bytes", "new_bytes", "delta_bytes", "delta_pct", "status", "match")


def _code_section(side: PageSide, top: int) -> Section:
    """The "Code by program" section with its bar chart of the programs of the most code."""
    chart = bar_charts.code_chart(side.reports, side.roles, top=min(top, bar_charts.CODE_PROGRAMS))
    return replace(side.code_section(top), charts=(chart,))


def _variables_on_page(section: Section, view: analysis.TopN) -> Section:
    """The Variables section as the page shows it: its notes at its table, and when the page's
    bound cut the variables, where to find them all."""
    section = placed_for_page(section)
    table = section.table
    if table is None or not view.cut:
        return section
    bound = (f"This page holds at most {HTML_MAX_VARIABLE_ROWS:,} variables; the filter applies to these. "
             "`--format json` or `--format csv` write them all.")
    return replace(section, tables=(replace(table, note=f"{table.note} {bound}".strip()),))


def _execution_section(side: PageSide) -> Section:
    """The Execution section with the execution chart (when a report has an execution profile)."""
    section = side.execution_section()
    if not any(len(r.execution) for r in side.reports):
        return section
    return replace(section, charts=(bar_charts.execution_chart(side.reports, side.roles),))


# --------------------------------------------------------------------------- page


def build_page(obj: Report | Comparison, *, top: int = 20) -> Page:
    """Prepare everything the HTML page shows for a report or a comparison.

    Returns a :class:`Page` of display strings, sort keys and chart JSON; no HTML is
    produced here. Tables are cut to ``top`` rows (variables, code, remote buffers) with an
    "other" row. Raises ProfcompareError for a negative ``top``.
    """
    side = page_side(obj)
    # the variables table holds every row up to a bound, so its status filter ("grew") shows
    # every variable that grew; other tables are top-N views. The template draws it under the
    # filter controls, in the place of the section's table.
    variables_view = side.variables_view(HTML_MAX_VARIABLE_ROWS)
    variables = _variables_on_page(side.variables_section(variables_view), variables_view)
    assert variables.table is not None
    sections = tuple(replace(variables, tables=()) if section.id == VARIABLES_ID else placed_for_page(section)
                     for section in side.sections(top) if section is not None)
    data = _page_data(side, variables_view)
    verdict = side.verdict()
    return Page(side.title, side.is_comparison, report_cards(obj), sections, variables.table, side.variable_filter(),
                data, headline="" if verdict is None else headline(verdict))


def _timeline(side: PageSide) -> tuple[Section, ...]:
    """The views over time: the execution trace (when a report has one), then liveness."""
    trace = side.trace_section()
    if trace is not None:
        trace = replace(trace, charts=(trace_chart(side.reports, side.roles, chart_id="chart-trace"),))
    return (*(() if trace is None else (trace,)), _liveness_section(side))


def _details(side: PageSide, top: int, *, loaded_code: Section | None = None) -> tuple[Section | None, ...]:
    """The detail sections, in page order; None for a section the reports give nothing to show
    (memory per IPU, code loaded at run time, replicas and collectives)."""
    return (
        _memory_section(side),
        side.ipu_section(),  # only with more than one IPU per replica (or I/O tiles)
        _tiles_section(side, top),
        Section(VARIABLES_TITLE, id=VARIABLES_ID),  # its table comes from build_page
        _code_section(side, top),
        loaded_code,
        side.streaming_section(top),
        _execution_section(side),
        side.replicas_section(),  # only with replica groupings
    )


# --------------------------------------------------------------------------- the two kinds of page


class PageSide(Protocol):
    """What a report's page and a comparison's page draw differently: :func:`page_side` picks
    one for a Report or a Comparison, and the section builders take it without asking which.

    ``reports`` and ``roles`` are the page's reports and their roles (``report``, or ``base`` and
    ``new``); the methods return the tables and sections of the kind of page it is."""

    @property
    def obj(self) -> Report | Comparison: ...
    @property
    def reports(self) -> list[Report]: ...
    @property
    def roles(self) -> list[str]: ...
    @property
    def title(self) -> str: ...
    @property
    def is_comparison(self) -> bool: ...
    @property
    def aligned_liveness(self) -> pd.DataFrame | None: ...
    def summary_section(self) -> Section: ...
    def categories_section(self) -> Section: ...
    def liveness_section(self) -> Section: ...
    def variables_view(self, top: int) -> analysis.TopN: ...
    def variables_section(self, view: analysis.TopN) -> Section: ...
    def code_section(self, top: int) -> Section: ...
    def streaming_section(self, top: int) -> Section: ...
    def tiles_section(self, top: int) -> Section: ...
    def execution_section(self) -> Section: ...
    def trace_section(self) -> Section | None: ...
    def replicas_section(self) -> Section | None: ...
    def ipu_section(self) -> Section | None: ...
    def sections(self, top: int) -> tuple[Section | None, ...]: ...
    def variable_filter(self) -> tuple[str, tuple[str, ...]]: ...
    def page_summary(self) -> dict[str, Any]: ...
    def variable_fields(self) -> tuple[str, ...]: ...
    def verdict(self) -> ComparisonVerdict | None: ...


class _ReportSide:
    """The page of one report: its summary and ledger first, every table of its own figures."""

    is_comparison = False
    aligned_liveness = None

    def __init__(self, report: Report) -> None:
        self.obj = self.report = report
        self.reports, self.roles = [report], ["report"]
        self.title = f"profcompare: {report.label}"

    def summary_section(self) -> Section:
        return report_summary_section(self.report)

    def categories_section(self) -> Section:
        return report_categories_section(self.report)

    def liveness_section(self) -> Section:
        return report_liveness_section(self.report)

    def variables_view(self, top: int) -> analysis.TopN:
        return analysis.variables_view(self.report, top=top)

    def variables_section(self, view: analysis.TopN) -> Section:
        return report_variables_section(self.report, view=view)

    def code_section(self, top: int) -> Section:
        return report_code_section(self.report, top)

    def streaming_section(self, top: int) -> Section:
        return report_streaming_section(self.report, top)

    def tiles_section(self, top: int) -> Section:
        return report_tiles_section(self.report, top)

    def execution_section(self) -> Section:
        return report_execution_section(self.report)

    def trace_section(self) -> Section | None:
        return report_trace_section(self.report)

    def replicas_section(self) -> Section | None:
        return report_replicas_section(self.report)

    def ipu_section(self) -> Section | None:
        return report_ipu_section(self.report)

    def sections(self, top: int) -> tuple[Section | None, ...]:
        """The summary (what the report records), the ledger and what is live at the peak, the
        views over time, the details; a section of tables the report does not record is left out."""
        report = self.report
        # the page has no header line for the liveness rule: the ledger states it
        ledger = with_liveness_rule(report_ledger_section(report, LEDGER_MAX_ROWS),
                                    liveness_rule((variables_convention(report.variables),)))
        sections = (self.summary_section(), ledger, report_peak_section(report, top),
                    *_timeline(self), *_details(self, top, loaded_code=report_loaded_code_section(report)))
        return _recorded_sections(report, tuple(s for s in sections if s is not None))

    def variable_filter(self) -> tuple[str, tuple[str, ...]]:
        return ("liveness", (live_label(True), live_label(False)))

    def page_summary(self) -> dict[str, Any]:
        return {m: {"value": v, "unit": METRIC_UNITS[str(m)]} for m, v in self.report.summary().items()}

    def variable_fields(self) -> tuple[str, ...]:
        return _REPORT_VARIABLE_FIELDS

    def verdict(self) -> ComparisonVerdict | None:
        return None


class _ComparisonSide:
    """The page of a comparison: the verdict and the ledger first, base and new side by side."""

    is_comparison = True

    def __init__(self, cmp: Comparison) -> None:
        self.obj = self.cmp = cmp
        self.reports, self.roles = [cmp.base, cmp.new], ["base", "new"]
        self.title = f"profcompare: {cmp.base.label} (base) vs {cmp.new.label} (new)"
        self.aligned_liveness = cmp.liveness
        self._verdict: ComparisonVerdict | None = None

    def summary_section(self) -> Section:
        return comparison_summary_section(self.cmp)

    def categories_section(self) -> Section:
        return comparison_categories_section(self.cmp)

    def liveness_section(self) -> Section:
        return comparison_liveness_section(self.cmp)

    def variables_view(self, top: int) -> analysis.TopN:
        return matched_changes_first(self.cmp, top)

    def variables_section(self, view: analysis.TopN) -> Section:
        return comparison_variables_section(self.cmp, view=view)

    def code_section(self, top: int) -> Section:
        return comparison_code_section(self.cmp, top)

    def streaming_section(self, top: int) -> Section:
        return comparison_streaming_section(self.cmp, top)

    def tiles_section(self, top: int) -> Section:
        return comparison_tiles_section(self.cmp, top)

    def execution_section(self) -> Section:
        return comparison_execution_section(self.cmp)

    def trace_section(self) -> Section | None:
        return comparison_trace_section(self.cmp)

    def replicas_section(self) -> Section | None:
        return comparison_replicas_section(self.cmp)

    def ipu_section(self) -> Section | None:
        return comparison_ipu_section(self.cmp)

    def sections(self, top: int) -> tuple[Section | None, ...]:
        """The verdict and the ledger (what moved, per parameter), the views over time, what
        changed the peak (after the liveness chart that shows it), the summary, the details."""
        cmp = self.cmp
        moves = comparison_moves_section(cmp)
        if moves.items:
            moves = replace(moves, charts=(bar_charts.ledger_chart(cmp, chart_id="ledger-plot"),))
        rule = liveness_rule((variables_convention(cmp.base.variables), variables_convention(cmp.new.variables)))
        ledger = with_liveness_rule(comparison_ledger_section(cmp, LEDGER_MAX_ROWS), rule)
        return (comparison_verdict_section(cmp, self.verdict()), moves, ledger,
                *_timeline(self), comparison_peak_section(cmp, top), self.summary_section(), *_details(self, top))

    def variable_filter(self) -> tuple[str, tuple[str, ...]]:
        variables = self.cmp.variables
        present = set(variables["status"].astype(str).unique()) if len(variables) else set()
        return ("status", tuple(s for s in STATUS_ORDER if s in present) or STATUS_ORDER)

    def page_summary(self) -> dict[str, Any]:
        summary = self.cmp.summary
        return {str(m): {k: summary.loc[m, k] for k in ("unit", "base", "new", "delta", "delta_pct", "status")}
                for m in summary.index}

    def variable_fields(self) -> tuple[str, ...]:
        return _COMPARISON_VARIABLE_FIELDS

    def verdict(self) -> ComparisonVerdict:
        if self._verdict is None:
            self._verdict = comparison_verdict(self.cmp)
        return self._verdict


def page_side(obj: Report | Comparison) -> PageSide:
    """The :class:`PageSide` of a Report's page or a Comparison's (the one place that asks which)."""
    return _ReportSide(obj) if isinstance(obj, Report) else _ComparisonSide(obj)


#: The Report tables each section of a report's page draws: a section whose every table the
#: report does not record is left out of the page (a Graph Analyser cache records only the trace).
_SECTION_TABLES = {
    "ledger": ("variables",),
    "peak": ("variables", "liveness"),
    "liveness": ("liveness",),
    "memory": ("categories",),
    "memory-per-ipu": ("tiles",),
    "tiles": ("tiles",),
    "variables": ("variables",),
    "code": ("code",),
    "streaming": ("remote_buffers",),
}


def _recorded_sections(report: Report, sections: tuple[Section, ...]) -> tuple[Section, ...]:
    """``sections`` without those drawing only tables ``report`` does not record."""
    lacking = set(unrecorded_tables(report))
    if not lacking:
        return sections
    return tuple(s for s in sections if not (s.id in _SECTION_TABLES and lacking & set(_SECTION_TABLES[s.id])))


def _page_data(side: PageSide, variables: analysis.TopN) -> dict[str, Any]:
    """The JSON data block: metas, summary metrics and the variable rows shown (plus "other")."""
    fields = side.variable_fields()
    verdict = side.verdict()
    return jsonable(
        {
            "schema_version": 1,
            "kind": "comparison" if side.is_comparison else "report",
            "generator": f"profcompare {__version__}",
            "reports": {role: r.meta.to_dict() for role, r in zip(side.roles, side.reports, strict=True)},
            "summary": side.page_summary(),
            "ledger": ledger_data(side.obj),
            **({} if verdict is None else {"verdict": _verdict_data(verdict)}),
            "variables": {
                "shown": variables.shown,
                "total": variables.total,
                "cut": variables.cut,
                "note": cut_note(variables, "variables"),
                "columns": list(fields),
                "rows": variables.rows[list(fields)].to_numpy(dtype=object).tolist(),
            },
        }
    )


def _verdict_data(verdict: ComparisonVerdict) -> dict[str, Any]:
    return {"sentences": list(comparison_sentences(verdict)), "facts": verdict.to_dict()}


def _environment() -> jinja2.Environment:
    return environment()


@cache
def _asset(name: str) -> Markup:
    """A static CSS/JS file shipped next to the templates, inlined verbatim (our own code)."""
    text = resources.files("profcompare.render").joinpath("templates").joinpath(name).read_text(encoding="utf-8")
    if "</" in text:
        # the asset is inlined inside <style>/<script>; a closing tag would end it early
        raise RuntimeError(f"asset {name} must not contain '</'")
    return Markup(text)


def render_page(page: Page) -> str:
    """Fill the page template. Returns the complete HTML document."""
    template = _environment().get_template("page.html.j2")
    charts = any(section.charts for section in page.sections)
    return template.render(
        page=page,
        css=_asset("page.css"),
        js=_asset("page.js"),
        chart_js=interactive.bokeh_js() if charts else "",
        chart_library=f"Bokeh {interactive.bokeh_version()}" if charts else "",
    )


class HtmlRenderer:
    """Renders a Report or a Comparison as one self-contained HTML page (``show/compare --format html``)."""

    name = "html"
    file_extension = ".html"

    def render(self, obj: Report | Comparison, *, top: int = 20) -> str:
        """Return the HTML document; tables are cut to ``top`` rows plus an "other" row."""
        return render_page(build_page(obj, top=top))


def render_template(name: str, **context: Any) -> str:
    """Render one of the package's templates with autoescaping (used by the notebook reprs)."""
    return _environment().get_template(name).render(**context)


__all__ = [
    "Cell",
    "Column",
    "HtmlRenderer",
    "Page",
    "ReportCard",
    "Row",
    "Section",
    "Table",
    "build_page",
    "render_page",
    "render_template",
    "report_cards",
]
