"""Writing a report again over the file an earlier write made (``write_report_kept`` with
``previous``): only the tables whose frames changed are written again in a copy of the file; the
file holds the same rows, catalogue, dictionary, checksums and views as a whole write, and reads
back alike. A file changed since, another path or a packed table take the same road."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import sqlite3

import pytest
from readers_builders import assert_reports_equal

from profcompare.model import Report, make_frame
from profcompare.readers import store, store_write


def _contents(path: pathlib.Path) -> dict[str, object]:
    """Every table's and view's rows (sorted), the schema and the header's ids of a store file."""
    con = sqlite3.connect(path)
    try:
        names = sorted(n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"))
        out: dict[str, object] = {n: sorted(map(repr, con.execute(f'SELECT * FROM "{n}"').fetchall())) for n in names}
        out["schema"] = sorted(con.execute("SELECT type, name, sql FROM sqlite_master").fetchall())
        out["ids"] = [con.execute(f"PRAGMA {p}").fetchone() for p in ("application_id", "user_version")]
    finally:
        con.close()
    return out


def _graph_profile(report: Report) -> Report:
    """``report`` without its execution rows and trace (as the simulator writes it at compile)."""
    return Report(meta=report.meta.replace(capabilities=frozenset(report.meta.capabilities - {"execution", "trace"})),
                  tiles=report.tiles, categories=report.categories, variables=report.variables,
                  liveness=report.liveness, code=report.code, execution=report.execution.iloc[:0],
                  remote_buffers=report.remote_buffers)


def _with_execution(graph: Report, full: Report) -> Report:
    """``graph``'s frames (the same objects) with ``full``'s execution, trace and meta."""
    return dataclasses.replace(graph, meta=full.meta, execution=full.execution, trace=full.trace)


def test_rewrite_holds_what_a_whole_write_holds(report: Report, tmp_path: pathlib.Path) -> None:
    assert len(report.execution) and len(report.trace)
    graph = _graph_profile(report)
    first = store.write_report_kept(graph, tmp_path / "profile.sqlite")
    assert store.read_report(first.path).execution.empty
    full = _with_execution(graph, report)
    second = store.write_report_kept(full, tmp_path / "profile.sqlite", overwrite=True, previous=first)
    whole = store.write_report(full, tmp_path / "whole.sqlite")
    assert _contents(second.path) == _contents(whole)
    assert_reports_equal(store.read_report(second.path), store.read_report(whole))
    assert_reports_equal(full, store.read_report(second.path))
    # the kept tables' rows come from the copy: their frames were not encoded again
    assert second.tables["tiles"] is first.tables["tiles"]
    assert second.tables["execution"] is not first.tables["execution"]


def test_rewrite_again_and_back(report: Report, tmp_path: pathlib.Path) -> None:
    """A third write (fewer execution rows again) over the second's file: still the whole write's content."""
    graph = _graph_profile(report)
    path = tmp_path / "profile.sqlite"
    written = store.write_report_kept(graph, path)
    written = store.write_report_kept(_with_execution(graph, report), path, overwrite=True, previous=written)
    fewer = dataclasses.replace(graph, meta=report.meta, execution=report.execution.iloc[:3].reset_index(drop=True),
                                trace=report.trace)
    written = store.write_report_kept(fewer, path, overwrite=True, previous=written)
    assert _contents(path) == _contents(store.write_report(fewer, tmp_path / "whole.sqlite"))
    assert len(store.read_report(path).execution) == 3


def test_a_file_changed_since_is_written_whole(report: Report, tmp_path: pathlib.Path) -> None:
    graph = _graph_profile(report)
    path = tmp_path / "profile.sqlite"
    first = store.write_report_kept(graph, path)
    other = dataclasses.replace(graph, categories=make_frame(
        "categories", {"category": ["stack"], "group": ["other"], "bytes": [1]}))
    store.write_report(other, path, overwrite=True)  # someone else's write: another file now
    os.utime(path, ns=(0, 0))  # whatever its size, the identity differs
    full = _with_execution(graph, report)
    second = store.write_report_kept(full, path, overwrite=True, previous=first)
    assert_reports_equal(full, store.read_report(second.path))
    assert second.tables["categories"] is not first.tables["categories"]


def test_another_path_is_written_whole(report: Report, tmp_path: pathlib.Path) -> None:
    graph = _graph_profile(report)
    first = store.write_report_kept(graph, tmp_path / "a.sqlite")
    full = _with_execution(graph, report)
    second = store.write_report_kept(full, tmp_path / "b.sqlite", previous=first)
    assert_reports_equal(full, store.read_report(second.path))
    assert second.tables["tiles"] is not first.tables["tiles"]
    assert store.read_report(first.path).execution.empty


def test_packed_tables_rewritten(report: Report, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_write, "PACKED_FROM_ROWS", 0)  # every table with a row is packed
    graph = _graph_profile(report)
    path = tmp_path / "profile.sqlite"
    first = store.write_report_kept(graph, path)
    full = _with_execution(graph, report)
    store.write_report_kept(full, path, overwrite=True, previous=first)
    assert _contents(path) == _contents(store.write_report(full, tmp_path / "whole.sqlite"))
    assert_reports_equal(full, store.read_report(path))


def test_an_invalid_changed_table_is_refused_and_the_file_kept(report: Report, tmp_path: pathlib.Path) -> None:
    graph = _graph_profile(report)
    path = tmp_path / "profile.sqlite"
    first = store.write_report_kept(graph, path)
    bad = report.execution.copy()
    bad["cycles"] = -1
    broken = object.__new__(Report)  # around the constructor's checks, as the writer's own check expects
    for field in dataclasses.fields(Report):
        object.__setattr__(broken, field.name, getattr(graph, field.name))
    object.__setattr__(broken, "execution", bad)
    with pytest.raises(Exception, match="execution"):
        store.write_report_kept(broken, path, overwrite=True, previous=first)
    assert store.read_report(path).execution.empty
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.sqlite"]


def test_checked_reports_are_not_checked_again(report: Report, tmp_path: pathlib.Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """``checked=True`` (the engine writing the report its constructor just checked) skips the
    writer's own checks; without it every write checks the report."""
    calls: list[str] = []
    original = store_write.check_report_values
    monkeypatch.setattr(store_write, "check_report_values", lambda r: (calls.append("checked"), original(r)))
    store.write_report_kept(report, tmp_path / "a.sqlite", checked=True)
    assert calls == []
    assert_reports_equal(report, store.read_report(tmp_path / "a.sqlite"))
    store.write_report_kept(report, tmp_path / "b.sqlite")
    assert calls == ["checked"]
