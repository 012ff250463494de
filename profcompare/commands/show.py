"""``profcompare show REPORT``: the summary of one report (memory, liveness, code, cycles)."""

from __future__ import annotations

import click

from profcompare.commands._common import (
    check_csv_table,
    check_output,
    csv_table_option,
    emit,
    format_option,
    load_report,
    output_options,
    render,
    run_option,
    top_option,
    with_trace_run,
)
from profcompare.render.base import FORMATS


@click.command(name="show")
@click.argument("report", type=click.Path())
@format_option(FORMATS)
@output_options
@top_option()
@click.option("--no-code", "no_code", is_flag=True,
              help="Poplar profiles: skip the per-program code (the slow part of reading big profiles).")
@csv_table_option(("summary", "ledger"))
@run_option()
def command(report: str, fmt: str, output: str | None, force: bool, top: int | None, no_code: bool,
            table: str, run: int | None) -> None:
    """Show one report: summary, memory by category, largest variables, liveness peak, fullest
    tiles, code by program, Streaming Memory and execution cycles.

    REPORT is a run directory, a report directory or a report file (profile.sqlite, profile.pop).
    """
    check_csv_table(fmt, table, "summary")
    check_output(output, force=force)
    loaded = with_trace_run(load_report(report, code=not no_code), run)
    if table == "ledger":
        from profcompare.render.csv_out import ledger_csv

        emit(ledger_csv(loaded), output, force=force)
        return
    if table != "summary":
        from profcompare.render.csv_out import page_table_csv

        emit(page_table_csv(loaded, table, top=top), output, force=force)
        return
    emit(render(fmt, loaded, top=top, output=output), output, force=force)
