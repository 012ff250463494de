"""The SQLite store: exact round trip, atomic writes, versioning, corruption detection."""

from __future__ import annotations

import os
import pathlib
import sqlite3

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from readers_builders import ODD_NAMES, assert_reports_equal, build_report

from profcompare.errors import (
    OutputExistsError,
    ProfcompareError,
    ReportFormatError,
    ReportValidationError,
    UnsupportedReportVersion,
)
from profcompare.model import Report, ReportMeta, Target, make_frame
from profcompare.readers import store, store_write


def test_round_trip_is_exact(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    back = store.read_report(path)
    assert_reports_equal(report, back)
    assert back.meta.source == str(path)
    assert back.meta.format == "store"
    # the awkward values a user relies on, spelled out
    assert set(ODD_NAMES) <= set(back.variables["name"])
    assert list(back.variables["kind"].cat.categories) == [
        "weight", "optimizer_state", "gradient", "activation", "accumulator"
    ]
    assert back.variables["first_step"].isna().sum() == report.variables["always_live"].sum()
    assert back.meta.config["nested"] == {"a": [1, 2]}
    assert list(back.tiles.columns[-3:]) == ["vertexCode", "variable", "stack"]
    pd.testing.assert_series_equal(back.summary(), report.summary())


def test_round_trip_of_empty_tables(tmp_path: pathlib.Path) -> None:
    meta = ReportMeta(source="", format="store", producer="p", simulated=False,
                      target=Target("Mk2", 1, 1472, 638976, 1.33e9), capabilities=frozenset())
    empty = Report.build(meta)
    back = store.read_report(store.write_report(empty, tmp_path / "profile.sqlite"))
    assert_reports_equal(empty, back)
    assert all(len(getattr(back, t)) == 0 for t in ("tiles", "variables", "liveness", "execution"))


def test_round_trip_keeps_string_dtype_and_unused_categories(report: Report, tmp_path: pathlib.Path) -> None:
    variables = report.variables.copy()
    variables["name"] = variables["name"].astype("str")
    variables["dtype"] = variables["dtype"].cat.add_categories(["bfloat16"])
    changed = Report.build(report.meta, **{**{t: getattr(report, t) for t in ("tiles", "categories", "code", "liveness")},
                                           "variables": variables})
    back = store.read_report(store.write_report(changed, tmp_path / "profile.sqlite"))
    assert_reports_equal(changed, back)
    assert "bfloat16" in back.variables["dtype"].cat.categories


def test_a_missing_value_in_a_text_column_is_refused_before_it_is_stored(report: Report) -> None:
    # a report holds text in every row of a text column: a missing name breaks the first sort
    variables = report.variables.copy()
    variables["dtype"] = variables["dtype"].cat.add_categories(["bfloat16"])
    variables.loc[3, "dtype"] = np.nan
    with pytest.raises(ReportValidationError, match=r"^variables\.dtype: row 3 is missing, not text$"):
        Report.build(report.meta, variables=variables)
    liveness = report.liveness.copy()
    liveness.loc[2, "program"] = None
    with pytest.raises(ReportValidationError, match=r"^liveness\.program: row 2 is missing, not text$"):
        Report.build(report.meta, liveness=liveness)


def test_large_integers_and_unicode_survive(tmp_path: pathlib.Path) -> None:
    report = build_report()
    variables = report.variables.copy()
    variables.loc[0, "bytes"] = 2**53  # the largest figure a report may hold
    variables.loc[1, "bytes"] = 0
    changed = Report.build(report.meta, variables=variables)
    back = store.read_report(store.write_report(changed, tmp_path / "p.sqlite"))
    assert back.variables.loc[0, "bytes"] == 2**53


def test_does_not_overwrite_unless_asked(report: Report, tmp_path: pathlib.Path) -> None:
    path = tmp_path / "profile.sqlite"
    path.write_text("precious")
    with pytest.raises(OutputExistsError, match="already exists"):
        store.write_report(report, path)
    assert path.read_text() == "precious"
    store.write_report(report, path, overwrite=True)
    assert_reports_equal(report, store.read_report(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["profile.sqlite"]  # no temporary left


def test_failed_write_leaves_nothing(report: Report, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail_midway(report: Report, path: pathlib.Path) -> None:
        path.write_bytes(b"SQLite format 3\x00 half written")
        raise OSError("disk full")

    monkeypatch.setattr(store_write, "_write_database", fail_midway)
    with pytest.raises(ProfcompareError, match=r"cannot write .*profile\.sqlite: disk full"):
        store.write_report(report, tmp_path / "profile.sqlite")
    assert list(tmp_path.iterdir()) == []


def test_failed_overwrite_keeps_the_old_report(report: Report, tmp_path: pathlib.Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    monkeypatch.setattr(store_write, "_write_database", lambda r, p: (_ for _ in ()).throw(OSError("crash")))
    with pytest.raises(ProfcompareError, match="crash"):
        store.write_report(build_report(variables=10), path, overwrite=True)
    assert_reports_equal(report, store.read_report(path))


def test_file_is_recognisable_and_explorable_with_sqlite(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    header = path.read_bytes()[:100]
    assert store.is_store_header(header)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA application_id").fetchone()[0] == store.APPLICATION_ID
    assert con.execute("PRAGMA user_version").fetchone()[0] == store.SCHEMA_VERSION
    meta = dict(con.execute("SELECT key, value FROM meta"))
    assert meta["schema_version"] == str(store.SCHEMA_VERSION)
    assert '"tiles_per_ipu": 4' in meta["target"]
    # the decoded views show text where the tables hold dictionary codes
    rows = con.execute("SELECT name, kind, shape FROM variables_text WHERE name = ?", (ODD_NAMES[0],)).fetchall()
    expected = report.variables.loc[report.variables["name"] == ODD_NAMES[0], ["kind", "shape"]].iloc[0]
    assert rows == [(ODD_NAMES[0], expected["kind"], expected["shape"])]
    con.close()


def test_newer_schema_version_is_refused(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    con = sqlite3.connect(path)
    newer = store.SCHEMA_VERSION + 1
    con.execute(f"PRAGMA user_version = {newer}")
    con.commit()
    con.close()
    with pytest.raises(UnsupportedReportVersion, match=f"version {newer}.*upgrade"):
        store.read_report(path)
    assert issubclass(UnsupportedReportVersion, ReportFormatError)


def test_edited_schema_version_in_meta_is_corruption(report: Report, tmp_path: pathlib.Path) -> None:
    # meta is verified before any of it is parsed: an edited version is an edit, not a newer file
    path = store.write_report(report, tmp_path / "profile.sqlite")
    con = sqlite3.connect(path)
    con.execute(f"UPDATE meta SET value = '{store.SCHEMA_VERSION + 1}' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    with pytest.raises(ReportFormatError, match="checksum mismatch in meta"):
        store.read_report(path)


def test_edited_content_is_detected(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    con = sqlite3.connect(path)
    con.execute("UPDATE variables SET bytes = bytes + 1 WHERE rowid = 5")
    con.commit()
    con.close()
    with pytest.raises(ReportFormatError, match="checksum mismatch in variables"):
        store.read_report(path)


def test_deleted_rows_are_detected(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    con = sqlite3.connect(path)
    con.execute("DELETE FROM liveness WHERE step > 3")
    con.commit()
    con.close()
    with pytest.raises(ReportFormatError, match="liveness"):
        store.read_report(path)


def test_flipped_bytes_inside_a_stored_name_are_detected(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    data = bytearray(path.read_bytes())
    offset = data.find(b"layer17/weight")
    assert offset > 0
    data[offset + 5] ^= 0x01  # "layer17" -> "layer07"... still valid UTF-8, silently wrong without a checksum
    path.write_bytes(bytes(data))
    with pytest.raises(ReportFormatError, match="corrupt"):
        store.read_report(path)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Report]:
    path = tmp_path_factory.mktemp("pristine") / "profile.sqlite"
    report = build_report(variables=30, steps=20)
    store.write_report(report, path)
    return path.read_bytes(), store.read_report(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_corruption_is_an_error_or_harmless(
    pristine: tuple[bytes, Report], tmp_path: pathlib.Path, data: st.DataObject
) -> None:
    """Flipping bytes anywhere gives a ReportFormatError or the very same report, never a
    wrong report or another exception."""
    content, original = pristine
    corrupted = bytearray(content)
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(content) - 1))
        corrupted[position] ^= data.draw(st.integers(1, 255))
    path = tmp_path / f"corrupt-{os.getpid()}.sqlite"
    path.write_bytes(bytes(corrupted))
    try:
        back = store.read_report(path)
    except ReportFormatError:
        return
    finally:
        path.unlink()
    assert_reports_equal(original, back, ignore_meta=("source",))


@pytest.mark.parametrize("keep", [0, 50, 100, 4096, -4096, -1])
def test_truncated_files_are_reported(report: Report, tmp_path: pathlib.Path, keep: int) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    content = path.read_bytes()
    path.write_bytes(content[:keep] if keep >= 0 else content[: len(content) + keep])
    with pytest.raises(ReportFormatError, match=r"profile\.sqlite: (empty|truncated|not a profcompare|corrupt)"):
        store.read_report(path)


def test_foreign_sqlite_file_is_refused(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE variables (x)")
    con.commit()
    con.close()
    with pytest.raises(ReportFormatError, match="SQLite database but not a profcompare report"):
        store.read_report(path)


def test_our_id_with_wrong_schema_is_refused(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "profile.sqlite"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA application_id = {store.APPLICATION_ID}")
    con.execute("PRAGMA user_version = 1")
    con.execute("CREATE TABLE meta (key, value)")
    con.commit()
    con.close()
    with pytest.raises(ReportFormatError, match="missing table"):
        store.read_report(path)


def test_tiles_with_an_unknown_category_column_are_refused(report: Report, tmp_path: pathlib.Path) -> None:
    path = store.write_report(report, tmp_path / "profile.sqlite")
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE tiles ADD COLUMN bogus INTEGER")
    con.execute("INSERT INTO columns VALUES ('tiles', 99, 'bogus', 'integer', 'int64', NULL, 0)")
    con.commit()
    con.close()
    with pytest.raises(ReportFormatError, match="tiles"):
        store.read_report(path)


def test_non_json_config_is_a_clear_error(report: Report, tmp_path: pathlib.Path) -> None:
    bad = Report.build(report.meta.replace(config={"f": object()}))
    with pytest.raises(ProfcompareError, match="meta.config cannot be stored as JSON"):
        store.write_report(bad, tmp_path / "profile.sqlite")
    assert list(tmp_path.iterdir()) == []


def test_make_frame_built_tiles_round_trip(tmp_path: pathlib.Path) -> None:
    tiles = make_frame("tiles", {"tile": [0], "ipu": [0], "bytes_including_gaps": [1], "bytes_excluding_gaps": [1],
                                 "always_live_bytes": [1], "not_always_live_peak_bytes": [0], "controlCode": [5]})
    meta = ReportMeta(source="", format="store", producer="p", simulated=True, target=Target("Mk2", 1, 1, 1, 1.0))
    report = Report.build(meta, tiles=tiles)
    assert_reports_equal(report, store.read_report(store.write_report(report, tmp_path / "x.sqlite")))


def test_odd_directory_names_and_permissions(report: Report, tmp_path: pathlib.Path) -> None:
    directory = tmp_path / "run #1 ?é %20"
    directory.mkdir()
    path = store.write_report(report, directory / "profile.sqlite")
    assert_reports_equal(report, store.read_report(path))
    assert path.stat().st_mode & 0o777 == 0o666 & ~_umask()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def test_writing_into_a_missing_directory_is_a_clear_error(report: Report, tmp_path: pathlib.Path) -> None:
    with pytest.raises(ProfcompareError, match="does not exist"):
        store.write_report(report, tmp_path / "missing" / "profile.sqlite")
