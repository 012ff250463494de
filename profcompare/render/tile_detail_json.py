"""JSON of the ``tiles`` command (``--format json``), for scripts and CI.

Shapes (``schema_version`` as :data:`profcompare.render.json_out.SCHEMA_VERSION`; bytes are
integers, null where a report does not record the figure):

    one report:  {"schema_version", "meta", "why_fullest": str, "tile": {detail},
                  "histogram": [{from_bytes, to_bytes, base_tiles}]}
    comparison:  {"schema_version", "base": {meta}, "new": {meta},
                  "why_fullest": {"base": str | null, "new": str | null},
                  "tiles": [{"tile", "reasons": [str], "base": {detail} | null, "new": {detail} | null,
                             "figures": [{figure, base, new, delta}]}],
                  "crossed_budget": [{tile, ipu, base_bytes, new_bytes, delta_bytes, crossing}],
                  "histogram": [{from_bytes, to_bytes, base_tiles, new_tiles, delta_tiles}]}

A ``{detail}`` is {tile, ipu, bytes, bytes_excluding_gaps, always_live_bytes,
not_always_live_peak_bytes, bytes_per_tile, pct_of_budget, median_bytes, regions: {non_interleaved,
interleaved, overflow, gap}, categories: {name: bytes}, peak_step, peak_program, tile_peak,
live_variables: [{name, bytes, kind, tiles, bytes_on_tile}], placement_recorded}. Version 8 added
``tile_peak`` (whether ``peak_step`` is the tile's own peak, from which tiles hold each variable,
or the replica's) and ``bytes_on_tile`` (the variable's bytes on this tile; null when the report
does not record which tiles hold each variable: ``placement_recorded`` false).
"""

from __future__ import annotations

from typing import Any

from profcompare.analysis import tile_detail as analysis
from profcompare.comparison import tile_detail as compared
from profcompare.comparison import Comparison
from profcompare.model import Report
from profcompare.render.json_out import SCHEMA_VERSION
from profcompare.render.json_values import frame_records, jsonable
from profcompare.render.json_text import dumps_indented


def detail_json(detail: analysis.TileDetail | None) -> dict[str, Any] | None:
    """One tile's detail as plain JSON values (None stays None)."""
    if detail is None:
        return None
    return {
        "tile": detail.tile,
        "ipu": detail.ipu,
        "bytes": detail.bytes,
        "bytes_excluding_gaps": detail.bytes_excluding_gaps,
        "always_live_bytes": detail.always_live_bytes,
        "not_always_live_peak_bytes": detail.not_always_live_peak_bytes,
        "bytes_per_tile": detail.bytes_per_tile,
        "pct_of_budget": detail.pct_of_budget,
        "median_bytes": detail.median_bytes,
        "regions": dict(detail.regions),
        "categories": dict(detail.categories),
        "peak_step": detail.peak_step,
        "peak_program": detail.peak_program,
        "live_variables": frame_records(detail.live_variables),
        "placement_recorded": detail.placement_recorded,
        "tile_peak": detail.tile_peak,
    }


def tile_detail_json(obj: Report | Comparison, tile: int | None = None) -> dict[str, Any]:
    """The ``tiles --format json`` document of a report or a comparison (module docstring)."""
    if isinstance(obj, Comparison):
        foci = compared.compare_tiles_detail(obj, tile)
        return jsonable({
            "schema_version": SCHEMA_VERSION,
            "base": obj.base.meta.to_dict(),
            "new": obj.new.meta.to_dict(),
            "why_fullest": {side: analysis.why_fullest(r) if len(r.tiles) else None
                            for side, r in (("base", obj.base), ("new", obj.new))},
            "tiles": [{"tile": f.tile, "reasons": list(f.reasons), "base": detail_json(f.base),
                       "new": detail_json(f.new), "figures": frame_records(f.figures)} for f in foci],
            "crossed_budget": frame_records(compared.crossed_budget(obj)),
            "histogram": frame_records(analysis.tile_histogram(obj.base, obj.new)),
        })
    detail = analysis.tile_detail(obj, tile)
    return jsonable({
        "schema_version": SCHEMA_VERSION,
        "meta": obj.meta.to_dict(),
        "why_fullest": analysis.why_fullest(obj),
        "tile": detail_json(detail),
        "histogram": frame_records(analysis.tile_histogram(obj)),
    })


def render_tile_detail_json(obj: Report | Comparison, tile: int | None = None) -> str:
    """:func:`tile_detail_json` as indented JSON text."""
    return dumps_indented(tile_detail_json(obj, tile), ensure_ascii=False) + "\n"


__all__ = ["detail_json", "render_tile_detail_json", "tile_detail_json"]
