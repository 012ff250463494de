"""tools/public_programs.py: runs published popxl programs under ``profcompare profile`` and
counts what runs. Checked here on small programs of our own laid out as the published suites."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

GOOD = """\
import numpy as np
import popxl
import popxl.ops as ops

ir = popxl.Ir()
with ir.main_graph:
    x = popxl.variable(np.ones(4, np.float32), name="x")
    s = popxl.d2h_stream(x.shape, x.dtype, "out")
    ops.host_store(s, x + 1)
with popxl.Session(ir, "ipu_hw") as session:
    print("sum", float(session.run()[s].sum()))
"""

BROKEN = "import popxl\nraise RuntimeError('this example is broken')\n"


@pytest.fixture(scope="module")
def tool():
    spec = importlib.util.spec_from_file_location("public_programs", ROOT / "tools" / "public_programs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["public_programs"] = module
    spec.loader.exec_module(module)
    return module


def _notebook(cells: list[str]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "source": c.splitlines(keepends=True)} for c in cells]
                      + [{"cell_type": "markdown", "source": ["# words"]}]})


def test_counts_what_runs_and_names_what_fails(tool, tmp_path, capsys) -> None:
    guide = tmp_path / "files"
    guide.mkdir()
    (guide / "good.py").write_text(GOOD)
    (guide / "broken.py").write_text(BROKEN)
    (guide / "mnist_utils.py").write_text("raise SystemExit('a module, not a program')\n")
    tutorials = tmp_path / "popxl"
    (tutorials / "1_basics").mkdir(parents=True)
    first, rest = GOOD.split("ir = popxl.Ir()\n")
    (tutorials / "1_basics" / "mnist.ipynb").write_text(_notebook(["%matplotlib inline\n" + first, "ir = popxl.Ir()\n" + rest]))
    assert tool.main(["--user-guide", str(guide), "--tutorials", str(tutorials), "--out", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "user guide: 1 of 2 programs run" in out
    assert "tutorials: 1 of 1 programs run" in out
    broken = next(line for line in out.splitlines() if "broken.py" in line)
    assert "exit 1" in broken and "RuntimeError: this example is broken" in broken
    assert "mnist_utils" not in out
    # The notebook's code ran as one program and wrote its Session's report.
    assert list((tmp_path / "runs").glob("1_basics_mnist.ipynb/*/session-1/profile.sqlite"))


def test_pytest_summary_counts(tool) -> None:
    log = "....F.\n===== 1 failed, 92 passed, 3 errors in 1.93s =====\n"
    assert tool.pytest_counts(log) == {"failed": 1, "passed": 92, "error": 3}
    assert tool.pytest_counts("no summary here") == {}


def test_a_missing_directory_is_one_line_and_exit_2(tool, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        tool.main(["--user-guide", str(tmp_path / "nope")])
    assert exit_.value.code == 2
    assert "not a directory" in capsys.readouterr().err


def test_an_unreadable_notebook_is_that_programs_failure(tool, tmp_path, capsys) -> None:
    tutorials = tmp_path / "popxl"
    (tutorials / "2_broken").mkdir(parents=True)
    (tutorials / "2_broken" / "mnist.ipynb").write_text("{ not json")
    assert tool.main(["--tutorials", str(tutorials), "--out", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "tutorials: 0 of 1 programs run" in out
    assert "2_broken/mnist.ipynb: not a readable notebook" in out
