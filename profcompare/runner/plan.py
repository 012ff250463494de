"""What to run: jobs (workload, variant, resolved knobs), the backend, engine options and run names.

:func:`make_jobs` validates variant names and knob values against the workload registry
(``workloads``) before anything runs; :func:`check_run_name` refuses names that cannot be a
directory.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from profcompare.errors import (
    WorkloadError,
)
from profcompare.backend.poplar_options import parse_options_object

if TYPE_CHECKING:  # pragma: no cover
    pass


@dataclass(frozen=True)
class Job:
    """One subprocess to run: a workload variant with a full config, written to ``<run>/<label>/``."""

    label: str
    workload: str
    workload_ref: str  # "module:attribute" the subprocess imports to find the Workload
    variant: str
    config: Mapping[str, Any]
    #: the module the subprocess runs (``python -m CHILD``); None = the workload variant runner
    child: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))


def workload_registry() -> Any:
    try:
        import workloads
    except ImportError as exc:  # pragma: no cover - the package ships with profcompare
        raise WorkloadError(f"the workload registry cannot be imported: {exc}") from exc
    return workloads


def workload_ref(workload: Any) -> str:
    """Return ``"module:attribute"`` naming where ``workload`` (a Workload object) is defined.

    The subprocess imports this to find the same Workload, so a workload defined outside the
    ``workloads`` package (a plug-in module, a test module) runs exactly like a registered one.
    """
    module_name = getattr(getattr(workload, "run", None), "__module__", None)
    candidates = [module_name] if module_name else []
    candidates += [name for name, mod in list(sys.modules.items()) if name.startswith("workloads")]
    for name in candidates:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in vars(module).items():
            if value is workload:
                return f"{name}:{attr}"
    raise WorkloadError(
        f"workload {getattr(workload, 'name', workload)!r} is not a module-level attribute of an importable module"
    )


def normalise_knob_name(name: str) -> str:
    """``micro-batch`` / ``--micro-batch`` / ``micro_batch`` -> ``micro_batch``."""
    return name.strip().lstrip("-").replace("-", "_")


def find_knob(workload: Any, name: str) -> Any:
    """Return the Knob of ``workload`` called ``name`` (``-`` or ``_``), else raise WorkloadError listing the knobs."""
    wanted = normalise_knob_name(name)
    for knob in workload.knobs:
        if knob.name == wanted:
            return knob
    from workloads import did_you_mean

    names = [k.name for k in workload.knobs]
    raise WorkloadError(
        f"unknown knob {name!r} for workload {workload.name}{did_you_mean(wanted, names)}: valid knobs are {', '.join(names)}"
    )


def resolve_config(workload: Any, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Return the full config of ``workload`` with ``overrides`` (raw strings or typed values) applied.

    Knob names may use ``-`` or ``_``; values are parsed by the knob's type by the registry's
    ``parse_knobs`` (ints accept ``1e10``). Raises WorkloadError with a one-line message for an
    unknown knob or a bad value.
    """
    typed = {find_knob(workload, name).name: raw for name, raw in overrides.items()}
    return dict(workload_registry().parse_knobs(workload, typed))


def make_jobs(variants: Sequence[str], overrides: Mapping[str, Any] | None = None,
              workload: str | None = None) -> list[Job]:
    """Validate ``variants`` and knob ``overrides`` (applied to every variant); return one Job each.

    Variants are found by name across the workloads, or only in ``workload`` when it is given.
    Raises WorkloadError (one line, listing the valid choices) for an unknown workload or variant,
    a variant given twice or a bad knob value -- before anything runs.
    """
    if not variants:
        raise WorkloadError("no variant given")
    registry = workload_registry()
    seen: set[str] = set()
    jobs = []
    for variant in variants:
        if variant in seen:
            raise WorkloadError(f"variant {variant!r} given twice")
        seen.add(variant)
        found = registry.find_variant(variant, workload)
        config = resolve_config(found, overrides or {})
        jobs.append(Job(variant, found.name, workload_ref(found), variant, config))
    return jobs


#: the module a program's subprocess runs (``profcompare profile``)
SCRIPT_CHILD_MODULE = "profcompare.runner.process.script_main"


