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
from typing import TYPE_CHECKING, Any, Protocol, cast

import jinja2

from profcompare.render.templates_env import environment
from markupsafe import Markup

from profcompare.analysis import views as analysis
from profcompare._version import __version__
from profcompare.comparison import Comparison
from profcompare.comparison.verdict import ComparisonVerdict, comparison_verdict
from profcompare.model import METRIC_UNITS, Report, variables_convention
from profcompare.analysis.tile_detail import tile_histogram
from profcompare.render import bar_charts, interactive, tile_map
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
from profcompare.render.interactive import InteractiveChart
from profcompare.render.json_values import jsonable
from profcompare.render.labels import live_label
from profcompare.render.lifetime_chart import lifetime_chart
from profcompare.render.ledger_words import liveness_rule
from profcompare.render.page.fold import folds
from profcompare.render.page.model import placed_for_page
from profcompare.render.sections.ledger import LEDGER_MAX_ROWS, ledger_data, with_liveness_rule
from profcompare.render.sections.order import (
    PAGE_PROGRAMS,
    RowLimits,
    comparison_sections,
    page_vertex_rows,
    report_sections,
)
from profcompare.render.sections.tile_detail import HISTOGRAM_TABLE_ID
from profcompare.render.sections.variables import VARIABLES_ID, matched_changes_first
from profcompare.render.trace_chart import trace_chart
from profcompare.render.verdict_words import comparison_sentences, headline

if TYPE_CHECKING:
    import pandas as pd

#: Statuses a comparison row can have, in the order the filter menu lists them.
STATUS_ORDER = ("added", "removed", "grew", "shrank", "unchanged")



# --------------------------------------------------------------------------- sections


#: Variables columns copied into the page's JSON data block (report / comparison).
_REPORT_VARIABLE_FIELDS = ("name", "kind", "bytes", "always_live", "dtype", "shape")
_COMPARISON_VARIABLE_FIELDS = ("name", "kind", "base_bytes", "new_bytes", "delta_bytes", "delta_pct", "status", "match")


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


def _charts(side: PageSide, section: Section, top: int) -> tuple[InteractiveChart, ...]:
    """The charts the page draws in ``section`` (by its id): the section builders make none, so
    a terminal never pays for them."""
    reports, roles = side.reports, side.roles
    if section.id == "moves" and section.items and side.is_comparison:
        return (bar_charts.ledger_chart(cast(Comparison, side.obj), chart_id="ledger-plot"),)
    if section.id == "trace":
        marks = None
        if side.is_comparison:
            from profcompare.comparison.time_diff import marked_steps

            comparison = cast(Comparison, side.obj)
            marks = marked_steps(comparison.time_diff, comparison.new)
        return (trace_chart(reports, roles, chart_id="chart-trace", marks=marks),)
    if section.id == "liveness":
        liveness = interactive.liveness_chart(reports, roles, aligned=side.aligned_liveness, chart_id="chart-liveness")
        if side.is_comparison:
            return (liveness, lifetime_chart(cast(Comparison, side.obj), chart_id="chart-lifetimes"))
        return (liveness,)
    if section.id == "memory":
        return (bar_charts.categories_chart(reports, roles),)
    if section.id == "tiles":
        return (interactive.tiles_chart(reports, roles, chart_id="chart-tiles"),)
    if section.id == "tile-detail":
        return (tile_map.tile_map_chart(side.obj, chart_id="chart-tile-map"),
                tile_map.histogram_chart(tile_histogram(reports[0], reports[1] if len(reports) > 1 else None),
                                         tuple(roles), chart_id="chart-tile-histogram"))
    if section.id == "code":
        return (bar_charts.code_chart(reports, roles, top=min(top, bar_charts.CODE_PROGRAMS)),)
    if section.id == "execution" and any(len(r.execution) for r in reports):
        return (bar_charts.execution_chart(reports, roles),)
    return ()


