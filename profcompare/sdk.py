"""The seam between workload code and a popxl implementation.

Workloads write ``from profcompare.sdk import popxl, ops, addons`` and otherwise read like
code written for the Poplar SDK. Which implementation they get:

- ``sdk``: the real ``popxl``, ``popxl.ops`` and ``popxl_addons`` (SdkUnavailableError when
  they cannot be imported);
- ``sim``: the profcompare simulator (``profcompare.emulator.popxl`` and
  ``profcompare.emulator.popxl_addons``);
- ``auto`` (default): ``sdk`` when the SDK is importable, else ``sim``.

The choice comes from an explicit argument to :func:`load`, else from the
``PROFCOMPARE_BACKEND`` environment variable, else ``auto``. The module attributes
``popxl``/``ops``/``addons`` are resolved lazily on first access from the environment.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING

from profcompare.errors import ProfcompareError, SdkUnavailableError

if TYPE_CHECKING:
    # Workloads are type-checked against the simulator's popxl, which follows the SDK's API.
    from profcompare.emulator import popxl, popxl_addons as addons  # noqa: F401 (the names workloads import)
    from profcompare.emulator.popxl import ops  # noqa: F401

#: accepted backend names
BACKENDS = ("auto", "sdk", "sim")
#: environment variable selecting the backend
ENV_VAR = "PROFCOMPARE_BACKEND"

_SIM_MODULES = {"popxl": "profcompare.emulator.popxl", "ops": "profcompare.emulator.popxl.ops",
                "addons": "profcompare.emulator.popxl_addons"}
_SDK_MODULES = {"popxl": "popxl", "ops": "popxl.ops", "addons": "popxl_addons"}
_HINT = ("install the Poplar SDK (source its enable.sh) and popxl-addons, or use the simulator with "
         f"{ENV_VAR}=sim")


@dataclass(frozen=True)
class Backend:
    """A resolved backend: its name ("sdk" or "sim") and the three modules workloads use."""

    name: str
    popxl: ModuleType
    ops: ModuleType
    addons: ModuleType

    @property
    def simulated(self) -> bool:
        """True for the profcompare simulator."""
        return self.name == "sim"


def _normalise(name: str | None) -> str:
    if name is None:
        name = os.environ.get(ENV_VAR, "") or "auto"
    value = str(name).strip().lower()
    if value not in BACKENDS:
        raise ProfcompareError(f"unknown backend {name!r}: choose one of {', '.join(BACKENDS)} "
                               f"(argument or {ENV_VAR})")
    return value


def sdk_available() -> bool:
    """Return True when the real popxl and popxl_addons can be imported."""
    try:
        return (importlib.util.find_spec("popxl") is not None
                and importlib.util.find_spec("popxl_addons") is not None)
    except (ImportError, ValueError):
        return False


def resolve_backend(name: str | None = None) -> str:
    """Return "sdk" or "sim" for ``name`` (default: $PROFCOMPARE_BACKEND, else "auto").

    Raises ProfcompareError for an unknown name and SdkUnavailableError for "sdk" without SDK."""
    value = _normalise(name)
    if value == "auto":
        return "sdk" if sdk_available() else "sim"
    if value == "sdk" and not sdk_available():
        raise SdkUnavailableError(f"backend 'sdk' was selected but popxl/popxl_addons cannot be imported: {_HINT}")
    return value


def _import(backend: str, which: str) -> ModuleType:
    modules = _SDK_MODULES if backend == "sdk" else _SIM_MODULES
    try:
        return importlib.import_module(modules[which])
    except ImportError as exc:
        if backend == "sdk":
            raise SdkUnavailableError(f"cannot import {modules[which]} ({exc}): {_HINT}") from exc
        raise


def load(backend: str | None = None) -> Backend:
    """Return the :class:`Backend` for ``backend`` (see the module docstring for the rules)."""
    name = resolve_backend(backend)
    return Backend(name=name, popxl=_import(name, "popxl"), ops=_import(name, "ops"),
                   addons=_import(name, "addons"))


def addons_generation(backend: str | None = None) -> str:
    """Return the popxl-addons API generation workloads must speak: "3.0" (threshold API) or
    "3.4" (replica groupings).

    On the simulator it is the emulated one (``$PROFCOMPARE_SIM_ADDONS``, default 3.4); on the
    SDK it is read from the installed popxl-addons: the parameters of
    ``popxl_addons.rts.replica_sharded_spec`` (popxl-addons declares no version number). Raises
    ProfcompareError for an unknown generation or an unrecognisable installed API."""
    from profcompare.backend.addons_generation import UnknownGenerationError, current, from_parameters

    name = resolve_backend(backend)
    try:
        if name == "sim":
            return current()
        import inspect

        rts = _import_rts("sdk")
        return from_parameters(inspect.signature(rts.replica_sharded_spec).parameters)
    except UnknownGenerationError as exc:
        raise ProfcompareError(str(exc)) from None


def _import_rts(backend: str) -> ModuleType:
    addons = _import(backend, "addons")
    try:
        return importlib.import_module(addons.__name__ + ".rts")
    except ImportError as exc:
        raise SdkUnavailableError(f"cannot import {addons.__name__}.rts ({exc}): {_HINT}") from exc


def __getattr__(attr: str) -> ModuleType:
    if attr in _SIM_MODULES:
        return _import(resolve_backend(None), attr)
    raise AttributeError(f"module 'profcompare.sdk' has no attribute {attr!r}")


__all__ = ["BACKENDS", "ENV_VAR", "Backend", "addons_generation", "load", "resolve_backend", "sdk_available"]
