"""A fake ``pva`` execution built from a real trace: Graph Analyser's cache of a real
``profile.pop`` (popxl-addons' pipelined MNIST on 2 Mk2 IPUs, in ../shared/data/; see its README).

Each trace block becomes one pva ``ExecutionStep`` on its IPU, shaped as pva.md documents:
``step.program.type.name``, ``step.program.name`` and ``step.ipus[i].cycles`` /
``.activeCycles.cyclesFrom.min`` / ``.activeCycles.cyclesTo.max``. Graph Analyser's trace labels
``ExternalSync`` / ``InternalSync`` become what pva reports: a ``Sync`` program named
"External" / "Internal"; a StreamCopy block ("Mid") becomes ``StreamCopyMid``.
FlameGraphNode rows are Graph Analyser's grouping tree, not steps, and are left out.
"""

from __future__ import annotations

import os
import pathlib
import sqlite3
from types import SimpleNamespace as NS

import pytest

TRACE_FILE = "ga_cache_popxl_mnist_pipelining_2ipu.sqlite"
TRACE_TABLE = "execution_trace_blocks_v3_101111"

_PVA_TYPE = {"StreamCopy": "StreamCopyMid", "ExternalSync": "Sync", "InternalSync": "Sync"}
_PVA_NAME = {"ExternalSync": "External", "InternalSync": "Internal"}


def shared_data_file(name: str) -> pathlib.Path:
    """``shared/data/<name>`` found beside the project (CI) or further up; skip when missing."""
    env = os.environ.get("PROFCOMPARE_SHARED_DATA")
    candidates = [pathlib.Path(env) / name] if env else []
    here = pathlib.Path(__file__).resolve()
    candidates += [parent / "shared" / "data" / name for parent in here.parents]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    pytest.skip(f"real trace {name} not found (expected in ../shared/data/ beside the project)")


def trace_blocks(path: pathlib.Path) -> list[tuple[str, int, str, int, int]]:
    """(tag, ipu, name, cycles_from, cycles_to) of every execution block, in trace order."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(
            f"SELECT tag, ipu, name, cycles_from, cycles_to FROM {TRACE_TABLE} "
            "WHERE tag != 'FlameGraphNode' ORDER BY id"
        ).fetchall()
    finally:
        con.close()


def trace_execution(path: pathlib.Path) -> NS:
    """A pva-shaped ``report.execution`` with one run holding every block of the trace."""
    steps = []
    for tag, ipu, name, start, end in trace_blocks(path):
        program = NS(name=_PVA_NAME.get(tag, name), type=NS(name=_PVA_TYPE.get(tag, tag)))
        entry = NS(cycles=end - start, activeCycles=NS(cyclesFrom=NS(min=start, max=start), cyclesTo=NS(min=end, max=end)))
        ipus = [NS(cycles=0)] * ipu + [entry]
        steps.append(NS(program=program, ipus=ipus))
    total = max(end for *_, end in trace_blocks(path))
    return NS(totalCycles=NS(total=total), runs=[NS(name="trace", steps=steps)])
