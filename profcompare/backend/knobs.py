"""A workload's knobs as the runner, the advisor, the render layer and the workloads themselves
see them: the declarations of a layout space (the knobs ``profcompare advise`` searches, their
candidate values, derived knobs and constraints), a layout's words and a knob value's label.

Workloads declare their space here (``ADVISE = AdviseSpace(...)``); the advisor expands it
(:mod:`profcompare.advisor.space`). Pure: no I/O, nothing runs, nothing of profcompare but errors.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: the name under which the variant is a dimension of the space (``--set variant=a,b``)
VARIANT = "variant"


# The ranges of the commands' numeric options (run, sweep, advise, compare and the notebook API),
# checked when the options are parsed: a value past one is a typo, and would otherwise fail deep
# inside a search, start a process per unit or overflow a count.

#: numpy's and Optuna's samplers take seeds from 0 to 2**32 - 1 (``np.random.seed``)
SEED_RANGE = (0, 2**32 - 1)
#: The most worker processes a run starts on this machine (``--jobs``, ``--dask local:N``): each is
#: a simulator process of about 300 MB, so 1,024 of them need 300 GB, past the largest
#: workstation. A remote Dask cluster's size is its own.
MAX_LOCAL_WORKERS = 1024
#: The largest IPU system built, Bow Pod1024; the workloads' replica knobs stop earlier (64, 256).
MAX_IPUS = 1024
#: The largest global batch the workloads' knobs can form: micro_batch 2**16 x grad_accum 2**16
#: x 256 replicas (see ``workloads.BATCH_BOUNDS``).
MAX_GLOBAL_BATCH = 2**40
#: Points one advise search (``--budget-points``) or one sweep grid may run: each is a run of a
#: second to minutes, so 2**16 (65,536) is most of a day on one worker at the least, and more
#: than any declared space holds.
MAX_SEARCH_POINTS = 2**16
#: Candidate layouts ``advise`` expands and checks before searching (``--set`` lists multiply):
#: each costs about 25 us and a few hundred bytes, so 2**20 is half a minute and a few hundred MB.
MAX_SPACE_CANDIDATES = 2**20
#: A noise threshold in percent of the base value: 1e6 % (ten thousand times the base) already
#: calls every change noise; larger ones only overflow the threshold's float product (1e308 did).
MAX_NOISE_PCT = 1e6


class Infeasible(Exception):
    """Raised by a :class:`Derived` rule when no value fits the point; its text is the reason."""


@dataclass(frozen=True)
class SearchContext:
    """The machine and the fixed global batch a search is made for."""

    ipus: int
    global_batch: int


@dataclass(frozen=True)
class Dimension:
    """A searched knob and its candidate values (a tuple, or a function of the context).

    ``only_for``: the variants for which the knob matters (empty = all); the points of the other
    variants leave it out (it keeps its default or fixed value), so no two points differ only in a
    knob that does nothing.
    """

    knob: str
    values: tuple[Any, ...] | Callable[[SearchContext], tuple[Any, ...]]
    only_for: tuple[str, ...] = ()

    def candidates(self, context: SearchContext) -> tuple[Any, ...]:
        """The candidate values for ``context``."""
        return tuple(self.values(context) if callable(self.values) else self.values)


@dataclass(frozen=True)
class Derived:
    """A knob whose value follows from the others (grad_accum from the fixed global batch).

    ``compute(knobs, context)`` returns the value or raises :class:`Infeasible` with the reason.
    ``rule`` says the rule in words. When the user sets or fixes the knob, it becomes a
    dimension and the rule a constraint: a point whose value differs is pruned.
    """

    knob: str
    rule: str
    compute: Callable[[Mapping[str, Any], SearchContext], Any]


@dataclass(frozen=True)
class Constraint:
    """A rule every point must satisfy; ``reason`` (a fixed sentence) is why a point breaks it.

    ``holds(view, context)`` sees the point's searched knobs over the workload's defaults and the
    shared overrides (size knobs such as ``heads``), but not the derived knobs: those are computed
    after the constraints and raise :class:`Infeasible` themselves."""

    reason: str
    holds: Callable[[Mapping[str, Any], SearchContext], bool]


@dataclass(frozen=True)
class AdviseSpace:
    """What ``profcompare advise`` may change in a workload and what it must respect.

    ``variants``: the variants searched (a subset of the workload's); ``dimensions``: the other
    searched knobs; ``derived``: knobs computed per point; ``constraints``: checked in order, the
    first broken one is the pruned point's reason. ``default_ipus`` / ``default_global_batch``:
    the machine and batch searched when the user gives none (``global_batch_rule`` says how the
    knobs make the global batch). ``sizes``: named presets of the workload's size knobs
    (``--size``). ``headline``: the knobs that name a layout in sentences, in order.
    ``notes``: what the space leaves out and why (shown by ``advise --help`` and the README).
    """

    workload: str
    variants: tuple[str, ...]
    dimensions: tuple[Dimension, ...]
    default_ipus: int
    default_global_batch: int
    global_batch_rule: str
    derived: tuple[Derived, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    sizes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    headline: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def layout_text(knobs: Mapping[str, Any], headline: Sequence[str] = ()) -> str:
    """``offchip-sharded, replicas=4, micro_batch=8`` (the headline knobs first, then the rest);
    plain text, to be escaped by whatever shows it."""
    order = [k for k in headline if k in knobs and k != VARIANT] + [k for k in knobs if k not in headline and k != VARIANT]
    parts = [str(knobs[VARIANT])] if VARIANT in knobs else []
    parts += [f"{k}={knobs[k]}" for k in order if knobs[k] is not None]
    return ", ".join(parts)


def powers_of_two(low: int, high: int) -> tuple[int, ...]:
    """1, 2, 4, ... from ``low`` to ``high`` inclusive."""
    values, value = [], 1
    while value <= high:
        if value >= low:
            values.append(value)
        value *= 2
    return tuple(values)


def batch_share(total: int, parts: Sequence[int]) -> int:
    """``total / prod(parts)`` when it divides exactly and is >= 1, else Infeasible."""
    divisor = 1
    for part in parts:
        divisor *= int(part)
    if divisor <= 0 or total % divisor:
        raise Infeasible("global batch not divisible by the other batch knobs")
    return total // divisor


def format_knob_value(value: Any) -> str:
    """A knob value as it appears in a sweep point label: ``512``, ``0.001``, ``ipu_model``."""
    if isinstance(value, float):
        return f"{value:g}"
    return re.sub(r"[\s/\\]+", "_", str(value))


__all__ = [
    "MAX_GLOBAL_BATCH",
    "MAX_IPUS",
    "MAX_LOCAL_WORKERS",
    "MAX_NOISE_PCT",
    "MAX_SEARCH_POINTS",
    "MAX_SPACE_CANDIDATES",
    "SEED_RANGE",
    "AdviseSpace",
    "Constraint",
    "Derived",
    "Dimension",
    "Infeasible",
    "SearchContext",
    "VARIANT",
    "batch_share",
    "format_knob_value",
    "layout_text",
    "powers_of_two",
]
