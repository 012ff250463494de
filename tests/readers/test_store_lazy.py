"""A store opens without reading its tables: each is read (once) when first used, checked as the
eager reader checks it, and holds the same values and dtypes."""

from __future__ import annotations

import os
import pathlib
import pickle
import re
import sqlite3

import numpy as np
import pandas as pd
import pytest
from readers_builders import assert_table_equal
from store_mutations import edit_store
from test_store_tamper import _downgrade_to_version_3

from profcompare.errors import ReportFormatError, ReportValidationError
from profcompare.model import COMPACT_TEXT_COLUMNS, TABLES, Report
from profcompare.readers import open_report, store, store_read

#: the tables Report.summary reads (tiles, liveness per step, categories, model-state variables,
#: remote buffers, the execution's run spans)
SUMMARY_TABLES = {"tiles", "categories", "variables", "liveness", "execution", "remote_buffers"}


@pytest.fixture
def path(report: Report, tmp_path: pathlib.Path) -> pathlib.Path:
    return store.write_report(report, tmp_path / "profile.sqlite")


def _reads(report: Report) -> dict[str, int]:
    return dict(report.__dict__["_source"].reads)


def test_opening_reads_no_table(path: pathlib.Path) -> None:
    opened = open_report(path)
    assert opened.loaded_tables() == ()
    assert _reads(opened) == {}
    assert opened.meta.label == "onchip-sharded"


