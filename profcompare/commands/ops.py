"""``profcompare ops REPORT [NEW]``: the operations of one report, or of two paired; with
``--vertices``, their vertex types, compute sets and exchanges instead."""

from __future__ import annotations

import click

from profcompare.commands._common import (
    announce_cut,
    check_output,
    emit,
    format_option,
    load_report,
    output_options,
    resolve_top,
    text_style,
    top_option,
)


#: the formats ``ops`` writes (the render layer's operations_out draws each; importing it here
#: would load pandas for every command's --help)
OPERATIONS_FORMATS = ("text", "markdown", "json", "csv")


@click.command(name="ops")
@click.argument("report", type=click.Path())
@click.argument("new", type=click.Path(), required=False)
@top_option(30, views="text and markdown")
@format_option(OPERATIONS_FORMATS)
@click.option("--vertices", is_flag=True,
              help="List the vertex types (most code first), compute sets (most vertex state first) and "
                   "exchanges (most code first) instead of the ops; with NEW, paired by name. "
                   "Text, Markdown or JSON.")
@output_options(html=False)
def command(report: str, new: str | None, top: int | None, fmt: str, vertices: bool, output: str | None,
            force: bool) -> None:
    """List the operations of REPORT (code, vertex state and exchange code bytes, cycles of one
    run, FLOPs, tiles), the most code first; with NEW, pair the two reports' ops and show how
    their code and cycles changed (new - base), the largest changes first."""
    from profcompare.comparison import compare
    from profcompare.render.operations_out import render_operations

    if vertices and fmt == "csv":
        raise click.UsageError("--vertices writes three tables: use --format json, or show / compare --format csv "
                               "--table vertices-vertices (vertices-compute-sets, vertices-exchanges)")
    check_output(output, force=force)
    base = load_report(report)
    obj = compare(base, load_report(new)) if new is not None else base
    limit = resolve_top(top, fmt, default=30)
    style = text_style(output) if fmt == "text" else {}
    if vertices:
        from profcompare.render.vertices_out import render_vertices

        emit(render_vertices(fmt, obj, top=limit, **style), output, force=force)
        return
    emit(render_operations(fmt, obj, top=limit, **style), output, force=force)
    announce_cut(fmt, min(limit or len(obj.operations), len(obj.operations)), len(obj.operations), "ops")
