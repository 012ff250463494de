"""C++ custom ops that popxl programs build themselves with cppimport, simulated.

A program's C++ op (a PopART ``Op`` and ``Opx`` plus a pybind11 binding, compiled against the
Poplar SDK by ``cppimport`` on first import) cannot be built here, and its semantics are in its
C++ sources. The simulator implements the ops of known sources: a binding is recognised by the
fingerprint of its sources (:func:`fingerprint`: the binding ``.cpp``, the ``cfg['sources']`` it
compiles and the local headers they include, whitespace-insensitive), so a changed op is refused
by name rather than simulated with the wrong semantics.
"""

from __future__ import annotations

import hashlib
import importlib
import re
from pathlib import Path
from types import ModuleType

from profcompare.emulator.popxl.errors import SimulatorNotImplementedError, not_implemented_message

#: fingerprint of the sources -> (module of this package standing in for the binding, what it is)
KNOWN: dict[str, tuple[str, str]] = {
    "0c8ba55bdcdf76d5": ("rotary_pos_embed_halves", "RotaryPosEmbed of graphcore/examples' nlp/dolly and nlp/llama"),
}

_SOURCES = re.compile(r"cfg\[['\"]sources['\"]\]\s*=\s*\[([^\]]*)\]")
_LOCAL_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
_STRING = re.compile(r"['\"]([^'\"]+)['\"]")


def _source_files(binding: Path) -> list[Path]:
    """The binding, the sources its cppimport block compiles and the local headers they include
    (transitively), in a fixed order; files that do not exist are left out."""
    text = binding.read_text(encoding="utf-8", errors="replace")
    found = _SOURCES.search(text)
    queue = [binding, *(binding.parent / name for name in (_STRING.findall(found.group(1)) if found else []))]
    seen: list[Path] = []
    while queue:
        path = queue.pop(0)
        if path in seen or not path.is_file():
            continue
        seen.append(path)
        queue += [path.parent / name for name in _LOCAL_INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace"))]
    return seen


def fingerprint(binding: Path) -> str:
    """The first 16 hex digits of the SHA-256 of the binding's sources (:func:`_source_files`),
    each file's text with whitespace runs removed, files in the order found, by name."""
    digest = hashlib.sha256()
    for path in _source_files(binding):
        digest.update(path.name.encode())
        digest.update(b"\0")
        digest.update(re.sub(r"\s+", "", path.read_text(encoding="utf-8", errors="replace")).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def binding_module(binding: Path) -> ModuleType:
    """The simulator's module standing in for the pybind11 module that ``binding`` (a cppimport
    ``.cpp``) builds; SimulatorNotImplementedError naming it when its sources are not known."""
    known = KNOWN.get(fingerprint(binding))
    if known is None:
        raise SimulatorNotImplementedError(not_implemented_message(
            f"the C++ custom op module {binding.stem} (cppimport, {binding}: its sources are not among those the "
            "simulator implements, docs/compatibility.md)"))
    return importlib.import_module(f"{__name__}.{known[0]}")
