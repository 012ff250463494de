"""Liveness at one step of each of two reports, aligned: ``compare --at peak|STEP|REGEX``.

:func:`compare_at` resolves a step selector in both reports of a :class:`Comparison` (pairing
the two steps through the comparison's liveness alignment by program name), then joins the two
sets of variables live there, per (parameter, role) and per variable, with the fixed
``base_`` / ``new_`` / ``delta_`` columns and ``status`` of every comparison table. It
generalises :meth:`Comparison.peak_composition` from each report's peak to any step.

How the selector picks the two steps:

- ``peak``: each report's own not-always-live peak step (as ``peak_composition``);
- ``STEP`` (an integer): base's step STEP, and the new step the liveness alignment pairs with it;
- a regular expression: in each report the first step whose program name it finds; when only
  one report has such a program, the other's step is the one aligned with it.

Where the aligned position has no step on the other side (a program only one report runs), the
nearest earlier aligned step of the other side is taken (else the nearest later one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from profcompare.analysis.at_step import (
    StepChoice,
    StepSelector,
    StepSelectorError,
    always_live_total,
    choice_at,
    first_match,
    live_at,
    parse_selector,
    peak_choice,
    per_ipu_at,
    top_peaks,
)
from profcompare.comparison.comparison import Comparison
from profcompare.comparison.join import _align_keys, _take, _value_columns
from profcompare.comparison.variables import _normalise_names
from profcompare.model import Report

#: Columns of :attr:`AtStepComparison.by_parameter`, in order.
BY_PARAMETER_COLUMNS: tuple[str, ...] = (
    "parameter", "role", "base_bytes", "new_bytes", "delta_bytes", "delta_pct", "status",
)

#: Columns of :attr:`AtStepComparison.variables`, in order.
VARIABLE_COLUMNS: tuple[str, ...] = (
    "name", "base_name", "new_name", "parameter", "role", "base_bytes", "new_bytes", "delta_bytes",
    "delta_pct", "status", "base_first_step", "base_last_step", "new_first_step", "new_last_step",
)

#: Columns of :attr:`AtStepComparison.per_ipu`, in order.
PER_IPU_COLUMNS: tuple[str, ...] = ("ipu", "base_bytes", "new_bytes", "delta_bytes")

#: How many of each report's highest peaks a result lists.
PEAKS_LISTED = 3


@dataclass(frozen=True)
class StepSide:
    """One report's side of an :class:`AtStepComparison`: the step chosen and its totals (bytes
    per replica). ``listed_bytes`` is what the variables table lists as live there; the liveness
    table's ``choice.not_always_live_bytes`` may hold more (memory no variable row names)."""

    choice: StepChoice
    always_live_bytes: int
    listed_bytes: int

    @property
    def step(self) -> int:
        """The step number."""
        return self.choice.step

    @property
    def not_always_live_bytes(self) -> int:
        """Not-always-live bytes at the step (the liveness table's figure)."""
        return self.choice.not_always_live_bytes

    @property
    def total_bytes(self) -> int:
        """Everything live at the step: always-live + not-always-live."""
        return self.always_live_bytes + self.choice.not_always_live_bytes


@dataclass(frozen=True, eq=False)
class AtStepComparison:
    """What is live at one step of each report, aligned (build it with :func:`compare_at`).

    - ``selector``: the selector as given;
    - ``base`` / ``new``: the step chosen in each report and its totals (:class:`StepSide`);
    - ``by_parameter``: one row per (parameter, role) live at either step
      (:data:`BY_PARAMETER_COLUMNS`; bytes int64, ``status`` as every comparison table), largest
      |delta_bytes| first, then parameter (the unattributed "" last) and role;
    - ``variables``: one row per variable live at either step (:data:`VARIABLE_COLUMNS`), paired
      on (parameter, role, normalised name), k-th with k-th; ``name`` is the new name where new
      has the row; ``added`` = live only at new's step, ``removed`` = only at base's; first and
      last live steps of each side (Int64, <NA> for the missing side); largest |delta_bytes|
      first, then the larger side's bytes, then name;
    - ``base_peaks`` / ``new_peaks``: each report's :data:`PEAKS_LISTED` highest peaks
      (:func:`profcompare.analysis.at_step.top_peaks`);
    - ``per_ipu``: not-always-live bytes of each IPU at the two steps (:data:`PER_IPU_COLUMNS`,
      see :func:`join_per_ipu`); empty when neither liveness table has per-IPU rows.
    """

    comparison: Comparison
    selector: str
    base: StepSide
    new: StepSide
    by_parameter: pd.DataFrame
    variables: pd.DataFrame
    base_peaks: pd.DataFrame
    new_peaks: pd.DataFrame
    per_ipu: pd.DataFrame

    @property
    def largest_change(self) -> pd.Series | None:
        """The ``by_parameter`` row with the largest |delta_bytes| (None when none changed)."""
        frame = self.by_parameter
        if not len(frame) or int(frame["delta_bytes"].iat[0]) == 0:
            return None
        return frame.iloc[0]