def _on_page(side: PageSide, section: Section, top: int) -> Section:
    """``section`` as the page draws it: with its charts, its notes at its first table where it
    asks for that, and the ledger stating the liveness rule (the page has no header lines)."""
    if section.id == "ledger":
        section = with_liveness_rule(section, side.liveness_rule)
    charts = _charts(side, section, top)
    if section.id == "tile-detail":
        # the histogram chart (its note gives every bin's counts) stands for the histogram table
        section = replace(section, tables=tuple(t for t in section.tables if t.id != HISTOGRAM_TABLE_ID))
    return placed_for_page(replace(section, charts=charts) if charts else section)


# --------------------------------------------------------------------------- page


def build_page(obj: Report | Comparison, *, top: int = 20) -> Page:
    """Prepare everything the HTML page shows for a report or a comparison.

    Returns a :class:`Page` of display strings, sort keys and chart JSON; no HTML is
    produced here. The sections are those every medium shows
    (:mod:`profcompare.render.sections.order`), with the page's row limits: ``top`` rows for the
    top-N tables (code, Streaming Memory, the fullest tiles, what changed the peak) with an
    "other" row, up to :data:`HTML_MAX_VARIABLE_ROWS` variables and :data:`LEDGER_MAX_ROWS` ledger
    rows behind a filter and an expander; the detail sections fold
    (:mod:`profcompare.render.page.fold`). Raises ProfcompareError for a negative ``top``.
    """
    side = page_side(obj)
    # the variables table holds every row up to a bound, so its status filter ("grew") shows
    # every variable that grew; other tables are top-N views. The template draws it under the
    # filter controls, in the place of the section's table.
    variables_view = side.variables_view(HTML_MAX_VARIABLE_ROWS)
    rows = RowLimits(top, LEDGER_MAX_ROWS, HTML_MAX_VARIABLE_ROWS, PAGE_PROGRAMS, page_vertex_rows(top))
    sections = tuple(_on_page(side, section, top) for section in side.sections(rows, variables_view))
    folded = folds(sections)  # the detail views, closed until opened, and their one-line headlines
    variables = next((s for s in sections if s.id == VARIABLES_ID), None)
    table = (_variables_on_page(variables, variables_view).table if variables is not None else None) or Table((), ())
    sections = tuple(replace(s, tables=()) if s.id == VARIABLES_ID else s for s in sections)
    data = _page_data(side, variables_view)
    verdict = side.verdict()
    return Page(side.title, side.is_comparison, report_cards(obj), sections, table, side.variable_filter(),
                data, headline="" if verdict is None else headline(verdict), folds=folded)


# --------------------------------------------------------------------------- the two kinds of page


class PageSide(Protocol):
    """What a report's page and a comparison's page draw differently: :func:`page_side` picks
    one for a Report or a Comparison, and the page builder takes it without asking which.

    ``reports`` and ``roles`` are the page's reports and their roles (``report``, or ``base`` and
    ``new``); ``sections`` are those every medium shows, in order
    (:mod:`profcompare.render.sections.order`)."""

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
    @property
    def liveness_rule(self) -> str | None: ...
    def variables_view(self, top: int) -> analysis.TopN: ...
    def sections(self, rows: RowLimits, variables: analysis.TopN) -> tuple[Section, ...]: ...
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
        self.liveness_rule = liveness_rule((variables_convention(report.variables),))

    def variables_view(self, top: int) -> analysis.TopN:
        return analysis.variables_view(self.report, top=top)

    def sections(self, rows: RowLimits, variables: analysis.TopN) -> tuple[Section, ...]:
        return report_sections(self.report, rows, variables=variables)

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
        self.liveness_rule = liveness_rule((variables_convention(cmp.base.variables),
                                            variables_convention(cmp.new.variables)))
        self._verdict: ComparisonVerdict | None = None

    def variables_view(self, top: int) -> analysis.TopN:
        return matched_changes_first(self.cmp, top)

    def sections(self, rows: RowLimits, variables: analysis.TopN) -> tuple[Section, ...]:
        return comparison_sections(self.cmp, rows, verdict=self.verdict(), variables=variables)

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
