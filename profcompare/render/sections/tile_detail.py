"""The "Tile detail" section (id ``tile-detail``): one tile explained, in the page model every
medium draws.

For one report: why its fullest tile is the fullest (one sentence), the tile's figures (bytes,
always-live and not-always-live, memory by region, categories) in ``tile-detail-table``, the
variables live at the replica's peak step in ``tile-variables-table`` and how many tiles hold
how many bytes in ``tile-histogram-table``. For a comparison: each side's sentence, each side's
fullest tile and the tile whose bytes changed most side by side with deltas, the tiles that
crossed the budget (``tile-budget-table``), each side's live variables and the histogram base
over new. The figures come from :mod:`profcompare.analysis.tile_detail`.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from profcompare.analysis import tile_detail as analysis
from profcompare.comparison import tile_detail as compared
from profcompare.comparison import Comparison
from profcompare.model import CATEGORY_GROUPS, Report
from profcompare.render.format import MISSING, format_bytes, format_count, format_pct, is_missing
from profcompare.render.html_model import bytes_cell, sort_key
from profcompare.render.labels import live_label
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.sections.document import Document
from profcompare.render.sections.header import comparison_header, report_header

#: The one title of the section in every output.
TILE_DETAIL_TITLE = "Tile detail"

#: The id of the histogram table (the page draws a chart in its place).
HISTOGRAM_TABLE_ID = "tile-histogram-table"

#: How many live variables the section lists per report when ``top`` does not say.
LIVE_VARIABLES = 10

#: At most this many variables per report in the section as the pages and full views show it
#: (among many other sections: ``profcompare tiles`` lists :data:`LIVE_VARIABLES` or ``--top``).
SECTION_VARIABLES = 5

#: What each figure of a tile is called in a table (categories keep PopVision's names).
FIGURE_LABELS: dict[str, str] = {
    "bytes": "Bytes (incl. gaps)",
    "bytes_excluding_gaps": "Bytes (excl. gaps)",
    # "on the tile": the replica's figures of the same names are the Summary's
    "always_live_bytes": f"{live_label(True, title=True)} on the tile",
    "not_always_live_peak_bytes": f"{live_label(False, title=True)} peak on the tile",
    "non_interleaved_bytes": "Non-interleaved region",
    "interleaved_bytes": "Interleaved region",
    "overflow_bytes": "Overflow (beyond the tile)",
    "gap_bytes": "Gaps",
}

#: Said when a large simulated report records which tiles hold each variable on its fullest tiles
#: only (emulator/compile/report.py MAX_PLACEMENT_ROWS); the tiles follow.
PARTIAL_PLACEMENT_NOTE = ("The report records which variables sit on its fullest tiles only (the whole placement of a "
                          "program this large would be tens of millions of rows); on other tiles the variables listed are "
                          "the replica's live set at its peak step")

#: Said when a report does not record which tiles hold each variable.
PLACEMENT_NOTE = ("The report does not record which tiles hold each variable: these are the variables live at the "
                  "replica's not-always-live peak step, each spread over the tiles shown.")

#: Said, besides :data:`PLACEMENT_NOTE`, of a Poplar profile read through pva.
PVA_PLACEMENT_NOTE = ("Poplar profiles read through pva: the variables of each tile (pva's lowered variables per "
                      "tile) are slow to read on large profiles and need autoReport.outputLoweredVars, so profcompare "
                      "does not read them.")

#: Said when the report records which tiles hold each variable (the simulator's reports do).
PLACED_NOTE = ("Variables on the tile at the tile's own peak step: the step at which the not-always-live variables "
               "placed on it hold the most bytes (the replica's peak step when none is); always-live variables are "
               "on it at every step. \"On tile\" is the variable's bytes on this tile; the layout model's "
               "placement (modelled).")

#: Said when a side does not record the non-interleaved / interleaved split.
REGIONS_NOTE = ("n/a: the report does not record that region (Poplar profiles read through pva give a tile's "
                "overflow and gaps, not its non-interleaved / interleaved split; stores written before version 8 "
                "give none).")


def _label(figure: str) -> str:
    if figure in FIGURE_LABELS:
        return FIGURE_LABELS[figure]
    return f"Category {figure}" if figure in CATEGORY_GROUPS else figure


def _value_cell(value: object, *, signed: bool = False) -> Cell:
    if is_missing(value):
        return Cell(MISSING)
    tone = None
    if signed:
        tone = "bad" if int(value) > 0 else "good" if int(value) < 0 else None  # type: ignore[call-overload]
    return bytes_cell(value, signed=signed, tone=tone)


def _limit(top: int | None) -> int:
    return top if top else LIVE_VARIABLES


def _detail_table(detail: analysis.TileDetail) -> Table:
    """One tile's figures: bytes, liveness, regions and categories, with its share of the budget."""
    figures = compared.side_by_side(detail, None)
    rows = [Row((Cell(_label(str(f.figure))), _value_cell(f.base)), {"figure": str(f.figure)})
            for f in figures.itertuples(index=False)]
    pct = detail.pct_of_budget
    rows.insert(1, Row((Cell("Of budget"), Cell(format_pct(pct, signed=False), sort_key(pct),
                                                  "bad" if detail.over_budget else None)), {"figure": "pct_of_budget"}))
    columns = (Column("Figure", key="figure"), Column(f"Tile {detail.tile}", True, key="value"))
    return Table(columns, tuple(rows), id="tile-detail-table", sortable=False,
                 note=f"Tile {detail.tile} (IPU {detail.ipu}); budget {format_bytes(detail.bytes_per_tile)} per tile.")