def _aligned_step(liveness: pd.DataFrame, side: str, step: int) -> int | None:
    """The step of the other report that the liveness alignment pairs with ``side``'s ``step``:
    the one at the same position, else the nearest earlier position's, else the nearest later
    one's; None when the other report has no steps."""
    other = "new" if side == "base" else "base"
    mine = liveness[f"{side}_step"].to_numpy(dtype="float64", na_value=np.nan)
    theirs = liveness[f"{other}_step"].to_numpy(dtype="float64", na_value=np.nan)
    where = np.flatnonzero(mine == step)
    present = np.flatnonzero(~np.isnan(theirs))
    if not len(where) or not len(present):
        return None
    position = int(where[0])
    earlier = present[present <= position]
    chosen = int(earlier[-1]) if len(earlier) else int(present[0])
    return int(theirs[chosen])


def _aligned_choice(cmp: Comparison, side: str, choice: StepChoice) -> StepChoice:
    other = cmp.new if side == "base" else cmp.base
    step = _aligned_step(cmp.liveness, side, choice.step)
    if step is None:
        raise StepSelectorError(f"{other.label} records no liveness (program steps)")
    return choice_at(other, step, how="aligned")


def resolve_steps(cmp: Comparison, selector: StepSelector | str) -> tuple[StepChoice, StepChoice]:
    """The (base, new) steps ``selector`` names in the two reports of ``cmp`` (see the module
    docstring). Raises :class:`StepSelectorError` when it names no step."""
    chosen = parse_selector(selector) if isinstance(selector, str) else selector
    if chosen.kind == "peak":
        return peak_choice(cmp.base), peak_choice(cmp.new)
    if chosen.kind == "step":
        assert chosen.step is not None
        base = choice_at(cmp.base, chosen.step)
        return base, _aligned_choice(cmp, "base", base)
    assert chosen.pattern is not None
    for report in (cmp.base, cmp.new):
        if not len(report.liveness):
            raise StepSelectorError(f"{report.label} records no liveness (program steps)")
    base_match, new_match = first_match(cmp.base, chosen.pattern), first_match(cmp.new, chosen.pattern)
    if base_match is None and new_match is None:
        raise StepSelectorError(f"no program of {cmp.base.label} or {cmp.new.label} matches --at {chosen.text!r}")
    if base_match is None:
        assert new_match is not None
        return _aligned_choice(cmp, "new", new_match), new_match
    if new_match is None:
        return base_match, _aligned_choice(cmp, "base", base_match)
    return base_match, new_match


def _side(report: Report, choice: StepChoice, live: pd.DataFrame) -> StepSide:
    return StepSide(choice, always_live_total(report), int(live["bytes"].sum()))


def _keys(*columns: pd.Series) -> np.ndarray:
    """One string key per row joining ``columns`` (a separator no name holds)."""
    joined = ["\x00".join(parts) for parts in zip(*(c.astype(str).tolist() for c in columns), strict=True)]
    return np.asarray(joined, dtype=object)


