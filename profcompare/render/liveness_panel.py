"""The data of the liveness chart's step panel: a click on the chart shows what is live at that
step in each report, by (parameter, role) and by variable, aligned, with the bytes and the
difference (the page's script draws it under the chart; ``compare --at`` is the full view).

Size: the chart's steps are cut into at most :data:`PANEL_BUCKETS` buckets; per bucket and
report only the step at the bucket's maximum is kept, with its :data:`PANEL_GROUPS` largest
(parameter, role) groups and :data:`PANEL_VARIABLES` largest variables. Names and programs are
written once in dictionaries and referred to by index, so the data stays small however many
steps the programs have (about 75 kB for the GPT-J 6B phased-rts pair). The highest :data:`PANEL_PEAKS`
peaks of each report are listed as links to their bucket.

Every name reaches the page as JSON inside a ``<script type="application/json">`` block
(``tojson`` escapes it) and the script inserts it as text, never as markup.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from profcompare.analysis import views as analysis
from profcompare.analysis.at_step import top_peaks
from profcompare.render.labels import parameter_label

if TYPE_CHECKING:  # pragma: no cover
    from profcompare.model import Report

#: Most buckets the panel keeps data for (a click picks the bucket under the pointer).
PANEL_BUCKETS = 150
#: (parameter, role) groups and variables listed per bucket and report.
PANEL_GROUPS = 4
PANEL_VARIABLES = 3
#: Peaks of each report pre-listed as links.
PANEL_PEAKS = 3
#: Longest name kept (longer ones end in "…").
PANEL_NAME_CHARS = 60


@dataclass(frozen=True)
class _Cut:
    """Consecutive buckets of a series: first position, maximum and its position (-1 when the
    bucket holds only gaps) of each."""

    start: np.ndarray
    high: np.ndarray
    argmax: np.ndarray


def cut(values: np.ndarray, max_buckets: int) -> _Cut:
    """``values`` (NaN = gap) in at most ``max_buckets`` equal consecutive buckets."""
    n = len(values)
    size = max(1, -(-n // max(1, max_buckets)))
    start = np.arange(0, n, size, dtype="int64")
    flat = np.full(len(start) * size, np.nan)
    flat[:n] = values
    grid = flat.reshape(len(start), size)
    empty = np.isnan(grid).all(axis=1)
    at = np.where(empty, 0, np.argmax(np.nan_to_num(grid, nan=-np.inf), axis=1))
    high = np.where(empty, np.nan, grid[np.arange(len(start)), at])
    return _Cut(start, high, np.where(empty, -1, start + at))


class _Names:
    """A dictionary of texts: each written once, referred to by its index."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, text: str) -> int:
        text = text if len(text) <= PANEL_NAME_CHARS else text[: PANEL_NAME_CHARS - 1] + "…"
        return self.index.setdefault(text, len(self.index))

    def texts(self) -> list[str]:
        return list(self.index)


@dataclass(frozen=True)
class _Groups:
    """The (parameter, role) group of every variables row: ``codes`` (int64 per row) and the
    label of a code, made only for the groups the panel lists."""

    codes: np.ndarray
    pairs: np.ndarray
    parameters: np.ndarray
    roles: np.ndarray

    def label(self, code: int) -> str:
        pair = int(self.pairs[code])
        width = max(len(self.roles), 1)
        return f"{parameter_label(self.parameters[pair // width])} · {self.roles[pair % width]}"


def _group_codes(variables: pd.DataFrame) -> _Groups:
    """The :class:`_Groups` of ``variables``: whole-column work (no Python step per variable)."""
    p_codes, p_names = pd.factorize(variables["parameter"].to_numpy(dtype=object))
    r_codes, r_names = pd.factorize(variables["role"].astype(str).to_numpy(dtype=object))
    combined = np.asarray(p_codes, dtype="int64") * max(len(r_names), 1) + np.asarray(r_codes, dtype="int64")
    codes, pairs = pd.factorize(combined)
    return _Groups(np.asarray(codes, dtype="int64"), np.asarray(pairs), np.asarray(p_names, dtype=object),
                   np.asarray(r_names, dtype=object))


