"""The layout space of a workload: the knobs ``profcompare advise`` searches, their candidate
values, the knobs derived from them and the constraints that rule combinations out.

A workload declares its space next to its ``WORKLOAD`` (``ADVISE = AdviseSpace(...)``, with the
declarations of :mod:`profcompare.backend.knobs`, which this module re-exports); this module
turns one into the list of layout points (variant + knob values) with the user's ``--set`` /
``--fix`` / ``--size`` applied. Invalid combinations are
pruned here, before anything runs, each with a reason (a fixed sentence, so that the outputs
can count points per reason). Pure: no I/O, nothing runs.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from profcompare.backend.knobs import (
    MAX_SPACE_CANDIDATES,
    VARIANT,
    AdviseSpace,
    Constraint,
    Derived,
    Dimension,
    Infeasible,
    SearchContext,
    batch_share,
    layout_text,
    powers_of_two,
)
from profcompare.errors import WorkloadError


@dataclass(frozen=True)
class Candidate:
    """One layout point: its knob values (variant, searched and derived knobs, typed), and either
    the full config it runs with, or the reason it was pruned."""

    knobs: Mapping[str, Any]
    config: Mapping[str, Any] | None
    reason: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "knobs", MappingProxyType(dict(self.knobs)))
        if self.config is not None:
            object.__setattr__(self, "config", MappingProxyType(dict(self.config)))

    @property
    def pruned(self) -> bool:
        """True when the point breaks a constraint (it is never run)."""
        return self.reason is not None

    @property
    def variant(self) -> str:
        """The point's variant."""
        return str(self.knobs[VARIANT])


@dataclass(frozen=True)
class Space:
    """The points of a space for one machine and batch, in a fixed order (the first dimension,
    the variant, varies slowest), with the knobs every point shares."""

    workload: str
    context: SearchContext
    dimensions: tuple[tuple[str, tuple[Any, ...]], ...]  # (knob, candidate values), variant first
    candidates: tuple[Candidate, ...]
    base: Mapping[str, Any]  # knob overrides every point shares (size preset, --fix of other knobs)
    searched: tuple[str, ...]  # the knobs that name a point (variant, dimensions, derived), in order

    @property
    def valid(self) -> tuple[Candidate, ...]:
        """The points that will run."""
        return tuple(c for c in self.candidates if not c.pruned)

    @property
    def pruned_counts(self) -> dict[str, int]:
        """Pruned points per reason, most frequent first."""
        return dict(Counter(c.reason for c in self.candidates if c.reason is not None).most_common())


def parse_assignment(text: str, option: str) -> tuple[str, list[str]]:
    """Split ``KNOB=V1,V2`` into the knob (``-`` becomes ``_``) and the value texts; one-line
    WorkloadError naming ``option`` otherwise."""
    name, sep, values_text = text.partition("=")
    name = name.strip().lstrip("-").replace("-", "_")
    values = [v.strip() for v in values_text.split(",")]
    if not sep or not name or not values_text.strip() or any(not v for v in values):
        raise WorkloadError(f"bad {option} {text!r}: expected KNOB=V1,V2,... (e.g. replicas=1,2,4)")
    return name, values


def _parse(workload: Any, name: str, text: Any) -> Any:
    from workloads import parse_knob_value

    return parse_knob_value(workload.knob(name), text)


def _check_variants(workload: Any, values: Sequence[str]) -> tuple[str, ...]:
    from workloads import did_you_mean

    for value in values:
        if value not in workload.variants:
            raise WorkloadError(f"unknown {workload.name} variant {value!r}{did_you_mean(value, list(workload.variants))}; "
                                f"valid variants: {', '.join(workload.variants)}")
    if len(set(values)) != len(values):
        raise WorkloadError(f"variant given twice in {', '.join(values)}")
    return tuple(values)


def _typed_values(workload: Any, name: str, texts: Sequence[Any]) -> tuple[Any, ...]:
    values = tuple(_parse(workload, name, t) for t in texts)
    if len(set(values)) != len(values):
        raise WorkloadError(f"knob {name}: values {', '.join(map(str, texts))} repeat a value")
    return values