def _variables_rows(side: str | None, detail: analysis.TileDetail, top: int, placed: bool) -> list[Row]:
    rows = []
    for v in detail.live_variables.head(top).itertuples(index=False):
        cells = [Cell(str(v.name)), Cell(str(v.kind)), bytes_cell(v.bytes), Cell(format_count(v.tiles), int(v.tiles))]
        if placed:
            cells.insert(2, _value_cell(v.bytes_on_tile))
        if side is not None:
            cells.insert(0, Cell(side))
            cells.insert(1, Cell(f"{detail.peak_step}", detail.peak_step))
        rows.append(Row(tuple(cells), {"name": str(v.name)}))
    return rows


def _variables_table(sides: Sequence[tuple[str | None, analysis.TileDetail]], top: int) -> Table:
    placed = any(detail.placement_recorded for _, detail in sides)
    rows = [row for side, detail in sides for row in _variables_rows(side, detail, top, placed)]
    columns = [Column("Variable", key="name"), Column("Kind", key="kind"), Column("Bytes", True, key="bytes"),
               Column("Tiles", True, key="tiles")]
    if placed:
        columns.insert(2, Column("On tile", True, key="on_tile"))
    if sides and sides[0][0] is not None:
        columns = [Column("Side", key="side"), Column("Step", True, key="step"), *columns]
    notes = []
    for side, detail in sides:
        if detail.peak_step is None:
            continue
        total = len(detail.live_variables)
        shown = min(total, top)
        who = f"{side}: " if side else ""
        if detail.placement_recorded:
            notes.append(f"{who}{shown:,} of {total:,} variables on tile {detail.tile} at "
                         f"{'its peak ' if detail.tile_peak else ''}step {detail.peak_step} ({detail.peak_program}).")
        else:
            notes.append(f"{who}{shown:,} of {total:,} variables live at step {detail.peak_step} "
                         f"({detail.peak_program}).")
    return Table(tuple(columns), tuple(rows), id="tile-variables-table", note=" ".join(notes),
                 empty="no liveness recorded")


def _range(from_bytes: int, to_bytes: int) -> str:
    return f"{format_bytes(from_bytes)} to {format_bytes(to_bytes)}"


def _histogram_table(hist: pd.DataFrame, comparison: bool) -> Table:
    rows = []
    for h in hist.itertuples(index=False):
        cells = [Cell(_range(int(h.from_bytes), int(h.to_bytes)), int(h.from_bytes)),
                 Cell(format_count(h.base_tiles), int(h.base_tiles))]
        if comparison:
            cells += [Cell(format_count(h.new_tiles), int(h.new_tiles)),
                      Cell(format_count(h.delta_tiles, signed=True), int(h.delta_tiles))]
        rows.append(Row(tuple(cells), {"bin": str(int(h.from_bytes))}))
    columns = [Column("Tile bytes (incl. gaps)", key="bin")]
    columns += ([Column("Base tiles", True, key="base"), Column("New tiles", True, key="new"),
                 Column("Delta", True, key="delta")] if comparison else [Column("Tiles", True, key="tiles")])
    note = "Each bin holds the tiles from its lower bound up to, not including, its upper one (the last holds both)."
    return Table(tuple(columns), tuple(rows), id=HISTOGRAM_TABLE_ID, sortable=False, note=note,
                 empty="no per-tile data")


