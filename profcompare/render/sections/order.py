"""The sections of a report and of a comparison, in the one order every medium shows them.

The terminal (``--full``), Markdown, the HTML page and the JSON export's ``sections`` all take
their sections from :func:`report_sections` and :func:`comparison_sections`: the same builders,
the same order, the same titles. A medium differs only in how many rows a table may hold
(:class:`RowLimits`: the terminal cuts every table to ``--top``; the page keeps more variables and
ledger rows, behind a filter and an expander) and in what it adds around a section (the page's
charts, by section id).

Order: what answers the question first (a comparison's verdict, what differs in the two
configurations, where the memory moved and the memory ledger), then the views over time (the
execution trace, the program tree it runs, liveness, and what changed the not-always-live peak),
then the summary and the detail tables.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from profcompare.analysis.views import TopN
from profcompare.comparison import Comparison
from profcompare.comparison.verdict import ComparisonVerdict
from profcompare.model import Report
from profcompare.render.html_model import HTML_MAX_VARIABLE_ROWS
from profcompare.render.page.model import Section
from profcompare.render.sections.categories import comparison_categories_section, report_categories_section
from profcompare.render.sections.code import comparison_code_section, report_code_section
from profcompare.render.sections.config import comparison_config_section
from profcompare.render.sections.document import unrecorded_tables
from profcompare.render.sections.execution import comparison_execution_section, report_execution_section
from profcompare.render.sections.ipus import comparison_ipu_section, report_ipu_section
from profcompare.render.sections.ledger import (
    LEDGER_MAX_ROWS,
    comparison_ledger_section,
    comparison_moves_section,
    comparison_peak_section,
    report_ledger_section,
    report_peak_section,
)
from profcompare.render.sections.liveness import comparison_liveness_section, report_liveness_section
from profcompare.render.sections.operations import comparison_operations_section, report_operations_section
from profcompare.render.sections.programs import comparison_programs_section, report_programs_section
from profcompare.render.sections.replicas import (
    comparison_replicas_section,
    report_loaded_code_section,
    report_replicas_section,
)
from profcompare.render.sections.streaming import comparison_streaming_section, report_streaming_section
from profcompare.render.sections.summary import comparison_summary_section, report_summary_section
from profcompare.render.sections.tile_detail import (
    comparison_tile_detail_page_section,
    report_tile_detail_page_section,
)
from profcompare.render.sections.tiles import comparison_tiles_section, report_tiles_section
from profcompare.render.sections.time_diff import comparison_time_diff_section
from profcompare.render.sections.trace import comparison_trace_section, report_trace_section
from profcompare.render.sections.variables import comparison_variables_section, report_variables_section
from profcompare.render.sections.verdict import comparison_verdict_section
from profcompare.render.sections.vertices import comparison_vertices_section, report_vertices_section


@dataclass(frozen=True)
class RowLimits:
    """How many rows a medium's tables hold (None: every row): ``top`` for the top-N tables
    (code, Streaming Memory, what changed the peak, the fullest tiles), ``ledger`` for the memory
    ledger's tables, ``variables`` for the variables table, ``programs`` for the program tree,
    ``vertices`` for each table of the vertices, compute sets and exchanges."""

    top: int | None = 20
    ledger: int | None = 20
    variables: int | None = 20
    programs: int | None = 20
    vertices: int | None = 20

    @classmethod
    def every(cls, top: int | None) -> RowLimits:
        """One limit, ``top``, for every table (the terminal and Markdown)."""
        return cls(top, top, top, top, top)

    @classmethod
    def page(cls, top: int | None = None) -> RowLimits:
        """The HTML page's limits (and the JSON export's ``sections``): ``top`` rows (default
        :data:`PAGE_TOP`) for the top-N tables, :data:`LEDGER_MAX_ROWS` ledger rows and
        :data:`HTML_MAX_VARIABLE_ROWS` variables and :data:`PAGE_PROGRAMS` programs of the program
        tree, behind the page's filters and expanders, and at most :data:`PAGE_VERTICES` rows in each
        table of the vertices, compute sets and exchanges."""
        return cls(top or PAGE_TOP, LEDGER_MAX_ROWS, HTML_MAX_VARIABLE_ROWS, PAGE_PROGRAMS, page_vertex_rows(top))


#: Rows of a top-N table on a page when ``--top`` does not say.
PAGE_TOP = 20

#: Rows of the program tree on a page: the top of a tree, behind the page's filter and expander.
PAGE_PROGRAMS = 200

#: Rows of each of the three tables of the vertices, compute sets and exchanges on a page: three
#: short tables keep the section about a screen tall (the JSON and CSV tables are complete).
PAGE_VERTICES = 8


def page_vertex_rows(top: int | None) -> int:
    """Rows of each vertices, compute sets and exchanges table on a page for ``--top`` ``top``:
    :data:`PAGE_VERTICES`, or fewer when ``top`` asks for fewer."""
    return min(top, PAGE_VERTICES) if top else PAGE_VERTICES


#: The Report tables each section draws: a section whose tables a report does not record is
#: left out (its summary says so in one line; a Graph Analyser cache records only the trace).
SECTION_TABLES: dict[str, tuple[str, ...]] = {
    "ledger": ("variables",),
    "peak": ("variables", "liveness"),
    "liveness": ("liveness",),
    "memory": ("categories",),
    "memory-per-ipu": ("tiles",),
    "tiles": ("tiles",),
    "tile-detail": ("tiles",),
    "variables": ("variables",),
    "code": ("code",),
    "streaming": ("remote_buffers",),
    "programs": ("programs",),
    "operations": ("operations",),
    "vertices": ("vertices",),
}


def recorded_sections(report: Report, sections: tuple[Section, ...]) -> tuple[Section, ...]:
    """``sections`` without those drawing only tables ``report`` does not record."""
    lacking = set(unrecorded_tables(report))
    if not lacking:
        return sections
    return tuple(s for s in sections if not lacking & set(SECTION_TABLES.get(s.id, ())))


def report_sections(report: Report, rows: RowLimits, *, variables: TopN | None = None) -> tuple[Section, ...]:
    """Every section of one report, in order: the summary, the memory ledger and what is live at
    the peak, the execution trace and liveness, then memory by category, memory per IPU, tiles,
    the fullest tile explained, variables (``variables``: rows already cut, e.g. the page's), code (and code loaded at
    run time), operations, the program tree, vertices, compute sets and exchanges, Streaming Memory, execution,
    replicas and collectives. A section a report gives nothing to show, or whose tables it does not record, is left
    out."""
    built = (
        report_summary_section(report),
        report_ledger_section(report, rows.ledger),
        report_peak_section(report, rows.top),
        report_trace_section(report),  # only with an execution trace
        report_liveness_section(report),
        report_categories_section(report),
        report_ipu_section(report),  # only with more than one IPU per replica (or I/O tiles)
        report_tiles_section(report, rows.top),
        report_tile_detail_page_section(report, rows.top),  # only with per-tile memory
        report_variables_section(report, rows.variables, view=variables),
        report_code_section(report, rows.top),
        report_loaded_code_section(report),  # only with code loaded by remote_code_load
        report_operations_section(report, rows.top) if len(report.operations) else None,
        report_programs_section(report, rows.programs),  # only with a program tree
        report_vertices_section(report, rows.vertices) if _has_vertex_tables(report) else None,
        report_streaming_section(report, rows.top),
        report_execution_section(report),
        report_replicas_section(report),  # only with replica groupings
    )
    return recorded_sections(report, tuple(s for s in built if s is not None))


def _has_vertex_tables(report: Report) -> bool:
    """Whether ``report`` has a vertex type, compute set or exchange to show."""
    return bool(len(report.vertices) or len(report.compute_sets) or len(report.exchanges))


def _comparison_builders(cmp: Comparison, rows: RowLimits, verdict: ComparisonVerdict | None,
                         variables: TopN | None) -> tuple[tuple[str, Callable[[], Section | None]], ...]:
    """Each section of a comparison by its ``--section`` name, in order (the order of
    :data:`~profcompare.render.section_names.SECTION_NAMES`), with its builder."""
    return (
        ("verdict", lambda: comparison_verdict_section(cmp, verdict)),
        ("config", lambda: comparison_config_section(cmp)),
        ("moves", lambda: comparison_moves_section(cmp)),
        ("ledger", lambda: comparison_ledger_section(cmp, rows.ledger)),
        ("trace", lambda: comparison_trace_section(cmp)),  # only with an execution trace
        ("time", lambda: comparison_time_diff_section(cmp, rows.top)),  # only with an execution profile
        ("liveness", lambda: comparison_liveness_section(cmp)),
        ("peak", lambda: comparison_peak_section(cmp, rows.top)),
        ("summary", lambda: comparison_summary_section(cmp)),
        ("categories", lambda: comparison_categories_section(cmp)),
        ("ipus", lambda: comparison_ipu_section(cmp)),  # only with more than one IPU per replica
        ("tiles", lambda: comparison_tiles_section(cmp, rows.top)),
        ("tile-detail", lambda: comparison_tile_detail_page_section(cmp, rows.top)),  # only with per-tile memory
        ("variables", lambda: comparison_variables_section(cmp, rows.variables, view=variables)),
        ("code", lambda: comparison_code_section(cmp, rows.top)),
        # only where a report records operations, a program tree
        ("operations", lambda: comparison_operations_section(cmp, rows.top) if len(cmp.operations) else None),
        ("programs", lambda: comparison_programs_section(cmp, rows.programs)),
        # only where a report records vertex types, compute sets or exchanges
        ("vertices", lambda: comparison_vertices_section(cmp, rows.vertices)),
        ("streaming", lambda: comparison_streaming_section(cmp, rows.top)),
        ("execution", lambda: comparison_execution_section(cmp)),
        ("replicas", lambda: comparison_replicas_section(cmp)),  # only with replica groupings
    )


def comparison_sections(cmp: Comparison, rows: RowLimits, *, names: Collection[str] | None = None,
                        verdict: ComparisonVerdict | None = None,
                        variables: TopN | None = None) -> tuple[Section, ...]:
    """Every section of a comparison, in order: the verdict, what differs in the two
    configurations, where the memory moved, the memory ledger, the execution trace, the time diff
    and liveness,
    what changed the not-always-live peak, the summary, then memory by category, memory per IPU,
    tiles, the fullest tiles explained, variables, code, operations, the program tree, vertices, compute sets and
    exchanges, Streaming Memory, execution, replicas and collectives. ``names`` (the ``--section`` names)
    keeps only those sections and builds no other; a section the reports give nothing to show is
    left out. ``verdict`` and ``variables`` pass in what the caller has
    already computed."""
    built = (build() for name, build in _comparison_builders(cmp, rows, verdict, variables)
             if names is None or name in names)
    return tuple(section for section in built if section is not None)


__all__ = ["PAGE_PROGRAMS", "PAGE_VERTICES", "SECTION_TABLES", "RowLimits", "comparison_sections", "recorded_sections",
           "page_vertex_rows", "report_sections"]
