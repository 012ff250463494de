"""Liveness at any program step of one report: which step a selector names, the variables live
there, and the report's highest peaks.

Pure functions over a :class:`~profcompare.model.Report` (no I/O, no wording). They generalise
:func:`profcompare.analysis.ledger.live_at_peak` from the not-always-live peak to any step:

- :func:`parse_selector` / :func:`resolve_step`: ``peak`` (the not-always-live peak step), an
  integer step, or a regular expression searched in the liveness table's program names (the
  first matching step);
- :func:`live_at`: the not-always-live variables live at a step with their ledger attribution
  (parameter, role), and :func:`always_live_total` (what is live at every step);
- :func:`top_peaks`: the highest local peaks of the not-always-live curve, one step per peak.

The curve is the liveness table's ``not_always_live_bytes`` per step; a table with an ``ipu``
column (one row per step and IPU) is summed over its IPUs first, and :func:`per_ipu_at` gives
each IPU's share at a step.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from profcompare.analysis.ledger import _live_mask
from profcompare.errors import ProfcompareError
from profcompare.model import Report, liveness_per_step

#: the selector naming the not-always-live peak step
PEAK = "peak"

#: how a step was chosen: the peak, the step number given, the first program matching a regex,
#: or (in a comparison) the step aligned by program with the other report's chosen step
HOW = ("peak", "step", "match", "aligned")

#: Columns of :func:`live_at`, in order.
LIVE_AT_COLUMNS: tuple[str, ...] = (
    "name", "parameter", "role", "location", "kind", "bytes", "first_step", "last_step",
)

#: Columns of :func:`top_peaks`, in order.
PEAK_COLUMNS: tuple[str, ...] = ("rank", "step", "program", "not_always_live_bytes")


class StepSelectorError(ProfcompareError):
    """A step selector that names no step: malformed, out of range, or matching no program."""


@dataclass(frozen=True)
class StepSelector:
    """A parsed selector: ``kind`` is ``peak``, ``step`` (``step`` set) or ``regex``
    (``pattern`` set, compiled); ``text`` is what the user wrote."""

    text: str
    kind: str
    step: int | None = None
    pattern: re.Pattern[str] | None = None


@dataclass(frozen=True)
class StepChoice:
    """The step a selector named in one report: its ``step`` number, ``program`` name and
    ``program_type``, ``how`` it was chosen (one of :data:`HOW`) and the liveness table's
    ``not_always_live_bytes`` there (summed over the replica's tiles)."""

    step: int
    program: str
    program_type: str
    how: str
    not_always_live_bytes: int


def parse_selector(text: str) -> StepSelector:
    """Parse a step selector: ``peak`` (any case), a non-negative integer step, or else a
    regular expression for program names. Raises :class:`StepSelectorError` for an empty
    selector or an invalid regular expression."""
    stripped = text.strip()
    if not stripped:
        raise StepSelectorError("--at needs peak, a step number or a regular expression for program names")
    if stripped.lower() == PEAK:
        return StepSelector(text, "peak")
    if stripped.isdigit():
        return StepSelector(text, "step", step=int(stripped))
    try:
        pattern = re.compile(stripped)
    except re.error as exc:
        raise StepSelectorError(f"--at {text!r} is not a valid regular expression: {exc}") from None
    return StepSelector(text, "regex", pattern=pattern)


def step_curve(report: Report) -> pd.DataFrame:
    """The not-always-live curve of ``report``, one row per step in step order (see
    :func:`curve_of`)."""
    return report.liveness_per_step()


def curve_of(liveness: pd.DataFrame) -> pd.DataFrame:
    """The not-always-live curve of a liveness table, one row per step in step order
    (:func:`profcompare.model.liveness_per_step`: the IPUs' rows of a step summed).

    Columns: step (int64), program (str), program_type (str), not_always_live_bytes (int64).
    Empty for an empty table.
    """
    return liveness_per_step(liveness)


def per_ipu_at(liveness: pd.DataFrame, step: int) -> pd.DataFrame:
    """Not-always-live bytes of each IPU at ``step`` of a liveness table that has an ``ipu``
    column. Columns: ipu (int64), not_always_live_bytes (int64); sorted by ipu; empty when the
    table's rows are for the whole replica (``ipu`` <NA>: the figure is then for the replica only)."""
    ipu = liveness["ipu"].to_numpy(dtype="int64", na_value=-1) if "ipu" in liveness.columns else None
    if ipu is None or not (ipu >= 0).any():
        return pd.DataFrame({"ipu": pd.Series([], dtype=np.int64),
                             "not_always_live_bytes": pd.Series([], dtype=np.int64)})
    rows = liveness[(liveness["step"].to_numpy(dtype=np.int64) == step) & (ipu >= 0)]
    summed = rows.groupby("ipu", sort=True)["not_always_live_bytes"].sum()
    return pd.DataFrame({"ipu": summed.index.to_numpy(dtype=np.int64),
                         "not_always_live_bytes": summed.to_numpy(dtype=np.int64)})


def _choice(curve: pd.DataFrame, position: int, how: str) -> StepChoice:
    return StepChoice(
        step=int(curve["step"].iat[position]),
        program=str(curve["program"].iat[position]),
        program_type=str(curve["program_type"].iat[position]),
        how=how,
        not_always_live_bytes=int(curve["not_always_live_bytes"].iat[position]),
    )


def choice_at(report: Report, step: int, how: str = "step") -> StepChoice:
    """The :class:`StepChoice` of ``step`` in ``report`` (chosen ``how``). Raises
    :class:`StepSelectorError` when the report has no such step."""
    curve = step_curve(report)
    _require_steps(report, curve)
    hits = np.flatnonzero(curve["step"].to_numpy(dtype=np.int64) == step)
    if not len(hits):
        first, last = int(curve["step"].iat[0]), int(curve["step"].iat[-1])
        raise StepSelectorError(f"no step {step} in {report.label} (its steps are {first}-{last})")
    return _choice(curve, int(hits[0]), how)


def first_match(report: Report, pattern: re.Pattern[str]) -> StepChoice | None:
    """The first step of ``report`` whose program name ``pattern`` finds (``re.search``), or
    None when no program matches."""
    curve = step_curve(report)
    programs = curve["program"].to_numpy(dtype=object)
    for position, program in enumerate(programs):
        if pattern.search(str(program)):
            return _choice(curve, position, "match")
    return None


def peak_choice(report: Report) -> StepChoice:
    """The not-always-live peak step of ``report`` (the first step with the most bytes, as
    :func:`profcompare.analysis.ledger.peak_step`). Raises :class:`StepSelectorError` without
    a liveness table."""
    curve = step_curve(report)
    _require_steps(report, curve)
    return _choice(curve, int(np.argmax(curve["not_always_live_bytes"].to_numpy(dtype=np.int64))), "peak")


def resolve_step(report: Report, selector: StepSelector | str) -> StepChoice:
    """The step ``selector`` names in ``report`` (see :func:`parse_selector`): the peak, the
    step given, or the first step whose program matches. Raises :class:`StepSelectorError`
    when the report has no liveness table, no such step, or no matching program."""
    chosen = parse_selector(selector) if isinstance(selector, str) else selector
    if chosen.kind == "peak":
        return peak_choice(report)
    if chosen.kind == "step":
        assert chosen.step is not None
        return choice_at(report, chosen.step)
    assert chosen.pattern is not None
    _require_steps(report, step_curve(report))
    found = first_match(report, chosen.pattern)
    if found is None:
        raise StepSelectorError(f"no program of {report.label} matches --at {chosen.text!r}")
    return found


def _require_steps(report: Report, curve: pd.DataFrame) -> None:
    if not len(curve):
        raise StepSelectorError(f"{report.label} records no liveness (program steps)")


def live_at(report: Report, step: int) -> pd.DataFrame:
    """The not-always-live variables of ``report`` live at ``step`` (``first_step <= step <=
    last_step``), with their ledger attribution.

    Columns (:data:`LIVE_AT_COLUMNS`): name (str), parameter (str, "" for activations and what
    the report cannot attribute), role (str, :data:`profcompare.model.ROLES`), location (str,
    always ``not_always_live``: the ledger location these bytes belong to), kind (str), bytes
    (int64, per replica), first_step, last_step (Int64). Largest ``bytes`` first, then name.
    Always-live memory is live at every step: see :func:`always_live_total`.
    """
    variables = report.variables
    rows = variables[_live_mask(variables, step)]
    order = np.lexsort((rows["name"].to_numpy(dtype=object).astype(str), -rows["bytes"].to_numpy(dtype=np.int64)))
    rows = rows.take(order)
    return pd.DataFrame({
        "name": pd.Series(rows["name"].to_numpy(dtype=object), dtype=object),
        "parameter": pd.Series(rows["parameter"].to_numpy(dtype=object), dtype=object),
        "role": pd.Series(rows["role"].astype(str).to_numpy(dtype=object), dtype=object),
        "location": pd.Series(np.full(len(rows), "not_always_live", dtype=object), dtype=object),
        "kind": pd.Series(rows["kind"].astype(str).to_numpy(dtype=object), dtype=object),
        "bytes": rows["bytes"].to_numpy(dtype=np.int64),
        "first_step": pd.array(rows["first_step"].to_numpy(), dtype="Int64"),
        "last_step": pd.array(rows["last_step"].to_numpy(), dtype="Int64"),
    })


def always_live_total(report: Report) -> int:
    """Bytes live at every step of ``report``: the tiles' always-live bytes (code, vertex state,
    constants and always-live variables), per replica; 0 without a tiles table."""
    return int(report.tiles["always_live_bytes"].sum())


def top_peaks(report: Report, n: int = 3) -> pd.DataFrame:
    """The ``n`` highest local peaks of ``report``'s not-always-live curve.

    A peak is a run of equal values higher than the runs either side of it (a plateau counts
    once, at its first step; the first and last steps count when higher than their one
    neighbour). Columns (:data:`PEAK_COLUMNS`): rank (int64, 1 = highest), step (int64),
    program (str), not_always_live_bytes (int64); highest first, earlier step first on a tie.
    Empty without a liveness table.
    """
    if n < 0:
        raise ProfcompareError(f"the number of peaks must be non-negative, got {n}")
    curve = step_curve(report)
    values = curve["not_always_live_bytes"].to_numpy(dtype=np.int64)
    if not len(values):
        return pd.DataFrame({"rank": pd.Series([], dtype=np.int64), "step": pd.Series([], dtype=np.int64),
                             "program": pd.Series([], dtype=object),
                             "not_always_live_bytes": pd.Series([], dtype=np.int64)})
    starts = np.r_[0, np.flatnonzero(values[1:] != values[:-1]) + 1]
    run_values = values[starts].astype(np.float64)
    before = np.r_[-np.inf, run_values[:-1]]
    after = np.r_[run_values[1:], -np.inf]
    peaks = starts[(run_values > before) & (run_values > after)]
    order = np.lexsort((peaks, -values[peaks]))[:n]
    chosen = peaks[order]
    return pd.DataFrame({
        "rank": np.arange(1, len(chosen) + 1, dtype=np.int64),
        "step": curve["step"].to_numpy(dtype=np.int64)[chosen],
        "program": pd.Series(curve["program"].to_numpy(dtype=object)[chosen], dtype=object),
        "not_always_live_bytes": values[chosen],
    })


__all__ = [
    "HOW",
    "LIVE_AT_COLUMNS",
    "PEAK",
    "PEAK_COLUMNS",
    "StepChoice",
    "StepSelector",
    "StepSelectorError",
    "always_live_total",
    "choice_at",
    "curve_of",
    "first_match",
    "live_at",
    "parse_selector",
    "peak_choice",
    "per_ipu_at",
    "resolve_step",
    "step_curve",
    "top_peaks",
]
