"""Error paths of the report commands: every failure is one line on stderr and a non-zero exit."""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from profcompare.commands import show as show_command


def _one_line_error(outcome: object, pattern: str, exit_code: int | None = None) -> None:
    stderr = outcome.stderr  # type: ignore[attr-defined]
    assert outcome.exit_code != 0  # type: ignore[attr-defined]
    if exit_code is not None:
        assert outcome.exit_code == exit_code  # type: ignore[attr-defined]
    assert outcome.exception is None, outcome.exception  # type: ignore[attr-defined]  # no traceback
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("profcompare: error: "), stderr
    assert re.search(pattern, lines[0]), lines[0]


def test_empty_report_path_is_an_error_not_the_current_directory(
    run_cli, report_dir: pathlib.Path, onchip_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an unset shell variable ("$BASE") must not silently open the report in the current directory
    monkeypatch.chdir(report_dir / "onchip")
    _one_line_error(run_cli("show", ""), r"empty report path")
    _one_line_error(run_cli("compare", onchip_path, ""), r"empty report path")


def test_output_that_is_a_directory_says_so_even_without_force(run_cli, onchip_path: str, tmp_path: pathlib.Path) -> None:
    for extra in ((), ("--force",)):
        _one_line_error(run_cli("show", onchip_path, "-o", str(tmp_path), *extra), r"is a directory; give a file name")
    assert tmp_path.is_dir() and not any(tmp_path.iterdir())


def test_unexpected_exception_is_one_line_and_debug_shows_it(
    run_cli, onchip_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(path: str, **options: object) -> object:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(show_command, "load_report", broken)
    _one_line_error(run_cli("show", onchip_path), r"internal error \(RuntimeError: boom second line\).*--debug", 70)
    debug = run_cli("--debug", "show", onchip_path)
    assert debug.exit_code == 70
    assert "Traceback (most recent call last)" in debug.stderr and "RuntimeError: boom" in debug.stderr


def test_interrupt_is_one_error_line_with_exit_130(run_cli, onchip_path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(path: str, **options: object) -> object:
        raise KeyboardInterrupt

    monkeypatch.setattr(show_command, "load_report", interrupted)
    _one_line_error(run_cli("show", onchip_path), r"^profcompare: error: interrupted$", 130)


def test_export_of_a_store_report_says_no_export_is_needed(run_cli, onchip_path: str, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "again.sqlite"
    _one_line_error(run_cli("export", onchip_path, "-o", str(out)), r"already a profcompare store report")
    directory = str(pathlib.Path(onchip_path).parent)
    _one_line_error(run_cli("export", directory, "-o", str(out)), r"a directory; give the profile.pop file")
    assert not out.exists()


def _without_stdout(*args: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """Run ``python -m profcompare ARGS`` with its standard output closed (as after ``>&-``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "CLICOLOR_FORCE")}
    return subprocess.run(
        [sys.executable, "-m", "profcompare", *args],
        check=False, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120, env=env,
        cwd=cwd, preexec_fn=lambda: os.close(1),
    )


@pytest.mark.skipif(sys.platform == "win32", reason="closes a POSIX file descriptor")
def test_closed_standard_output_is_one_line(onchip_path: str, tmp_path: pathlib.Path) -> None:
    done = _without_stdout("show", onchip_path, cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == ["profcompare: error: standard output is closed; give -o FILE"]
    # with -o the same command works
    target = tmp_path / "show.txt"
    written = _without_stdout("show", onchip_path, "-o", str(target), cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert target.read_text().startswith("profcompare report: onchip")
