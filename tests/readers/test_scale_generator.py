"""The scale benchmark's generator, at a small size: valid reports, and the promised perturbation."""

from __future__ import annotations

import importlib.util
import pathlib
import sys
import types

import pytest

from profcompare.readers import open_report

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def _load(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    make = _load("make_scale_reports")
    return make.make_reports(tmp_path_factory.mktemp("scale"), variables=20_000, steps=3_000)


def test_generated_reports_open_with_the_promised_shape(generated: tuple[pathlib.Path, pathlib.Path]) -> None:
    base, new = (open_report(p) for p in generated)
    assert len(base.tiles) == 1472 and len(base.liveness) == 3_000 and len(base.variables) == 20_000
    assert {"vertexCode", "variable", "stack"} <= set(base.tiles.columns)
    assert len(base.code) and len(base.execution) and len(base.remote_buffers)
    assert base.variables["name"].is_unique and new.variables["name"].is_unique


def _previous(name: str) -> str:
    stem, _, number = name.rpartition("__")
    return f"{stem}__{int(number) - 1}"


def test_new_report_is_a_perturbation_of_base(generated: tuple[pathlib.Path, pathlib.Path]) -> None:
    base, new = (open_report(p) for p in generated)
    base_names, new_names = set(base.variables["name"]), set(new.variables["name"])
    removed, added = base_names - new_names, new_names - base_names
    renamed = {n for n in added if "__" in n and _previous(n) in removed}
    assert len(renamed) > 100  # numeric suffix changed: ~2% of names
    assert len(added - renamed) >= 100  # new names: 0.5%
    assert len(removed - {_previous(n) for n in renamed}) >= 50  # gone: ~0.5%
    base_bytes, new_bytes = base.variables.set_index("name")["bytes"].align(
        new.variables.set_index("name")["bytes"], join="inner"
    )
    changed = int((base_bytes != new_bytes).sum())
    assert 0.005 * len(base_bytes) < changed < 0.05 * len(base_bytes)


def test_benchmark_workers_measure_the_same_rows(generated: tuple[pathlib.Path, pathlib.Path]) -> None:
    bench = _load("bench_scale")
    paths = [str(p) for p in generated]
    raw = bench.worker_raw(paths, pause_gc=False)
    opened = bench.worker_open(paths)
    assert raw["seconds"] > 0 and opened["seconds"] > 0
    assert opened["variables"][0] == 20_000
    assert raw["rows"] > sum(opened["variables"]) + sum(opened["liveness"])
