"""The pages of a run, a sweep and an advise run: how the commands (and ``profcompare.run`` /
``profcompare.advise`` for notebooks) hand the runner and the advisor writers built on the render
layer, so that the pages are written into the staging directory and published with the run while
neither the runner nor the advisor renders anything.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from profcompare.advisor.advisor import DEFAULT_REPORT_PAGES, AdvisePages
from profcompare.analysis.advise_results import AdviseVerdict, front
from profcompare.errors import ProfcompareError
from profcompare.runner.results import ComparisonOutcome, RunResult
from profcompare.runner.summarise import RunPages, comparison_stem, run_execution
from profcompare.runner.sweep import SWEEP_METRICS, SWEEP_SCHEMA_VERSION

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

#: formats written for every comparison of a run: renderer name -> file extension
COMPARISON_FORMATS = (("html", "html"), ("markdown", "md"), ("json", "json"))

#: the N-way view of a run: every variant side by side, links to each comparison with the base
INDEX_FILES = (("index html", "index.html"), ("index json", "index.json"))


def run_pages(top: int = 20) -> RunPages:
    """The pages of a run: ``compare-<base>-vs-<new>.html``, ``.md`` and ``.json`` per comparison
    (the pages cut to the ``top`` rows, the json export complete) and the N-way view
    ``index.html`` / ``index.json``."""

    def comparison(compared: Any, directory: Path, stem: str) -> dict[str, str]:
        from profcompare.render.base import get_renderer
        from profcompare.render.output import write_output

        written: dict[str, str] = {}
        for fmt, ext in COMPARISON_FORMATS:
            renderer = get_renderer(fmt)
            # the json export is complete; the pages are cut to the top rows
            content = renderer.render(compared, top=0 if renderer.name in ("json", "csv") else (top or 20))
            write_output(content, directory / f"{stem}.{ext}")
            written[renderer.name] = ext
        return written

    return RunPages(comparison=comparison, index=write_index, extensions=tuple(ext for _, ext in COMPARISON_FORMATS),
                    prewarm=_prewarm)


def _prewarm() -> None:
    from profcompare.render.base import get_renderer

    get_renderer("html")


def write_index(result: RunResult, staging: Path, comparisons: tuple[ComparisonOutcome, ...], table: Any) -> dict[str, str]:
    """Write ``index.html`` and ``index.json`` (the N-way view ``table`` of the run) into ``staging``.

    Returns {"index html": "index.html", "index json": "index.json"}. The page links each
    variant's comparison with the base (relative links, so the run directory can move).
    """
    from profcompare.render.nway import (
        detail_rows,
        differences_row,
        render_nway_html,
        render_nway_json,
        table_headline,
    )
    from profcompare.render.output import write_output

    links = {c.new: f"{comparison_stem(c.base, c.new)}.html" for c in comparisons if "html" in c.files}
    simulated = result.backend == "sim"
    compile_only = run_execution(result) == "compile-only"
    facts = [("run", result.name), ("backend", result.backend), ("variants", ", ".join(table.labels))]
    title = f"profcompare run {result.name}: {len(table.labels)} variant{'s' if len(table.labels) != 1 else ''} side by side"
    write_output(render_nway_html(table, title=title, facts=facts, links=links, simulated=simulated,
                                  compile_only=compile_only, headline=table_headline(table),
                                  extra_rows=(differences_row(table), *detail_rows(table))),
                 staging / "index.html")
    write_output(render_nway_json(table, links=links, run=result.name, backend=result.backend), staging / "index.json")
    return dict(INDEX_FILES)


def write_sweep_files(
    table: pd.DataFrame,
    swept: Sequence[str],
    directory: Path,
    *,
    result: RunResult,
    variant: str,
    reports: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write sweep.csv, sweep.json and sweep.html into ``directory``; return format -> path.

    ``reports`` (point label -> Report) gives the page's N-way view every summary metric with
    its confidence."""
    from profcompare.render.json_values import frame_records
    from profcompare.render.output import write_output
    from profcompare.render.sweep import render_sweep_html

    first = result.outcomes[0]
    fixed = {k: v for k, v in first.job.config.items() if k not in swept}
    meta = {
        "name": result.name,
        "workload": first.job.workload,
        "variant": variant,
        "backend": result.backend,
        "swept": list(swept),
        "fixed_config": fixed,
        "execution": run_execution(result),
    }
    document = {"schema_version": SWEEP_SCHEMA_VERSION, **meta, "metrics": list(SWEEP_METRICS), "points": frame_records(table)}
    import json

    paths = {"csv": directory / "sweep.csv", "json": directory / "sweep.json", "html": directory / "sweep.html"}
    write_output(table.to_csv(index=False), paths["csv"])
    write_output(json.dumps(document, indent=2, default=str) + "\n", paths["json"])
    write_output(render_sweep_html(table, swept, meta, reports=reports), paths["html"])
    return paths