def _regions_unknown(*details: analysis.TileDetail | None) -> bool:
    return any(d is not None and any(v is None for v in d.regions.values()) for d in details)


def report_tile_detail_section(report: Report, tile: int | None = None, top: int | None = None) -> Section:
    """The "Tile detail" section of one report: ``tile`` (None: the fullest) with, for the
    fullest, the sentence saying why; its figures, the variables live at the replica's peak step
    (``top`` of them; None: :data:`LIVE_VARIABLES`) and the histogram of tile bytes. Raises
    :class:`~profcompare.analysis.tile_detail.TileDetailError` for a report without tiles or a
    tile it does not have."""
    detail = analysis.tile_detail(report, tile)
    if tile is None or tile == analysis.fullest_tile(report):
        items = (analysis.why_fullest(report),)
    else:
        items = (f"tile {detail.tile}: {format_bytes(detail.bytes)}, {format_pct(detail.pct_of_budget, signed=False)} "
                 f"of the budget, {detail.times_median:.1f}x the median tile ({format_bytes(detail.median_bytes)}).",)
    tables = (_detail_table(detail), _variables_table([(None, detail)], _limit(top)),
              _histogram_table(analysis.tile_histogram(report), comparison=False))
    notes = _placement_notes([(None, report)]) + ([REGIONS_NOTE] if _regions_unknown(detail) else [])
    return Section(TILE_DETAIL_TITLE, tables, tuple(notes), items, id="tile-detail")


def _placement_notes(sides: Sequence[tuple[str | None, Report]]) -> list[str]:
    """What the variables table lists, per side: the variables placed on the tile, or (a report
    without placement) the replica's live set, with why for a pva profile."""
    placed = [side for side, r in sides if analysis.placement_recorded(r)]
    unplaced = [(side, r) for side, r in sides if not analysis.placement_recorded(r)]
    notes = []
    if placed:
        notes.append(PLACED_NOTE if len(sides) == 1 or not unplaced else f"{' and '.join(map(str, placed))}: {PLACED_NOTE}")
    if unplaced:
        who = "" if not placed else f"{' and '.join(str(side) for side, _ in unplaced)}: "
        notes.append(who + PLACEMENT_NOTE)
        if any(r.meta.format == "pva" for _, r in unplaced):
            notes.append(PVA_PLACEMENT_NOTE)
    for side, report in sides:
        covered = analysis.partial_placement(report)
        if covered:
            who = "" if side is None else f"{side}: "
            notes.append(f"{who}{PARTIAL_PLACEMENT_NOTE} ({len(covered)}: tiles {', '.join(map(str, covered))}).")
    return notes


def _focus_rows(focus: compared.TileFocus) -> list[Row]:
    rows = []
    label = f"{focus.tile} ({', '.join(focus.reasons)})"
    for index, f in enumerate(focus.figures.itertuples(index=False)):
        if is_missing(f.base) and is_missing(f.new):
            if str(f.figure) in CATEGORY_GROUPS:
                continue
        rows.append(Row((Cell(label if index == 0 else "", focus.tile), Cell(_label(str(f.figure))),
                         _value_cell(f.base), _value_cell(f.new), _value_cell(f.delta, signed=True)),
                        {"tile": str(focus.tile), "figure": str(f.figure)}))
    return rows


def _budget_table(crossed: pd.DataFrame) -> Table:
    rows = []
    for c in crossed.itertuples(index=False):
        over = c.crossing == "over in new"
        rows.append(Row((Cell(f"{int(c.tile)}", int(c.tile)), Cell(f"{int(c.ipu)}", int(c.ipu)),
                         bytes_cell(c.base_bytes), bytes_cell(c.new_bytes),
                         bytes_cell(c.delta_bytes, signed=True, tone="bad" if over else "good"),
                         Cell(str(c.crossing), tone="bad" if over else "good")), {"crossing": str(c.crossing)}))
    columns = (Column("Tile", True, key="tile"), Column("IPU", True, key="ipu"), Column("Base", True, key="base"),
               Column("New", True, key="new"), Column("Delta", True, key="delta"), Column("Crossing", key="crossing"))
    return Table(columns, tuple(rows), id="tile-budget-table")


def _crossed_sentence(cmp: Comparison, crossed: pd.DataFrame) -> str:
    budgets = {format_bytes(r.meta.target.bytes_per_tile) for r in (cmp.base, cmp.new)}
    budget = " / ".join(sorted(budgets))
    over = int((crossed["crossing"] == "over in new").sum())
    under = len(crossed) - over
    if not len(crossed):
        return f"No tile crossed the {budget} budget."
    return (f"{len(crossed):,} tile{'s' if len(crossed) != 1 else ''} crossed the {budget} budget: "
            f"{over:,} went over in new, {under:,} came back under.")