def test_opening_queries_no_table_rows(path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SQL opening issues: the catalogues, and of a report table only its columns' names."""
    statements: list[str] = []
    connect = store_read._connect_read_only

    def traced(file: pathlib.Path) -> sqlite3.Connection:
        con = connect(file)
        con.set_trace_callback(statements.append)
        return con

    monkeypatch.setattr(store_read, "_connect_read_only", traced)
    opened = open_report(path)
    assert statements and not [s for s in statements if re.search(rf"FROM \"?({'|'.join(TABLES)})\b", s)]
    assert not [s for s in statements if "packed" in s and "DISTINCT" not in s]
    statements.clear()
    _ = opened.liveness
    assert any(re.search(r"FROM \"?liveness\b", s) for s in statements)
    assert not [s for s in statements if re.search(r"FROM \"?(variables|trace|execution)\b", s)]


def test_the_summary_reads_only_its_tables_each_once(report: Report, path: pathlib.Path) -> None:
    opened = open_report(path)
    pd.testing.assert_series_equal(opened.summary(), store.read_report(path).summary())
    assert set(opened.loaded_tables()) == SUMMARY_TABLES
    assert _reads(opened) == dict.fromkeys(SUMMARY_TABLES, 1)
    opened.summary()
    _ = opened.variables, opened.tiles
    assert _reads(opened) == dict.fromkeys(SUMMARY_TABLES, 1)  # kept, not read again


def test_row_counts_come_without_reading(report: Report, path: pathlib.Path) -> None:
    opened = open_report(path)
    assert {t: opened.rows(t) for t in TABLES} == {t: len(getattr(report, t)) for t in TABLES}
    assert opened.loaded_tables() == ()
    with pytest.raises(KeyError):
        opened.rows("nonsense")


def test_every_table_equals_the_eager_read(report: Report, path: pathlib.Path) -> None:
    opened = open_report(path)
    eager = store.read_report(path)
    for table in TABLES:
        assert_table_equal(table, getattr(opened, table), getattr(eager, table), check_exact=True)
        assert_table_equal(table, getattr(opened, table), getattr(report, table), check_exact=True)
    assert set(opened.loaded_tables()) == set(TABLES)


def test_a_tampered_table_raises_when_read_and_the_others_still_read(report: Report, path: pathlib.Path) -> None:
    edit_store(path, "UPDATE variables SET bytes = bytes + 1 WHERE rowid = 2")
    opened = open_report(path)  # meta, dictionary and catalogue are intact
    pd.testing.assert_frame_equal(opened.tiles, report.tiles)
    for _ in range(2):  # a failed read is not kept: asking again fails again
        with pytest.raises(ReportFormatError, match="checksum mismatch in variables"):
            _ = opened.variables
    with pytest.raises(ReportFormatError, match="checksum mismatch in variables"):
        opened.summary()


def test_an_invalid_table_is_refused_when_read_with_the_eager_message(path: pathlib.Path) -> None:
    # a tile index past the target, resealed so that only the model's checks can see it
    edit_store(path, "UPDATE tiles SET tile = 100000 WHERE rowid = 1")
    from store_mutations import reseal

    reseal(path)
    with pytest.raises(ReportFormatError) as eager:
        store.read_report(path)
    opened = open_report(path)
    with pytest.raises(ReportFormatError) as lazy:
        _ = opened.tiles
    assert str(lazy.value) == str(eager.value)
    assert "tiles.tile: row 0 has 100000" in str(lazy.value)


def test_a_moved_store_is_still_read_and_a_replaced_one_refused(report: Report, path: pathlib.Path,
                                                                tmp_path: pathlib.Path) -> None:
    opened = open_report(path)
    moved = tmp_path / "moved"
    moved.mkdir()
    os.rename(path, moved / "profile.sqlite")  # a staging directory renamed into place
    pd.testing.assert_frame_equal(opened.variables, report.variables)
    store.write_report(report, path)  # another file where the opened one was
    os.unlink(moved / "profile.sqlite")
    with pytest.raises(ReportFormatError, match="changed, moved or went since it was opened"):
        _ = opened.liveness


def test_copies_share_what_is_read_and_stay_lazy(report: Report, path: pathlib.Path) -> None:
    opened = open_report(path)
    _ = opened.tiles
    relabelled = opened.with_meta(opened.meta.replace(variant="other"))
    run = opened.with_trace_run(0)
    assert relabelled.loaded_tables() == ("tiles",) and run.loaded_tables() == ("tiles",)
    assert relabelled.tiles is opened.tiles
    assert_table_equal("trace", relabelled.trace, report.trace)
    _ = opened.trace
    assert _reads(opened) == {"tiles": 1, "trace": 1}  # the copies share one source


def test_a_new_target_checks_the_tables_read_and_to_be_read(report: Report, path: pathlib.Path) -> None:
    small = report.meta.target.__class__(**{**report.meta.target.to_dict(), "tiles_per_ipu": 2})
    opened = open_report(path)
    _ = opened.tiles
    with pytest.raises(ReportValidationError, match=r"tiles.tile: row \d+ has \d+ \(the target has 4 per replica\)"):
        opened.with_meta(opened.meta.replace(target=small))
    unread = open_report(path).with_meta(opened.meta.replace(target=small))  # nothing read yet: nothing to check
    with pytest.raises(ReportFormatError, match=r"tiles.tile: row \d+ has \d+ \(the target has 4 per replica\)"):
        _ = unread.tiles


def test_pickling_keeps_what_is_read_and_reads_the_rest_in_the_copy(report: Report, path: pathlib.Path) -> None:
    opened = open_report(path)
    _ = opened.tiles
    copy = pickle.loads(pickle.dumps(opened))
    assert copy.loaded_tables() == ("tiles",)
    assert _reads(opened) == {"tiles": 1}
    assert_table_equal("execution", copy.execution, report.execution)
    pd.testing.assert_series_equal(copy.summary(), report.summary().rename(copy.label))
    assert pickle.loads(pickle.dumps(report)).meta == report.meta  # an in-memory Report pickles too


def test_an_older_store_opens_lazily_with_an_empty_trace(report: Report, path: pathlib.Path) -> None:
    _downgrade_to_version_3(path, report)
    opened = open_report(path)
    assert opened.rows("trace") == 0 and opened.rows("execution") == len(report.execution)
    assert opened.trace.empty and list(opened.trace.columns) == list(report.trace.columns)
    assert "trace" not in _reads(opened)  # nothing in the file to read
    assert_table_equal("execution", opened.execution, store.read_report(path).execution)


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors through /proc")
def test_many_open_reports_hold_a_bounded_number_of_files(report: Report, path: pathlib.Path) -> None:
    from profcompare.readers import store_lazy

    before = _open_descriptors()
    many = [open_report(path) for _ in range(store_lazy.MAX_HELD_FILES + 40)]
    # at most MAX_HELD_FILES stores hold their file, whatever the number opened
    assert _open_descriptors() - before <= store_lazy.MAX_HELD_FILES
    # the ones let go still read their tables by path
    assert many[0].variables.equals(report.variables)
    assert many[-1].variables.equals(report.variables)
    del many


def test_a_store_lets_go_of_its_file_once_every_table_is_read(report: Report, path: pathlib.Path) -> None:
    opened = open_report(path)
    source = opened.__dict__["_source"]
    assert source._fd is not None
    for table in TABLES:
        getattr(opened, table)
    assert source._fd is None


def test_repeating_text_columns_are_read_as_codes_of_sorted_names(report: Report, path: pathlib.Path) -> None:
    opened = open_report(path)
    for table, column in sorted(COMPACT_TEXT_COLUMNS):
        read = getattr(opened, table)[column]
        written = getattr(report, table)[column].astype(object)
        assert isinstance(read.dtype, pd.CategoricalDtype)
        # the names used, once each, sorted (what astype("category") gives), one small code per row
        assert list(read.cat.categories) == sorted(set(written))
        assert read.cat.codes.dtype == np.int8
        assert read.astype(object).tolist() == written.tolist()


def test_a_store_written_from_compact_columns_reads_back_the_same(report: Report, path: pathlib.Path,
                                                                   tmp_path: pathlib.Path) -> None:
    again = store.write_report(open_report(path), tmp_path / "again.sqlite")
    for table in ("execution", "liveness", "trace"):
        assert_table_equal(table, getattr(open_report(again), table), getattr(report, table), check_exact=True)
