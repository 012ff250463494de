"""Graph Analyser's cache of a profile (``profile.pop_cache``): its execution trace as a Report.

PopVision Graph Analyser writes, next to a ``profile.pop`` it has opened, an SQLite cache of
what it derived from it. The execution trace lives in ``execution_trace_blocks_v<N>_<suffix>``:
one row per block Graph Analyser draws (``id, parent_id, tag, ipu, graph, row, name,
cycles_from, cycles_to, step_ids, tile_balance, stream_copy_destination``). Rows tagged
``FlameGraphNode`` are its grouping tree (a program whose steps it draws as nested blocks,
``parent_id`` pointing at them), not executed steps.

What the cache holds is measured, but it is execution only: no tile memory, no variables, no
target. The Report has the ``trace`` table and an ``execution`` table built from it (every block
but the groups and the SyncAns blocks, which overlap the blocks they wait for), and says
"measured, execution only" in its producer. The cache records no program tree: its grouping
nodes are one per executed group (the same program many times over, no program ids, types or
control programs), so ``programs`` is left empty and is not among the capabilities. The target is not in the file: see
:data:`ASSUMED_TARGET`.
"""

from __future__ import annotations

import pathlib
import re
import sqlite3
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from profcompare.errors import ReportFormatError, ReportValidationError
from profcompare.model import PHASES, Report, ReportMeta, Target, make_frame, trace_from_blocks
from profcompare.readers.sqlite_uri import read_only_uri

#: Table names of Graph Analyser's execution trace blocks (the version and suffix vary).
BLOCKS_TABLE = re.compile(r"^execution_trace_blocks_v\d+_\w+$")

#: The columns of the blocks table this reader needs.
BLOCK_COLUMNS = ("id", "parent_id", "tag", "ipu", "name", "cycles_from", "cycles_to")

#: Graph Analyser's grouping nodes: not executed blocks.
GROUP_TAG = "FlameGraphNode"

#: The producer of a report read from a cache.
PRODUCER = "Graph Analyser cache (measured, execution only)"

#: ASSUMPTION: the cache records no target. Mk2 figures (reference/ipu_facts.md section 1.1:
#: 1,472 tiles of 624 KiB, about 1.33 GHz); the number of IPUs is the highest IPU of a block + 1.
ASSUMED_TARGET: Mapping[str, object] = MappingProxyType(
    {"architecture": "Mk2", "tiles_per_ipu": 1472, "bytes_per_tile": 624 * 1024, "clock_hz": 1.33e9}
)

#: Graph Analyser's block type -> (pva program type, execution phase) of the ``execution`` rows.
#: ExternalSync / InternalSync are pva's ``Sync`` (program name External / Internal), StreamCopy
#: is pva's StreamCopyMid (reference/pva.md); GlobalExchange is ``collective`` as in readers/pva.py.
EXECUTION_OF_TAG: Mapping[str, tuple[str, str]] = MappingProxyType({
    "OnTileExecute": ("OnTileExecute", "compute"),
    "DoExchange": ("DoExchange", "exchange"),
    "GlobalExchange": ("GlobalExchange", "collective"),
    "ExternalSync": ("Sync", "sync"),
    "InternalSync": ("Sync", "sync"),
    "StreamCopyBegin": ("StreamCopyBegin", "host_io"),
    "StreamCopy": ("StreamCopyMid", "host_io"),
    "StreamCopyEnd": ("StreamCopyEnd", "host_io"),
})


def blocks_table(names: set[str] | frozenset[str]) -> str | None:
    """The name of the execution-trace blocks table among ``names`` (the newest version), else None."""
    found = sorted((n for n in names if BLOCKS_TABLE.match(n)), key=_version_key)
    return found[-1] if found else None


def _version_key(name: str) -> tuple[int, str]:
    match = re.match(r"^execution_trace_blocks_v(\d+)_", name)
    return (int(match.group(1)) if match else 0, name)


