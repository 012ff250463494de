"""Generate docs/compatibility.md: what the simulator covers of popxl's and popxl-addons' public API.

    python tools/compat_table.py            # print the page
    python tools/compat_table.py --write    # rewrite docs/compatibility.md
    python tools/compat_table.py --check    # exit 1 when the committed page is out of date

The real public names (SDK 3.4) are recorded in ``tools/compat_names.json`` (names only). Each
is looked up in the emulator (``profcompare.emulator.popxl`` / ``popxl_addons``) and classified
from the emulator's own code, nothing written by hand:

- **not**: the name is missing, or its function raises the simulator's "not implemented" error
  unconditionally (its body's own ``raise``);
- **partial**: the function exists but raises that error for some arguments (a ``raise`` of it
  under a condition, in the function or in a helper function of the emulator it calls); the
  note quotes what is refused;
- **supported**: present, and no such refusal in its code.

A function may also carry ``__simulator_note__``: a note on values that differ from the real
API's by design (random numbers), added to its row whatever its status.

The "not implemented" errors are ``SimulatorNotImplementedError`` / ``not_implemented_message``
(popxl) and ``AddonsNotImplementedError`` / ``not_supported`` (popxl-addons). popxl-addons names
are classified under every generation the emulator knows (``PROFCOMPARE_SIM_ADDONS``).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib
import inspect
import json
import os
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
NAMES_FILE = ROOT / "tools" / "compat_names.json"
PAGE = ROOT / "docs" / "compatibility.md"

#: real top-level package -> the emulator's
EMULATED = {"popxl": "profcompare.emulator.popxl", "popxl_addons": "profcompare.emulator.popxl_addons",
            "popart": "profcompare.emulator.popart", "popdist": "profcompare.emulator.popdist"}
#: source text marking a refusal of the simulator
MARKERS = ("SimulatorNotImplementedError", "not_implemented_message", "AddonsNotImplementedError", "not_supported")
STATUSES = ("supported", "partial", "not")
#: how deep helper calls are followed when looking for refusals
HELPER_DEPTH = 2


@dataclass(frozen=True)
class Entry:
    """One public name and how the simulator covers it."""

    name: str
    status: str
    note: str = ""


# --------------------------------------------------------------------------------------------
# looking names up


def _emulated_module(real: str) -> ModuleType | None:
    top, _, rest = real.partition(".")
    try:
        return importlib.import_module(EMULATED[top] + ("." + rest if rest else ""))
    except ImportError:
        return None


def _lookup(owner: Any, name: str) -> tuple[bool, Any]:
    """(found, object) without running properties; a module's ``__getattr__`` refusal is 'missing'."""
    if isinstance(owner, ModuleType):
        if name in vars(owner):
            return True, vars(owner)[name]
        try:
            return True, getattr(owner, name)
        except (AttributeError, NotImplementedError, ImportError):
            return False, None
    try:
        return True, inspect.getattr_static(owner, name)
    except AttributeError:
        return False, None


def _function_of(obj: Any) -> Any:
    """The plain function behind a property, static/class method, context manager or class."""
    if isinstance(obj, property):
        obj = obj.fget
    elif isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    elif inspect.isclass(obj):
        obj = obj.__dict__.get("__init__") if "__init__" in obj.__dict__ else None
    return inspect.unwrap(obj) if obj is not None and callable(obj) else None


# --------------------------------------------------------------------------------------------
# reading refusals from the code


def _is_refusal(node: ast.Raise, source: str) -> bool:
    text = ast.get_source_segment(source, node) or ""
    return any(m in text for m in MARKERS)


