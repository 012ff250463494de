"""``POPLAR_ENGINE_OPTIONS`` parsing, with Poplar's autoReport semantics.

Poplar takes engine options as a JSON object of strings ("true"/"false", numbers as text); JSON
booleans and numbers are accepted too, as Poplar does in practice (shared/reference/pva.md 4).
Unknown ``autoReport.*`` keys and malformed values are rejected, as Poplar rejects them; other
keys (``debug.*``, ``target.*``, ``profiler.*`` ...) are accepted, and only
``debug.allowOutOfMemory`` changes what the simulator does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from profcompare.errors import EngineOptionsError
from profcompare.backend.poplar_options import ENV_VAR, parse_options_object

#: Default of autoReport.executionProfileProgramRunCount (pva.md 4: "Default 2").
DEFAULT_PROGRAM_RUN_COUNT = 2

_BOOL_KEYS = {
    "autoReport.all",
    "autoReport.outputGraphProfile",
    "autoReport.outputExecutionProfile",
    "autoReport.outputExecutionReport",
    "autoReport.outputDebugInfo",
    "autoReport.outputLoweredVars",
    "autoReport.outputArchive",
    "autoReport.outputSerializedGraph",
    "autoReport.streamAtEachRun",
}
_INT_KEYS = {"autoReport.executionProfileProgramRunCount"}
_STR_KEYS = {"autoReport.directory"}
#: Every autoReport key the simulator knows (pva.md 4); any other autoReport.* key is an error.
AUTO_REPORT_KEYS = frozenset(_BOOL_KEYS | _INT_KEYS | _STR_KEYS)


@dataclass(frozen=True)
class EngineOptions:
    """The engine options that matter to the simulator, resolved with Poplar's defaults."""

    graph_profile: bool = False  # write the compile-time profile (profile.sqlite)
    execution_profile: bool = False  # add the execution profile to it
    directory: str = ""  # autoReport.directory ("" = current working directory)
    program_run_count: int = DEFAULT_PROGRAM_RUN_COUNT
    allow_out_of_memory: bool = False
    raw: Mapping[str, Any] | None = None

    @property
    def report_directory(self) -> str:
        """Where profile.sqlite goes: autoReport.directory, else the current working directory."""
        return self.directory or os.getcwd()


def _as_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise EngineOptionsError(
        f"{ENV_VAR}: invalid value {value!r} for option {key!r}: expected \"true\" or \"false\""
    )


def _as_int(key: str, value: Any) -> int:
    if isinstance(value, bool):
        raise EngineOptionsError(f"{ENV_VAR}: invalid value {value!r} for option {key!r}: expected an integer")
    if isinstance(value, int):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value.strip().lstrip("+").isdigit():
        number = int(value.strip())
    else:
        raise EngineOptionsError(f"{ENV_VAR}: invalid value {value!r} for option {key!r}: expected an integer")
    if number < 0:
        raise EngineOptionsError(f"{ENV_VAR}: invalid value {value!r} for option {key!r}: must be >= 0")
    return number


def parse_engine_options(text: str | None) -> EngineOptions:
    """Parse the JSON text of ``POPLAR_ENGINE_OPTIONS`` (None or blank = no options).

    Returns the resolved :class:`EngineOptions`: graph profile on when ``outputGraphProfile``
    is true, or when ``all`` is true and ``outputGraphProfile`` is not given; likewise for the
    execution profile. Raises EngineOptionsError on malformed JSON, a non-object, an unknown
    ``autoReport.*`` key or a bad value.
    """
    data = parse_options_object(text)
    unknown = sorted(k for k in data if k.startswith("autoReport.") and k not in AUTO_REPORT_KEYS)
    if unknown:
        raise EngineOptionsError(
            f"{ENV_VAR}: unrecognised option {unknown[0]!r}; known autoReport options: "
            + ", ".join(sorted(AUTO_REPORT_KEYS))
        )
    flags: dict[str, Any] = {}
    for key, value in data.items():
        if key in _BOOL_KEYS:
            flags[key] = _as_bool(key, value)
        elif key in _INT_KEYS:
            flags[key] = _as_int(key, value)
        elif key in _STR_KEYS:
            if not isinstance(value, str):
                raise EngineOptionsError(f"{ENV_VAR}: invalid value {value!r} for option {key!r}: expected a path string")
            flags[key] = value
    all_on = flags.get("autoReport.all", False)
    graph = flags.get("autoReport.outputGraphProfile", all_on)
    execution = flags.get("autoReport.outputExecutionProfile", flags.get("autoReport.outputExecutionReport", all_on))
    allow_oom = False
    if "debug.allowOutOfMemory" in data:
        allow_oom = _as_bool("debug.allowOutOfMemory", data["debug.allowOutOfMemory"])
    return EngineOptions(
        graph_profile=bool(graph),
        execution_profile=bool(execution),
        directory=flags.get("autoReport.directory", ""),
        program_run_count=flags.get("autoReport.executionProfileProgramRunCount", DEFAULT_PROGRAM_RUN_COUNT),
        allow_out_of_memory=allow_oom,
        raw=dict(data),
    )


def engine_options_from_environ(environ: Mapping[str, str]) -> EngineOptions:
    """Parse ``environ[POPLAR_ENGINE_OPTIONS]`` (see :func:`parse_engine_options`)."""
    return parse_engine_options(environ.get(ENV_VAR))