def script_label(target: str, module: bool = False) -> str:
    """The job (directory) name of a program: the script's file stem, or the module name."""
    import re

    stem = target if module else os.path.splitext(os.path.basename(target))[0]
    label = re.sub(r"[^A-Za-z0-9_.-]+", "_", stem).strip("._") or "script"
    return label[:MAX_RUN_NAME_BYTES]


def script_job(target: str, args: Sequence[str] = (), *, module: bool = False, cwd: str | None = None) -> Job:
    """A Job running a popxl program (a script path, or a module with ``module=True``) unmodified.

    The subprocess (:data:`SCRIPT_CHILD_MODULE`) runs it in ``cwd`` (default: the current
    directory) with ``sys.argv`` = [target, *args]; ``config`` records target, args, module and
    cwd. Raises WorkloadError (one line) when the script is not a file or the module cannot be
    found -- before anything runs.
    """
    where = os.path.abspath(cwd or os.getcwd())
    if module:
        import importlib.util

        try:
            found = importlib.util.find_spec(target)
        except (ImportError, ValueError):
            found = None
        if found is None:
            raise WorkloadError(f"no module named {target!r}")
    else:
        path = os.path.join(where, target)
        if not os.path.isfile(path):
            raise WorkloadError(f"no such script: {target}")
    config = {"target": target, "args": [str(a) for a in args], "module": bool(module), "cwd": where}
    label = script_label(target, module)
    return Job(label, "script", "", label, config, child=SCRIPT_CHILD_MODULE)


def resolve_backend(name: str = "auto") -> str:
    """Return "sdk" or "sim" for ``name`` in auto | sdk | sim (auto = sdk when the SDK imports).

    Raises SdkUnavailableError for "sdk" without the SDK, WorkloadError for an unknown name.
    """
    if name not in ("auto", "sdk", "sim"):
        raise WorkloadError(f"unknown backend {name!r}: valid choices are auto, sdk, sim")
    if name == "sim":
        return "sim"
    from profcompare.sdk import resolve_backend as _resolve

    return str(_resolve(name))


def merge_engine_options(user_value: str | None, report_dir: str | os.PathLike[str]) -> str:
    """Return the ``POPLAR_ENGINE_OPTIONS`` JSON for a job: the user's options plus autoReport.

    ``autoReport.all`` = "true" and ``autoReport.directory`` = ``report_dir`` are set over the
    user's JSON object (their other keys are kept). Raises EngineOptionsError when the user's
    value is not a JSON object, names an unknown ``autoReport.*`` option or gives one a bad value
    (Poplar's own rules, as the simulator applies them), so a bad value is refused up front, once,
    not by every variant.
    """
    from profcompare.emulator.compile.engine_options import parse_engine_options

    parse_engine_options(user_value)
    options = parse_options_object(user_value)
    options["autoReport.all"] = "true"
    options["autoReport.directory"] = os.fspath(report_dir)
    return json.dumps(options)


def default_run_name(labels: Sequence[str], now: _dt.datetime | None = None, prefix: str = "") -> str:
    """``20261122-101500-onchip-vs-offchip-sharded`` (local time + labels joined by ``-vs-``)."""
    stamp = (now or _dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    return "-".join(p for p in (stamp, prefix, "-vs-".join(labels)) if p)


#: Longest run name in bytes: the hidden staging name ``.NAME.tmp-PID`` must stay within the
#: 255-byte file-name limit of common file systems.
MAX_RUN_NAME_BYTES = 200


def check_run_name(name: str) -> str:
    """Return ``name`` if it can name a run directory, else raise WorkloadError saying why."""
    if not name or name in (".", "..") or name.startswith(".") or "/" in name or os.sep in name:
        raise WorkloadError(f"bad run name {name!r}: use a plain directory name (no '/', not starting with '.')")
    if any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in name):
        raise WorkloadError(f"bad run name {name!r}: control characters and line breaks are not allowed")
    if len(os.fsencode(name)) > MAX_RUN_NAME_BYTES:
        raise WorkloadError(f"bad run name: {len(os.fsencode(name))} bytes long, at most {MAX_RUN_NAME_BYTES}")
    return name


__all__ = ["Job", "MAX_RUN_NAME_BYTES", "SCRIPT_CHILD_MODULE", "check_run_name", "default_run_name", "find_knob", "make_jobs", "merge_engine_options", "normalise_knob_name", "resolve_backend", "resolve_config", "script_job", "script_label", "workload_ref", "workload_registry"]
