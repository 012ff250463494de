"""``NameScopeMeta``: the metaclass popxl-addons gives ``Module`` (both generations), which wraps
a class's own ``build`` so that it runs inside ``popxl.name_scope(self._name_scope)`` when the
instance has a name scope (a child module assigned as an attribute gets its attribute name).

The emulator's ``Module`` applies the same wrapper from ``__init_subclass__``, so
``type(popxl_addons.Module)`` is ``type`` here; a class declared with
``metaclass=NameScopeMeta`` gets its ``build`` wrapped as a Module's is (one scope however deep
the ``super().build`` chain, as the emulator's Module does).
"""

from __future__ import annotations

from typing import Any

from profcompare.emulator.popxl_addons.module import _scoped_build

__all__ = ["NameScopeMeta"]


class NameScopeMeta(type):
    """Metaclass wrapping the class's own ``build`` method in the instance's name scope."""

    def __new__(mcs, name: str, bases: tuple[type, ...], dct: dict[str, Any]) -> NameScopeMeta:
        build = dct.get("build")
        if build is not None and callable(build) and not getattr(build, "_profcompare_scoped", False):
            dct["build"] = _scoped_build(build)
        return super().__new__(mcs, name, bases, dct)
