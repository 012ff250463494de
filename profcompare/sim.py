"""Run an unmodified popxl / popxl-addons program on the profcompare simulator.

``python -m profcompare.sim SCRIPT [ARGS...]`` (or ``python -m profcompare.sim -m MODULE
[ARGS...]``, e.g. ``-m pytest tests/test_x.py``) runs the program as ``python`` would, with
``popxl``, ``popxl_addons`` (and ``popart``, ``popdist``: the few names of theirs programs
use) and every submodule of theirs (``popxl.ops``,
``popxl.transforms``, ``popxl_addons.rts``, ...) resolved to the emulator
(:mod:`profcompare.emulator.popxl`, :mod:`profcompare.emulator.popxl_addons`): each is
registered in ``sys.modules`` under its real name, so ``from popxl.transforms import
autodiff`` gives the function, as in popxl. A submodule the emulator does not have fails to
import with one line naming it. ``POPLAR_ENGINE_OPTIONS`` is honoured like Poplar does
(autoReport). ``profcompare profile`` builds on this: the same program in a subprocess, one
report per Session, in a run directory.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import Any

#: real top-level package -> the emulator package standing in for it
ALIASES = {"popxl": "profcompare.emulator.popxl", "popxl_addons": "profcompare.emulator.popxl_addons",
           # the Graphcore runtime modules popxl programs import beside popxl (emulator/popart, popdist)
           "popart": "profcompare.emulator.popart", "popdist": "profcompare.emulator.popdist"}
#: single modules of other packages the simulator stands in for: cppimport's hook, so the C++
#: custom ops a program builds with it are refused by name (emulator/cppimport_hook.py)
MODULE_ALIASES = {"cppimport.import_hook": "profcompare.emulator.cppimport_hook"}


class _AliasLoader(importlib.abc.Loader):
    """Hands out the already imported emulator module for a real popxl module name."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return importlib.import_module(self.target)

    def exec_module(self, module: ModuleType) -> None:  # the emulator module is executed already
        return None


class EmulatorFinder(importlib.abc.MetaPathFinder):
    """Resolves ``popxl``/``popxl_addons`` and their submodules to the emulator's modules."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname in MODULE_ALIASES:
            return importlib.machinery.ModuleSpec(fullname, _AliasLoader(MODULE_ALIASES[fullname]))
        top, _, rest = fullname.partition(".")
        if top not in ALIASES:
            return None
        emulated = ALIASES[top] + ("." + rest if rest else "")
        try:
            found = importlib.util.find_spec(emulated)
        except ModuleNotFoundError:
            found = None
        if found is None:
            from profcompare.emulator.popxl.errors import not_implemented_message

            raise ModuleNotFoundError(not_implemented_message(f"module {fullname}"), name=fullname)
        is_package = found.submodule_search_locations is not None
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(emulated), is_package=is_package)


def install() -> None:
    """Make ``import popxl`` / ``import popxl_addons`` (and submodules) give the emulator.

    Idempotent. Modules already imported under those names (the real SDK, say) are replaced.
    """
    if not any(isinstance(f, EmulatorFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, EmulatorFinder())
    for name in [n for n in sys.modules if n.partition(".")[0] in ALIASES]:
        del sys.modules[name]
    for top in ALIASES:
        importlib.import_module(top)
    # submodules the packages import themselves are registered under their real names too,
    # so ``sys.modules["popxl.ops"] is popxl.ops``
    for top, emulated in ALIASES.items():
        for name, module in list(sys.modules.items()):
            if module is not None and (name == emulated or name.startswith(emulated + ".")):
                sys.modules.setdefault(top + name[len(emulated):], module)


def run_program(target: str, args: Sequence[str] = (), *, module: bool = False) -> None:
    """Run ``target`` (a script path, or a module name with ``module=True``) as ``__main__``
    with ``sys.argv`` = [target, *args], the way ``python SCRIPT`` / ``python -m MODULE`` does
    (the script's directory, or the working directory for a module, first on ``sys.path``).

    Returns when the program returns; its exceptions (SystemExit included) propagate.
    """
    if module:
        sys.argv = [target, *args]
        sys.path.insert(0, os.getcwd())
        runpy.run_module(target, run_name="__main__", alter_sys=True)
    else:
        path = os.path.abspath(target)
        sys.argv = [target, *args]
        sys.path.insert(0, os.path.dirname(path))
        runpy.run_path(path, run_name="__main__")


def _usage() -> int:
    print("usage: python -m profcompare.sim SCRIPT [ARGS...] | python -m profcompare.sim -m MODULE [ARGS...]",
          file=sys.stderr)
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Run a program on the simulator; return its exit status (2 for bad usage)."""
    args = list(sys.argv[1:] if argv is None else argv)
    module = bool(args) and args[0] == "-m"
    if module:
        args = args[1:]
    if not args or args[0] in ("-h", "--help"):
        return _usage()
    if not module and not os.path.isfile(args[0]):
        print(f"profcompare.sim: error: no such script: {args[0]}", file=sys.stderr)
        return 2
    install()
    try:
        run_program(args[0], args[1:], module=module)
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        print(code, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
