"""``profcompare compare BASE NEW``: what changed from BASE to NEW (delta = new - base)."""

from __future__ import annotations

import click

from profcompare.commands._common import (
    announce_cut,
    check_csv_table,
    check_output,
    csv_table_option,
    emit,
    format_option,
    load_report,
    output_options,
    render,
    top_option,
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
                   "than 5%). The message says whether that is worse or better. Repeatable.")
@click.option("--noise-bytes", type=click.IntRange(min=0), default=64, show_default=True,
              help="A byte change counts as unchanged only when it is at most this size (and within --noise-pct).")
@click.option("--noise-pct", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="A change counts as unchanged only when it is at most this percentage of base (and, for bytes, within --noise-bytes).")
@csv_table_option(("variables", "ledger"))
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
) -> None:
    """Compare two reports: summary deltas, memory by category, the variables that changed most,
    liveness, tiles, code, Streaming Memory and cycles.

    BASE and NEW are run directories, report directories or report files.
    """
    from profcompare.comparison import check_limits, compare, parse_limit

    limits = [parse_limit(text) for text in fail_if]  # bad syntax fails before any work
    check_csv_table(fmt, table, "variables")
    check_output(output, force=force)
    comparison = compare(load_report(base), load_report(new), noise_bytes=noise_bytes, noise_pct=noise_pct)
    if table == "ledger":
        from profcompare.render.csv_out import ledger_csv

        emit(ledger_csv(comparison), output, force=force)
    else:
        emit(render(fmt, comparison, top=top, output=output), output, force=force)
    if top is not None and table == "variables":
        announce_cut(fmt, min(top, len(comparison.variables)), len(comparison.variables))
    violations = check_limits(comparison, limits)
    for message in violations:
        click.echo(f"profcompare: limit exceeded: {message}", err=True)
    if violations:
        raise click.exceptions.Exit(1)