def _refusal_note(node: ast.Raise, source: str) -> str:
    """The quoted text of a refusal: its first string (f-string placeholders kept as {...})."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.JoinedStr):
            return "".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                           for v in sub.values)
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            return sub.value
    return (ast.get_source_segment(source, node) or "").strip()


def _function_node(fn: Any) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, str] | None:
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return None
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node, source
    return None


def _walk_own(node: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function body, not descending into nested functions or classes."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield child
        yield from _walk_own(child)


def _refusals(fn: Any, depth: int = HELPER_DEPTH, seen: set[int] | None = None) -> tuple[list[str], list[str]]:
    """(unconditional, conditional) refusal notes of ``fn``; helpers' refusals count as conditional."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return [], []
    seen.add(id(fn))
    found = _function_node(fn)
    if found is None:
        return [], []
    node, source = found
    always: list[str] = []
    sometimes: list[str] = []
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(getattr(s, "value", None), ast.Constant))]
    for statement in body:
        if isinstance(statement, ast.Raise) and _is_refusal(statement, source):
            always.append(_refusal_note(statement, source))
    for sub in _walk_own(node):
        if isinstance(sub, ast.Raise) and _is_refusal(sub, source) and not any(sub is s for s in body):
            sometimes.append(_refusal_note(sub, source))
        if depth > 0 and isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name):
            helper = getattr(fn, "__globals__", {}).get(sub.func.id)
            module = getattr(helper, "__module__", "") or ""
            if inspect.isfunction(helper) and module.startswith("profcompare.emulator"):
                a, s = _refusals(inspect.unwrap(helper), depth - 1, seen)
                sometimes += a + s
    return always, sometimes


#: attribute of an emulator function holding a note on values that differ from the real API's by design
SIMULATOR_NOTE = "__simulator_note__"


def classify(found: bool, obj: Any) -> tuple[str, str]:
    """(status, note) of an object found (or not) in the emulator; its ``__simulator_note__``, if
    any, is added to the note."""
    status, note = _classify_refusals(found, obj)
    extra = (getattr(obj, SIMULATOR_NOTE, "") or getattr(_function_of(obj), SIMULATOR_NOTE, "")) if found else ""
    return status, "; ".join(n for n in (note, extra) if n)


def _classify_refusals(found: bool, obj: Any) -> tuple[str, str]:
    if not found:
        return "not", ""
    fn = _function_of(obj)
    if fn is None:
        return "supported", ""
    always, sometimes = _refusals(fn)
    if always:
        return "not", always[0]
    if sometimes:
        unique = list(dict.fromkeys(sometimes))
        return "partial", "; ".join(unique[:3]) + (f"; and {len(unique) - 3} more" if len(unique) > 3 else "")
    return "supported", ""


@contextlib.contextmanager
def _generation(value: str | None) -> Iterator[None]:
    try:
        from profcompare.backend.addons_generation import ENV_VAR
    except ImportError:
        yield
        return
    saved = os.environ.get(ENV_VAR)
    if value is not None:
        os.environ[ENV_VAR] = value
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = saved


def generations() -> tuple[str, ...]:
    """The popxl-addons generations the emulator knows (one column each in the addons tables)."""
    try:
        from profcompare.backend.addons_generation import GENERATIONS
    except ImportError:
        return ("3.4",)
    return tuple(GENERATIONS)


def survey(names: dict[str, Any], generation: str | None = None) -> dict[str, list[Entry]]:
    """Classify every recorded name: section ("popxl.ops", "popxl.Tensor", ...) -> entries."""
    sections: dict[str, list[Entry]] = {}
    with _generation(generation):
        for module_name, public in names["modules"].items():
            module = _emulated_module(module_name)
            entries = []
            for name in public:
                found, obj = _lookup(module, name) if module is not None else (False, None)
                entries.append(Entry(name, *classify(found, obj)))
            sections[module_name] = entries
        for class_name, public in names["classes"].items():
            owner_module, _, cls_name = class_name.rpartition(".")
            module = _emulated_module(owner_module)
            found_cls, cls = _lookup(module, cls_name) if module is not None else (False, None)
            entries = []
            for name in public:
                found, obj = _lookup(cls, name) if found_cls and inspect.isclass(cls) else (False, None)
                entries.append(Entry(name, *classify(found, obj)))
            sections[class_name] = entries
    return sections


# --------------------------------------------------------------------------------------------
# the page


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _counts(entries: list[Entry]) -> dict[str, int]:
    return {s: sum(e.status == s for e in entries) for s in STATUSES}