def read_ga_cache(path: str | pathlib.Path) -> Report:
    """Read a Graph Analyser cache file and return a Report holding its execution trace.

    Returns a Report whose ``trace`` has one row per block (groups excluded; see
    :data:`profcompare.model.SCHEMAS`), ``execution`` one row per block other than SyncAns (run 0,
    step = position in time order), every other table empty; ``meta.format`` ``ga_cache``,
    ``meta.capabilities`` {trace, execution}. Raises ReportFormatError for a file without a
    readable blocks table.
    """
    file = pathlib.Path(path)
    uri = read_only_uri(file)
    try:
        con = sqlite3.connect(uri, uri=True)
        try:
            names = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            table = blocks_table(names)
            if table is None:
                raise ReportFormatError(f"{file}: not a Graph Analyser cache with an execution trace")
            columns = {row[1] for row in con.execute(f'PRAGMA table_info("{table}")')}
            lacking = [c for c in BLOCK_COLUMNS if c not in columns]
            if lacking:
                raise ReportFormatError(f"{file}: {table} lacks column(s) {', '.join(lacking)}")
            rows = con.execute(f'SELECT {", ".join(BLOCK_COLUMNS)} FROM "{table}" ORDER BY id').fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        raise ReportFormatError(f"{file}: corrupt SQLite database ({exc})") from None
    try:
        trace = trace_frame(rows)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ReportFormatError(f"{file}: malformed execution trace ({exc})") from None
    ipus = int(trace["ipu"].max()) + 1 if len(trace) else 1
    try:
        target = Target.from_dict({**ASSUMED_TARGET, "num_ipus": ipus, "ipus_per_replica": ipus, "num_replicas": 1})
        meta = ReportMeta(source=str(file), format="ga_cache", producer=PRODUCER, simulated=False, target=target,
                          capabilities=frozenset({"trace", "execution"}))
        return Report.build(meta, trace=trace, execution=execution_from_trace(trace))
    except ReportValidationError as exc:
        raise ReportFormatError(f"{file}: {exc}") from None


def trace_frame(rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    """The ``trace`` table of the blocks table's rows (``BLOCK_COLUMNS`` order), groups left out:
    ``program`` and ``parent`` are the nearest enclosing group's name ("" at the top level, where
    ``program`` is the block's own name), ``depth`` the number of enclosing groups. Rows are
    sorted by (ipu, cycles_from, id)."""
    by_id = {int(r[0]): r for r in rows}
    group_name: dict[int, str] = {int(r[0]): str(r[4] or "") for r in rows if r[2] == GROUP_TAG}
    out: list[tuple[int, int, int, int, str, str, str, str, int]] = []
    for ident, parent_id, tag, ipu, name, start, end in rows:
        if tag == GROUP_TAG:
            continue
        depth = 0
        parent = ""
        cursor = parent_id
        seen: set[int] = set()
        while cursor is not None and int(cursor) in by_id and int(cursor) not in seen:
            seen.add(int(cursor))
            if int(cursor) in group_name:
                depth += 1
                parent = parent or group_name[int(cursor)]
            cursor = by_id[int(cursor)][1]
        label = str(name) if name is not None else str(tag)
        out.append((int(ipu), int(start), int(end), int(ident), str(tag), label, parent or label, parent, depth))
    out.sort(key=lambda r: (r[0], r[1], r[3]))
    return trace_from_blocks([(ipu, start, end, tag, label, program, parent, depth)
                        for ipu, start, end, _, tag, label, program, parent, depth in out])


def execution_from_trace(trace: pd.DataFrame) -> pd.DataFrame:
    """The ``execution`` table of one run from a measured trace: one row per block whose type is
    in :data:`EXECUTION_OF_TAG` (SyncAns and unknown types left out), in time order, step = its
    position; a run's span is then the trace's span."""
    keep = trace[trace["type"].astype(str).isin(list(EXECUTION_OF_TAG)).to_numpy()]
    keep = keep.sort_values(["cycles_from", "ipu"], kind="stable")
    tags = keep["type"].astype(str).to_numpy()
    types = [EXECUTION_OF_TAG[t][0] for t in tags]
    phases = [EXECUTION_OF_TAG[t][1] for t in tags]
    start = keep["cycles_from"].to_numpy()
    end = keep["cycles_to"].to_numpy()
    return make_frame("execution", {
        "run": np.zeros(len(keep), dtype=np.int64),
        "step": np.arange(len(keep), dtype=np.int64),
        "program": keep["program"].to_numpy(dtype=object),
        "type": pd.Categorical(types),
        "phase": pd.Categorical(phases, categories=list(PHASES)),
        "cycles": (end - start).astype(np.int64),
        "cycles_from": pd.array(start, dtype="Int64"),
        "cycles_to": pd.array(end, dtype="Int64"),
    })


__all__ = ["ASSUMED_TARGET", "EXECUTION_OF_TAG", "PRODUCER", "blocks_table", "execution_from_trace", "read_ga_cache",
           "trace_frame"]
