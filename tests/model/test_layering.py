"""Layers import downward only: nothing below the render layer imports it (nor the commands or
the command line), not even lazily inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "profcompare"

#: The modules below the render layer: the model and what it is built on, the readers, the
#: analysis, the ledger, the N-way table and the comparison.
LOWER_MODULES = sorted(
    [PACKAGE / name for name in ("model.py", "errors.py")]
    + list((PACKAGE / "analysis").rglob("*.py"))
    + list((PACKAGE / "base").rglob("*.py"))
    + list((PACKAGE / "perf").rglob("*.py"))
    + list((PACKAGE / "compare").rglob("*.py"))
    + list((PACKAGE / "readers").rglob("*.py"))
)

FORBIDDEN = ("profcompare.render", "profcompare.commands", "profcompare.cli")


def _forbidden(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in FORBIDDEN)


def _package_of(path: Path) -> list[str]:
    return ["profcompare", *path.relative_to(PACKAGE).parent.parts]


def upward_imports(source: str, package: list[str]) -> list[str]:
    """``line: module`` for every import in ``source`` (a module of ``package``) of a module named
    in :data:`FORBIDDEN`: ``import``/``from`` statements anywhere (module level, functions,
    TYPE_CHECKING blocks), relative ones resolved, and ``importlib.import_module`` /
    ``__import__`` of a literal name."""
    tree = ast.parse(source)
    found: list[str] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            names = [module] + [f"{module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if called in ("import_module", "__import__") and isinstance(node.args[0].value, str):
                names = [node.args[0].value]
        bad = sorted({n for n in names if _forbidden(n)})
        if bad:
            found.append(f"{node.lineno}: {bad[0]}")
    return found


def test_the_lower_layers_are_all_checked() -> None:
    relative = {str(p.relative_to(PACKAGE)) for p in LOWER_MODULES}
    assert {"model.py", "analysis/views.py", "analysis/ledger.py", "analysis/nway.py", "compare/comparison.py", "compare/limits.py",
            "readers/store.py", "readers/pva.py"} <= relative


@pytest.mark.parametrize("path", LOWER_MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_lower_module_imports_the_render_layer_commands_or_cli(path: Path) -> None:
    assert upward_imports(path.read_text(encoding="utf-8"), _package_of(path)) == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from profcompare.render import plots\n", ["1: profcompare.render"]),
        ("def f():\n    from profcompare.render.notebook import x\n", ["2: profcompare.render.notebook"]),
        ("import profcompare.cli\n", ["1: profcompare.cli"]),
        ("from profcompare import render\n", ["1: profcompare.render"]),
        ("from ..render import html\n", ["1: profcompare.render"]),
        ("import importlib\nimportlib.import_module('profcompare.commands.show')\n", ["2: profcompare.commands.show"]),
        ("from profcompare import presenters\nfrom profcompare.renderer_like import x\n", []),
    ],
)
def test_the_check_sees_every_form_of_import(source: str, expected: list[str]) -> None:
    # as if the source were a module of profcompare.compare (relative imports resolve from there)
    assert upward_imports(source, ["profcompare", "compare"]) == expected
