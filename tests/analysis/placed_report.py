"""The hand-worked report of per-tile placement shared by the analysis and section tests: 8
tiles; A (not always live, steps 0-1) on tiles 0-3 with 100 B each, B (steps 1-2) on tiles 2-5
with 100 B each, the weight W (always live) on tiles 4-7 with 50 B each."""

from __future__ import annotations

from profcompare.model import Report, ReportMeta, make_frame


def placed_report(meta: ReportMeta, placed: bool = True) -> Report:
    """That report under ``meta`` (its target has 8 tiles); without ``variable_tiles`` when not
    ``placed``."""
    tiles = make_frame("tiles", {
        "tile": list(range(8)), "ipu": [0] * 8,
        "bytes_including_gaps": [100, 100, 200, 200, 150, 150, 50, 50],
        "bytes_excluding_gaps": [100, 100, 200, 200, 150, 150, 50, 50],
        "always_live_bytes": [0, 0, 0, 0, 50, 50, 50, 50],
        "not_always_live_peak_bytes": [100, 100, 200, 200, 100, 100, 0, 0],
    })
    rows = [("A", 400, False, "activation", 4, 0, 1), ("B", 400, False, "gradient", 4, 1, 2),
            ("W", 200, True, "weight", 4, None, None)]
    names = ("name", "bytes", "always_live", "kind", "tiles", "first_step", "last_step")
    variables = make_frame("variables", {**{c: [r[i] for r in rows] for i, c in enumerate(names)},
                                         "dtype": ["float32"] * 3, "shape": ["[1]"] * 3})
    liveness = make_frame("liveness", {"step": [0, 1, 2], "program": ["load", "layer/matmul", "update"],
                                       "program_type": ["OnTileExecute"] * 3, "not_always_live_bytes": [400, 800, 400]})
    tables = {"tiles": tiles, "variables": variables, "liveness": liveness}
    if placed:
        tables["variable_tiles"] = make_frame("variable_tiles", {
            "variable": ["A", "B", "W"], "ipu": [0, 0, 0], "first_tile": [0, 2, 4], "last_tile": [3, 5, 7],
            "bytes_per_tile": [100, 100, 50]})
    return Report.build(meta, **tables)
