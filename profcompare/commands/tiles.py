"""``profcompare tiles REPORT [NEW] [--tile N]``: one tile explained -- the fullest (or tile N)
with its memory by region, liveness and categories and why it is the fullest; given NEW, each
side's fullest tile and the largest change side by side, the tiles that crossed the budget and
a histogram of tile bytes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from profcompare.commands._common import (
    check_output,
    emit,
    format_option,
    load_report,
    output_options,
    text_style,
    top_option,
)

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.comparison import Comparison
    from profcompare.model import Report

#: formats the command writes
TILE_FORMATS = ("text", "markdown", "json")

#: live variables listed per report by default: render.sections.tile_detail.LIVE_VARIABLES (not
#: imported here, so that the command line starts without pandas)
LIVE_VARIABLES = 10


@click.command(name="tiles")
@click.argument("report", type=click.Path())
@click.argument("new", type=click.Path(), required=False)
@click.option("--tile", type=click.IntRange(min=0), default=None, metavar="N",
              help="Explain tile N (its index within the replica) instead of the fullest.")
@top_option(LIVE_VARIABLES, views="text and markdown")
@format_option(TILE_FORMATS)
@output_options(html=False)
def command(report: str, new: str | None, tile: int | None, top: int | None, fmt: str, output: str | None,
            force: bool) -> None:
    """Explain the fullest tile of REPORT (or tile N): its memory by region, always-live and
    not-always-live bytes, categories, the variables on the tile at its peak step (where the
    report records which tiles hold each variable; else those live at the replica's peak step),
    and one sentence saying why it is the fullest. With NEW as well: each report's fullest tile and the tile
    whose bytes changed most, side by side with deltas, the tiles that crossed the budget and a
    histogram of tile bytes, base over new.

    REPORT and NEW are run directories, report directories or report files.
    """
    check_output(output, force=force)
    loaded = load_report(report)
    obj: Report | Comparison = loaded
    if new is not None:
        from profcompare.comparison import compare

        obj = compare(loaded, load_report(new))
    if fmt == "json":
        from profcompare.render.tile_detail_json import render_tile_detail_json

        emit(render_tile_detail_json(obj, tile), output, force=force)
        return
    from profcompare.render.sections.tile_detail import tile_detail_document

    document = tile_detail_document(obj, tile, top)
    if fmt == "markdown":
        from profcompare.render.markdown import render_document as render_markdown

        emit(render_markdown(document), output, force=force)
        return
    from profcompare.render.text import render_document as render_text

    emit(render_text(document, **text_style(output)), output, force=force)
