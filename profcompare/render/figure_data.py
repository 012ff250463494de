"""What the figures draw, without matplotlib: colours, the order of stacked segments and the
series transforms shared by the static figures (:mod:`profcompare.render.plots`, the notebook's)
and the page's charts (:mod:`profcompare.render.interactive`, :mod:`profcompare.render.bar_charts`).

Kept apart so that rendering a page never imports matplotlib's axes stack (about 0.2 CPU seconds).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from profcompare.analysis import views as analysis
from profcompare.model import CATEGORY_GROUPS, DEVICE_PHASES, PHASES

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.model import Report

#: Line colours of the 1st, 2nd, ... report (base is blue, new is green, like PopVision's
#: source/target pair).
REPORT_COLOURS = ("#3b6fb6", "#2e9a47", "#c0392b", "#8e44ad", "#d4860b")
BUDGET_COLOUR = "#b03030"

#: Colours of memory categories by group (shades per category within a group).
GROUP_SHADES = {
    "code": ("#1f4e79", "#2e6da4", "#4a89c8", "#6fa3d8", "#97bde6", "#bcd5f0"),
    "vertex_data": ("#8a5a00", "#b07a10", "#d39b2a", "#e8bb5e"),
    "variables": ("#1e7b3a", "#5cb270"),
    "other": ("#5b5b5b", "#7a7a7a", "#989898", "#b3b3b3", "#c9c9c9", "#dcdcdc", "#6d4c7d", "#9a7aa9", "#c1a9cc"),
}
PHASE_COLOURS = dict(zip(PHASES, ("#3b6fb6", "#e08a1e", "#9b9b9b", "#8e44ad", "#c0392b", "#2e9a47", "#6d4c41"),
                         strict=True))
LOCATION_COLOURS = {"always_live": "#1e7b3a", "not_always_live": "#5cb270", "streaming_memory": "#3b6fb6"}


def category_stack(reports: Sequence[Report]) -> pd.DataFrame:
    """The memory categories as stacked: one row per category nonzero in some report (index:
    category), one column per report position (0, 1, ...: bytes summed over the tiles of one
    replica) and ``colour``; rows by group (code, vertex data, variables, other), then largest
    total bytes first, each coloured by a shade of its group. Empty when no report has a
    category with bytes."""
    table = pd.DataFrame({i: r.categories.set_index("category")["bytes"] for i, r in enumerate(reports)})
    table = table.fillna(0)
    if table.empty or not (table.to_numpy() > 0).any():
        return pd.DataFrame(columns=[*range(len(reports)), "colour"])
    table = table.loc[(table > 0).any(axis=1)]
    groups = [CATEGORY_GROUPS.get(str(c), "other") for c in table.index]
    table = table.assign(
        _group=pd.Categorical(groups, ["code", "vertex_data", "variables", "other"]), _size=table.sum(axis=1)
    )
    table = table.sort_values(["_group", "_size"], ascending=[True, False])
    colours = []
    shade_index: dict[str, int] = {}
    for group in table["_group"].astype(str):
        shades = GROUP_SHADES[group]
        colours.append(shades[shade_index.get(group, 0) % len(shades)])
        shade_index[group] = shade_index.get(group, 0) + 1
    return table.drop(columns=["_group", "_size"]).assign(colour=colours)


def largest_programs(reports: Sequence[Report], top: int) -> pd.DataFrame:
    """Code bytes by program: one row per program (index: name), one column per report
    position (code bytes per replica summed over code categories, 0 where a report lacks the
    program); the ``top`` programs with the largest code bytes over the reports, largest first."""
    per_report = [analysis.code_by_program(r).set_index("name")["code_bytes"] for r in reports]
    table = pd.DataFrame({i: s for i, s in enumerate(per_report)}).fillna(0)
    if table.empty:
        return table
    return table.loc[table.max(axis=1).sort_values(ascending=False, kind="stable").index[:top]]


def hold_between_steps(values: np.ndarray) -> np.ndarray:
    """An aligned curve with the positions it lacks between its first and last step holding the
    level of its previous step (while the other program runs steps this one does not have, this
    one's memory stays as it was); before its first and after its last step it stays NaN, so a
    shorter program's curve ends (a gap) instead of breaking into dashes."""
    values = np.asarray(values, dtype="float64").copy()
    present = np.flatnonzero(~np.isnan(values))
    if len(present):
        first, last = present[0], present[-1]
        inner = values[first : last + 1]
        held = np.maximum.accumulate(np.where(np.isnan(inner), -1, np.arange(len(inner))))
        values[first : last + 1] = inner[held]
    return values


def phase_stack(reports: Sequence[Report]) -> pd.DataFrame:
    """Device cycles per step by device phase: one row per phase present (index: phase, in
    :data:`profcompare.model.DEVICE_PHASES` order), one column per report position (0 where a
    report lacks the phase); empty when no report has an execution profile."""
    table = pd.DataFrame(
        {i: analysis.execution_by_phase(r).set_index("phase")["cycles"] for i, r in enumerate(reports)}
    ).fillna(0)
    if table.empty:
        return table
    return table.reindex([p for p in DEVICE_PHASES if p in table.index])

def host_seconds(report: Report) -> float:
    """The report's host/runtime seconds per ``session.run`` (``host_seconds_per_step`` of its
    summary, from the execution table alone; NaN when it records none)."""
    return float(report.summary()["host_seconds_per_step"])


def execution_bar_text(device_cycles: float, host: float) -> str:
    """What follows a report's execution bar: its device cycles per step and, when the report
    records any, its host/runtime time (not device time, so not part of the bar)."""
    host_text = "" if host != host else f" + host/runtime {host * 1e3:,.3f} ms"
    return f"{device_cycles:,.0f} device cycles{host_text}"


__all__ = [
    "BUDGET_COLOUR",
    "GROUP_SHADES",
    "LOCATION_COLOURS",
    "PHASE_COLOURS",
    "REPORT_COLOURS",
    "category_stack",
    "execution_bar_text",
    "hold_between_steps",
    "host_seconds",
    "phase_stack",
    "largest_programs",
]
