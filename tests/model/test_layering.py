"""Layers import downward only, for every package, not even lazily inside a function; the import
graph has no circle outside the emulator; the package's top level holds only a few modules.

The floors, lowest first (a module may import its own package and any floor at or below its own):

  errors, _version, perf -> base, backend -> model -> readers -> analysis -> comparison
  -> emulator, sdk, sim, workloads (the backend side) -> render -> runner -> advisor
  -> commands -> cli, the package's public API

The runner and the advisor return results and never render: the commands hand those to render
(:data:`NEVER`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "profcompare"

#: The floor of each top-level package or module of profcompare, and of the workloads package.
FLOORS: dict[str, int] = {
    "errors": 0, "_version": 0, "perf": 0,
    "base": 1, "backend": 1,
    "model": 2,
    "readers": 3,
    "analysis": 4,
    "comparison": 5,
    "emulator": 6, "sdk": 6, "sim": 6, "workloads": 6,
    "render": 7,
    "runner": 8,
    "advisor": 9,
    "commands": 10,
    "cli": 11, "__init__": 11,
    "__main__": 12,
}

#: Imports that the floors would allow but the design does not: (importer, imported).
NEVER = {("runner", "render"), ("advisor", "render")}

#: At most this many modules at the package's top level (the public API, the command line, the
#: model, the errors and the two seams user code names: ``profcompare.sdk``, ``profcompare.sim``).
TOP_LEVEL_LIMIT = 8

#: The modules below the render layer: the model and what it is built on, the readers, the
#: analysis and the comparison.
LOWER_MODULES = sorted(
    [PACKAGE / name for name in ("model.py", "errors.py")]
    + [path for name in ("analysis", "base", "perf", "backend", "comparison", "readers")
       for path in (PACKAGE / name).rglob("*.py")]
)

FORBIDDEN = ("profcompare.render", "profcompare.commands", "profcompare.cli")


def _forbidden(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in FORBIDDEN)


def _package_of(path: Path) -> list[str]:
    return ["profcompare", *path.relative_to(PACKAGE).parent.parts]


def imported_names(source: str, package: list[str]) -> Iterator[tuple[int, list[str]]]:
    """``(line, names)`` for every import in ``source`` (a module of ``package``): ``import`` /
    ``from`` statements anywhere (module level, functions, TYPE_CHECKING blocks), relative ones
    resolved, and ``importlib.import_module`` / ``__import__`` of a literal name. A ``from M
    import a`` gives ``M`` and ``M.a`` (``a`` may be a module)."""
    for node in ast.walk(ast.parse(source)):
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
        if names:
            yield node.lineno, names


def upward_imports(source: str, package: list[str]) -> list[str]:
    """``line: module`` for every import in ``source`` (a module of ``package``) of a module named
    in :data:`FORBIDDEN` (every form :func:`imported_names` sees)."""
    found: list[str] = []
    for line, names in imported_names(source, package):
        bad = sorted({n for n in names if _forbidden(n)})
        if bad:
            found.append(f"{line}: {bad[0]}")
    return found


def _modules() -> dict[str, tuple[Path, list[str]]]:
    """Every module of profcompare and workloads: dotted name -> (path, the package its relative
    imports resolve in)."""
    modules: dict[str, tuple[Path, list[str]]] = {}
    for root in (PACKAGE, ROOT / "workloads"):
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
                package = parts
            else:
                package = parts[:-1]
            modules[".".join(parts)] = (path, package)
    return modules


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of profcompare and workloads it imports (every import, function-level
    and TYPE_CHECKING ones included; ``from package import name`` is an edge to the submodule
    ``name`` when there is one, else to the package)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, (path, package) in modules.items():
        edges: set[str] = set()
        for _, names in imported_names(path.read_text(encoding="utf-8"), package):
            if len(names) > 1:  # from M import a, b: the submodules a, b where they are modules, else M
                submodules = [n for n in names[1:] if n in modules]
                names = submodules + ([names[0]] if len(submodules) < len(names) - 1 else [])
            for imported in names:
                target = resolve(imported) if imported.split(".")[0] in ("profcompare", "workloads") else None
                if target and target != name:
                    edges.add(target)
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]], *, skip: tuple[str, ...] = ()) -> list[list[str]]:
    """The import circles of ``graph`` (its strongly connected components of more than one
    module), leaving out the modules whose name starts with one of ``skip``; each sorted."""
    nodes = [n for n in graph if not n.startswith(skip)]
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        # iterative Tarjan: (node, iterator over its successors)
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ.startswith(skip) or succ not in graph:
                    continue
                if succ not in index:
                    index[succ] = low[succ] = counter
                    counter += 1
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def _floor_key(module: str) -> str:
    parts = module.split(".")
    if parts[0] == "workloads":
        return "workloads"
    return parts[1] if len(parts) > 1 else "__init__"


def wrong_way_imports(graph: dict[str, set[str]]) -> list[str]:
    """``importer -> imported`` for every import between packages that runs up the floors
    (:data:`FLOORS`) or is one of :data:`NEVER`."""
    found = []
    for importer, targets in graph.items():
        source = _floor_key(importer)
        for imported in targets:
            target = _floor_key(imported)
            if source == target:
                continue
            if FLOORS[target] > FLOORS[source] or (source, target) in NEVER:
                found.append(f"{importer} -> {imported}")
    return sorted(found)


def test_the_lower_layers_are_all_checked() -> None:
    relative = {str(p.relative_to(PACKAGE)) for p in LOWER_MODULES}
    assert {"model.py", "analysis/views.py", "analysis/ledger.py", "analysis/nway.py", "comparison/comparison.py",
            "comparison/limits.py", "readers/store.py", "readers/pva.py"} <= relative


@pytest.mark.parametrize("path", LOWER_MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_lower_module_imports_the_render_layer_commands_or_cli(path: Path) -> None:
    assert upward_imports(path.read_text(encoding="utf-8"), _package_of(path)) == []


def test_every_package_has_a_floor() -> None:
    keys = {_floor_key(name) for name in _modules()}
    assert keys <= set(FLOORS), sorted(keys - set(FLOORS))


def test_every_import_between_packages_runs_down_the_floors() -> None:
    assert wrong_way_imports(import_graph()) == []


def test_no_import_circle_outside_the_emulator() -> None:
    assert circles(import_graph(), skip=("profcompare.emulator",)) == []


def test_the_top_level_holds_only_the_public_api_the_command_line_the_model_and_the_seams() -> None:
    top_level = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top_level) <= TOP_LEVEL_LIMIT, top_level


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
    # as if the source were a module of profcompare.comparison (relative imports resolve from there)
    assert upward_imports(source, ["profcompare", "comparison"]) == expected


def test_the_graph_finds_a_circle_through_a_function_level_import() -> None:
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}, "p.emulator.x": {"p.emulator.y"},
             "p.emulator.y": {"p.emulator.x"}}
    assert circles(graph) == [["p.a", "p.b", "p.c"], ["p.emulator.x", "p.emulator.y"]]
    assert circles(graph, skip=("p.emulator",)) == [["p.a", "p.b", "p.c"]]
    assert circles({"p.a": {"p.b"}, "p.b": set()}) == []


def test_the_floors_catch_an_import_running_up_and_a_runner_that_renders() -> None:
    graph = {"profcompare.model": {"profcompare.analysis.ledger"}, "profcompare.analysis.ledger": {"profcompare.model"},
             "profcompare.runner.summarise": {"profcompare.render.output"}, "profcompare.render.output": set(),
             "profcompare.commands.run": {"profcompare.render.output", "profcompare.runner.summarise"}}
    assert wrong_way_imports(graph) == ["profcompare.model -> profcompare.analysis.ledger",
                                        "profcompare.runner.summarise -> profcompare.render.output"]
