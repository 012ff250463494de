"""The pva reader's fixes, each from public evidence (docs/pva-adapter.md lists the sources)."""

from __future__ import annotations

import re
import pathlib
import warnings
from types import SimpleNamespace as NS

import numpy as np
import pandas as pd
import pytest
from fake_pva import FakePva, build_report_tree, enum

from profcompare.emulator.targets import get_device
from profcompare.errors import ProfileWarning
from profcompare.readers.pva import (
    FALLBACK_CLOCK_HZ,
    architecture_name,
    category_names,
    guess_kinds,
    read_pva,
)


@pytest.fixture
def profile(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "profile.pop"
    path.write_bytes(b"SQLite format 3\x00 stand-in")
    return path


@pytest.mark.parametrize(
    ("pva_name", "clock", "expected"),
    [("Ipu1", 1.6e9, "Mk1"), ("Ipu2", 1.33e9, "Mk2"), ("Ipu2", 1.35e9, "Mk2"), ("Ipu2", 1.85e9, "Bow"),
     ("Ipu21", 1.33e9, "C600"), ("Ipu21", 1.85e9, "C600"), ("Ipu9", 1e9, "Ipu9")],
)
def test_architecture_names(pva_name: str, clock: float, expected: str) -> None:
    assert architecture_name(pva_name, clock) == expected


@pytest.mark.parametrize(("name", "arch"), [("ipu1", "Mk1"), ("ipu2", "Mk2"), ("ipu21", "C600"), ("bow", "Bow")])
def test_simulator_targets_use_the_same_names(name: str, arch: str) -> None:
    assert get_device(name).architecture == arch


def test_a_bow_profile_reads_as_bow(profile: pathlib.Path) -> None:
    tree = build_report_tree()
    tree.compilation.target.clockFrequency = 1.85e9
    assert read_pva(profile, pva_module=FakePva(tree)).meta.target.architecture == "Bow"


def test_categories_are_discovered_and_the_rest_is_unattributed(profile: pathlib.Path) -> None:
    tree = build_report_tree()
    for tile in tree.compilation.tiles:
        tile.memory.category.copyDescriptor = NS(total=7)
        tile.memory.category.someFutureCategory = NS(total=11)
    report = read_pva(profile, pva_module=FakePva(tree))
    cats = report.categories.set_index("category")
    assert cats.loc["copyDescriptor", "bytes"] == 4 * 7 and cats.loc["copyDescriptor", "group"] == "vertex_data"
    assert cats.loc["someFutureCategory", "bytes"] == 4 * 11 and cats.loc["someFutureCategory", "group"] == "other"
    # tile 0: 900 excluding gaps - (100 + 20 + 5 + 64 + 7 + 11) claimed = 693
    assert report.tiles.loc[0, "unattributed"] == 693
    assert "someFutureCategory" not in report.tiles.columns  # unknown categories live in the categories table
    assert cats["bytes"].sum() == report.tiles["bytes_excluding_gaps"].sum()


def test_category_discovery_ignores_methods_and_private_names() -> None:
    class Categories:
        vertexCode = NS(total=1)
        message = NS(total=2)
        _private = NS(total=3)

        def total(self) -> int:
            return 0

    assert category_names(Categories()) == ["vertexCode", "message"]
    assert category_names(None) == []


def test_control_variables_are_other() -> None:
    names = pd.Series(["broadcastProgramId_12", "broadcastProgramId", "layer0/weight", "act"])
    assert guess_kinds(names, np.array([True, False, True, False])) == ["other", "other", "weight", "activation"]


@pytest.mark.parametrize("clock", [0.0, -1.0])
def test_a_target_without_clock_falls_back_with_a_warning(profile: pathlib.Path, clock: float) -> None:
    tree = build_report_tree()
    tree.compilation.target.clockFrequency = clock
    with pytest.warns(ProfileWarning, match="assuming 1.33 GHz"):
        report = read_pva(profile, pva_module=FakePva(tree))
    assert report.meta.target.clock_hz == FALLBACK_CLOCK_HZ


class _Exploding:
    """A pybind list whose iteration fails half way (RuntimeError), as a damaged section does."""

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise RuntimeError("Unable to read execution step 17")


def test_a_runtime_error_in_the_execution_walk_costs_only_that_table(profile: pathlib.Path) -> None:
    tree = build_report_tree()
    tree.execution.runs = _Exploding()
    with pytest.warns(ProfileWarning, match="execution profile could not be read"):
        report = read_pva(profile, pva_module=FakePva(tree))
    assert report.execution.empty and "execution" not in report.meta.capabilities
    assert len(report.tiles) == 4 and "code" in report.meta.capabilities


def test_a_runtime_error_in_the_program_walk_costs_only_the_code_and_the_tree(profile: pathlib.Path) -> None:
    tree = build_report_tree()
    tree.compilation.programs = _Exploding()
    with pytest.warns(ProfileWarning) as caught:
        report = read_pva(profile, pva_module=FakePva(tree))
    messages = [str(w.message) for w in caught]
    assert any("per-program code could not be read" in m for m in messages)
    assert any("program tree could not be read" in m for m in messages)
    assert report.code.empty and "code" not in report.meta.capabilities
    assert report.programs.empty and "programs" not in report.meta.capabilities
    assert "execution" in report.meta.capabilities


def test_code_can_be_skipped_and_progress_is_reported(profile: pathlib.Path) -> None:
    seen: list[tuple[str, int, int]] = []
    report = read_pva(profile, pva_module=FakePva(), code=False, progress=lambda *a: seen.append(a))
    assert report.code.empty and "code" not in report.meta.capabilities
    assert "code" not in {part for part, _, _ in seen} and {"tiles", "liveness", "execution"} <= {p for p, _, _ in seen}
    seen.clear()
    read_pva(profile, pva_module=FakePva(), progress=lambda *a: seen.append(a))
    assert ("code", 4, 4) in seen  # the fake has 4 programs


def test_no_warning_for_a_healthy_profile(profile: pathlib.Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_pva(profile, pva_module=FakePva())
    assert enum("x").name == "x"


def test_show_no_code_and_warnings_are_one_line(profile: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import sys

    from profcompare.cli import main

    tree = build_report_tree()
    tree.compilation.target.clockFrequency = 0.0
    monkeypatch.setitem(sys.modules, "pva", FakePva(tree))
    assert main(["show", str(profile), "--no-code", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        "profcompare: warning: the profile's target reports clock frequency 0 Hz (an IPU Model or CPU target?); "
        "assuming 1.33 GHz to turn cycles into time"]
    assert "code" not in json.loads(out)["meta"]["capabilities"]


def test_export_no_code(profile: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from profcompare.cli import main
    from profcompare.readers import open_report

    monkeypatch.setitem(sys.modules, "pva", FakePva())
    assert main(["export", str(profile), "-o", str(tmp_path / "p.sqlite"), "--no-code"]) == 0
    back = open_report(tmp_path / "p.sqlite")
    assert back.code.empty and back.summary()["cycles_per_step"] == (810 + 780) / 2


def test_the_sdk_check_script_runs_on_a_pva_shaped_module(profile: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util
    import sys

    script = pathlib.Path(__file__).resolve().parents[2] / "tools" / "check_pva.py"
    spec = importlib.util.spec_from_file_location("check_pva", script)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    monkeypatch.setitem(sys.modules, "pva", FakePva())
    code = module.main([str(profile)])
    out = capsys.readouterr().out
    assert "compilation.target.architecture.name" in out and "'Ipu2'" in out
    assert "run 0: span 810 cycles; sum of step cycles 1,620" in out
    assert "MISSING" not in out and code == 0
    assert re.search(r"^cycles_per_step +795$", out, re.MULTILINE)  # then profcompare's own reading
    assert re.search(r"^seconds_per_step +5.977e-07$", out, re.MULTILINE)  # device time only: 795 cycles at the clock
    tree = build_report_tree()
    del tree.execution.runs[0].steps[0].ipus[0].activeCycles
    monkeypatch.setitem(sys.modules, "pva", FakePva(tree))
    assert module.main([str(profile)]) == 1
    assert "activeCycles.cyclesFrom.min" in capsys.readouterr().out
