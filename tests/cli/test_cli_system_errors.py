"""What the operating system refuses becomes one line and exit 2, never a traceback or 'internal error'."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from profcompare.errors import EngineOptionsError
from profcompare.backend.poplar_options import parse_options_object


def test_a_path_component_too_long_is_one_line(run_cli, tmp_path: pathlib.Path) -> None:
    out = run_cli("show", str(tmp_path / ("x" * 300)))
    assert out.exit_code == 2
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("profcompare: error: ") and "internal error" not in lines[0]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_stdout_is_one_line(onchip_path: str) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "profcompare", "show", onchip_path], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert done.stderr == "profcompare: error: cannot write output: No space left on device\n"


def test_multi_line_error_messages_are_folded(run_cli, tmp_path: pathlib.Path) -> None:
    bad = tmp_path / "line1\nline2\x1b[31m"
    bad.mkdir()
    out = run_cli("show", str(bad))
    assert out.exit_code != 0
    assert len(out.stderr.splitlines()) == 1
    assert "\x1b" not in out.stderr and "line1 line2\\x1b[31m" in out.stderr


def test_deeply_nested_engine_options_are_refused() -> None:
    text = "[" * 50_000 + "]" * 50_000
    with pytest.raises(EngineOptionsError, match="nested too deeply"):
        parse_options_object(text)


@pytest.mark.parametrize("pattern", ["[[a]", "(layer)", "(?P<x>weight)"])
def test_regex_filters_print_no_library_warnings(onchip_path: str, pattern: str) -> None:
    done = subprocess.run([sys.executable, "-W", "default", "-m", "profcompare", "variables", onchip_path, "--filter", pattern],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stderr == ""
