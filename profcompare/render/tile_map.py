"""The page's tile map: every tile of a replica as one cell, coloured by its bytes (a report) or by
their change (a comparison), drawn by BokehJS as the other charts are
(:mod:`profcompare.render.interactive`).

Where a cell sits: the IPU's physical floor plan (Graph Analyser draws tiles in columns and
islands) is not public, so the map lays tiles out in **software order**: tile ``t`` of an IPU in
row ``t // TILE_MAP_COLUMNS``, column ``t % TILE_MAP_COLUMNS``, the IPUs of the replica one under
the other (ASSUMPTION, said in the chart's note and docs/ipu-model.md): two cells side by side
are consecutive tile numbers, not necessarily neighbours on the chip.

Colour: a report's tiles from white (0 B) to dark blue (the tile budget), tiles over the budget
red; a comparison's from green (the largest shrink) through white (no change) to red (the largest
growth), the scale symmetric about 0. The I/O tiles (the first ``io_tiles_per_ipu`` of each IPU,
from the report's meta) are outlined. Hovering a cell shows the tile's bytes, always-live and
not-always-live peak, memory by region (where recorded) and largest categories.

:func:`tile_map_data` prepares the cells (pure, tested); :func:`tile_map_chart` draws them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from profcompare.analysis.replicas import io_tiles_per_ipu
from profcompare.model import CATEGORY_GROUPS, TILE_REGION_COLUMNS, Report
from profcompare.render import bokeh_doc
from profcompare.render.format import format_bytes
from profcompare.render.interactive import InteractiveChart, _empty_chart, _json_item, _unit

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.comparison import Comparison

#: Cells per row of an IPU's map (ASSUMPTION: a software-order grid, not the physical floor plan;
#: 64 divides the Mk2's 1,472 tiles into 23 rows).
TILE_MAP_COLUMNS = 64

#: What the note says of the layout, in every map.
LAYOUT_NOTE = (f"Tiles in software order, {TILE_MAP_COLUMNS} per row, tile 0 top left, each IPU of the replica "
               "under the one before: the IPU's physical floor plan is not public, so cells side by side are "
               "consecutive tile numbers, not necessarily neighbours on the chip.")

#: Colours of the scales (light to dark), and of tiles over the budget.
ZERO_COLOUR = (255, 255, 255)
FULL_COLOUR = (8, 48, 107)  # dark blue: a tile at the budget
GREW_COLOUR = (215, 48, 39)  # red: the largest growth
SHRANK_COLOUR = (26, 152, 80)  # green: the largest shrink
OVER_BUDGET_COLOUR = "#d62728"
IO_OUTLINE_COLOUR = "#000000"

#: How many categories the hover names per tile (largest first).
HOVER_CATEGORIES = 3

#: Pixels per row of cells, and the most the map may be tall before rows get thinner.
_ROW_PX = 8
_MAX_PLOT_PX = 420


@dataclass(frozen=True)
class TileMapData:
    """The cells of a tile map: ``cells`` has one row per tile of the replica, columns tile, ipu,
    column, row (int64: the cell's place, row 0 at the top, counting every IPU's rows and one
    blank row between IPUs), value (int64 bytes: the tile's bytes including gaps, or for a
    comparison new minus base), colour ("#rrggbb"), io (bool: an I/O tile). ``scale`` is the
    value drawn darkest (the budget; for a comparison the largest absolute change, the scale
    running from -scale to +scale); ``diverging`` says which kind of map it is."""

    cells: pd.DataFrame
    scale: int
    diverging: bool
    rows_per_ipu: int
    ipus: int

    @property
    def total_rows(self) -> int:
        """Rows of cells the map spans (the IPUs' rows and the blank rows between them)."""
        return self.ipus * (self.rows_per_ipu + 1) - 1 if self.ipus else 0


def _blend(low: tuple[int, int, int], high: tuple[int, int, int], share: np.ndarray) -> np.ndarray:
    """``#rrggbb`` colours ``share`` (0..1) of the way from ``low`` to ``high``."""
    share = np.clip(np.nan_to_num(share.astype("float64")), 0.0, 1.0)
    channels = [np.rint(lo + (hi - lo) * share).astype(int) for lo, hi in zip(low, high, strict=True)]
    return np.array([f"#{r:02x}{g:02x}{b:02x}" for r, g, b in zip(*channels, strict=True)], dtype=object)


def sequential_colours(values: np.ndarray, budget: int) -> np.ndarray:
    """A report's colours: white at 0 to dark blue at ``budget``; red beyond it."""
    values = np.asarray(values, dtype="float64")
    colours = _blend(ZERO_COLOUR, FULL_COLOUR, values / budget if budget else np.zeros_like(values))
    colours[values > budget] = OVER_BUDGET_COLOUR
    return colours


def diverging_colours(values: np.ndarray, scale: int) -> np.ndarray:
    """A comparison's colours: white at 0, red towards +``scale`` (grew), green towards
    -``scale`` (shrank): the same change either way is the same depth of colour."""
    values = np.asarray(values, dtype="float64")
    share = np.abs(values) / scale if scale else np.zeros_like(values)
    return np.where(values >= 0, _blend(ZERO_COLOUR, GREW_COLOUR, share), _blend(ZERO_COLOUR, SHRANK_COLOUR, share))


def _places(tiles: np.ndarray, tiles_per_ipu: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(ipu, column, row, rows per IPU) of each tile index of the replica."""
    per_ipu = max(1, int(tiles_per_ipu))
    rows_per_ipu = -(-per_ipu // TILE_MAP_COLUMNS)
    ipu = tiles // per_ipu
    local = tiles % per_ipu
    row = ipu * (rows_per_ipu + 1) + local // TILE_MAP_COLUMNS
    return ipu, local % TILE_MAP_COLUMNS, row, rows_per_ipu


def _io_mask(report: Report, tiles: np.ndarray) -> np.ndarray:
    io = io_tiles_per_ipu(report)
    per_ipu = max(1, int(report.meta.target.tiles_per_ipu))
    return (tiles % per_ipu) < io


def tile_map_data(obj: Report | Comparison) -> TileMapData:
    """The cells of the tile map of a report (bytes including gaps per tile, sequential colours up
    to the budget) or of a comparison (new minus base per tile, diverging colours symmetric about
    0; the new report's tile numbering and I/O tiles). See :class:`TileMapData`."""
    from profcompare.comparison import Comparison

    if isinstance(obj, Comparison):
        frame = obj.tiles
        tiles = frame["tile"].to_numpy(dtype="int64")
        values = frame["delta_bytes"].to_numpy(dtype="int64")
        scale = int(np.abs(values).max()) if len(values) else 0
        colours = diverging_colours(values, scale)
        target = obj.new if len(obj.new.tiles) else obj.base
        io = _io_mask(obj.new, tiles) | _io_mask(obj.base, tiles)
    else:
        frame = obj.tiles.sort_values("tile", kind="stable")
        tiles = frame["tile"].to_numpy(dtype="int64")
        values = frame["bytes_including_gaps"].to_numpy(dtype="int64")
        scale = int(obj.meta.target.bytes_per_tile)
        colours = sequential_colours(values, scale)
        target = obj
        io = _io_mask(obj, tiles)
    ipu, column, row, rows_per_ipu = _places(tiles, target.meta.target.tiles_per_ipu)
    cells = pd.DataFrame({"tile": tiles, "ipu": ipu, "column": column, "row": row, "value": values,
                          "colour": pd.Series(colours, dtype=object), "io": io.astype(bool)})
    ipus = int(ipu.max()) + 1 if len(ipu) else 0
    return TileMapData(cells, scale, isinstance(obj, Comparison), rows_per_ipu, ipus)


def _breakdown(report: Report, tiles: np.ndarray, side: str) -> tuple[dict[str, object], list[tuple[str, str]]]:
    """Hover columns and tooltips of ``report``'s figures of ``tiles`` (NaN where it lacks a tile):
    always-live and not-always-live peak, memory by region where recorded, largest categories;
    ``side`` ("new", or "" for a report's own map) prefixes their names."""
    frame = report.tiles.set_index("tile").reindex(tiles)
    columns: dict[str, object] = {}
    tips: list[tuple[str, str]] = []
    prefix = f"{side}_" if side else ""
    who = f"{side} " if side else ""
    for key, column, label in (("al", "always_live_bytes", "always-live"),
                               ("nal", "not_always_live_peak_bytes", "not-always-live peak")):
        columns[f"{prefix}{key}"] = frame[column].to_numpy(dtype="float64", na_value=np.nan)
        tips.append((f"{who}{label}", f"@{prefix}{key}{{0,0}} B"))
    regions = [c for c in TILE_REGION_COLUMNS if c in frame.columns and frame[c].notna().any()]
    if regions:
        for column in regions:
            columns[f"{prefix}{column}"] = frame[column].to_numpy(dtype="float64", na_value=np.nan)
        text = ", ".join(f"{c.removesuffix('_bytes').replace('_', '-')} @{prefix}{c}{{0,0}} B" for c in regions)
        tips.append((f"{who}regions", text))
    categories = [c for c in frame.columns if c in CATEGORY_GROUPS]
    if categories:
        values = frame[categories].to_numpy(dtype="float64", na_value=0.0)
        order = np.argsort(-values, axis=1, kind="stable")[:, :HOVER_CATEGORIES]
        names = np.asarray(categories, dtype=object)
        texts = []
        for r in range(len(values)):
            parts = [f"{names[k]} {format_bytes(values[r, k])}" for k in order[r] if values[r, k] > 0]
            texts.append(", ".join(parts) or "–")
        # not "top": a report's map has no prefix, and "top" is the cells' upper edge
        columns[f"{prefix}categories"] = texts
        tips.append((f"{who}largest categories", f"@{prefix}categories"))
    return columns, tips


def tile_map_chart(obj: Report | Comparison, *, chart_id: str = "chart-tile-map") -> InteractiveChart:
    """The tile map of a report or a comparison (module docstring): one cell per tile, I/O tiles
    outlined, hover for the tile's breakdown."""
    from profcompare.comparison import Comparison

    data = tile_map_data(obj)
    if not len(data.cells):
        return _empty_chart(chart_id, "no per-tile data")
    cells = data.cells
    tiles = cells["tile"].to_numpy(dtype="int64")
    column = cells["column"].to_numpy(dtype="float64")
    row = cells["row"].to_numpy(dtype="float64")
    fields: dict[str, object] = {
        "left": column, "right": column + 1.0, "top": -row, "bottom": -row - 1.0,
        "colour": list(cells["colour"]), "tile": tiles, "ipu": cells["ipu"].to_numpy(dtype="int64"),
    }
    tips: list[tuple[str, str]] = [("tile", "@tile (IPU @ipu)")]
    if isinstance(obj, Comparison):
        frame = obj.tiles
        fields["base"] = frame["base_bytes"].to_numpy(dtype="float64")
        fields["new"] = frame["new_bytes"].to_numpy(dtype="float64")
        fields["delta"] = frame["delta_bytes"].to_numpy(dtype="float64")
        tips += [("bytes (incl. gaps)", "base @base{0,0} B, new @new{0,0} B, delta @delta{+0,0} B")]
        extra, more = _breakdown(obj.new, tiles, "new")
    else:
        fields["bytes"] = cells["value"].to_numpy(dtype="float64")
        tips += [("bytes (incl. gaps)", "@bytes{0,0} B")]
        extra, more = _breakdown(obj, tiles, "")
    fields.update(extra)
    tips += more
    rows = data.total_rows
    px = max(4, min(_ROW_PX, _MAX_PLOT_PX // max(1, rows)))
    fig = bokeh_doc.Figure(chart_id, height=int(40 + px * rows),
                           x_range=bokeh_doc.fixed_range(0.0, float(TILE_MAP_COLUMNS), bounds=(0.0, float(TILE_MAP_COLUMNS))),
                           y_range=bokeh_doc.fixed_range(-float(rows), 0.0, bounds=(-float(rows), 0.0)))
    fig.hide_axes()
    source = bokeh_doc.data_source(fields, name=f"{chart_id}:tiles")
    cells_renderer = fig.glyph("Quad", source, left="left", right="right", bottom="bottom", top="top",
                               line_color="#f0f0f0", line_width=0.3, fill_color=bokeh_doc.field("colour"))
    io = cells["io"].to_numpy(dtype=bool)
    if io.any():
        outline = bokeh_doc.data_source({"left": column[io], "right": column[io] + 1.0, "top": -row[io],
                                         "bottom": -row[io] - 1.0}, name=f"{chart_id}:io")
        fig.glyph("Quad", outline, left="left", right="right", bottom="bottom", top="top",
                  line_color=IO_OUTLINE_COLOUR, line_width=1.0, fill_alpha=0.0)
    fig.hover([cells_renderer], tips, point_policy="follow_mouse")
    return InteractiveChart(chart_id, _json_item(fig), _caption(obj, data), _note(obj, data))


def _caption(obj: Report | Comparison, data: TileMapData) -> str:
    if data.diverging:
        return ("Tile map: change of each tile's bytes (including gaps), new minus base; red grew, green shrank. "
                "Hover a tile for its figures.")
    return "Tile map: each tile's bytes (including gaps) against the budget. Hover a tile for its figures."


def _note(obj: Report | Comparison, data: TileMapData) -> str:
    io = int(data.cells["io"].sum())
    outlined = f" The {io:,} I/O tiles are outlined." if io else ""
    if data.diverging:
        scale = (f"Colour from green ({format_bytes(-data.scale, signed=True)}) through white (no change) to red "
                 f"({format_bytes(data.scale, signed=True)}), the same depth for the same change either way."
                 if data.scale else "No tile changed: every cell is white.")
    else:
        over = int((data.cells["value"] > data.scale).sum())
        scale = (f"Colour from white (0 B) to dark blue ({format_bytes(data.scale)}, the budget); "
                 f"{over:,} tile{'s' if over != 1 else ''} over the budget in red.")
    ipus = (f" IPU 0 on top, then IPU 1{' to ' + str(data.ipus - 1) if data.ipus > 2 else ''}, each after a blank "
            "row." if data.ipus > 1 else "")
    return f"{len(data.cells):,} tiles. {scale}{outlined}{ipus} {LAYOUT_NOTE}"


def histogram_chart(hist: pd.DataFrame, roles: tuple[str, ...], *, chart_id: str = "chart-tile-histogram") -> InteractiveChart:
    """How many tiles hold how many bytes: one bar per bin and report (``hist``: the frame of
    :func:`profcompare.analysis.tile_detail.tile_histogram`; ``roles`` ("report",) or ("base",
    "new")), bins along x in bytes including gaps. The note gives every bin's counts in words."""
    if not len(hist):
        return _empty_chart(chart_id, "no per-tile data")
    low = hist["from_bytes"].to_numpy(dtype="float64")
    high = hist["to_bytes"].to_numpy(dtype="float64")
    scale, unit = _unit(float(high.max()))
    colours = ("#4c72b0", "#dd8452")
    fig = bokeh_doc.Figure(chart_id, height=160, x_label=f"tile bytes (incl. gaps), {unit}", y_label="tiles",
                           x_range=bokeh_doc.fixed_range(0.0, float(high.max()) / scale),
                           y_range=bokeh_doc.data_range(f"{chart_id}:y", start=0, range_padding=0.08))
    fig.xgrid.set(grid_line_color=None)
    renderers = []
    width = (high - low) / len(roles)
    ranges = [f"{format_bytes(a)} to {format_bytes(b)}" for a, b in zip(low.tolist(), high.tolist(), strict=True)]
    for index, role in enumerate(roles):
        column = "base_tiles" if role != "new" else "new_tiles"
        counts = hist[column].to_numpy(dtype="float64")
        source = bokeh_doc.data_source({
            "left": (low + index * width) / scale, "right": (low + (index + 1) * width) / scale,
            "bottom": np.zeros(len(hist)), "top": counts, "range": ranges, "count": counts,
            "side": [role] * len(hist)}, name=f"{chart_id}:{role}")
        renderers.append(fig.glyph("Quad", source, left="left",
                                   right="right", bottom="bottom", top="top", line_color="white", line_width=0.5,
                                   fill_color=colours[index % len(colours)]))
    fig.hover(renderers, [("tiles", "@count{0,0} (@side)"), ("bytes", "@range")], point_policy="follow_mouse")
    words = []
    for role in roles:
        column = "base_tiles" if role != "new" else "new_tiles"
        filled = [f"{r}: {int(c):,}" for r, c in zip(ranges, hist[column].tolist(), strict=True) if c]
        words.append(f"{role}: " + "; ".join(filled) if len(roles) > 1 else "; ".join(filled))
    note = "Tiles per bin (lower bound included, upper excluded but for the last bin): " + ". ".join(words) + "."
    caption = "How many tiles hold how many bytes (including gaps)." + (" Base (blue) beside new (orange) in each bin." if len(roles) > 1 else "")
    return InteractiveChart(chart_id, _json_item(fig), caption, note)


__all__ = ["LAYOUT_NOTE", "TILE_MAP_COLUMNS", "TileMapData", "diverging_colours", "histogram_chart", "sequential_colours",
           "tile_map_chart", "tile_map_data"]
