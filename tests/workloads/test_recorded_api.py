"""Both backends judged by one table: the emulator under each popxl-addons generation has exactly
the recorded signatures of the real release (tests/workloads/recorded_api.py), and the
workloads call only recorded names, each call binding to that generation's signature."""

from __future__ import annotations

import importlib
import inspect
from types import ModuleType
from typing import Any

import pytest

import workloads._mnist_program as program_module
from profcompare.emulator import popxl, popxl_addons
from profcompare.emulator.popxl import ops
from tests.workloads.recorded_api import ADDONS, ALL_KEYS, BOTH, NOT_TOP_LEVEL, POPXL, recorded
from workloads import find_variant, parse_knobs
from workloads.mnist import run as run_mnist

ROOTS: dict[str, Any] = {
    "popxl": popxl,
    "ops": ops,
    "addons": popxl_addons,
    "rts": importlib.import_module("profcompare.emulator.popxl_addons.rts"),
    "nrg": importlib.import_module("profcompare.emulator.popxl_addons.named_replica_grouping"),
}
VARIANTS = ("onchip", "onchip-sharded", "offchip", "offchip-sharded")
SMALL = {"replicas": 2, "grad_accum": 2, "micro_batch": 4, "hidden": 32, "layers": 1, "sharded_threshold": 64,
         "steps": 1}


@pytest.fixture(params=BOTH)
def generation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", request.param)
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
    return str(request.param)


def _signature(text: str) -> inspect.Signature:
    return inspect.signature(eval(f"lambda {text[1:-1]}: None"))  # noqa: S307 - our own recorded table


def _shape(sig: inspect.Signature) -> list[tuple[str, Any, Any]]:
    return [(p.name, p.kind, p.default) for p in sig.parameters.values()]


def _owner_and_attr(key: str) -> tuple[Any, str]:
    where, _, path = key.partition(":")
    obj: Any = ROOTS[where]
    *parents, attr = path.split(".")
    for part in parents:
        obj = getattr(obj, part)
    return obj, attr


def _emulated_signature(key: str) -> inspect.Signature:
    owner, attr = _owner_and_attr(key)
    if attr == "__init__":
        return inspect.signature(owner)
    value = getattr(owner, attr)
    sig = inspect.signature(value)
    if isinstance(owner, type) and inspect.isfunction(value):
        params = list(sig.parameters.values())[1:]  # an instance method read from its class: drop self
        sig = sig.replace(parameters=params)
    return sig


@pytest.mark.parametrize("key", ALL_KEYS)
def test_the_emulator_has_exactly_the_recorded_signature(generation: str, key: str) -> None:
    assert _shape(_emulated_signature(key)) == _shape(_signature(recorded(key, generation))), key


def test_the_generations_differ_where_the_releases_do() -> None:
    differing = {key for key, value in ADDONS.items() if not isinstance(value, str)}
    assert "rts:replica_sharded_spec" in differing and "addons:autodiff_with_accumulation" in differing
    assert all(isinstance(v, str) for v in POPXL.values())  # popxl follows SDK 3.4 in both


@pytest.mark.parametrize("name", NOT_TOP_LEVEL)
def test_names_kept_in_submodules_are_not_top_level(generation: str, name: str) -> None:
    with pytest.raises(AttributeError, match="submodule"):
        getattr(popxl_addons, name)


# -- what the workloads call ------------------------------------------------------------------


class _Calls:
    def __init__(self) -> None:
        self.seen: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    def wrap(self, key: str, fn: Any) -> Any:
        def traced(*args: Any, **kwargs: Any) -> Any:
            self.seen.append((key, args, kwargs))
            return fn(*args, **kwargs)

        return traced


class _TracedModule:
    """A module whose functions (and submodules' functions) record their calls; classes pass
    through untouched (their methods are traced on the class)."""

    def __init__(self, module: ModuleType, where: str, calls: _Calls, prefix: str = "") -> None:
        object.__setattr__(self, "_module", module)
        object.__setattr__(self, "_where", where)
        object.__setattr__(self, "_calls", calls)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._module, name)
        if isinstance(value, ModuleType):
            return _TracedModule(value, self._where, self._calls, f"{self._prefix}{name}.")
        if isinstance(value, type) or not callable(value) or name.startswith("__"):
            return value
        return self._calls.wrap(f"{self._where}:{self._prefix}{name}", value)


def _trace_methods(monkeypatch: pytest.MonkeyPatch, calls: _Calls) -> None:
    for key in ALL_KEYS:
        owner, attr = _owner_and_attr(key)
        if not isinstance(owner, type):
            continue
        static = inspect.getattr_static(owner, attr)
        if isinstance(static, classmethod) or getattr(static, "classmethod", False):
            bound = getattr(owner, attr)

            def as_classmethod(cls: type, *args: Any, _key: str = key, _bound: Any = bound, **kwargs: Any) -> Any:
                calls.seen.append((_key, args, kwargs))
                return _bound.__func__(cls, *args, **kwargs) if hasattr(_bound, "__func__") else _bound(*args, **kwargs)

            monkeypatch.setattr(owner, attr, classmethod(as_classmethod))
        else:
            def as_method(self: Any, *args: Any, _key: str = key, _static: Any = static, **kwargs: Any) -> Any:
                calls.seen.append((_key, args, kwargs))
                return _static.__get__(self, type(self))(*args, **kwargs)

            monkeypatch.setattr(owner, attr, as_method)


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_workloads_call_only_recorded_names_with_recorded_arguments(
        generation: str, variant: str, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _Calls()
    real_import = importlib.import_module

    class _Importlib:
        @staticmethod
        def import_module(name: str, package: str | None = None) -> Any:
            module = real_import(name, package)
            where = {"rts": "rts", "named_replica_grouping": "nrg"}.get(name.rsplit(".", 1)[-1])
            return _TracedModule(module, where, calls) if where else module

    monkeypatch.setattr(program_module, "popxl", _TracedModule(popxl, "popxl", calls))
    monkeypatch.setattr(program_module, "ops", _TracedModule(ops, "ops", calls))
    monkeypatch.setattr(program_module, "addons", _TracedModule(popxl_addons, "addons", calls))
    monkeypatch.setattr(program_module, "rts", _TracedModule(ROOTS["rts"], "rts", calls))
    monkeypatch.setattr(program_module, "importlib", _Importlib)
    _trace_methods(monkeypatch, calls)

    config = parse_knobs(find_variant(variant), SMALL)
    run_mnist(variant, config)

    keys = {key for key, _, _ in calls.seen}
    assert keys, "nothing was traced"
    unrecorded = sorted(keys - set(ALL_KEYS))
    assert not unrecorded, f"the workload calls names outside the recorded table: {unrecorded}"
    for key, args, kwargs in calls.seen:
        sig = _signature(recorded(key, generation))
        try:
            sig.bind(*args, **kwargs)
        except TypeError as exc:
            pytest.fail(f"{key} called as ({len(args)} positional, {sorted(kwargs)}) does not bind to the "
                        f"popxl-addons {generation} signature {sig}: {exc}")
    # the generation-specific spellings really were exercised
    if variant.endswith("-sharded") or variant == "offchip":
        assert "rts:reduce_replica_sharded_graph" in keys
    if variant.startswith("offchip"):
        assert "addons:named_variable_buffers" in keys and "rts:replica_sharded_spec" in keys
    if variant == "onchip-sharded":
        assert "popxl:replica_sharded_variable" in keys
