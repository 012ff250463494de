"""The detail a page shows of one op of the "Operations" table when the reader asks for it: its
program steps (the report's programs lowering it, in tree order) and its figures -- code, vertex
state and exchange code bytes, cycles of one run, FLOPs, tiles, IPU, parameter, role, source --
or, for a comparison, both sides' figures with the deltas.

The data is plain JSON (display strings only, formatted here once) that the page embeds in one
``<script type="application/json">`` block per table and lays out as text; it is bounded: the
first :data:`MAX_DETAILED_OPS` rows the table shows, at most :data:`MAX_STEPS` steps each.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from profcompare.comparison.operations import normalise_operation_name
from profcompare.model import Report
from profcompare.render.format import MISSING, format_bytes, format_count, format_cycles, is_missing

#: the most program steps a detail lists per side; it says how many more there are
MAX_STEPS = 30

#: the most ops of a table given a detail (the first, in the table's order): a page of every op
#: (``--top 0``) of a model of tens of thousands of ops would otherwise carry megabytes of details
MAX_DETAILED_OPS = 100

#: (column, label, formatter) of the figures a detail shows, in order
_FIGURES: tuple[tuple[str, str, Any], ...] = (
    ("code_bytes", "Code", format_bytes),
    ("vertex_state_bytes", "Vertex state", format_bytes),
    ("exchange_code_bytes", "Exchange code", format_bytes),
    ("cycles", "Cycles per run", format_cycles),
    ("flops", "FLOPs", format_count),
    ("tiles", "Tiles", format_count),
)

#: (column, label) of the facts a detail shows after the figures (no delta)
_FACTS: tuple[tuple[str, str], ...] = (
    ("type", "Type"), ("ipu", "IPU"), ("parameter", "Parameter"), ("role", "Role"),
    ("source", "Source"), ("debug_name", "Debug name"), ("layer", "Layer"),
)


def _exact_bytes(value: Any) -> str:
    """A byte count as the table shows it, with the exact count after a rounded one."""
    text = format_bytes(value)
    return text if is_missing(value) or abs(int(value)) < 1024 else f"{text} ({int(value):,} B)"


def _fact(value: Any) -> str:
    if is_missing(value):
        return MISSING
    text = str(value)
    return text if text else "–"


def _steps(programs: pd.DataFrame, names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Per op name of ``names``: its program steps in tree order, ``{"rows": [[kind, name],
    ...], "more": n}``, at most :data:`MAX_STEPS` rows and how many more there are."""
    wanted = set(names)
    if not wanted or not len(programs):
        return {}
    mine = programs[programs["op"].isin(wanted)]
    found: dict[str, dict[str, Any]] = {}
    for op, kind, name in zip(mine["op"], mine["kind"], mine["name"], strict=True):
        entry = found.setdefault(str(op), {"rows": [], "more": 0})
        if len(entry["rows"]) < MAX_STEPS:
            entry["rows"].append([str(kind), str(name)])
        else:
            entry["more"] += 1
    return found


def _side_rows(ops: pd.DataFrame, names: Sequence[str]) -> list[Mapping[str, Any] | None]:
    """Per name of ``names``: the op of ``ops`` called so, else the first whose normalised name
    matches (how a comparison pairs ops of two builds); None when there is none. One pass over
    ``ops`` (a table cut to all its rows asks for every op)."""
    if not len(ops) or not names:
        return [None] * len(names)
    wanted = set(names)
    exact: dict[str, int] = {}
    op_names = [str(name) for name in ops["name"]]
    for position, name in enumerate(op_names):
        if name in wanted:
            exact.setdefault(name, position)
    missing = {normalise_operation_name(name) for name in names if name not in exact}
    normal: dict[str, int] = {}
    if missing:
        for position, name in enumerate(op_names):
            key = normalise_operation_name(name)
            if key in missing:
                normal.setdefault(key, position)

    found = {name: exact.get(name, normal.get(normalise_operation_name(name))) for name in names}
    chosen = sorted({position for position in found.values() if position is not None})
    records = dict(zip(chosen, ops.iloc[chosen].to_dict("records"), strict=True))
    return [records.get(position) if position is not None else None for position in (found[name] for name in names)]


def _detail(name: str, labels: Sequence[str], sides: Sequence[Mapping[str, Any] | None],
            steps: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One op's detail of ``sides`` (one op row per report, None where a report lacks it)."""
    figures = []
    for column, label, formatter in _FIGURES:
        values: list[Any] = [None if side is None else side[column] for side in sides]
        shown = _exact_bytes if formatter is format_bytes else formatter
        delta = ""
        if len(values) == 2 and not any(is_missing(value) for value in values):
            delta = formatter(int(values[1]) - int(values[0]), signed=True)
        figures.append([label, [MISSING if value is None else shown(value) for value in values], delta])
    facts = [[label, [MISSING if side is None else _fact(side[column]) for side in sides]] for column, label in _FACTS]
    return {
        "name": name,
        "labels": list(labels),
        "present": [side is not None for side in sides],
        "figures": figures,
        "facts": facts,
        "steps": [dict(entry) for entry in steps],
    }


def report_operation_details(report: Report, names: Sequence[str]) -> list[dict[str, Any] | None]:
    """The detail of each op of ``report`` called one of ``names`` (the rows a page shows), in
    that order (None after the first :data:`MAX_DETAILED_OPS`): ``name``, ``labels`` (the
    report's), ``present``, ``figures`` ([label, [text], ""] for code, vertex state, exchange
    code, cycles, FLOPs, tiles), ``facts`` ([label, [text]] for type, IPU, parameter, role,
    source, debug name, layer) and ``steps`` ([{"rows": [[kind, name], ...], "more": n}]: the
    programs lowering it, in tree order)."""
    empty = {"rows": [], "more": 0}
    detailed = names[:MAX_DETAILED_OPS]
    steps = _steps(report.programs, detailed)
    rows = _side_rows(report.operations, detailed)
    details: list[dict[str, Any] | None] = [_detail(name, (report.label,), (row,), (steps.get(name, empty),))
                                            for name, row in zip(detailed, rows, strict=True)]
    return details + [None] * (len(names) - len(detailed))


def comparison_operation_details(base: Report, new: Report, names: Sequence[str]) -> list[dict[str, Any] | None]:
    """The detail of each op a comparison's table shows (``names``), in that order, as
    :func:`report_operation_details` with two sides (labelled ``base: <label>`` and ``new:
    <label>``) and each figure's delta (new - base; empty when a side does not know it or lacks
    the op)."""
    detailed = names[:MAX_DETAILED_OPS]
    sides = [_side_rows(report.operations, detailed) for report in (base, new)]
    steps = [_steps(report.programs, (str(row["name"]) for row in rows if row is not None))
             for report, rows in zip((base, new), sides, strict=True)]
    empty = {"rows": [], "more": 0}

    def side_steps(s: int, row: Mapping[str, Any] | None) -> Mapping[str, Any]:
        return empty if row is None else steps[s].get(str(row["name"]), empty)

    labels = (f"base: {base.label}", f"new: {new.label}")
    details: list[dict[str, Any] | None] = [
        _detail(name, labels, (sides[0][i], sides[1][i]), (side_steps(0, sides[0][i]), side_steps(1, sides[1][i])))
        for i, name in enumerate(detailed)]
    return details + [None] * (len(names) - len(detailed))


__all__ = ["MAX_DETAILED_OPS", "MAX_STEPS", "comparison_operation_details", "report_operation_details"]
