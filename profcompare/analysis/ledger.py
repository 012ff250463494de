"""The memory ledger: per model parameter, where every byte of a report lives.

Pure functions over a :class:`~profcompare.model.Report` (no I/O, no plotting). The ledger sums
the ``variables`` table (tile memory) and the ``remote_buffers`` table (Streaming Memory) per
(parameter, role, location) and reconciles with the summary by construction:

- the ``streaming_memory`` rows add up to ``streaming_memory_bytes``;
- the ``bytes_at_peak`` of the ``not_always_live`` rows add up to the liveness table's bytes at
  its peak step (``not_always_live_peak_bytes``) when the variables table lists every
  not-always-live allocation with its steps (simulated reports do, one row per call instance);
- the ``always_live`` rows add up to the always-live variables and constants of the tiles
  (``always_live_bytes`` minus the code, vertex-data and other categories).

A row is *unattributed* when its parameter is empty and its role is ``other``: the reader could
not say what it belongs to (activations and op temporaries have an empty parameter by nature,
with roles ``activation`` / ``partials``).

The views of a comparison's ledger diff (``ledger_moves``, ``ledger_by_parameter``,
``peak_composition``; :class:`profcompare.comparison.Comparison` exposes them as methods) are here
too: pure functions of that frame.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from profcompare.base import presenters
from profcompare.model import LOCATIONS, ROLES, Report

#: The ledger locations in tile memory (Streaming Memory is off chip).
TILE_LOCATIONS: tuple[str, ...] = ("always_live", "not_always_live")

#: Columns of :func:`ledger`, in order.
LEDGER_COLUMNS: tuple[str, ...] = (
    "parameter", "role", "location", "bytes", "bytes_at_peak", "first_step", "last_step", "rows",
)


def peak_step(report: Report) -> int | None:
    """The not-always-live peak step of ``report`` (the first step with the most
    not-always-live bytes), or None when the report has no liveness table."""
    live = report.liveness_per_step()
    if not len(live):
        return None
    values = live["not_always_live_bytes"].to_numpy(dtype=np.int64)
    return int(live["step"].to_numpy()[int(np.argmax(values))])


def _live_mask(variables: pd.DataFrame, step: int | None) -> np.ndarray:
    """Rows of ``variables`` that are not-always-live and live at ``step``."""
    if step is None or not len(variables):
        return np.zeros(len(variables), dtype=bool)
    first: np.ndarray = variables["first_step"].to_numpy(dtype="float64", na_value=np.nan)
    last: np.ndarray = variables["last_step"].to_numpy(dtype="float64", na_value=np.nan)
    nal: np.ndarray = ~variables["always_live"].to_numpy(dtype=bool)
    with np.errstate(invalid="ignore"):
        return nal & (first <= step) & (last >= step)


def live_at_peak(report: Report) -> pd.DataFrame:
    """The tensors live at the not-always-live peak step (what Graph Analyser's Insights shows).

    Returns the ``variables`` rows (same columns) that are not-always-live and live at
    :func:`peak_step`, largest ``bytes`` first, then by name; their ``bytes`` add up to the
    report's not-always-live peak bytes. Empty without a liveness table.
    """
    variables = report.variables
    rows = variables[_live_mask(variables, peak_step(report))]
    order = np.lexsort((rows["name"].to_numpy(dtype=object).astype(str), -rows["bytes"].to_numpy(dtype=np.int64)))
    return rows.take(order).reset_index(drop=True)


def _group_peak(group: np.ndarray, first: np.ndarray, last: np.ndarray, nbytes: np.ndarray,
                groups: int) -> np.ndarray:
    """Per group, the most bytes its rows hold at once over the steps (int64, length ``groups``).

    Rows without steps (``first`` < 0) count for the whole run (added to every step)."""
    peak = np.zeros(groups, dtype=np.int64)
    known = first >= 0
    always = np.zeros(groups, dtype=np.int64)
    np.add.at(always, group[~known], nbytes[~known])
    if known.any():
        g, f, la, b = group[known], first[known], last[known], nbytes[known]
        ev_group = np.r_[g, g]
        ev_step = np.r_[f, la + 1]
        ev_delta = np.r_[b, -b]
        # events sorted by (group, step); a group's bytes after a step are the running sum of its
        # events up to that step's last one (never between two events of one step)
        order = np.lexsort((ev_step, ev_group))
        eg, es = ev_group[order], ev_step[order]
        running = np.cumsum(ev_delta[order])
        step_ends = np.flatnonzero(np.r_[(eg[1:] != eg[:-1]) | (es[1:] != es[:-1]), True])
        group_starts = np.flatnonzero(np.r_[True, eg[1:] != eg[:-1]])
        before = np.r_[0, running][group_starts]  # the running sum before each group's first event
        group_of_end = np.searchsorted(group_starts, step_ends, side="right") - 1
        held = running[step_ends] - before[group_of_end]
        firsts = np.searchsorted(step_ends, group_starts)  # each group's first step end
        best = np.maximum.reduceat(held, firsts)
        peak[eg[group_starts]] = best
    return peak + always


def ledger(report: Report) -> pd.DataFrame:
    """Where every byte of each model parameter lives, one row per (parameter, role, location).

    Columns (:data:`LEDGER_COLUMNS`):

    - parameter: str -- the model variable ("fc1.weight"); "" for activations, op temporaries and
      what the report cannot attribute;
    - role: str -- :data:`profcompare.model.ROLES`;
    - location: str -- ``always_live`` | ``not_always_live`` (tile memory) | ``streaming_memory``;
    - bytes: int64, per replica -- always_live and streaming_memory: the sum of the rows;
      not_always_live: the most bytes the group's rows hold at once over the program steps (its
      rows are live over different steps, so their sum would overstate it);
    - bytes_at_peak: int64 -- tile memory of the group live at the not-always-live peak step
      (:func:`peak_step`): always_live rows count in full, streaming_memory rows 0;
    - first_step, last_step: Int64 -- the steps the not_always_live group is live over (<NA>
      otherwise, or when the report does not record steps);
    - rows: int64 -- variables rows or buffers in the group.

    Rows are ordered by parameter (the unattributed "" last), role (ROLES order), location
    (LOCATIONS order).
    """
    variables = report.variables
    buffers = report.remote_buffers
    always = variables["always_live"].to_numpy(dtype=bool)
    n_buf = len(buffers)
    parameter = np.r_[variables["parameter"].to_numpy(dtype=object), buffers["parameter"].to_numpy(dtype=object)]
    role = np.r_[variables["role"].astype(str).to_numpy(dtype=object), buffers["role"].astype(str).to_numpy(dtype=object)]
    location = np.r_[np.where(always, "always_live", "not_always_live").astype(object),
                     np.full(n_buf, "streaming_memory", dtype=object)]
    nbytes = np.r_[variables["bytes"].to_numpy(dtype=np.int64), buffers["bytes"].to_numpy(dtype=np.int64)]
    first = np.r_[variables["first_step"].to_numpy(dtype="float64", na_value=np.nan), np.full(n_buf, np.nan)]
    last = np.r_[variables["last_step"].to_numpy(dtype="float64", na_value=np.nan), np.full(n_buf, np.nan)]
    at_peak_mask = np.r_[_live_mask(variables, peak_step(report)) | always, np.zeros(n_buf, dtype=bool)]
    if not len(nbytes):
        return _empty_ledger()
    keys = pd.MultiIndex.from_arrays([parameter, role, location])
    codes, uniques = pd.factorize(keys)
    groups = len(uniques)
    nal = location == "not_always_live"
    total = np.zeros(groups, dtype=np.int64)
    np.add.at(total, codes[~nal], nbytes[~nal])
    steps_known = nal & ~np.isnan(first) & ~np.isnan(last)
    f_int = np.where(steps_known, np.nan_to_num(first), -1).astype(np.int64)
    l_int = np.where(steps_known, np.nan_to_num(last), -1).astype(np.int64)
    total += _group_peak(codes[nal], f_int[nal], l_int[nal], nbytes[nal], groups)
    at_peak = np.zeros(groups, dtype=np.int64)
    np.add.at(at_peak, codes[at_peak_mask], nbytes[at_peak_mask])
    count = np.bincount(codes, minlength=groups).astype(np.int64)
    big = np.iinfo(np.int64).max
    g_first = np.full(groups, big, dtype=np.int64)
    g_last = np.full(groups, -1, dtype=np.int64)
    np.minimum.at(g_first, codes[steps_known], f_int[steps_known])
    np.maximum.at(g_last, codes[steps_known], l_int[steps_known])
    has_steps = g_last >= 0
    frame = pd.DataFrame({
        "parameter": pd.Series(uniques.get_level_values(0), dtype=object),
        "role": pd.Series(uniques.get_level_values(1), dtype=object),
        "location": pd.Series(uniques.get_level_values(2), dtype=object),
        "bytes": total,
        "bytes_at_peak": at_peak,
        "first_step": pd.array(np.where(has_steps, g_first, 0), dtype="Int64"),
        "last_step": pd.array(np.where(has_steps, g_last, 0), dtype="Int64"),
        "rows": count,
    })
    frame.loc[~has_steps, ["first_step", "last_step"]] = pd.NA
    return _sorted(frame)


def _empty_ledger() -> pd.DataFrame:
    return pd.DataFrame({
        "parameter": pd.Series([], dtype=object), "role": pd.Series([], dtype=object),
        "location": pd.Series([], dtype=object), "bytes": pd.Series([], dtype=np.int64),
        "bytes_at_peak": pd.Series([], dtype=np.int64), "first_step": pd.array([], dtype="Int64"),
        "last_step": pd.array([], dtype="Int64"), "rows": pd.Series([], dtype=np.int64),
    })


def sort_ledger(frame: pd.DataFrame) -> pd.DataFrame:
    """Ledger rows (or ledger-diff rows) in ledger order: parameter (the unattributed "" last),
    role (ROLES order), location (LOCATIONS order)."""
    return _sorted(frame)


def _sorted(frame: pd.DataFrame) -> pd.DataFrame:
    role_rank = {r: i for i, r in enumerate(ROLES)}
    loc_rank = {loc: i for i, loc in enumerate(LOCATIONS)}
    key = pd.DataFrame({
        "unattributed": (frame["parameter"] == "").to_numpy(),
        "parameter": frame["parameter"].to_numpy(dtype=object),
        "role": [role_rank.get(r, len(role_rank)) for r in frame["role"]],
        "location": [loc_rank.get(x, len(loc_rank)) for x in frame["location"]],
    })
    order = key.sort_values(["unattributed", "parameter", "role", "location"], kind="mergesort").index
    return frame.take(order).reset_index(drop=True)


def unattributed_bytes(ledger_frame: pd.DataFrame) -> int:
    """Bytes of the ledger rows the report could not attribute (parameter "" and role other),
    tile memory at the peak plus Streaming Memory."""
    rows = ledger_frame[(ledger_frame["parameter"] == "") & (ledger_frame["role"] == "other")]
    tile = int(rows.loc[rows["location"] != "streaming_memory", "bytes_at_peak"].sum())
    return tile + int(rows.loc[rows["location"] == "streaming_memory", "bytes"].sum())


# --------------------------------------------------------------------------------------------
# Views of a comparison's ledger diff (Comparison.ledger: one row per (parameter, role, location)
# with base_/new_/delta_ bytes, bytes at each peak and each side's first/last step)


def _steps_text(first: Any, last: Any) -> str:
    if first is None or last is None or first is pd.NA or last is pd.NA:
        return ""
    return f"{int(first)}-{int(last)}"


def ledger_moves(ledger_diff: pd.DataFrame, n: int | None = 8) -> pd.DataFrame:
    """See :meth:`profcompare.comparison.Comparison.ledger_moves` (``ledger_diff`` is its ``ledger``)."""

    changed = ledger_diff[ledger_diff["delta_bytes"] != 0]
    columns = ["parameter", "role", *[f"{side}_{loc}" for side in ("base", "new") for loc in LOCATIONS],
               "base_steps", "new_steps", "moved_bytes"]
    if not len(changed):
        return pd.DataFrame({c: pd.Series([], dtype=object if c in ("parameter", "role", "base_steps", "new_steps")
                                          else np.int64) for c in columns})
    # (parameter, role, location) is unique in the ledger diff: one row per location of a key;
    # vectorised (a million-variable report has tens of thousands of keys)
    key = ledger_diff["parameter"].astype(str) + "\x00" + ledger_diff["role"].astype(str)
    moved_keys = pd.unique(key[(ledger_diff["delta_bytes"] != 0).to_numpy()])
    rows = ledger_diff[key.isin(moved_keys).to_numpy()]
    rows_key = key[rows.index]
    frame = pd.DataFrame({"_key": moved_keys})
    first = rows.groupby(rows_key.to_numpy(), sort=False)[["parameter", "role"]].first()
    frame["parameter"] = first.loc[moved_keys, "parameter"].to_numpy(dtype=object)
    frame["role"] = first.loc[moved_keys, "role"].to_numpy(dtype=object)
    location = rows["location"].to_numpy(dtype=object)
    for side in ("base", "new"):
        values = rows[f"{side}_bytes"].to_numpy(dtype=np.int64)
        for loc in LOCATIONS:
            here = pd.Series(np.where(location == loc, values, 0), index=rows_key.to_numpy())
            frame[f"{side}_{loc}"] = here.groupby(level=0, sort=False).sum().loc[moved_keys].to_numpy(dtype=np.int64)
    nal = rows[location == "not_always_live"]
    nal_key = rows_key[nal.index].to_numpy()
    for side in ("base", "new"):
        steps = pd.Series([_steps_text(f, la) for f, la in zip(nal[f"{side}_first_step"].astype(object),
                                                               nal[f"{side}_last_step"].astype(object), strict=True)],
                          index=nal_key, dtype=object)
        frame[f"{side}_steps"] = steps.reindex(moved_keys).fillna("").to_numpy(dtype=object)
    moved = pd.Series(np.abs(rows["delta_bytes"].to_numpy(dtype=np.int64)), index=rows_key.to_numpy())
    frame["moved_bytes"] = moved.groupby(level=0, sort=False).sum().loc[moved_keys].to_numpy(dtype=np.int64)
    frame = frame[columns]
    for c in ("parameter", "role", "base_steps", "new_steps"):
        frame[c] = frame[c].astype(object)
    frame = frame.sort_values(["moved_bytes", "parameter", "role"], ascending=[False, True, True], kind="mergesort")
    frame = frame.reset_index(drop=True)
    return frame if n is None else frame.head(n).reset_index(drop=True)


def ledger_by_parameter(ledger_diff: pd.DataFrame) -> pd.DataFrame:
    """See :meth:`profcompare.comparison.Comparison.ledger_by_parameter`."""

    columns = ["parameter"] + [f"{side}_{loc}" for loc in (*LOCATIONS, "tile_memory") for side in ("base", "new", "delta")]
    if not len(ledger_diff):
        return pd.DataFrame({c: pd.Series([], dtype=object if c == "parameter" else np.int64) for c in columns})
    frame = pd.DataFrame({"parameter": ledger_diff["parameter"].to_numpy(dtype=object)})
    for loc in LOCATIONS:
        here = (ledger_diff["location"] == loc).to_numpy()
        for side in ("base", "new", "delta"):
            frame[f"{side}_{loc}"] = np.where(here, ledger_diff[f"{side}_bytes"].to_numpy(dtype=np.int64), 0)
    grouped = frame.groupby("parameter", sort=False).sum()
    for side in ("base", "new", "delta"):
        # Streaming Memory is off chip: it never counts towards the tile memory a parameter costs
        grouped[f"{side}_tile_memory"] = sum(grouped[f"{side}_{loc}"] for loc in TILE_LOCATIONS)
    grouped = grouped.reset_index()
    grouped["parameter"] = grouped["parameter"].astype(object)
    grouped = grouped[columns]
    order = np.lexsort((grouped["parameter"].to_numpy(dtype=str),
                        -np.abs(grouped["delta_streaming_memory"].to_numpy()),
                        -np.abs(grouped["delta_tile_memory"].to_numpy()),
                        (grouped["parameter"] == "").to_numpy()))
    return grouped.take(order).reset_index(drop=True)


def peak_composition(ledger_diff: pd.DataFrame) -> pd.DataFrame:
    """See :meth:`profcompare.comparison.Comparison.peak_composition`."""
    nal = ledger_diff[ledger_diff["location"] == "not_always_live"]
    frame = pd.DataFrame({
        "parameter": nal["parameter"].to_numpy(dtype=object),
        "role": nal["role"].to_numpy(dtype=object),
        "base_bytes": nal["base_bytes_at_peak"].to_numpy(dtype=np.int64),
        "new_bytes": nal["new_bytes_at_peak"].to_numpy(dtype=np.int64),
        "delta_bytes": nal["delta_bytes_at_peak"].to_numpy(dtype=np.int64),
    })
    frame = frame[(frame["base_bytes"] != 0) | (frame["new_bytes"] != 0)]
    order = np.lexsort((frame["role"].to_numpy(dtype=str), frame["parameter"].to_numpy(dtype=str),
                        -np.abs(frame["delta_bytes"].to_numpy())))
    return frame.take(order).reset_index(drop=True)


def register_report_methods() -> None:
    """Make :func:`ledger` and :func:`live_at_peak` the bodies of ``Report.ledger()`` and
    ``Report.live_at_peak()`` (the model looks them up in :mod:`profcompare.base.presenters`)."""
    presenters.register("Report.ledger", ledger)
    presenters.register("Report.live_at_peak", live_at_peak)


__all__ = ["LEDGER_COLUMNS", "TILE_LOCATIONS", "ledger", "ledger_by_parameter", "ledger_moves", "peak_composition", "live_at_peak", "peak_step",
           "register_report_methods", "sort_ledger", "unattributed_bytes"]