def advise_pages() -> AdvisePages:
    """The words and files of an advise run: the verdict's sentences, ``advise.json``,
    ``advise.csv``, ``advise.html`` and the front points' report pages."""
    from profcompare.render.advise_words import advise_sentences

    def write(points: pd.DataFrame, facts: AdviseVerdict, verdict: str, meta: Mapping[str, Any], directory: Path,
              report_pages: int, published: Path) -> dict[str, Path]:
        return write_advise_files(points, facts, verdict, meta, directory, report_pages=report_pages,
                                  published=published)

    return AdvisePages(verdict=advise_sentences, write=write)


def write_advise_files(points: pd.DataFrame, facts: AdviseVerdict, verdict: str, meta: Mapping[str, Any],
                       directory: Path, *, report_pages: int = DEFAULT_REPORT_PAGES,
                       published: Path | None = None) -> dict[str, Path]:
    """Write advise.json, advise.csv and advise.html into ``directory`` (and a report page into the
    directories of the first ``report_pages`` front points; they name their report as it will be
    found under ``published``, where ``directory`` is renamed to); return format -> path."""
    from profcompare.render.advise import advise_csv, advise_document, render_advise_html
    from profcompare.render.output import write_output

    pages = write_report_pages(points, directory, report_pages, published)
    paths = {"json": directory / "advise.json", "csv": directory / "advise.csv", "html": directory / "advise.html"}
    import json

    write_output(json.dumps(advise_document(points, facts, verdict, meta), indent=2, allow_nan=False) + "\n",
                 paths["json"])
    write_output(advise_csv(points), paths["csv"])
    write_output(render_advise_html(points, facts, verdict, meta, pages=pages), paths["html"])
    return paths


def write_report_pages(points: pd.DataFrame, directory: Path, count: int,
                       published: Path | None = None) -> dict[str, str]:
    """Write ``report.html`` (the report's page, as ``profcompare show --format html``) into the
    directories of the first ``count`` front points; return label -> page path relative to
    ``directory``. With ``published`` the page names its report's source there (the staging
    ``directory`` is gone once published)."""
    from profcompare.readers import open_report
    from profcompare.render.base import get_renderer
    from profcompare.render.output import write_output

    pages: dict[str, str] = {}
    for label in list(front(points)["label"])[:max(0, count)]:
        target = directory / label / "report.html"
        if not os.path.lexists(target):  # a page linked in from the cache is the same page
            try:
                report = open_report(directory / label)
                if published is not None:
                    source = str(published / label / os.path.relpath(report.meta.source, directory / label))
                    report = report.with_meta(report.meta.replace(source=source))
                write_output(get_renderer("html").render(report, top=20), target)
            except ProfcompareError:
                continue
        pages[label] = f"{label}/report.html"
    return pages


__all__ = ["COMPARISON_FORMATS", "INDEX_FILES", "advise_pages", "run_pages", "write_advise_files", "write_index",
           "write_report_pages", "write_sweep_files"]
