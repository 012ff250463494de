"""``profcompare variables REPORT``: the variables of one report, filtered, sorted and cut."""

from __future__ import annotations

import click

from profcompare.commands._common import (
    announce_cut,
    check_output,
    emit,
    format_option,
    load_report,
    output_options,
    render,
    resolve_top,
    top_option,
)

#: formats that can draw a variables table
VARIABLE_FORMATS = ("text", "markdown", "json", "csv")


@click.command(name="variables")
@click.argument("report", type=click.Path())
@top_option(30, views="text and markdown")
@click.option("--sort", default="bytes", show_default=True, metavar="COLUMN",
              help="Sort by a variables column: name, bytes, always_live, kind, dtype, shape, tiles, "
                   "first_step, last_step (sizes largest first, text A-Z).")
@click.option("--filter", "filter_regex", default=None, metavar="REGEX",
              help="Keep variables whose name matches this regular expression (searched anywhere in the name).")
@click.option("--always-live/--not-always-live", "always_live", default=None,
              help="Keep only always-live (or only not-always-live) variables.")
@format_option(VARIABLE_FORMATS)
@output_options(html=False)
def command(
    report: str,
    top: int | None,
    sort: str,
    filter_regex: str | None,
    always_live: bool | None,
    fmt: str,
    output: str | None,
    force: bool,
) -> None:
    """List the variables of REPORT, largest first; what the top N leaves out is summed in an 'other' row."""
    from profcompare.analysis import views as analysis
    from profcompare.render.sections import VariablesView

    check_output(output, force=force)
    loaded = load_report(report)
    limit = resolve_top(top, fmt, default=30)
    view = analysis.variables_view(loaded, top=limit, sort=sort, filter_regex=filter_regex, always_live=always_live)
    result = VariablesView(loaded, view, sort=sort, filter_regex=filter_regex, always_live=always_live)
    emit(render(fmt, result, top=limit, output=output), output, force=force)
    announce_cut(fmt, view.shown, view.total)
