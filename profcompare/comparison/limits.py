"""``--fail-if`` limits on the relative change of a comparison's summary metrics, and on the time
diff's gates (:data:`TIME_DIFF_GATES`)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from profcompare.comparison.comparison import Comparison
from profcompare.errors import ProfcompareError
from profcompare.model import HIGHER_IS_BETTER, METRICS


@dataclass(frozen=True)
class Limit:
    """A ``--fail-if`` limit on one summary metric's relative change (new vs base).

    ``METRIC>PCT%`` fails when the metric changes by more than ``PCT`` percent (a growth limit:
    ``peak_liveness_bytes>2%``); ``METRIC<PCT%`` fails when it changes by less than ``PCT``
    percent (a drop limit: ``samples_per_second<-5%`` fails when throughput falls by more than
    5%). ``direction`` is ``">"`` or ``"<"``.
    """

    metric: str
    max_pct: float
    direction: str = ">"

    def __str__(self) -> str:
        return f"{self.metric}{self.direction}{self.max_pct:g}%"

    def violated_by(self, pct: float) -> bool:
        """Whether a change of ``pct`` percent breaks this limit: it is beyond the limit by more
        than :data:`AT_LIMIT_PCT` (a change computed as exactly the limit is at it, not beyond)."""
        if self.direction == ">":
            return pct - self.max_pct > AT_LIMIT_PCT
        return self.max_pct - pct > AT_LIMIT_PCT


#: A change this close to a limit (in percentage points) is at the limit, not beyond it: the
#: percentage is computed in float64, whose rounding (about 1e-14 relative) would otherwise make
#: 0.3 s -> 0.315 s a change of 5.000000000000004% and break a 5% limit.
AT_LIMIT_PCT = 1e-9


#: Gates of the time diff a ``--fail-if`` limit may name besides the summary metrics:
#: ``exposed_cycles`` -- the exposed device cycles per run (summed over the time diff's rows): its
#: relative change, as a summary metric's (``exposed_cycles>5%`` fails when they grew by more than
#: 5%); ``time_diff_attributed`` -- the percentage of the changed cycles the time diff charges to
#: parameters, roles or named kinds: its value (``time_diff_attributed<95%`` fails below 95%).
TIME_DIFF_GATES: tuple[str, ...] = ("exposed_cycles", "time_diff_attributed")

_LIMIT_SYNTAX = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*([<>])\s*([+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*%?\s*$")


def parse_limit(text: str) -> Limit:
    """Parse ``METRIC>PCT%`` or ``METRIC<PCT%`` (e.g. ``peak_liveness_bytes>5%``,
    ``samples_per_second<-5%``; the ``%`` is optional).

    Returns a :class:`Limit`. Raises ProfcompareError with a one-line message on bad syntax or
    an unknown metric (the message lists the metrics).
    """
    match = _LIMIT_SYNTAX.match(text or "")
    if not match:
        raise ProfcompareError(
            f"bad limit {text!r}: expected METRIC>PCT% (a growth) or METRIC<PCT% (a drop), "
            "e.g. peak_liveness_bytes>5% or samples_per_second<-5%"
        )
    metric, direction, pct = match.group(1), match.group(2), float(match.group(3))
    if metric not in METRICS and metric not in TIME_DIFF_GATES:
        raise ProfcompareError(f"unknown metric {metric!r} in limit {text!r}; metrics are "
                               f"{', '.join((*METRICS, *TIME_DIFF_GATES))}")
    return Limit(metric=metric, max_pct=pct, direction=direction)


def _format_value(value: float, unit: str) -> str:
    if float(value).is_integer():
        return f"{int(value):,} {unit}"
    return f"{value:,.4g} {unit}"


def _format_pct(pct: float, limit: float) -> str:
    """``|pct|`` with two decimals, or as many more as it takes not to print the limit itself."""
    decimals = 2
    while decimals < 12 and round(abs(pct), decimals) == abs(limit):
        decimals += 1
    return f"{abs(pct):.{decimals}f}%"


def check_limits(comparison: Comparison, limits: Iterable[Limit]) -> list[str]:
    """One message per violated limit (empty list when all hold).

    A limit is violated when the metric's ``delta_pct`` is beyond it (see :class:`Limit`). The
    message states the change (its size, whether the metric grew or dropped and whether that is
    *worse* or *better*: each metric declares whether higher is better,
    :data:`profcompare.model.HIGHER_IS_BETTER`: throughput; lower is better for memory and
    cycles) and the signed limit it is above or below. A limit on the other side of zero than
    its direction (``samples_per_second<5%``: fails unless throughput grew by 5%) says so, and
    how the more usual limit is written. When base is 0 the percentage is undefined: growth
    from 0 violates a growth limit, nothing violates a drop limit. A metric that is not
    available in either report (NaN, e.g. cycles without an execution profile) cannot be
    checked and is reported as a violation, since the check the user asked for did not happen.
    """
    messages: list[str] = []
    summary = comparison.summary
    for limit in limits:
        if limit.metric == "time_diff_attributed":
            message = _attributed_message(comparison, limit)
            if message:
                messages.append(message)
            continue
        if limit.metric == "exposed_cycles":
            base, new, unit = _exposed(comparison)
            pct = 100.0 * (new - base) / base if base else math.nan
        else:
            row: pd.Series = summary.loc[limit.metric]
            base, new, pct = float(row["base"]), float(row["new"]), float(row["delta_pct"])
            unit = str(row["unit"])
        if math.isnan(base) or math.isnan(new):
            sides = [label for label, value in (("base", base), ("new", new)) if math.isnan(value)]
            messages.append(f"{limit}: cannot check, {limit.metric} is not available in {' and '.join(sides)}")
            continue
        if base == 0:
            if new > 0 and limit.direction == ">":
                verdict = "better" if limit.metric in HIGHER_IS_BETTER else "worse"
                messages.append(f"{limit}: {limit.metric} {verdict}: grew from 0 to {_format_value(new, unit)}")
            continue
        if not limit.violated_by(pct):
            continue
        if new == base:
            change = f"{limit.metric} unchanged ({_format_value(base, unit)})"
        else:
            grew = new > base
            better = grew == (limit.metric in HIGHER_IS_BETTER)
            change = (f"{limit.metric} {'better' if better else 'worse'} by {_format_pct(pct, limit.max_pct)} "
                      f"({'grew' if grew else 'dropped'} {_format_value(base, unit)} -> {_format_value(new, unit)})")
        side = "above" if limit.direction == ">" else "below"
        message = f"{limit}: {change}, {side} the {limit.max_pct:+g}% limit"
        if limit.direction == "<" and limit.max_pct > 0:
            message += (f" (it asks for a gain of at least {limit.max_pct:g}%; a drop of more than "
                        f"{limit.max_pct:g}% is {limit.metric}<-{limit.max_pct:g}%)")
        elif limit.direction == ">" and limit.max_pct < 0:
            message += (f" (it asks for a drop of at least {-limit.max_pct:g}%; a growth of more than "
                        f"{-limit.max_pct:g}% is {limit.metric}>{-limit.max_pct:g}%)")
        messages.append(message)
    return messages


def _exposed(comparison: Comparison) -> tuple[float, float, str]:
    """The exposed device cycles per run of base and new (NaN where a side has no execution)."""
    summary = comparison.time_diff_summary()
    base = summary.base_exposed_cycles if len(comparison.base.execution) else math.nan
    new = summary.new_exposed_cycles if len(comparison.new.execution) else math.nan
    return base, new, "cycles"


def _attributed_message(comparison: Comparison, limit: Limit) -> str | None:
    """The violation of a limit on ``time_diff_attributed`` (a value in percent, not a change)."""
    if not len(comparison.base.execution) or not len(comparison.new.execution):
        return f"{limit}: cannot check, the time diff needs an execution profile on both sides"
    value = 100.0 * comparison.time_diff_summary().attributed_share
    if not limit.violated_by(value):
        return None
    side = "above" if limit.direction == ">" else "below"
    return (f"{limit}: the time diff charges {_format_pct(value, limit.max_pct)} of the changed cycles to "
            f"parameters, roles or named kinds, {side} the {limit.max_pct:g}% limit")
