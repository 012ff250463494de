"""PopART's session options as a popxl program reaches them: ``ir._pb_ir.getSessionOptions()``.

The fields, their types and defaults follow PopART's ``SessionOptions``
(graphcore/popart ``willow/include/popart/sessionoptions.hpp``):

- ``numIOTiles`` (int, 0): I/O tiles per IPU, taken away from the compute tiles;
- ``partialsTypeMatMuls`` (str, unset): the partials type of every matmul, ``"float"`` or
  ``"half"`` in any letter case (PopART's ``fromString`` in ``op/matmul.cpp``); unset means
  PopLibs' default, float partials;
- ``enableStochasticRounding`` (bool, False);
- ``engineOptions``, ``convolutionOptions``, ``matmulOptions``, ``lstmOptions``,
  ``reportOptions``, ``gclOptions`` (string -> string dicts handed to Poplar / PopLibs / GCL);
  ``matmulOptions["availableMemoryProportion"]`` is the matmuls' temporary-memory budget
  (PopLibs' default 0.6, see docs/ipu-model.md);
- ``enableFloatingPointChecks``, ``enableOutlining``, ``enableReplicatedGraphs``,
  ``replicatedGraphCount``, ``enableGradientAccumulation``, ``accumulationFactor``,
  ``virtualGraphMode``, ``enableExplicitMainLoops``, ``useHostCopyOps``, ``aliasZeroCopy``,
  ``enableStableNorm``, ``defaultPrefetchBufferingDepth``: recorded, not used by the model.

Every field set is recorded in the report's ``meta.session_options``; the compile model uses
``numIOTiles``, ``partialsTypeMatMuls`` and ``matmulOptions["availableMemoryProportion"]``
(docs/ipu-model.md, "Session options"). A field PopART has but this list does not is refused in
one line naming it, so a program never silently sets an option that changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import SimulatorNotImplementedError, not_implemented_message

if TYPE_CHECKING:
    from .ir import Ir

#: option -> default, for the plain (non-dict) options
_SCALAR_DEFAULTS: dict[str, Any] = {
    "partialsTypeMatMuls": "",
    "enableStochasticRounding": False,
    "enableFloatingPointChecks": False,
    "enableOutlining": True,
    "enableReplicatedGraphs": False,
    "replicatedGraphCount": 1,
    "enableGradientAccumulation": False,
    "accumulationFactor": 1,
    "virtualGraphMode": "Off",
    "enableExplicitMainLoops": False,
    "useHostCopyOps": False,
    "aliasZeroCopy": False,
    "enableStableNorm": False,
    "defaultPrefetchBufferingDepth": 1,
}
_DICT_OPTIONS = ("engineOptions", "convolutionOptions", "matmulOptions", "lstmOptions", "reportOptions",
                 "gclOptions")
_PARTIALS = ("", "float", "half")


class SessionOptions:
    """The session options of one Ir (or a free-standing ``popart.SessionOptions()``)."""

    def __init__(self, ir: Ir | None = None) -> None:
        object.__setattr__(self, "_ir", ir)
        object.__setattr__(self, "_num_io_tiles", 0)
        object.__setattr__(self, "_values", dict(_SCALAR_DEFAULTS))
        for name in _DICT_OPTIONS:
            self.__dict__[name] = {}

    @property
    def numIOTiles(self) -> int:  # noqa: N802 - PopART's name
        """I/O tiles per IPU (0 = none)."""
        return self._ir.num_io_tiles if self._ir is not None else self._num_io_tiles

    @numIOTiles.setter
    def numIOTiles(self, value: int) -> None:  # noqa: N802 - PopART's name
        if self._ir is not None:
            self._ir.num_io_tiles = value
        else:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"numIOTiles must be a non-negative int, got {value!r}")
            object.__setattr__(self, "_num_io_tiles", value)

    def __getattr__(self, name: str) -> Any:  # only for names that are not options
        if name.startswith("_"):
            raise AttributeError(name)
        raise SimulatorNotImplementedError(not_implemented_message(f"popart.SessionOptions.{name}"))

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "numIOTiles":
            object.__setattr__(self, name, value)  # the property's setter
            return
        if name in _DICT_OPTIONS:
            if not isinstance(value, dict):
                raise TypeError(f"popart.SessionOptions.{name} must be a dict of strings, got {type(value).__name__}")
            self.__dict__[name] = dict(value)
            return
        if name not in _SCALAR_DEFAULTS:
            raise SimulatorNotImplementedError(not_implemented_message(f"popart.SessionOptions.{name}"))
        if self._ir is not None and getattr(self._ir, "_prepared", False):
            raise RuntimeError(f"popart.SessionOptions.{name} cannot change after a Session was created for this Ir")
        if name == "partialsTypeMatMuls":
            if not isinstance(value, str) or value.lower() not in _PARTIALS:
                raise ValueError(f"partialsTypeMatMuls must be 'float' or 'half' (any letter case), got {value!r}")
        self._values[name] = value

    @property
    def matmul_partials_half(self) -> bool:
        """True when every matmul accumulates in half precision (``partialsTypeMatMuls="half"``)."""
        return str(self._values["partialsTypeMatMuls"]).lower() == "half"

    @property
    def available_memory_proportion(self) -> float | None:
        """``matmulOptions["availableMemoryProportion"]`` as a number, None when unset.

        Raises ValueError for a value that is not a number in (0, 1] (Poplar refuses it too)."""
        raw = self.matmulOptions.get("availableMemoryProportion")
        if raw is None:
            return None
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ValueError(f"matmulOptions['availableMemoryProportion'] must be a number, got {raw!r}") from None
        if not 0.0 < value <= 1.0:
            raise ValueError(f"matmulOptions['availableMemoryProportion'] must be in (0, 1], got {raw!r}")
        return value

    def as_dict(self) -> dict[str, Any]:
        """Every option with its value (dict options copied, values as set), for report meta."""
        out: dict[str, Any] = {"numIOTiles": self.numIOTiles}
        out.update(self._values)
        for name in _DICT_OPTIONS:
            out[name] = {str(k): str(v) for k, v in getattr(self, name).items()}
        return out


def _option(name: str) -> property:
    """The class attribute of a plain option: reads the instance's value (set through
    SessionOptions.__setattr__, which checks it)."""

    def get(self: SessionOptions) -> Any:
        return self._values[name]

    def put(self: SessionOptions, value: Any) -> None:
        SessionOptions.__setattr__(self, name, value)

    return property(get, put, doc=f"PopART's {name} (default {_SCALAR_DEFAULTS[name]!r}).")


def _dict_option(name: str) -> property:
    def get(self: SessionOptions) -> dict[str, str]:
        return self.__dict__[name]

    def put(self: SessionOptions, value: dict[str, str]) -> None:
        SessionOptions.__setattr__(self, name, value)

    return property(get, put, doc=f"PopART's {name} (a string map, empty by default).")


for _name in _SCALAR_DEFAULTS:
    setattr(SessionOptions, _name, _option(_name))
for _name in _DICT_OPTIONS:
    setattr(SessionOptions, _name, _dict_option(_name))
del _name

__all__ = ["SessionOptions"]
