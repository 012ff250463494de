"""Workload registry: the programs ``profcompare run`` builds, profiles and compares.

Every module of this package that defines a module-level ``WORKLOAD`` (a :class:`Workload`)
is a workload; adding one is adding one module. Modules whose name starts with ``_`` are
helpers and are not imported by discovery (they may import the SDK seam at import time).
"""

from __future__ import annotations

import difflib

import importlib
import math
import os
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from profcompare.backend.knobs import SEED_RANGE
from profcompare.errors import WorkloadError


@dataclass(frozen=True)
class Knob:
    """One tunable of a workload: CLI option ``--<name with - for _>``, typed, with a default."""

    name: str
    type: type  # int | float | str
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    #: a filesystem path (str knobs): made absolute when parsed, so it means the same in the
    #: variant's subprocess, which runs in its own directory
    path: bool = False
    #: inclusive range of an int knob, checked when the value is parsed (before the workload's
    #: own ``check_config``, before anything runs): ``(low, high)``; None = any integer. Every
    #: declaration says where its bound comes from: a value past it is a typo, not a program.
    bounds: tuple[int, int] | None = None


#: Bounds shared by the workloads' knobs. Each is far past any real program, so none is ever
#: refused, and each keeps the products the program and the compile model form (element counts,
#: int64 bytes, seeds) representable.
#: numpy's seeding (``np.random.seed``) takes 0 to 2**32 - 1.
SEED_BOUNDS = SEED_RANGE
#: GPT-3 trained about 94k weight updates (300B tokens / 3.2M tokens a batch); a profile runs a
#: handful. 2**20 (about 1M) is ten times a full pre-training run.
STEPS_BOUNDS = (1, 2**20)
#: A micro-batch or an accumulation count: GPT-3's whole global batch is 1,536 sequences, MNIST's
#: tutorial 8 x 8; 2**16 is 40 times the largest.
BATCH_BOUNDS = (1, 2**16)
#: A layer width: GPT-3 175B's hidden size is 12,288, the widest published dense models about
#: 25k; 2**20 is 40 times that, and a 2**20 x 2**20 float32 weight (4 TiB) still counts in int64.
WIDTH_BOUNDS = (1, 2**20)
#: Layers: GPT-3 has 96, the deepest published networks about a thousand; 2**14 is 16 times that.
DEPTH_BOUNDS = (1, 2**14)


@dataclass(frozen=True)
class Workload:
    """A workload: its variants (name -> one-line description), knobs, ``run(variant, config)``
    and, optionally, ``layout(variant, config)``: the layout the variant chooses with ``config``
    applied (setting -> bool, int, float or str; the runner records it in run.json and a report's
    ``meta.layout``, where a comparison reads the intended differences of two runs)."""

    name: str
    description: str
    variants: Mapping[str, str]
    knobs: tuple[Knob, ...]
    run: Callable[[str, Mapping[str, Any]], "WorkloadResult"]
    layout: Callable[[str, Mapping[str, Any]], Mapping[str, Any]] | None = None

    def knob(self, name: str) -> Knob:
        """Return the knob called ``name`` (WorkloadError listing the knobs otherwise)."""
        for knob in self.knobs:
            if knob.name == name:
                return knob
        names = [k.name for k in self.knobs]
        raise WorkloadError(
            f"unknown knob {name!r} for workload {self.name!r}{did_you_mean(name, names)}; valid knobs: " + ", ".join(names)
        )


@dataclass(frozen=True)
class WorkloadResult:
    """What one ``Workload.run`` did: per-step losses and timings in seconds."""

    variant: str
    backend: str  # "sim" | "sdk"
    losses: tuple[float, ...]  # mean loss of each weight update (training step)
    samples_per_step: int
    steps: int
    build_seconds: float
    compile_seconds: float
    run_seconds: float
    extra: Mapping[str, Any] = field(default_factory=dict)  # workload-specific facts (e.g. data source)


def list_workloads() -> list[Workload]:
    """Return every workload of this package, sorted by name."""
    found: dict[str, Workload] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        workload = getattr(module, "WORKLOAD", None)
        if isinstance(workload, Workload):
            found[workload.name] = workload
    return [found[name] for name in sorted(found)]


def find_workload(name: str) -> Workload:
    """Return the workload called ``name`` (WorkloadError listing every workload otherwise)."""
    workloads = list_workloads()
    for workload in workloads:
        if workload.name == name:
            return workload
    names = [w.name for w in workloads]
    raise WorkloadError(f"unknown workload {name!r}{did_you_mean(name, names)}; valid workloads: {', '.join(names)}")


def find_variant(variant: str, workload: str | None = None) -> Workload:
    """Return the workload that has ``variant`` (WorkloadError listing the valid variants otherwise).

    Without ``workload`` the variant is looked up across every workload (the first, by name, that
    has it); with a workload name only that workload's variants count.
    """
    if workload is not None:
        found = find_workload(workload)
        if variant in found.variants:
            return found
        names = list(found.variants)
        raise WorkloadError(f"unknown variant {variant!r} of workload {found.name}{did_you_mean(variant, names)}; "
                            f"valid variants: {', '.join(names)}")
    workloads = list_workloads()
    for candidate in workloads:
        if variant in candidate.variants:
            return candidate
    names = [v for w in workloads for v in w.variants]
    raise WorkloadError(f"unknown variant {variant!r}{did_you_mean(variant, names)}; valid variants: {', '.join(names)}")


