"""tools/compat_table.py: the compatibility page is generated from the emulator's code and the
committed docs/compatibility.md is what the script prints today."""

from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compat():
    spec = importlib.util.spec_from_file_location("compat_table", ROOT / "tools" / "compat_table.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["compat_table"] = module
    spec.loader.exec_module(module)
    return module


def test_the_committed_page_is_what_the_script_generates(compat) -> None:
    page = (ROOT / "docs" / "compatibility.md").read_text(encoding="utf-8")
    assert page == compat.render(compat.load_names()), (
        "docs/compatibility.md is out of date: run python tools/compat_table.py --write")


def test_check_mode_agrees(compat) -> None:
    assert compat.main(["--check"]) == 0


def _always(x):
    """A function that refuses whatever its arguments."""
    raise SimulatorNotImplementedError(not_implemented_message("popxl.ops.always"))  # noqa: F821


def _sometimes(x, mode="a"):
    if mode == "b":
        raise SimulatorNotImplementedError(not_implemented_message(f"popxl.ops.sometimes(mode={mode!r})"))  # noqa: F821
    return x


def _fine(x):
    if x < 0:
        raise ValueError("negative")
    return x


def test_classification_reads_refusals_from_the_code(compat) -> None:
    assert compat.classify(False, None) == ("not", "")
    assert compat.classify(True, _always) == ("not", "popxl.ops.always")
    assert compat.classify(True, _sometimes) == ("partial", "popxl.ops.sometimes(mode={mode})")
    assert compat.classify(True, _fine) == ("supported", "")
    assert compat.classify(True, property(_sometimes))[0] == "partial"
    assert compat.classify(True, 3) == ("supported", "")  # a constant, a dtype: nothing to refuse


def test_the_survey_follows_the_emulator(compat) -> None:
    names = {"modules": {"popxl.ops": ["matmul"], "popxl": ["TileSet"], "popxl.no_such_module": ["x"]},
             "classes": {"popxl.Session": ["run"], "popxl.NoSuchClass": ["y"]}}
    sections = compat.survey(names)
    assert [(e.name, e.status) for e in sections["popxl.ops"]] == [("matmul", "supported")]
    assert [(e.name, e.status) for e in sections["popxl"]] == [("TileSet", "not")]
    assert sections["popxl.no_such_module"][0].status == "not"
    assert sections["popxl.Session"][0].status == "supported"
    assert sections["popxl.NoSuchClass"][0].status == "not"


def test_the_recorded_names_are_names_only(compat) -> None:
    names = compat.load_names()
    assert set(names) == {"about", "modules", "classes", "applications"}
    for group in ("modules", "classes"):
        for owner, listed in names[group].items():
            assert owner.split(".")[0] in ("popxl", "popxl_addons")
            assert listed == sorted(set(listed)) and all(n.isidentifier() for n in listed)
        # names the LLM applications use beyond those, the runtime modules they import included
        for owner, listed in names["applications"][group].items():
            assert owner.split(".")[0] in ("popxl", "popxl_addons", "popart", "popdist")
            assert listed == sorted(set(listed)) and all(n.isidentifier() for n in listed)
    # a few names every popxl user knows
    assert {"matmul", "relu", "conv", "repeat", "dropout"} <= set(names["modules"]["popxl.ops"])
    assert "copy_to_ipu" in names["classes"]["popxl.Tensor"]
