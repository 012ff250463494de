"""``cppimport.import_hook`` on the simulator: C++ custom ops a program builds itself.

After ``import cppimport.import_hook`` cppimport compiles a pybind11 ``.cpp`` (first line
containing ``cppimport``) found beside the importing code when it is imported (``from . import
my_binding``). A popxl custom op's C++ needs the Poplar SDK to build; on the simulator
``cppimport.import_hook`` is this module (profcompare.sim: the rest of cppimport stays the real
package), whose hook gives the simulator's implementation of the op
(:mod:`profcompare.emulator.cpp_custom_ops`, ops recognised by their sources) and refuses by name a
C++ module it does not implement. The file is found as cppimport finds it: ``NAME.cpp`` or
``NAME.c`` in the directory of the importing package, or under the ``sys.path`` entries for a
top-level name, its first line containing ``cppimport``.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

#: the extensions cppimport looks for (its default ``settings["file_exts"]``)
FILE_EXTS = (".cpp", ".c")


def _opts_in(path: Path) -> bool:
    try:
        with path.open(encoding="utf-8", errors="replace") as f:
            return "cppimport" in f.readline()
    except OSError:
        return False


def find_source(fullname: str, path: Sequence[str] | None = None) -> Path | None:
    """The C++ source cppimport would build for module ``fullname``: in ``path`` (the importing
    package's directories) when given, else under each ``sys.path`` entry (the dotted name's
    directories); None when there is none that opts in."""
    parts = fullname.split(".")
    if path is not None:
        directories = [Path(d) for d in path]
    else:
        directories = [Path(d or os.getcwd()).joinpath(*parts[:-1]) for d in sys.path]
    for ext in FILE_EXTS:
        for directory in directories:
            candidate = directory / f"{parts[-1]}{ext}"
            if candidate.is_file() and _opts_in(candidate):
                return candidate
    return None


class _BindingLoader(importlib.abc.Loader):
    def __init__(self, source: Path) -> None:
        self.source = source

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        from profcompare.emulator.cpp_custom_ops import binding_module

        return binding_module(self.source)

    def exec_module(self, module: ModuleType) -> None:  # the stand-in module is executed already
        return None


def spec_for(fullname: str, path: Sequence[str] | None = None) -> importlib.machinery.ModuleSpec | None:
    """A module spec for the C++ module ``fullname`` (see :func:`find_source`), or None."""
    source = find_source(fullname, path)
    if source is None:
        return None
    return importlib.machinery.ModuleSpec(fullname, _BindingLoader(source), origin=str(source))


class Hook(importlib.abc.MetaPathFinder):
    """Finds C++ modules as cppimport's import hook does."""

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: Any = None) -> importlib.machinery.ModuleSpec | None:
        return spec_for(fullname, path)


hook_obj = Hook()
if not any(isinstance(f, Hook) for f in sys.meta_path):
    sys.meta_path.insert(0, hook_obj)