def expand_space(
    space: AdviseSpace,
    workload: Any,
    context: SearchContext,
    *,
    set_values: Mapping[str, Sequence[str]] | None = None,
    fixed: Mapping[str, str] | None = None,
    size: str | None = None,
) -> Space:
    """Every layout point of ``space`` for ``context``, each either valid (with its full config)
    or pruned with a reason.

    ``set_values`` replaces a knob's candidate values (a dimension, a derived knob, the variant,
    or any other knob of the workload, which then becomes a dimension); ``fixed`` gives a knob
    one value (a dimension reduced to one value, or a config override every point shares);
    ``size`` names a preset of ``space.sizes`` (knob overrides; ``fixed`` wins). Raises a
    one-line WorkloadError for an unknown knob, variant or size, a bad value, a knob both set
    and fixed, a bad ``context``, or a space with no valid point left to run.
    """
    set_values = dict(set_values or {})
    fixed = dict(fixed or {})
    if context.ipus < 1:
        raise WorkloadError(f"bad --ipus {context.ipus}: expected an integer >= 1")
    if context.global_batch < 1:
        raise WorkloadError(f"bad --global-batch {context.global_batch}: expected an integer >= 1")
    for name in set(set_values) & set(fixed):
        raise WorkloadError(f"knob {name} is both set and fixed; drop one")
    base: dict[str, Any] = {}
    if size is not None:
        if size not in space.sizes:
            from workloads import did_you_mean

            raise WorkloadError(f"unknown {space.workload} size {size!r}{did_you_mean(size, list(space.sizes))}; valid "
                                f"sizes: {', '.join(space.sizes) or 'none'}")
        base.update(space.sizes[size])
    dimensions: dict[str, tuple[Any, ...]] = {VARIANT: space.variants}
    only_for: dict[str, tuple[str, ...]] = {}
    for dim in space.dimensions:
        dimensions[dim.knob] = dim.candidates(context)
        only_for[dim.knob] = dim.only_for
    derived = {d.knob: d for d in space.derived}
    for name, texts in {**set_values, **{k: [v] for k, v in fixed.items()}}.items():
        name = name.replace("-", "_")
        if name == VARIANT:
            dimensions[VARIANT] = _check_variants(workload, texts)
            continue
        values = _typed_values(workload, name, texts)
        if name in dimensions or name in derived or len(values) > 1:
            dimensions[name] = values  # a derived knob given values becomes a checked dimension
            only_for.setdefault(name, ())
        else:
            base[name] = values[0]
    for name in dimensions:
        if name in base:
            del base[name]
    for name in fixed:  # a fixed knob holds for the points that leave it out too
        name = name.replace("-", "_")
        if name != VARIANT and name in dimensions:
            base[name] = dimensions[name][0]
    checked = {name: rule for name, rule in derived.items() if name in dimensions}
    computed = [rule for name, rule in derived.items() if name not in dimensions]
    searched = tuple(dict.fromkeys([*dimensions, *derived]))
    defaults = {**{knob.name: knob.default for knob in workload.knobs}, **base}
    candidates: list[Candidate] = []
    _check_space_size(dimensions, only_for)
    for variant in dimensions[VARIANT]:
        # a knob that does nothing for this variant is left out of its points (it keeps its default)
        names = [n for n in dimensions if n != VARIANT and (not only_for.get(n) or variant in only_for[n])]
        axes = [dimensions[n] for n in names]
        for combo in itertools.product(*axes):
            knobs: dict[str, Any] = {VARIANT: variant, **dict(zip(names, combo))}
            candidates.append(_candidate(space, workload, context, knobs, defaults, base, computed, checked))
    result = Space(space.workload, context, tuple(dimensions.items()), tuple(candidates), MappingProxyType(base),
                   searched)
    if not result.valid:
        reasons = "; ".join(f"{reason} ({count})" for reason, count in result.pruned_counts.items())
        raise WorkloadError(f"no layout of {space.workload} is left to run on {context.ipus} IPU(s) with global batch "
                            f"{context.global_batch}: {reasons}")
    return result


def _check_space_size(dimensions: Mapping[str, tuple[Any, ...]], only_for: Mapping[str, tuple[str, ...]]) -> None:
    """Raise a one-line WorkloadError when the space has more candidates than ``advise`` expands."""
    count = 0
    for variant in dimensions[VARIANT]:
        count += math.prod(len(dimensions[n]) for n in dimensions
                           if n != VARIANT and (not only_for.get(n) or variant in only_for[n]))
    if count > MAX_SPACE_CANDIDATES:
        raise WorkloadError(f"the space has {count:,} candidate layouts, more than the {MAX_SPACE_CANDIDATES:,} advise "
                            "expands; give --set fewer values (or --fix a knob)")


def _candidate(space: AdviseSpace, workload: Any, context: SearchContext, knobs: dict[str, Any],
               defaults: Mapping[str, Any], base: Mapping[str, Any], computed: Sequence[Derived],
               checked: Mapping[str, Derived]) -> Candidate:
    """The point ``knobs``: constraints first (they see the point's knobs over the defaults and
    ``base``, not the derived knobs), then the derived knobs in order, then the workload's own
    range check of the full config."""
    from profcompare.runner import resolve_config

    for rule in computed:
        knobs[rule.knob] = None
    view = {**defaults, **{k: v for k, v in knobs.items() if v is not None}}
    for constraint in space.constraints:
        if not constraint.holds(view, context):
            return Candidate(knobs, None, constraint.reason)
    for rule in computed:
        try:
            knobs[rule.knob] = view[rule.knob] = rule.compute(view, context)
        except Infeasible as exc:
            return Candidate(knobs, None, str(exc))
    for name, rule in checked.items():
        try:
            expected = rule.compute(view, context)
        except Infeasible as exc:
            return Candidate(knobs, None, str(exc))
        if expected != knobs[name]:
            return Candidate(knobs, None, f"{name} breaks the rule {rule.rule}")
    overrides = {**base, **{k: v for k, v in knobs.items() if k != VARIANT}}
    try:
        config = resolve_config(workload, overrides)
    except WorkloadError as exc:
        return Candidate(knobs, None, f"refused by the workload: {exc}")
    return Candidate(knobs, config)


__all__ = [
    "AdviseSpace",
    "Candidate",
    "Constraint",
    "Derived",
    "Dimension",
    "Infeasible",
    "SearchContext",
    "Space",
    "VARIANT",
    "batch_share",
    "expand_space",
    "layout_text",
    "parse_assignment",
    "powers_of_two",
]
