"""``profcompare compare BASE NEW``: what changed from BASE to NEW (delta = new - base).

On a terminal the text is the first screen (headline, verdict, largest moves, where to look
next, the headline again); ``--full`` prints every table, ``--section NAME`` the named ones. To
a file or a pipe the text is whole unless ``--brief`` or ``--section`` says otherwise; the
markdown, json, html and csv formats are always complete.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click

from profcompare.backend.knobs import MAX_NOISE_PCT
from profcompare.commands._common import (
    BRIEF,
    SECTIONS,
    announce_cut,
    check_csv_table,
    check_output,
    csv_table_option,
    emit,
    format_option,
    load_report,
    output_options,
    render,
    resolve_top,
    run_option,
    with_trace_run,
    text_style,
    text_view,
    top_option,
    view_options,
)
from profcompare.render.base import FORMATS


@click.command(name="compare")
@click.argument("base", type=click.Path())
@click.argument("new", type=click.Path())
@format_option(FORMATS)
@output_options
@top_option()
@click.option("--fail-if", "fail_if", multiple=True, metavar="METRIC>PCT%|METRIC<PCT%",
              help="Exit with status 1 (after writing the output) when METRIC changed beyond PCT percent: "
                   "'peak_liveness_bytes>2%' (grew by more than 2%), 'samples_per_second<-5%' (dropped by more "
                   "than 5%). The message says whether that is worse or better. Repeatable. Besides the summary "
                   "metrics: 'exposed_cycles>5%' (the time diff's exposed device cycles grew by more than 5%) and "
                   "'time_diff_attributed<95%' (the time diff charges less than 95% of the changed cycles to "
                   "parameters, roles or named kinds).")
@click.option("--noise-bytes", type=click.IntRange(min=0), default=64, show_default=True,
              help="A byte change counts as unchanged only when it is at most this size (and within --noise-pct).")
@click.option("--noise-pct", type=click.FloatRange(0, MAX_NOISE_PCT), default=1.0, show_default=True,
              help="A change counts as unchanged only when it is at most this percentage of base (and, for bytes, within --noise-bytes).")
@csv_table_option(("variables", "ledger"))
@view_options
@click.option("--at", "at", metavar="peak|STEP|REGEX", default=None,
              help="Show only what is live at one step of each report, aligned by program: 'peak' (each report's "
                   "not-always-live peak), a base step number (new's step aligned with it), or a regular expression "
                   "for program names (the first matching step of each report). Text, markdown or json.")
@run_option()
def command(
    base: str,
    new: str,
    fmt: str,
    output: str | None,
    force: bool,
    top: int | None,
    fail_if: tuple[str, ...],
    noise_bytes: int,
    noise_pct: float,
    table: str,
    full: bool | None,
    sections: tuple[str, ...],
    at: str | None,
    run: int | None,
) -> None:
    """Compare two reports: summary deltas, memory by category, the variables that changed most,
    liveness, tiles, code, Streaming Memory and cycles.

    BASE and NEW are run directories, report directories or report files. On a terminal the
    text is one screen that answers (headline, verdict, largest moves, what to open next; the
    headline again last); --full prints every table, as a file or a pipe gets by default.
    --at shows instead what is live at one step of each report (see its help).
    """
    from profcompare.comparison import check_limits, compare, parse_limit

    limits = [parse_limit(text) for text in fail_if]  # bad syntax fails before any work
    check_csv_table(fmt, table, "variables")
    selector = check_at(at, fmt, sections) if at is not None else None
    view = text_view(full, sections, fmt=fmt, output=output)
    check_output(output, force=force)
    comparison = compare(with_trace_run(load_report(base), run), with_trace_run(load_report(new), run),
                         noise_bytes=noise_bytes, noise_pct=noise_pct)
    if selector is not None:
        emit(at_step_output(comparison, selector, fmt=fmt, top=top, output=output), output, force=force)
    elif table == "ledger":
        from profcompare.render.csv_out import ledger_csv

        emit(ledger_csv(comparison), output, force=force)
    elif table != "variables":
        from profcompare.render.csv_out import page_table_csv

        emit(page_table_csv(comparison, table, top=top), output, force=force)
    elif view == BRIEF:
        from profcompare.render.screen import comparison_screen

        emit(comparison_screen(comparison, next_steps=next_steps(base, new), **text_style(output)), output, force=force)
    elif view == SECTIONS:
        emit(sections_text(comparison, sections, top=resolve_top(top, fmt), output=output), output, force=force)
    else:
        emit(render(fmt, comparison, top=top, output=output), output, force=force)
    if top is not None and table == "variables" and view != BRIEF and selector is None:  # the first screen has no variables table
        announce_cut(fmt, min(top, len(comparison.variables)), len(comparison.variables))
    violations = check_limits(comparison, limits)
    for message in violations:
        click.echo(f"profcompare: limit exceeded: {message}", err=True)
    if violations:
        raise click.exceptions.Exit(1)


#: the formats ``--at`` writes
AT_FORMATS = ("text", "markdown", "json")


def check_at(at: str, fmt: str, sections: tuple[str, ...]) -> Any:
    """Parse ``--at`` before any work (a malformed selector or an invalid regular expression is
    refused at once) and refuse what it cannot go with: a format other than :data:`AT_FORMATS`
    and ``--section``. Returns the parsed selector; raises ProfcompareError."""
    from profcompare.analysis.at_step import parse_selector
    from profcompare.errors import ProfcompareError

    if fmt not in AT_FORMATS:
        raise ProfcompareError(f"--at writes {', '.join(AT_FORMATS[:-1])} or {AT_FORMATS[-1]}, not --format {fmt} (not "
                               "supported yet)")
    if sections:
        raise ProfcompareError("--at shows what is live at one step; drop --section")
    return parse_selector(at)


def at_step_output(comparison: Any, selector: Any, *, fmt: str, top: int | None, output: str | None) -> str:
    """What ``compare --at`` writes: the aligned live-at-step view of ``comparison`` in ``fmt``
    (text fitted and coloured as :func:`~profcompare.commands._common.text_style` says)."""
    from profcompare.comparison.at_step import compare_at

    result = compare_at(comparison, selector)
    if fmt == "json":
        from profcompare.render.at_step_json import at_step_json_text

        return at_step_json_text(result, top=top)
    from profcompare.render.sections.at_step import at_step_document

    document = at_step_document(result, top=resolve_top(top, fmt))
    if fmt == "markdown":
        from profcompare.render.markdown import render_document as markdown_document

        return markdown_document(document)
    from profcompare.render.text import render_document

    return render_document(document, **text_style(output))


def run_page(base: str, new: str) -> Path | None:
    """The page ``profcompare run`` wrote for these two reports, when BASE and NEW are variants
    (directories or their report files) of one run directory holding it; else None."""
    from profcompare.runner.summarise import comparison_stem

    def variant(path: str) -> Path:
        where = Path(path)
        return where.parent if where.is_file() else where

    base_dir, new_dir = variant(base), variant(new)
    if base_dir.resolve().parent != new_dir.resolve().parent:
        return None
    page = base_dir.parent / f"{comparison_stem(base_dir.name, new_dir.name)}.html"
    return page if page.is_file() else None


def next_steps(base: str, new: str) -> tuple[str, ...]:
    """Where to look after the first screen: the comparison's page (the one ``run`` wrote, or
    the command that writes it) and the command that prints every table."""
    from profcompare.commands._common import display_path

    command = f"profcompare compare {shlex.quote(base)} {shlex.quote(new)}"
    page = run_page(base, new)
    if page is not None:
        first = f"open the whole comparison as a page (ledger, execution trace, liveness, variables, code): {display_path(page)}"
    else:
        first = f"the whole comparison as a page (ledger, execution trace, liveness): {command} --format html -o compare.html"
    return first, f"every table here (or one: --section NAME, see --help): {command} --full"


def sections_text(comparison: Any, names: tuple[str, ...], *, top: int | None, output: str | None) -> str:
    """The text of the named sections of ``comparison`` only (``--section``): its title line
    (which report is base, which new), its warnings, then those sections in document order."""
    from profcompare.render.sections import Document, comparison_document
    from profcompare.render.text import render_document

    document = comparison_document(comparison, top=top, names=names)
    return render_document(Document(document.title, (), document.warnings, document.sections), **text_style(output))