def _top(totals: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` largest positive ``totals``, largest first (lower position first
    on a tie); linear in the length, not a sort of it."""
    positive = np.flatnonzero(totals > 0)
    if len(positive) > k:
        cut = np.argpartition(-totals[positive], k - 1)[:k]
        threshold = totals[positive][cut].min()
        positive = positive[totals[positive] >= threshold]
    return positive[np.lexsort((positive, -totals[positive]))][:k]


def _groups_at(report: Report, steps: np.ndarray, k: int, names: _Names, groups: _Groups) -> dict[int, list[list[int]]]:
    """Per step: the ``k`` (parameter, role) groups with the most not-always-live bytes live
    there, as [group index, bytes], largest first."""
    variables = report.variables
    first = variables["first_step"].to_numpy(dtype="float64", na_value=np.nan)
    last = variables["last_step"].to_numpy(dtype="float64", na_value=np.nan)
    keep = ~variables["always_live"].to_numpy(dtype=bool) & np.isfinite(first) & np.isfinite(last)
    codes = groups.codes[keep]
    sizes = variables["bytes"].to_numpy(dtype="float64")[keep]
    first, last = first[keep], last[keep]
    out: dict[int, list[list[int]]] = {}
    for step in np.unique(steps).tolist():
        live = (first <= step) & (last >= step)
        present, inverse = np.unique(codes[live], return_inverse=True)
        totals = np.bincount(inverse, weights=sizes[live], minlength=len(present))
        out[int(step)] = [[names(groups.label(int(present[g]))), int(totals[g])] for g in _top(totals, k).tolist()]
    return out


def _group_of_names(report: Report, wanted: list[str], names: _Names, groups: _Groups) -> dict[str, int]:
    """The (parameter, role) group index of each variable named in ``wanted`` (its first row)."""
    variables = report.variables
    if not wanted:
        return {}
    rows = np.flatnonzero(variables["name"].isin(set(wanted)).to_numpy())
    found: dict[str, int] = {}
    for row in rows.tolist():
        found.setdefault(str(variables["name"].iat[row]), names(groups.label(int(groups.codes[row]))))
    return found


def panel_data(reports: Sequence[Report], labels: Sequence[str], positions: np.ndarray,
               values: Sequence[np.ndarray], steps: Sequence[np.ndarray], programs: Sequence[np.ndarray],
               ) -> dict[str, Any]:
    """The panel data of a liveness chart whose x axis is ``positions`` (one per drawn step:
    a report's own steps, or the aligned positions of a comparison), with each report's
    ``values`` (not-always-live bytes, NaN where it has no step), ``steps`` (-1 where none) and
    ``programs`` at those positions.

    Returns a dict: ``labels`` (per report), ``groups`` and ``names`` (text dictionaries),
    ``edges`` (the x boundaries of the buckets, one more than buckets), ``buckets`` (per bucket,
    per report, null or [step, program index, not-always-live bytes, [[group index, bytes], ...],
    [[name index, group index, bytes], ...]]) and ``peaks`` ([report index, rank, bucket index,
    step, bytes] of each report's :data:`PANEL_PEAKS` highest peaks).
    """
    groups, names = _Names(), _Names()
    length = len(positions)
    per_side = [cut(np.pad(v, (0, length - len(v)), constant_values=np.nan), PANEL_BUCKETS) for v in values]
    shape = per_side[0]
    edges = [float(positions[int(a)]) for a in shape.start.tolist()] + [float(positions[-1]) + 1.0] if length else []
    rows: list[list[Any]] = [[None] * len(reports) for _ in range(len(shape.start))]
    for side, (report, reduced) in enumerate(zip(reports, per_side, strict=True)):
        at = reduced.argmax
        side_steps = steps[side]
        chosen = np.where(at >= 0, side_steps[np.clip(at, 0, max(len(side_steps) - 1, 0))] if len(side_steps) else -1, -1)
        wanted = chosen[chosen >= 0]
        codes = _group_codes(report.variables)
        by_group = _groups_at(report, wanted, PANEL_GROUPS, groups, codes)
        tops = analysis.largest_live_variables(report, wanted, k=PANEL_VARIABLES)
        group_of = _group_of_names(report, sorted({str(n) for n in tops["name"].tolist()}), groups, codes)
        listed: dict[int, list[list[int]]] = {}
        for step, name, size in zip(tops["step"].tolist(), tops["name"].tolist(), tops["bytes"].tolist(), strict=True):
            listed.setdefault(int(step), []).append([names(str(name)), group_of.get(str(name), -1), int(size)])
        for bucket, (position, step) in enumerate(zip(at.tolist(), chosen.tolist(), strict=True)):
            if step < 0:
                continue
            rows[bucket][side] = [int(step), names(str(programs[side][position])), int(np.nan_to_num(reduced.high[bucket])),
                                  by_group.get(int(step), []), listed.get(int(step), [])]
    peaks: list[list[int]] = []
    for side, report in enumerate(reports):
        side_steps = steps[side]
        for rank, step, nbytes in zip(*(top_peaks(report, PANEL_PEAKS)[c].tolist()
                                        for c in ("rank", "step", "not_always_live_bytes")), strict=True):
            hits = np.flatnonzero(side_steps == step)
            if len(hits):
                bucket = int(np.searchsorted(shape.start, int(hits[0]), side="right") - 1)
                peaks.append([side, int(rank), bucket, int(step), int(nbytes)])
    return {"labels": list(labels), "groups": groups.texts(), "names": names.texts(), "edges": edges,
            "buckets": rows, "peaks": peaks}


__all__ = ["PANEL_BUCKETS", "PANEL_GROUPS", "PANEL_PEAKS", "PANEL_VARIABLES", "panel_data"]
