"""tools/app_tests.py: runs applications' own test files under ``profcompare profile -m pytest``
and counts passed, refused-API, other failures and skipped tests. Checked on a small application
of our own laid out as Graphcore's are (APP/popxl/tests, a pytest.ini naming import paths with
``python_paths``, an execution test starting an entry point as a ``python3`` child)."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PYTEST_INI = """\
[pytest]
testpaths =
  tests
python_paths = . ../../../utils/
"""

HELPER = "def double(x):\n    return 2 * x\n"  # in EXAMPLES/utils, importable through python_paths

ENTRY_POINT = textwrap.dedent(
    """
    import numpy as np
    import popxl
    from popxl import ops

    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.arange(4, dtype=np.float32), name="x")
        s = popxl.d2h_stream((4,), popxl.float32, "y")
        ops.host_store(s, ops.mul(x, x))
    with popxl.Session(ir, "ipu_hw") as session:
        print("result", session.run()[s].tolist())
    """
)

TEST_NUMERIC = textwrap.dedent(
    """
    import numpy as np
    import popxl
    from popxl import ops
    from shared_helpers import double


    def _run(data):
        ir = popxl.Ir()
        with ir.main_graph:
            x = popxl.variable(data, name="x")
            s = popxl.d2h_stream(data.shape, popxl.float32, "y")
            ops.host_store(s, ops.add(x, x))
        with popxl.Session(ir, "ipu_hw") as session:
            return session.run()[s]


    def test_add_matches_numpy():
        data = np.arange(6, dtype=np.float32)
        np.testing.assert_array_equal(_run(data), double(data))


    def test_wrong_expectation():
        data = np.arange(6, dtype=np.float32)
        np.testing.assert_array_equal(_run(data), data)
    """
)

TEST_UNSUPPORTED = textwrap.dedent(
    """
    import popxl
    import pytest


    def test_refused_op():
        ir = popxl.Ir()
        with ir.main_graph:
            popxl.ops.not_an_op_of_the_subset


    @pytest.mark.skip(reason="needs a POD")
    def test_on_a_pod():
        pass
    """
)

TEST_EXECUTION = textwrap.dedent(
    """
    import subprocess
    from pathlib import Path


    def test_entry_point_in_a_child():
        out = subprocess.run(["python3", "entry.py"], cwd=Path(__file__).parents[2], capture_output=True,
                             text=True, check=True).stdout
        assert "result [0.0, 1.0, 4.0, 9.0]" in out
    """
)


@pytest.fixture(scope="module")
def tool():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        spec = importlib.util.spec_from_file_location("app_tests", ROOT / "tools" / "app_tests.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["app_tests"] = module
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(ROOT / "tools"))


@pytest.fixture()
def apps(tmp_path: Path) -> Path:
    app = tmp_path / "examples" / "nlp" / "fake_lm" / "popxl"
    (app / "tests" / "unit").mkdir(parents=True)
    (app / "tests" / "execution").mkdir()
    (app / "pytest.ini").write_text(PYTEST_INI)
    (app / "entry.py").write_text(ENTRY_POINT)
    (app / "tests" / "unit" / "test_numeric.py").write_text(TEST_NUMERIC)
    (app / "tests" / "unit" / "test_unsupported.py").write_text(TEST_UNSUPPORTED)
    (app / "tests" / "execution" / "test_execution.py").write_text(TEST_EXECUTION)
    (app / "tests" / "unit" / "helpers.py").write_text(HELPER)  # not a test file
    (tmp_path / "examples" / "utils").mkdir()
    (tmp_path / "examples" / "utils" / "shared_helpers.py").write_text(HELPER)
    (tmp_path / "examples" / "nlp" / "no_tests" / "popxl").mkdir(parents=True)
    return tmp_path / "examples" / "nlp"


def test_plan_and_pytest_options(tool, apps: Path) -> None:
    [app_dir] = tool.applications(apps)
    assert app_dir == apps / "fake_lm" / "popxl"
    assert [f.path for f in tool.test_files(app_dir)] == [
        "tests/execution/test_execution.py", "tests/unit/test_numeric.py", "tests/unit/test_unsupported.py"]
    assert tool.pytest_path_options(app_dir) == ["-o", "pythonpath=. ../../../utils/"]
    assert tool.applications(apps, ["other"]) == []


def test_refusals_name_the_api(tool) -> None:
    from profcompare.emulator.popxl.errors import not_implemented_message
    from profcompare.emulator.popxl_addons._compat import not_supported

    line = f"E   ModuleNotFoundError: {not_implemented_message('module popart._internal')}"
    assert tool.refused_api(line) == "module popart._internal"
    assert tool.refused_api(f"profcompare: failed: {not_supported('rts.foo', 'detail')}") == "popxl_addons.rts.foo"
    assert tool.refused_api("AssertionError: arrays differ") is None


def test_table_counts_each_kind_of_result(tool, apps: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert tool.main([str(apps), "--timeout", "300", "--out", str(tmp_path / "runs")]) == 0
    rows = [line.split(" | ") for line in capsys.readouterr().out.splitlines()[2:]]
    by_file = {row[1]: row for row in rows}
    # the child python3 ran on the simulator: its numbers are right
    assert by_file["tests/execution/test_execution.py"][2:6] == ["1", "0", "0", "0"]
    numeric = by_file["tests/unit/test_numeric.py"]
    assert numeric[2:4] == ["1", "0"] and numeric[4].startswith("1: ") and "Arrays are not equal" in numeric[4]
    assert by_file["tests/unit/test_unsupported.py"][2:6] == [
        "0", "1: popxl.ops.not_an_op_of_the_subset", "0", "1"]
    assert rows[-1][:6] == ["| **total**", "3 files", "2", "1", "1", "1"]
    # wall and CPU seconds of each run (the run's processes did work: more than nothing)
    assert all(float(row[6]) >= 0 and float(row[7].rstrip(" |")) > 0 for row in rows)
