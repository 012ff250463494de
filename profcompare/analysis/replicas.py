"""Which replica and which replica groups a report's figures are for.

Pure functions over a Report (no I/O, no formatting). A report describes one replica: Poplar
profiles one, and on the simulator every replica runs the same program with the same layout, so
the figures of replica 0 are those of every replica. What differs between replicas is which
group of a replica grouping each belongs to: ``meta.replication`` (simulated reports) lists the
groupings the program's collectives run over (popxl's ``ReplicaGrouping``: ``num_groups`` groups
of ``group_size`` replicas, ``stride`` apart: stride 1 = consecutive replicas, the tensor-parallel
groups of a TP x DP program; stride TP = the data-parallel groups) with the collectives of one
run and their device cycles, and the I/O tiles per IPU (the first tiles of each IPU).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from profcompare.model import Report


#: the simulator's rows of code loaded by remote_code_load: ``<graph>/loaded code`` (``#k`` when
#: two graphs share a name; ``@i`` per load, as every row of a call instance)
_LOADED_CODE = re.compile(r"^(?P<graph>.*)/loaded code(?:#\d+)?(?:@\d+)?$")


@dataclass(frozen=True)
class Grouping:
    """A replica grouping a program's collectives run over, and what they cost in one run."""

    stride: int
    group_size: int
    num_groups: int
    collectives: int  # collectives of one run of the main program over this grouping
    cycles: int  # their device cycles in one run (every phase of their steps)

    def members(self, replica: int = 0) -> tuple[int, ...]:
        """The replicas of ``replica``'s group (popxl: group members are ``stride`` apart)."""
        stride, size = max(self.stride, 1), max(self.group_size, 1)
        first = (replica // (stride * size)) * stride * size + replica % stride
        return tuple(first + i * stride for i in range(size))

    def group_of(self, replica: int = 0) -> int:
        """The index of ``replica``'s group (popxl's numbering: by the group's first replica)."""
        stride, size = max(self.stride, 1), max(self.group_size, 1)
        return (replica // (stride * size)) * stride + replica % stride


def groupings(report: Report) -> tuple[Grouping, ...]:
    """The replica groupings of ``report`` (empty when the report does not record them), smallest
    groups first."""
    entries = report.meta.replication.get("replica_groupings", ()) or ()
    return tuple(Grouping(int(e["stride"]), int(e["group_size"]), int(e["num_groups"]), int(e["collectives"]),
                          int(e["cycles"])) for e in entries)


def compare_groupings(base: Report, new: Report) -> pd.DataFrame:
    """The replica groupings of two reports side by side: every grouping of either (a grouping
    one lacks counts 0 there), by group size, stride, then groups.

    Columns: stride, group_size, num_groups, then ``base_``/``new_``/``delta_`` of collectives
    (collectives of one run of the main program) and of cycles (their cycles, every phase of
    their steps), all int64."""
    by_key: dict[tuple[int, int, int], list[Grouping | None]] = {}
    for side, report in enumerate((base, new)):
        for g in groupings(report):
            by_key.setdefault((g.group_size, g.stride, g.num_groups), [None, None])[side] = g
    columns = ["stride", "group_size", "num_groups", "base_collectives", "new_collectives", "delta_collectives",
               "base_cycles", "new_cycles", "delta_cycles"]
    rows = []
    for (size, stride, groups), (b, n) in sorted(by_key.items()):
        bc, nc = (b.collectives if b else 0), (n.collectives if n else 0)
        by, ny = (b.cycles if b else 0), (n.cycles if n else 0)
        rows.append((stride, size, groups, bc, nc, nc - bc, by, ny, ny - by))
    return pd.DataFrame(rows, columns=columns, dtype="int64") if rows else \
        pd.DataFrame({c: pd.Series(dtype="int64") for c in columns})


def io_tiles_per_ipu(report: Report) -> int:
    """The I/O tiles of each IPU (the first tiles of the IPU); 0 when none or not recorded."""
    return int(report.meta.replication.get("io_tiles_per_ipu", 0) or 0)


def memory_per_tile_set(report: Report) -> pd.DataFrame:
    """Memory of each IPU of one replica by tile set: the I/O tiles (the first
    :func:`io_tiles_per_ipu` tiles of the IPU) and the compute tiles, summed over their tiles.

    Columns: ipu (int64), tile_set ("I/O" | "compute"), tiles, always_live_bytes,
    not_always_live_peak_bytes (each tile's peak, summed), total_bytes (excluding gaps),
    bytes_including_gaps, max_tile_bytes (the fullest tile, including gaps), all int64; rows by
    IPU, I/O tiles first. Without I/O tiles one compute row per IPU."""
    tiles = report.tiles
    columns = ["ipu", "tile_set", "tiles", "always_live_bytes", "not_always_live_peak_bytes", "total_bytes",
               "bytes_including_gaps", "max_tile_bytes"]
    if not len(tiles):
        return pd.DataFrame({c: pd.Series(dtype=object if c == "tile_set" else "int64") for c in columns})
    io = io_tiles_per_ipu(report)
    tiles_per_ipu = int(report.meta.target.tiles_per_ipu)
    position = tiles["tile"].to_numpy() - tiles["ipu"].to_numpy() * tiles_per_ipu
    frame = pd.DataFrame({
        "ipu": tiles["ipu"].to_numpy(dtype="int64"),
        "tile_set": pd.Series(["I/O" if p < io else "compute" for p in position], dtype=object),
        "always_live_bytes": tiles["always_live_bytes"].to_numpy(dtype="int64"),
        "not_always_live_peak_bytes": tiles["not_always_live_peak_bytes"].to_numpy(dtype="int64"),
        "total_bytes": tiles["bytes_excluding_gaps"].to_numpy(dtype="int64"),
        "bytes_including_gaps": tiles["bytes_including_gaps"].to_numpy(dtype="int64"),
    })
    frame["order"] = (frame["tile_set"] == "compute").astype("int64")
    grouped = frame.groupby(["ipu", "order", "tile_set"], sort=True)
    out = grouped[["always_live_bytes", "not_always_live_peak_bytes", "total_bytes", "bytes_including_gaps"]].sum()
    out["tiles"] = grouped.size()
    out["max_tile_bytes"] = grouped["bytes_including_gaps"].max()
    out = out.reset_index().drop(columns="order")
    for c in columns:
        if c != "tile_set":
            out[c] = out[c].astype("int64")
    out["tile_set"] = out["tile_set"].astype(object)
    return out[columns].reset_index(drop=True)


@dataclass(frozen=True)
class StreamingTotals:
    """Streaming Memory of one replica and of all replicas (exact: from the buffers)."""

    replicas: int
    per_replica: int  # bytes of every remote buffer, per replica (report.remote_buffers)
    sharded_per_replica: int  # of which replica-sharded buffers: each replica holds its own shard
    all_replicas: int  # per_replica x replicas: every replica has its own remote buffers
    sharded_all_replicas: int  # the shards of all replicas (each sharded variable once per group set)


def streaming_totals(report: Report) -> StreamingTotals:
    """Streaming Memory per replica and over all replicas. Every replica holds its own copy of
    each remote buffer -- a replica-sharded buffer its own shard, so over all replicas the shards
    add up to the sharded variables (padded), once per set of groups -- hence the total is exactly
    the per-replica bytes times the replicas."""
    buffers = report.remote_buffers
    replicas = max(int(report.meta.target.num_replicas or 1), 1)
    per = int(buffers["bytes"].sum()) if len(buffers) else 0
    sharded = int(buffers.loc[buffers["sharded"].to_numpy(dtype=bool), "bytes"].sum()) if len(buffers) else 0
    return StreamingTotals(replicas, per, sharded, per * replicas, sharded * replicas)


def loaded_code(report: Report) -> pd.DataFrame:
    """Code loaded at run time by ``remote_code_load`` (the simulator's ``<graph>/loaded code``
    rows of the variables table, kind other): one row per graph (the phase whose code it is).

    Columns: graph (str), bytes (int64, tile memory of the loaded code per replica), loads
    (int64, the rows: one per load), first_step, last_step (Int64: steps the code is live over);
    largest first. Empty when the program loads no code."""
    v = report.variables
    if not report.meta.simulated or not len(v):
        v = v.iloc[:0]  # only the simulator models code loads
    else:
        # the simulator's loaded code rows are of kind other: test the names of those only (1M rows)
        v = v[(v["kind"] == "other").to_numpy()]
        v = v[v["name"].astype(str).str.contains("/loaded code", regex=False).to_numpy()]
    found = v["name"].astype(str).str.extract(_LOADED_CODE)["graph"]
    rows = v[found.notna().to_numpy()]
    if not len(rows):
        return pd.DataFrame({"graph": pd.Series(dtype=object), "bytes": pd.Series(dtype="int64"),
                             "loads": pd.Series(dtype="int64"), "first_step": pd.array([], dtype="Int64"),
                             "last_step": pd.array([], dtype="Int64")})
    frame = pd.DataFrame({"graph": found[found.notna()].to_numpy(dtype=object),
                          "bytes": rows["bytes"].to_numpy(dtype="int64"),
                          "first_step": rows["first_step"].to_numpy(dtype="float64", na_value=float("nan")),
                          "last_step": rows["last_step"].to_numpy(dtype="float64", na_value=float("nan"))})
    grouped = frame.groupby("graph", sort=False)
    out = pd.DataFrame({"graph": list(grouped.groups), "bytes": grouped["bytes"].max().to_numpy(dtype="int64"),
                        "loads": grouped.size().to_numpy(dtype="int64")})
    first = grouped["first_step"].min().to_numpy()
    last = grouped["last_step"].max().to_numpy()
    out["first_step"] = pd.array([None if pd.isna(x) else int(x) for x in first], dtype="Int64")
    out["last_step"] = pd.array([None if pd.isna(x) else int(x) for x in last], dtype="Int64")
    out["graph"] = out["graph"].astype(object)
    return out.sort_values(["bytes", "graph"], ascending=[False, True], kind="mergesort").reset_index(drop=True)


__all__ = ["Grouping", "StreamingTotals", "compare_groupings",
           "groupings", "io_tiles_per_ipu", "loaded_code", "memory_per_tile_set",
           "streaming_totals"]
