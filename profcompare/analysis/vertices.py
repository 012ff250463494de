"""The largest vertex types, compute sets and exchanges of a report (``Report.vertices``,
``Report.compute_sets``, ``Report.exchanges``): what a notebook asks first of them.

Each function returns the table's own columns (model.SCHEMAS), its ``n`` largest rows by the
figure named, ties broken by name; the remainder rows ("(not attributed to ...)") are not
vertex types, compute sets or exchanges and are left out.
"""

from __future__ import annotations

import pandas as pd

from profcompare.errors import ProfcompareError
from profcompare.model import (
    UNATTRIBUTED_COMPUTE_SETS,
    UNATTRIBUTED_EXCHANGES,
    UNATTRIBUTED_VERTICES,
    Report,
)

#: each table's remainder row name
_REMAINDER = {"vertices": UNATTRIBUTED_VERTICES, "compute_sets": UNATTRIBUTED_COMPUTE_SETS,
              "exchanges": UNATTRIBUTED_EXCHANGES}


def largest(report: Report, table: str, by: str, n: int | None = 10) -> pd.DataFrame:
    """The ``n`` rows (None: all) of ``report``'s ``table`` (vertices, compute_sets or
    exchanges) with the largest ``by`` (a numeric column: code_bytes, vertex_state_bytes,
    cycles, ...), largest first, rows without a value last; the remainder row left out.
    Raises ProfcompareError for an unknown table or column."""
    if table not in _REMAINDER:
        raise ProfcompareError(f"no table {table!r}; choose one of {', '.join(_REMAINDER)}")
    frame = getattr(report, table)
    if by not in frame.columns or by in ("name", "op", "type"):
        raise ProfcompareError(f"no figure {by!r} in {table}; columns are {list(frame.columns)}")
    rows = frame[frame["name"] != _REMAINDER[table]]
    ordered = rows.sort_values([by, "name"], ascending=[False, True], na_position="last", kind="stable")
    return (ordered if n is None else ordered.head(n)).reset_index(drop=True)


def largest_vertex_types(report: Report, n: int | None = 10, *, by: str = "code_bytes") -> pd.DataFrame:
    """The vertex types of the most code (``by="vertex_state_bytes"``: of the most state)."""
    return largest(report, "vertices", by, n)


def largest_compute_sets(report: Report, n: int | None = 10, *, by: str = "vertex_state_bytes") -> pd.DataFrame:
    """The compute sets of the most vertex state (``by="cycles"``: the slowest)."""
    return largest(report, "compute_sets", by, n)


def largest_exchanges(report: Report, n: int | None = 10, *, by: str = "code_bytes") -> pd.DataFrame:
    """The exchanges of the most code (``by="cycles"``: the slowest)."""
    return largest(report, "exchanges", by, n)


__all__ = ["largest", "largest_compute_sets", "largest_exchanges", "largest_vertex_types"]
