"""``cppimport.import_hook`` on the simulator.

Programs build their own PopART custom ops (C++ against PopART's and Poplar's headers) with
cppimport: ``import cppimport.import_hook`` then ``from . import my_op_binding`` compiles
``my_op_binding.cpp`` and loads it. The simulator has neither those headers nor a way to run the
op's C++, so under it ``cppimport.import_hook`` is this module: a module cppimport would build
from a ``.cpp`` file (one whose first line names cppimport, as cppimport requires) is refused in
one line naming the module and the file; no compiler is started and nothing is written beside
the program. The rest of cppimport (which graphcore/examples-utils imports) is left as it is.
popxl-addons' own custom ops are emulated (``profcompare.emulator.popxl_addons.ops``)."""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
from typing import Any

from profcompare.emulator.popxl.errors import not_implemented_message


def cpp_source(fullname: str, path: Any = None) -> str | None:
    """The ``.cpp`` file cppimport would build module ``fullname`` from (in ``path``, the
    package's search path, else ``sys.path``), or None."""
    leaf = fullname.rpartition(".")[2]
    for directory in (path if path is not None else sys.path):
        candidate = os.path.join(directory or ".", leaf + ".cpp")
        try:
            with open(candidate, encoding="utf-8", errors="replace") as source:
                first = source.readline()
        except OSError:
            continue
        if "cppimport" in first:
            return candidate
    return None


class CppModuleRefusal(importlib.abc.MetaPathFinder):
    """Refuses, by name, the modules cppimport would compile."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        source = cpp_source(fullname, path)
        if source is None:
            return None
        # an ImportError, not a ModuleNotFoundError: ``from . import x`` turns the latter into
        # "cannot import name", losing the message
        raise ImportError(not_implemented_message(
            f"C++ custom op module {fullname} (cppimport would build {os.path.relpath(source)} against PopART)"))


if not any(isinstance(f, CppModuleRefusal) for f in sys.meta_path):
    sys.meta_path.append(CppModuleRefusal())
