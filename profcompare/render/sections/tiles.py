"""The "Tiles" section of every output (terminal, Markdown, HTML): the per-tile memory figures
of a report or of a comparison's two reports side by side, then each report's fullest tiles.

The page's per-tile chart is not built here: the HTML page attaches it to the section (id
``tiles``), so the terminal never pays for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from profcompare.analysis import views as analysis
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.format import MISSING, format_bytes, format_count, format_pct, is_missing
from profcompare.render.html_model import bytes_cell, pct_cell, sort_key
from profcompare.render.labels import live_label
from profcompare.render.page.model import Cell, Column, Row, Section, Table
from profcompare.render.sections.document import _empty_note, _pct_of

#: The one title of the section in every output.
TILES_TITLE = "Tiles"

#: How many of the fullest tiles the section lists per report (fewer when ``top`` is smaller).
WORST_TILES = 10

#: The rows of the figures table: (tile_stats key, title, format).
_STAT_LINES: tuple[tuple[str, str, Callable[..., str]], ...] = (
    ("tiles", "Tiles per replica", format_count),
    ("bytes_per_tile", "Tile budget", format_bytes),
    ("max_bytes", "Max tile memory", format_bytes),
    ("median_bytes", "Median tile memory", format_bytes),
    ("min_bytes", "Min tile memory", format_bytes),
    ("tiles_over_budget", "Tiles over budget", format_count),
)


def _worst(top: int | None) -> int:
    """How many fullest tiles to list: :data:`WORST_TILES`, or ``top`` when it is smaller."""
    return min(top, WORST_TILES) if top else WORST_TILES


def _stat(stats: Mapping[str, Any], key: str) -> Any:
    """One figure of ``stats``; NaN (drawn n/a, never 0) for a report with no per-tile memory,
    except the tile budget, which the target gives."""
    if not stats["tiles"] and key != "bytes_per_tile":
        return float("nan")
    return stats[key]


def _stat_cell(stats: Mapping[str, Any], key: str, fmt: Callable[..., str]) -> Cell:
    value = _stat(stats, key)
    if is_missing(value):
        return Cell(MISSING)
    tone = "bad" if key == "tiles_over_budget" and value > 0 else None
    return Cell(fmt(value), sort_key(value), tone)


def _worst_table(stats: Mapping[str, Any], name: str, index: int) -> Table:
    """The fullest tiles of one report (``name`` says whose), fullest first."""
    rows = []
    for w in stats["worst_tiles"].itertuples(index=False):
        over = "bad" if w.pct_of_budget > 100 else None
        rows.append(Row((
            Cell(f"{int(w.tile)}", int(w.tile)),
            Cell(f"{int(w.ipu)}", int(w.ipu)),
            bytes_cell(w.bytes, tone=over),
            bytes_cell(w.always_live_bytes),
            bytes_cell(w.not_always_live_peak_bytes),
            Cell(format_pct(w.pct_of_budget, signed=False), sort_key(w.pct_of_budget), over),
        )))
    columns = (
        Column("Tile", True, key="tile"),
        Column("IPU", True, key="ipu"),
        Column("Bytes (incl. gaps)", True, key="bytes"),
        Column(live_label(True, title=True), True, key="always"),
        Column("Not-always-live peak", True, key="nal"),
        Column("Of budget", True, key="pct"),
    )
    return Table(columns, tuple(rows), id=f"worst-tiles-{index}", note=f"The {len(rows)} fullest tiles of {name}.",
                 empty="no per-tile data")


def report_tiles_section(report: Report, top: int | None = None) -> Section:
    """The "Tiles" section of one report: its per-tile figures (tiles, budget, max, median and
    min tile memory, tiles over budget) and its fullest tiles (:data:`WORST_TILES`, or ``top``
    when smaller); a note instead when the report has no per-tile memory."""
    stats = analysis.tile_stats(report, worst=_worst(top))
    if not stats["tiles"]:
        return Section(TILES_TITLE, id="tiles",
                       notes=(_empty_note(report.meta, "tiles", "No tiles in this report."),))
    rows = tuple(Row((Cell(title), _stat_cell(stats, key, fmt)), {"stat": key}) for key, title, fmt in _STAT_LINES)
    figures = Table((Column("Tiles", key="stat"), Column("Value", True, key="r0")), rows, id="tile-stats-table",
                    sortable=False)
    return Section(TILES_TITLE, (figures, _worst_table(stats, report.label, 0)), id="tiles")


def comparison_tiles_section(cmp: Comparison, top: int | None = None) -> Section:
    """The "Tiles" section of a comparison: base and new per-tile figures with their delta, how
    many tiles changed beyond the noise, then each report's fullest tiles (:data:`WORST_TILES`,
    or ``top`` when smaller)."""
    worst = _worst(top)
    base, new = analysis.tile_stats(cmp.base, worst=worst), analysis.tile_stats(cmp.new, worst=worst)
    rows = []
    for key, title, fmt in _STAT_LINES:
        b, n = _stat(base, key), _stat(new, key)
        delta = float("nan") if is_missing(b) or is_missing(n) else float(n) - float(b)
        rows.append(Row((Cell(title), _stat_cell(base, key, fmt), _stat_cell(new, key, fmt),
                         Cell(fmt(delta, signed=True), sort_key(delta)), pct_cell(_pct_of(delta, b))),
                        {"stat": key}))
    columns = (Column("Tiles", key="stat"), Column("Base", True, key="base"), Column("New", True, key="new"),
               Column("Delta", True, key="delta"), Column("Delta %", True, key="delta_pct"))
    tables = [Table(columns, tuple(rows), id="tile-stats-table", sortable=False)]
    tables += [_worst_table(stats, role, i) for i, (role, stats) in enumerate((("base", base), ("new", new)))
               if stats["tiles"]]
    notes = []
    if len(cmp.tiles):
        changed = cmp.tiles[cmp.tiles["status"].astype(str) != "unchanged"]
        notes.append(f"{len(changed):,} of {len(cmp.tiles):,} tiles changed beyond the noise threshold.")
    notes += [f"The {role} report does not record per-tile memory; its figures read n/a."
              for role, report in (("base", cmp.base), ("new", cmp.new)) if "tiles" not in report.meta.capabilities]
    return Section(TILES_TITLE, tuple(tables), tuple(notes), id="tiles")


__all__ = ["TILES_TITLE", "WORST_TILES", "comparison_tiles_section", "report_tiles_section"]