def render(names: dict[str, Any]) -> str:
    """The Markdown page: totals, then one table per module and class."""
    gens = generations()
    default = gens[-1]
    by_gen = {g: survey(names, g) for g in gens}
    main = by_gen[default]
    lines = [
        "# Compatibility: popxl and popxl-addons on the simulator",
        "",
        "<!-- generated by tools/compat_table.py from tools/compat_names.json and the emulator's code; "
        "do not edit by hand: run `python tools/compat_table.py --write` -->",
        "",
        "Every public name of popxl and popxl-addons as of Poplar SDK 3.4 and whether the simulator "
        "(`profcompare profile`, `python -m profcompare.sim`) covers it:",
        "",
        "- **supported**: present, with no refusal in its code;",
        "- **partial**: present, but some arguments or cases are refused with one line naming the API "
        "(the note quotes what is refused);",
        "- **not**: missing, or refused whatever the arguments. Using it fails with one line naming it, "
        "never with a wrong value.",
        "",
        "The status is read from the emulator's code by `tools/compat_table.py` (a test checks this page "
        "is up to date); the list of real names was recorded from graphcore/popart `python/popxl` and "
        "graphcore/popxl-addons, both at `sdk-release-3.4`. popxl-addons names are classified under each "
        f"popxl-addons generation the simulator emulates ({', '.join(gens)}; `--addons`, "
        "`PROFCOMPARE_SIM_ADDONS`); the tables show the status under " + default + " and name the others "
        "where they differ.",
        "",
        "## Totals",
        "",
        "| module / class | supported | partial | not | names | supported or partial |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    totals = {"popxl": dict.fromkeys(STATUSES, 0), "popxl_addons": dict.fromkeys(STATUSES, 0)}
    for section, entries in main.items():
        counts = _counts(entries)
        for s in STATUSES:
            totals[section.partition(".")[0]][s] += counts[s]
        n = len(entries)
        covered = counts["supported"] + counts["partial"]
        lines.append(f"| `{section}` | {counts['supported']} | {counts['partial']} | {counts['not']} | {n} | "
                     f"{100 * covered / n:.0f}% |" if n else f"| `{section}` | 0 | 0 | 0 | 0 | - |")
    for package, counts in totals.items():
        n = sum(counts.values())
        covered = counts["supported"] + counts["partial"]
        lines.append(f"| **all of {package}** | {counts['supported']} | {counts['partial']} | {counts['not']} | {n} | "
                     f"{100 * covered / n:.0f}% |")
    lines += _section_tables(main, by_gen, gens, default)
    extra = names.get("applications")
    if extra:
        apps = {g: survey(extra, g) for g in gens}
        lines += ["", "## Names the LLM applications use beyond SDK 3.4's public API", "", extra["about"],
                  "(not counted in the totals above).", ""]
        lines += _section_tables(apps[default], apps, gens, default, level="###")
    return "\n".join(lines) + "\n"


def _section_tables(main: dict[str, list[Entry]], by_gen: dict[str, dict[str, list[Entry]]], gens: tuple[str, ...],
                    default: str, level: str = "##") -> list[str]:
    lines: list[str] = []
    for section, entries in main.items():
        lines += ["", f"{level} `{section}`", "", "| name | status | note |", "|---|---|---|"]
        for i, entry in enumerate(entries):
            note = entry.note
            others = [f"{g}: {by_gen[g][section][i].status}" for g in gens
                      if g != default and by_gen[g][section][i].status != entry.status]
            if others:
                note = (note + "; " if note else "") + "under addons " + ", ".join(others)
            lines.append(f"| `{_cell(entry.name)}` | {entry.status} | {_cell(note)} |")
    return lines


def load_names(path: Path = NAMES_FILE) -> dict[str, Any]:
    """The recorded public names: {"modules": {module: [names]}, "classes": {class: [members]}}."""
    return json.loads(path.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    """Print, write or check docs/compatibility.md; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--write", action="store_true", help=f"rewrite {PAGE.relative_to(ROOT)}")
    group.add_argument("--check", action="store_true", help="exit 1 when the page is out of date")
    args = parser.parse_args(argv)
    page = render(load_names())
    if args.write:
        PAGE.write_text(page, encoding="utf-8")
        return 0
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != page:
            print(f"{PAGE.relative_to(ROOT)} is out of date: run python tools/compat_table.py --write", file=sys.stderr)
            return 1
        return 0
    sys.stdout.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
