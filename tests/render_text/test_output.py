"""write_output: atomic, no overwrite without force, nothing partial left behind."""

from __future__ import annotations

import os
import pathlib

import pytest

from profcompare.errors import OutputExistsError, ProfcompareError
from profcompare.render import output
from profcompare.render.output import write_output


def test_writes_text_as_utf8(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "diff.md"
    write_output("peak ↑ 3.6 MiB\n", target)
    assert target.read_text(encoding="utf-8") == "peak ↑ 3.6 MiB\n"
    assert os.listdir(tmp_path) == ["diff.md"]


def test_writes_bytes_unchanged(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "out.bin"
    write_output(b"\x00\x01\xff", target)
    assert target.read_bytes() == b"\x00\x01\xff"


def test_refuses_to_overwrite_without_force(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "report.html"
    target.write_text("old")
    with pytest.raises(OutputExistsError, match=r"report\.html exists; use --force to overwrite"):
        write_output("new", target)
    assert target.read_text() == "old"
    write_output("new", target, force=True)
    assert target.read_text() == "new"


def test_failure_leaves_no_partial_file(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.json"

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(output.os, "replace", broken_replace)
    with pytest.raises(ProfcompareError, match="No space left on device"):
        write_output("{}", target)
    assert os.listdir(tmp_path) == []


def test_failure_keeps_the_old_file_intact(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "report.json"
    target.write_text("old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(output.os, "replace", broken_replace)
    with pytest.raises(ProfcompareError):
        write_output("new", target, force=True)
    assert target.read_text() == "old"
    assert os.listdir(tmp_path) == ["report.json"]


def test_missing_directory_is_a_clear_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ProfcompareError, match="does not exist"):
        write_output("x", tmp_path / "nope" / "out.txt")


def test_directory_target_is_refused(tmp_path: pathlib.Path) -> None:
    with pytest.raises(ProfcompareError, match="is a directory"):
        write_output("x", tmp_path, force=True)


def test_written_file_has_normal_permissions(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "out.txt"
    write_output("x", target)
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask


def test_a_dangling_symlink_needs_force(tmp_path: pathlib.Path) -> None:
    link = tmp_path / "diff.html"
    link.symlink_to(tmp_path / "nowhere" / "target.html")
    with pytest.raises(OutputExistsError, match="exists; use --force"):
        write_output("x", link)
    assert link.is_symlink()
    write_output("x", link, force=True)
    assert not link.is_symlink() and link.read_text() == "x"