def did_you_mean(given: str, valid: Sequence[str]) -> str:
    """``" (did you mean 'onchip'?)"`` for the closest valid names (difflib), else ``""``."""
    close = difflib.get_close_matches(given, list(valid), n=2, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(repr(c) for c in close) + "?)"


def _parse_value(knob: Knob, value: Any) -> Any:
    """Convert ``value`` (a typed value or CLI text) to the knob's type, or raise WorkloadError."""

    def bad(reason: str) -> WorkloadError:
        return WorkloadError(f"bad value {value!r} for knob {knob.name!r}: {reason}")

    if knob.type is str:
        if not isinstance(value, str):
            raise bad("expected text")
        if knob.path and value.strip():
            return os.path.abspath(os.path.expanduser(value.strip()))
        return value
    if isinstance(value, bool):
        raise bad(f"expected {knob.type.__name__}")
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        try:
            number: float | int = int(text) if knob.type is int and text.lstrip("+-").isdigit() else float(text)
        except ValueError:
            raise bad(f"expected {'an integer' if knob.type is int else 'a number'}") from None
    elif isinstance(value, (int, float)):
        number = value
    else:
        raise bad(f"expected {knob.type.__name__}")
    if knob.type is int:
        if isinstance(number, float):
            # 1e10 is a common way to write "larger than any tensor" for thresholds
            if not math.isfinite(number) or number != int(number):
                raise bad("expected an integer")
            number = int(number)
        return _check_bounds(knob, int(number))
    number = float(number)
    if not math.isfinite(number):
        raise bad("expected a finite number")
    return number


def _check_bounds(knob: Knob, value: int) -> int:
    """Return ``value`` when it lies within the knob's declared ``bounds`` (one-line
    WorkloadError naming the knob and the range otherwise)."""
    if knob.bounds is not None:
        low, high = knob.bounds
        require(low <= value <= high, knob.name, value, f"integers from {low} to {high}")
    return value


def check_bounds(knobs: Sequence[Knob], config: Mapping[str, Any]) -> None:
    """Raise a one-line WorkloadError for the first value of ``config`` outside its knob's
    declared ``bounds`` (for configs built without :func:`parse_knobs`, such as a variant's)."""
    for knob in knobs:
        if knob.bounds is not None and knob.name in config:
            _check_bounds(knob, config[knob.name])


def parse_knob_value(knob: Knob, value: Any) -> Any:
    """Return ``value`` (typed, or CLI text) as the knob's type, checked against its choices
    (WorkloadError otherwise). The workload's range check of whole configs is not applied."""
    parsed = _parse_value(knob, value)
    if knob.choices is not None and parsed not in knob.choices:
        raise WorkloadError(
            f"bad value {value!r} for knob {knob.name!r}; valid choices: " + ", ".join(str(c) for c in knob.choices)
        )
    return parsed


def parse_knobs(workload: Workload, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Return the full config of ``workload``: every knob's default, overridden by ``overrides``.

    Values may be typed or text (from the CLI). Raises WorkloadError naming the knob, the bad
    value and the valid choices or type; unknown knobs list the valid knob names. Checks the
    workload's own ranges through ``check_config`` when its module defines one.
    """
    config = {knob.name: knob.default for knob in workload.knobs}
    for name, raw in overrides.items():
        knob = workload.knob(name.replace("-", "_"))
        value = _parse_value(knob, raw)
        if knob.choices is not None and value not in knob.choices:
            raise WorkloadError(
                f"bad value {raw!r} for knob {knob.name!r}; valid choices: "
                + ", ".join(str(c) for c in knob.choices)
            )
        config[knob.name] = value
    checker = _CHECKERS.get(workload.name)
    if checker is not None:
        checker(config)
    return config


#: per-workload range checks: workload name -> function(config) raising WorkloadError
_CHECKERS: dict[str, Callable[[dict[str, Any]], None]] = {}


def register_checker(workload_name: str, checker: Callable[[dict[str, Any]], None]) -> None:
    """Register the range check ``parse_knobs`` applies to ``workload_name``'s configs."""
    _CHECKERS[workload_name] = checker


def require(condition: bool, knob: str, value: Any, valid: str) -> None:
    """Raise a one-line WorkloadError for knob ``knob`` unless ``condition`` holds."""
    if not condition:
        raise WorkloadError(f"bad value {value!r} for knob {knob!r}: valid values are {valid}")


__all__ = [
    "BATCH_BOUNDS",
    "DEPTH_BOUNDS",
    "SEED_BOUNDS",
    "STEPS_BOUNDS",
    "WIDTH_BOUNDS",
    "Knob",
    "Workload",
    "check_bounds",
    "WorkloadResult",
    "list_workloads",
    "find_variant",
    "find_workload",
    "parse_knob_value",
    "parse_knobs",
    "register_checker",
    "did_you_mean",
    "require",
]
