"""The report pages of an advise run are written side by side by forked processes (the results
in order; a report that cannot be read gives no page), or serially when forking is not safe."""

from __future__ import annotations

import os

import pytest

from profcompare.advise import pages


def _recording(point_dir):
    (point_dir / "report.html").write_text(str(os.getpid()))
    return point_dir.name != "unreadable"


@pytest.fixture
def dirs(tmp_path):
    paths = [tmp_path / name for name in ("a", "b", "unreadable", "d")]
    for path in paths:
        path.mkdir()
    return paths


def test_pages_are_written_by_forked_processes_in_order(dirs, monkeypatch):
    monkeypatch.setattr(pages, "write_page", _recording)
    assert pages.can_fork()  # a test run has no other thread
    assert pages.write_pages(dirs, parallel=2) == [True, True, False, True]
    writers = {int((d / "report.html").read_text()) for d in dirs}
    assert os.getpid() not in writers and 1 <= len(writers) <= 2


def test_pages_are_written_here_with_one_job_or_another_thread_running(dirs, monkeypatch):
    monkeypatch.setattr(pages, "write_page", _recording)
    assert pages.write_pages(dirs, parallel=1) == [True, True, False, True]
    assert {int((d / "report.html").read_text()) for d in dirs} == {os.getpid()}
    monkeypatch.setattr(pages, "can_fork", lambda: False)
    assert pages.write_pages(dirs[:2], parallel=2) == [True, True]
    assert {int((d / "report.html").read_text()) for d in dirs[:2]} == {os.getpid()}


def test_a_directory_without_a_report_gives_no_page(tmp_path):
    assert pages.write_page(tmp_path) is False and not (tmp_path / "report.html").exists()