def comparison_tile_detail_section(cmp: Comparison, tile: int | None = None, top: int | None = None) -> Section:
    """The "Tile detail" section of a comparison: why each side's fullest tile is the fullest;
    ``tile`` or else each side's fullest tile and the tile whose bytes changed most, side by
    side with deltas; the tiles that crossed the budget; the variables live at each side's peak
    step (``top`` per side; None: :data:`LIVE_VARIABLES`); the histogram base over new. Raises
    :class:`~profcompare.analysis.tile_detail.TileDetailError` when neither report has tiles or
    ``tile`` is in neither."""
    foci = compared.compare_tiles_detail(cmp, tile)
    items = [f"{side}: {analysis.why_fullest(report)}" for side, report in (("base", cmp.base), ("new", cmp.new))
             if len(report.tiles)]
    crossed = compared.crossed_budget(cmp)
    items.append(_crossed_sentence(cmp, crossed))
    columns = (Column("Tile", key="tile"), Column("Figure", key="figure"), Column("Base", True, key="base"),
               Column("New", True, key="new"), Column("Delta", True, key="delta"))
    detail = Table(columns, tuple(row for focus in foci for row in _focus_rows(focus)), id="tile-detail-table",
                   sortable=False, note="Delta = new - base; n/a where a report does not record the figure.")
    tables = [detail]
    if len(crossed):
        tables.append(_budget_table(crossed))
    sides = [(side, analysis.tile_detail(report)) for side, report in (("base", cmp.base), ("new", cmp.new))
             if len(report.tiles)]
    tables.append(_variables_table(sides, _limit(top)))
    tables.append(_histogram_table(analysis.tile_histogram(cmp.base, cmp.new), comparison=True))
    notes = _placement_notes([(side, report) for side, report in (("base", cmp.base), ("new", cmp.new))
                              if len(report.tiles)])
    if _regions_unknown(*(d for focus in foci for d in (focus.base, focus.new))):
        notes.append(REGIONS_NOTE)
    return Section(TILE_DETAIL_TITLE, tuple(tables), tuple(notes), tuple(items), id="tile-detail")


def report_tile_detail_page_section(report: Report, top: int | None = None) -> Section | None:
    """The "Tile detail" section of a report's page and full views (its fullest tile), at most
    :data:`SECTION_VARIABLES` variables; None for a report without per-tile memory."""
    if not len(report.tiles):
        return None
    return report_tile_detail_section(report, None, min(_limit(top), SECTION_VARIABLES))


def comparison_tile_detail_page_section(cmp: Comparison, top: int | None = None) -> Section | None:
    """The "Tile detail" section of a comparison's page and full views, at most
    :data:`SECTION_VARIABLES` variables per side; None when neither report has per-tile memory."""
    if not (len(cmp.base.tiles) or len(cmp.new.tiles)):
        return None
    return comparison_tile_detail_section(cmp, None, min(_limit(top), SECTION_VARIABLES))


def tile_detail_document(obj: Report | Comparison, tile: int | None = None, top: int | None = None) -> Document:
    """The document of the ``tiles`` command: which report(s), simulation warnings and the
    "Tile detail" section of a report or a comparison."""
    if isinstance(obj, Comparison):
        facts, warnings = comparison_header(obj)
        section = comparison_tile_detail_section(obj, tile, top)
        title = f"profcompare tiles: {obj.base.label} -> {obj.new.label}"
    else:
        facts, warnings = report_header(obj)
        section = report_tile_detail_section(obj, tile, top)
        title = f"profcompare tiles: {obj.label}"
    return Document(title, tuple(facts), warnings, (section,))


__all__ = [
    "FIGURE_LABELS",
    "HISTOGRAM_TABLE_ID",
    "LIVE_VARIABLES",
    "PARTIAL_PLACEMENT_NOTE",
    "PLACED_NOTE",
    "PLACEMENT_NOTE",
    "PVA_PLACEMENT_NOTE",
    "REGIONS_NOTE",
    "SECTION_VARIABLES",
    "TILE_DETAIL_TITLE",
    "comparison_tile_detail_page_section",
    "comparison_tile_detail_section",
    "report_tile_detail_page_section",
    "report_tile_detail_section",
    "tile_detail_document",
]
