"""Memory per IPU of a replica, as Graph Analyser's memory report shows it per IPU.

Pure functions over a Report (or two): no I/O, no formatting. A report of one IPU per replica has
one row; the renderers show these tables only when a report has more than one IPU.
"""

from __future__ import annotations

import pandas as pd

from profcompare.model import Report

#: the per-IPU byte columns, in display order
MEMORY_COLUMNS = ("always_live_bytes", "not_always_live_peak_bytes", "total_bytes", "bytes_including_gaps")


def ipu_count(report: Report) -> int:
    """IPUs of one replica in ``report`` (the target's ipus_per_replica, or the tiles' IPUs if more)."""
    from_tiles = int(report.tiles["ipu"].nunique()) if len(report.tiles) else 0
    return max(int(report.meta.target.ipus_per_replica or 1), from_tiles)


def memory_per_ipu(report: Report) -> pd.DataFrame:
    """Memory of each IPU of one replica, summed over its tiles.

    Columns: ipu (int64), tiles (int64), always_live_bytes, not_always_live_peak_bytes (each tile's
    not-always-live peak, summed: an upper bound of the IPU's peak over program steps),
    total_bytes (= always-live + not-always-live peak = bytes excluding gaps) and
    bytes_including_gaps, all int64 bytes; one row per IPU, sorted by ipu.
    """
    tiles = report.tiles
    cols = ["always_live_bytes", "not_always_live_peak_bytes", "bytes_excluding_gaps", "bytes_including_gaps"]
    if not len(tiles):
        return pd.DataFrame({"ipu": pd.Series(dtype="int64"), "tiles": pd.Series(dtype="int64"),
                             **{c: pd.Series(dtype="int64") for c in MEMORY_COLUMNS}})
    g = tiles.groupby("ipu", sort=True)
    out = g[cols].sum().astype("int64").reset_index()
    out.insert(1, "tiles", g.size().to_numpy(dtype="int64"))
    out = out.rename(columns={"bytes_excluding_gaps": "total_bytes"})
    out["ipu"] = out["ipu"].astype("int64")
    return out[["ipu", "tiles", *MEMORY_COLUMNS]].reset_index(drop=True)


def compare_memory_per_ipu(base: Report, new: Report) -> pd.DataFrame:
    """Per-IPU memory of two reports side by side: outer join on ipu (a missing IPU counts 0).

    Columns: ipu (int64), then for each of MEMORY_COLUMNS ``base_<col>``, ``new_<col>`` and
    ``delta_<col>`` (= new - base), int64 bytes; sorted by ipu.
    """
    b, n = memory_per_ipu(base), memory_per_ipu(new)
    merged = b.merge(n, on="ipu", how="outer", suffixes=("_base", "_new")).fillna(0)
    out = pd.DataFrame({"ipu": merged["ipu"].astype("int64")})
    for c in MEMORY_COLUMNS:
        out[f"base_{c}"] = merged[f"{c}_base"].astype("int64")
        out[f"new_{c}"] = merged[f"{c}_new"].astype("int64")
        out[f"delta_{c}"] = out[f"new_{c}"] - out[f"base_{c}"]
    return out.sort_values("ipu").reset_index(drop=True)


__all__ = ["MEMORY_COLUMNS", "compare_memory_per_ipu", "ipu_count", "memory_per_ipu"]
