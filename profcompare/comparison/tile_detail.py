"""A comparison's tiles explained side by side: each side's fullest tile and the tile whose bytes
changed most, with deltas (:class:`TileFocus`), and the tiles that crossed the tile budget. The
one-report figures come from :mod:`profcompare.analysis.tile_detail`; pure functions, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from profcompare.analysis.tile_detail import REGIONS, TileDetail, TileDetailError, fullest_tile, tile_detail
from profcompare.comparison.comparison import Comparison
from profcompare.model import CATEGORY_GROUPS, TILE_REGION_COLUMNS, Report


@dataclass(frozen=True)
class TileFocus:
    """One tile of a comparison shown side by side: ``reasons`` say why it is shown ("fullest in
    base", "fullest in new", "largest change", "asked for"), ``base`` / ``new`` its detail on
    each side (None where that report has no such tile), and ``figures`` the side-by-side table:
    columns figure (str: bytes, bytes_excluding_gaps, always_live_bytes,
    not_always_live_peak_bytes, the tiles region columns, then the categories of either side),
    base, new, delta (Int64 bytes, <NA> where a side does not record the figure)."""

    tile: int
    reasons: tuple[str, ...]
    base: TileDetail | None
    new: TileDetail | None
    figures: pd.DataFrame = field(compare=False)


def _figures(detail: TileDetail | None) -> dict[str, int | None]:
    if detail is None:
        return {}
    out: dict[str, int | None] = {
        "bytes": detail.bytes,
        "bytes_excluding_gaps": detail.bytes_excluding_gaps,
        "always_live_bytes": detail.always_live_bytes,
        "not_always_live_peak_bytes": detail.not_always_live_peak_bytes,
    }
    out.update({column: detail.regions[key] for key, column in REGIONS})
    out.update(detail.categories)
    return out


def side_by_side(base: TileDetail | None, new: TileDetail | None) -> pd.DataFrame:
    """The figures of one tile on both sides with their delta (see :class:`TileFocus`)."""
    b, n = _figures(base), _figures(new)
    fixed = ["bytes", "bytes_excluding_gaps", "always_live_bytes", "not_always_live_peak_bytes",
             *TILE_REGION_COLUMNS]
    cats = [c for c in CATEGORY_GROUPS if c in b or c in n]
    names = fixed + cats
    base_values = pd.array([b.get(k) for k in names], dtype="Int64")
    new_values = pd.array([n.get(k) for k in names], dtype="Int64")
    return pd.DataFrame({"figure": pd.Series(names, dtype=object), "base": base_values, "new": new_values,
                         "delta": new_values - base_values})


def _detail_or_none(report: Report, tile: int) -> TileDetail | None:
    try:
        return tile_detail(report, tile)
    except TileDetailError:
        return None


def most_changed_tile(cmp: Comparison) -> int | None:
    """The tile whose bytes changed most (largest |delta_bytes|, the lowest tile on a tie); None
    when no tile changed or the comparison has no tiles."""
    tiles = cmp.tiles
    if not len(tiles):
        return None
    change = np.abs(tiles["delta_bytes"].to_numpy(dtype="int64"))
    if not change.max():
        return None
    return int(tiles["tile"].to_numpy(dtype="int64")[int(np.argmax(change))])


def compare_tiles_detail(cmp: Comparison, tile: int | None = None) -> tuple[TileFocus, ...]:
    """The tiles of a comparison worth explaining, side by side: with ``tile``, that one tile
    (reason "asked for"); otherwise each side's fullest tile and the tile whose bytes changed
    most, one :class:`TileFocus` per distinct tile in that order, its reasons joined. Raises
    :class:`TileDetailError` when neither report has tiles, or ``tile`` is in neither."""
    has_base, has_new = bool(len(cmp.base.tiles)), bool(len(cmp.new.tiles))
    if not (has_base or has_new):
        raise TileDetailError("neither report records per-tile memory")
    if tile is not None:
        base, new = _detail_or_none(cmp.base, tile), _detail_or_none(cmp.new, tile)
        if base is None and new is None:
            tile_detail(cmp.base if has_base else cmp.new, tile)  # raises, naming the range
        return (TileFocus(tile, ("asked for",), base, new, side_by_side(base, new)),)
    picks: list[tuple[int, str]] = []
    if has_base:
        picks.append((fullest_tile(cmp.base), "fullest in base"))
    if has_new:
        picks.append((fullest_tile(cmp.new), "fullest in new"))
    changed = most_changed_tile(cmp)
    if changed is not None:
        picks.append((changed, "largest change"))
    reasons: dict[int, list[str]] = {}
    for number, reason in picks:
        reasons.setdefault(number, []).append(reason)
    foci = []
    for number, why in reasons.items():
        base, new = _detail_or_none(cmp.base, number), _detail_or_none(cmp.new, number)
        foci.append(TileFocus(number, tuple(why), base, new, side_by_side(base, new)))
    return tuple(foci)


def crossed_budget(cmp: Comparison) -> pd.DataFrame:
    """The tiles over budget on one side only: columns tile, ipu, base_bytes, new_bytes,
    delta_bytes (int64 bytes; 0 on a side without the tile) and crossing (str: "over in new" for
    a tile within budget in base and over it in new, "under in new" for the reverse); the
    tiles going over first, then by tile. Each side's budget is its own ``bytes_per_tile``."""
    tiles = cmp.tiles
    base_budget = int(cmp.base.meta.target.bytes_per_tile)
    new_budget = int(cmp.new.meta.target.bytes_per_tile)
    base_bytes = tiles["base_bytes"].to_numpy(dtype="int64")
    new_bytes = tiles["new_bytes"].to_numpy(dtype="int64")
    over_base, over_new = base_bytes > base_budget, new_bytes > new_budget
    crossing = np.where(over_new & ~over_base, "over in new", np.where(over_base & ~over_new, "under in new", ""))
    keep = crossing != ""
    frame = pd.DataFrame({
        "tile": tiles["tile"].to_numpy(dtype="int64")[keep],
        "ipu": tiles["ipu"].to_numpy(dtype="int64")[keep],
        "base_bytes": base_bytes[keep],
        "new_bytes": new_bytes[keep],
        "delta_bytes": (new_bytes - base_bytes)[keep],
        "crossing": pd.Series(crossing[keep], dtype=object),
    })
    order = np.lexsort((frame["tile"].to_numpy(), (frame["crossing"] != "over in new").to_numpy()))
    return frame.iloc[order].reset_index(drop=True)


def tile_detail_frame(cmp: Comparison, tile: int | None = None) -> pd.DataFrame:
    """The tiles of :func:`compare_tiles_detail` as one DataFrame (``diff.tile_detail()`` in a
    notebook), one row per (tile, figure). Columns: tile (int64), reasons (str, the tile's
    reasons joined by ", "), figure (str), base, new, delta (Int64 bytes, <NA> where a side does
    not record the figure). Raises TileDetailError as :func:`compare_tiles_detail` does."""
    frames = [focus.figures.assign(tile=focus.tile, reasons=", ".join(focus.reasons))
              for focus in compare_tiles_detail(cmp, tile)]
    frame = pd.concat(frames, ignore_index=True)
    frame["tile"] = frame["tile"].astype("int64")
    frame["reasons"] = frame["reasons"].astype(object)
    return frame[["tile", "reasons", "figure", "base", "new", "delta"]]


def register_comparison_methods() -> None:
    """Make :func:`tile_detail_frame` the body of ``Comparison.tile_detail()`` (the comparison
    looks it up in :mod:`profcompare.base.presenters`, this module importing the comparison)."""
    from profcompare.base import presenters

    presenters.register("Comparison.tile_detail", tile_detail_frame)


__all__ = ["TileFocus", "compare_tiles_detail", "crossed_budget", "most_changed_tile", "register_comparison_methods",
           "side_by_side", "tile_detail_frame"]
