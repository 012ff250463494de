"""``popart`` on the simulator: the few PopART names popxl programs use directly.

popxl is built on PopART, and programs reach into it for a handful of things: its version
(``popart.versionString()``, which Graphcore's applications record in their run config), the
``DeviceInfo`` class (tested with ``isinstance`` on what a Session was attached to), the
session options (``popart.SessionOptions``, the class of ``ir._pb_ir.getSessionOptions()``) and
its error type (``popart_exception``, which the simulator never raises).
The simulator attaches no device, so no ``DeviceInfo`` exists and one cannot be made. Every
other PopART name (and ``popart._internal.ir``, PopART's C++ Ir) is refused in one line naming it.
"""

from __future__ import annotations

from profcompare.emulator.popxl.errors import SimulatorNotImplementedError, module_getattr, not_implemented_message
from profcompare.emulator.popxl.session_options import SessionOptions

#: the PopART release paired with each emulated popxl-addons generation (docs/sdk-path.md)
_POPART_VERSIONS = {"3.0": "3.0.0", "3.4": "3.4.0"}


def versionString() -> str:  # noqa: N802 - PopART's name
    """The PopART version of the emulated SDK ("3.4.0" or "3.0.0", from the popxl-addons
    generation), with the simulator named after it so a recorded config says where it ran."""
    from profcompare.backend import addons_generation
    from profcompare._version import __version__

    return f"{_POPART_VERSIONS[addons_generation.current()]} (profcompare-sim {__version__})"


class DeviceInfo:
    """PopART's handle of an acquired device. The simulator acquires none: the class exists for
    ``isinstance`` checks, and creating one is refused."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise SimulatorNotImplementedError(not_implemented_message("popart.DeviceInfo()"))


class popart_exception(RuntimeError):  # noqa: N801 - PopART's name
    """PopART's error type, for programs that catch it (``except popart.popart_exception``,
    ``pytest.raises(popart_exception)``). The simulator raises its own errors where PopART raises
    this one (ValueError, RuntimeError, ProfcompareError subclasses), never this type."""


__getattr__ = module_getattr("popart")

__all__ = ["DeviceInfo", "SessionOptions", "popart_exception", "versionString"]