def _join_by_parameter(base: pd.DataFrame, new: pd.DataFrame, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    def grouped(live: pd.DataFrame) -> pd.DataFrame:
        return live.groupby(["parameter", "role"], sort=True, as_index=False)["bytes"].sum()

    b, n = grouped(base), grouped(new)
    bi, ni = _align_keys(_keys(b["parameter"], b["role"]), _keys(n["parameter"], n["role"]))
    frame = pd.DataFrame({
        "parameter": pd.Series(np.where(bi >= 0, _take(b["parameter"].to_numpy(dtype=object), bi, None),
                                        _take(n["parameter"].to_numpy(dtype=object), ni, None)), dtype=object),
        "role": pd.Series(np.where(bi >= 0, _take(b["role"].to_numpy(dtype=object), bi, None),
                                   _take(n["role"].to_numpy(dtype=object), ni, None)), dtype=object),
        **_value_columns("bytes", b["bytes"].to_numpy(), n["bytes"].to_numpy(), bi, ni, noise_bytes, noise_pct,
                         "int64"),
    })
    order = np.lexsort((frame["role"].to_numpy(dtype=str), frame["parameter"].to_numpy(dtype=str),
                        (frame["parameter"] == "").to_numpy(), -np.abs(frame["delta_bytes"].to_numpy())))
    return frame.take(order).reset_index(drop=True)[list(BY_PARAMETER_COLUMNS)]


def _join_variables(base: pd.DataFrame, new: pd.DataFrame, noise_bytes: float, noise_pct: float) -> pd.DataFrame:
    def keys(live: pd.DataFrame) -> np.ndarray:
        return _keys(live["parameter"], live["role"], pd.Series(_normalise_names(live["name"].to_numpy(dtype=object))))

    bi, ni = _align_keys(keys(base), keys(new))

    def pick(column: str) -> pd.Series:
        return pd.Series(np.where(ni >= 0, _take(new[column].to_numpy(dtype=object), ni, None),
                                  _take(base[column].to_numpy(dtype=object), bi, None)), dtype=object)

    def steps(live: pd.DataFrame, column: str, index: np.ndarray) -> pd.Series:
        values = live[column].to_numpy(dtype="float64", na_value=np.nan)
        taken = _take(values, index, np.nan)
        return pd.Series(pd.array([None if np.isnan(v) else int(v) for v in taken], dtype="Int64"))

    frame = pd.DataFrame({
        "name": pick("name"),
        "base_name": pd.Series(_take(base["name"].to_numpy(dtype=object), bi, None), dtype=object),
        "new_name": pd.Series(_take(new["name"].to_numpy(dtype=object), ni, None), dtype=object),
        "parameter": pick("parameter"),
        "role": pick("role"),
        **_value_columns("bytes", base["bytes"].to_numpy(), new["bytes"].to_numpy(), bi, ni, noise_bytes, noise_pct,
                         "int64"),
        "base_first_step": steps(base, "first_step", bi),
        "base_last_step": steps(base, "last_step", bi),
        "new_first_step": steps(new, "first_step", ni),
        "new_last_step": steps(new, "last_step", ni),
    })
    larger = np.maximum(frame["base_bytes"].to_numpy(), frame["new_bytes"].to_numpy())
    order = np.lexsort((frame["name"].to_numpy(dtype=str), -larger, -np.abs(frame["delta_bytes"].to_numpy())))
    return frame.take(order).reset_index(drop=True)[list(VARIABLE_COLUMNS)]


def join_per_ipu(base: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """Two :func:`~profcompare.analysis.at_step.per_ipu_at` frames side by side: an outer join
    on ipu, a missing IPU counting 0. Columns :data:`PER_IPU_COLUMNS` (int64); sorted by ipu;
    empty when both are."""
    b = base.set_index("ipu")["not_always_live_bytes"]
    n = new.set_index("ipu")["not_always_live_bytes"]
    ipus = np.union1d(b.index.to_numpy(dtype=np.int64), n.index.to_numpy(dtype=np.int64))
    base_bytes = b.reindex(ipus, fill_value=0).to_numpy(dtype=np.int64)
    new_bytes = n.reindex(ipus, fill_value=0).to_numpy(dtype=np.int64)
    return pd.DataFrame({"ipu": ipus.astype(np.int64), "base_bytes": base_bytes, "new_bytes": new_bytes,
                         "delta_bytes": new_bytes - base_bytes})


def compare_at(cmp: Comparison, selector: StepSelector | str) -> AtStepComparison:
    """What is live at the step ``selector`` names in each report of ``cmp``, aligned (see
    :class:`AtStepComparison` and the module docstring for how the steps are chosen). Status
    uses the comparison's noise threshold. Raises
    :class:`~profcompare.analysis.at_step.StepSelectorError` (a ProfcompareError) when the
    selector names no step: an invalid regular expression, a step the base report does not
    have, a regular expression no program name matches, or reports without liveness."""
    chosen = parse_selector(selector) if isinstance(selector, str) else selector
    base_choice, new_choice = resolve_steps(cmp, chosen)
    base_live, new_live = live_at(cmp.base, base_choice.step), live_at(cmp.new, new_choice.step)
    return AtStepComparison(
        comparison=cmp,
        selector=chosen.text,
        base=_side(cmp.base, base_choice, base_live),
        new=_side(cmp.new, new_choice, new_live),
        by_parameter=_join_by_parameter(base_live, new_live, cmp.noise_bytes, cmp.noise_pct),
        variables=_join_variables(base_live, new_live, cmp.noise_bytes, cmp.noise_pct),
        base_peaks=top_peaks(cmp.base, PEAKS_LISTED),
        new_peaks=top_peaks(cmp.new, PEAKS_LISTED),
        per_ipu=join_per_ipu(per_ipu_at(cmp.base.liveness, base_choice.step),
                             per_ipu_at(cmp.new.liveness, new_choice.step)),
    )


__all__ = [
    "BY_PARAMETER_COLUMNS",
    "PEAKS_LISTED",
    "PER_IPU_COLUMNS",
    "VARIABLE_COLUMNS",
    "AtStepComparison",
    "StepSide",
    "compare_at",
    "join_per_ipu",
    "resolve_steps",
]
