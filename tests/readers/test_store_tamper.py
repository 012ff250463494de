"""Edits of any checksummed part of a store are refused with one ReportFormatError, and
nothing is sized from an edited count (no MemoryError, no RecursionError)."""

from __future__ import annotations

import dataclasses
import pathlib
import sqlite3

import pandas as pd
import pytest
from readers_builders import assert_table_equal
from store_mutations import edit_store as _edit

from profcompare.errors import ReportFormatError
from profcompare.model import TILE_REGION_COLUMNS, Report, make_frame
from profcompare.readers import store


@pytest.fixture
def path(report: Report, tmp_path: pathlib.Path) -> pathlib.Path:
    return store.write_report(report, tmp_path / "profile.sqlite")


def test_every_table_and_the_catalogue_are_checksummed(path: pathlib.Path) -> None:
    con = sqlite3.connect(path)
    names = {row[0] for row in con.execute("SELECT table_name FROM checksums")}
    con.close()
    assert names == {*store.TABLES, "meta", "dictionary", "columns", "checksums"}


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("UPDATE checksums SET rows = 1000000000 WHERE table_name = 'variables'", "checksum mismatch in checksums"),
        ("UPDATE checksums SET crc32 = crc32 + 1 WHERE table_name = 'tiles'", "checksum mismatch in checksums"),
        ("DELETE FROM checksums WHERE table_name = 'checksums'", "no checksum for checksums"),
        ("UPDATE columns SET dtype = 'float64' WHERE table_name = 'tiles' AND position = 2", "checksum mismatch in columns"),
        ("UPDATE dictionary SET value = 'other_program' WHERE column_name = 'program' AND code = 0", "checksum mismatch in dictionary"),
        ("UPDATE meta SET value = '\"Poplar 9\"' WHERE key = 'producer'", "checksum mismatch in meta"),
    ],
)
def test_edits_are_detected(path: pathlib.Path, statement: str, message: str) -> None:
    _edit(path, statement)
    with pytest.raises(ReportFormatError, match=message):
        store.read_report(path)


def test_a_huge_recorded_row_count_is_refused_before_allocating(path: pathlib.Path) -> None:
    # Even with the seal recomputed by the editor, the count is checked against the table.
    con = sqlite3.connect(path)
    con.execute("UPDATE checksums SET rows = 1000000000 WHERE table_name = 'variables'")
    others = [r for r in con.execute("SELECT table_name, rows, crc32 FROM checksums") if r[0] != "checksums"]
    con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = 'checksums'",
                (len(others), store._checksums_checksum(others)))
    con.commit()
    con.close()
    with pytest.raises(ReportFormatError, match="variables has .* rows, expected 1000000000"):
        store.read_report(path)


def test_deeply_nested_meta_is_a_format_error(path: pathlib.Path) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = ? WHERE key = 'config'", (deep,))
    items = con.execute("SELECT key, value FROM meta").fetchall()
    con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = 'meta'", (store._meta_checksum(items),))
    others = [r for r in con.execute("SELECT table_name, rows, crc32 FROM checksums") if r[0] != "checksums"]
    con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = 'checksums'", (store._checksums_checksum(others),))
    con.commit()
    con.close()
    with pytest.raises(ReportFormatError, match="meta.config is nested too deeply"):
        store.read_report(path)


_ATTRIBUTION = ("parameter", "role", "which")


_OPERATION_ATTRIBUTION = ("parameter", "role")


def _drop_columns(con: sqlite3.Connection, table: str, frame: pd.DataFrame, columns: tuple[str, ...]) -> None:
    """Remove ``columns`` from a stored table as an older writer would not have written them."""
    kept = frame.drop(columns=list(columns))
    check = store._Checksum(table, len(kept))
    for spec in store._column_plan(table, kept):
        canonical = store._encode_column(spec, kept[spec.name]).canonical
        check.add(spec.name.encode() + b"\x00", *canonical)
    con.execute(f"DROP VIEW IF EXISTS {table}_text")
    for column in columns:
        con.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
        con.execute("DELETE FROM columns WHERE table_name = ? AND column_name = ?", (table, column))
    con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = ?", (check.value, table))


def _drop_table(con: sqlite3.Connection, table: str) -> None:
    """Remove a Report table with its view, catalogue, dictionary, packed and checksum rows."""
    con.execute(f"DROP VIEW IF EXISTS {table}_text")
    con.execute(f"DROP TABLE {table}")
    for meta_table in ("columns", "dictionary", "checksums"):
        con.execute(f"DELETE FROM {meta_table} WHERE table_name = ?", (table,))
    if con.execute("SELECT 1 FROM sqlite_master WHERE name = 'packed'").fetchone():
        con.execute("DELETE FROM packed WHERE table_name = ?", (table,))
    rows = con.execute("SELECT table_name, column_name, code, value FROM dictionary "
                       "ORDER BY table_name, column_name, code").fetchall()
    con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = 'dictionary'",
                (len(rows), store._dictionary_checksum(rows)))


#: The tables version 9 added.
VERSION_9_TABLES = ("vertices", "compute_sets", "exchanges")


def _drop_trace(con: sqlite3.Connection) -> None:
    """Remove the tables newer than version 3: the trace (version 4), the programs (version 7),
    the operations (version 8), the variable placement, the vertex types, compute sets and exchanges
    (version 9)."""
    for table in ("trace", "programs", "operations", "variable_tiles", *VERSION_9_TABLES):
        _drop_table(con, table)


def _downgrade_to_version_without(path: pathlib.Path, version: int, tables: tuple[str, ...], report: Report) -> None:
    """Rewrite a store as schema ``version`` wrote it: without ``tables`` (which came later) and,
    before version 8, without the region columns of ``tiles``; before version 9, without
    ``liveness.ipu``, ``trace.run`` and ``execution.bytes_moved``, and a kept ``operations`` table loses its ``parameter`` and
    ``role``; catalogue, meta and checksums resealed as that writer sealed them. The tables of
    version 9 (vertex types, compute sets, exchanges) are dropped from every older version."""
    con = sqlite3.connect(path)
    if version < 9:
        tables = (*tables, *(t for t in VERSION_9_TABLES if t not in tables))
        _drop_columns(con, "liveness", report.liveness, ("ipu",))
        _drop_columns(con, "execution", report.execution, ("bytes_moved",))
        if "trace" not in tables:
            _drop_columns(con, "trace", report.trace, ("run",))
    if version < 8:
        _drop_columns(con, "tiles", report.tiles, TILE_REGION_COLUMNS)
    if version < 9 and "variable_tiles" not in tables:
        tables = (*tables, "variable_tiles")  # came with version 9
    if version < 9 and "operations" not in tables and len(report.operations):
        _drop_columns(con, "operations", report.operations, _OPERATION_ATTRIBUTION)
    for table in tables:
        _drop_table(con, table)
    rows = con.execute("SELECT table_name, position, column_name, storage, dtype, categories_dtype, ordered "
                       "FROM columns ORDER BY table_name, position").fetchall()
    con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = 'columns'",
                (len(rows), store._catalogue_checksum(rows)))
    con.execute(f"UPDATE meta SET value = '{version}' WHERE key = 'schema_version'")
    items = con.execute("SELECT key, value FROM meta").fetchall()
    con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = 'meta'", (store._meta_checksum(items),))
    others = [r for r in con.execute("SELECT table_name, rows, crc32 FROM checksums") if r[0] != "checksums"]
    con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = 'checksums'",
                (len(others), store._checksums_checksum(others)))
    con.execute(f"PRAGMA user_version = {version}")
    con.commit()
    con.close()


def _downgrade_to_version_3(path: pathlib.Path, report: Report) -> None:
    """Rewrite a store as schema version 3 wrote it: no trace table (it came with version 4) nor
    programs (version 7) nor operations and tile regions (version 8)."""
    _downgrade_to_version_without(path, 3, ("trace", "programs", "operations"), report)


def _downgrade_to_version_2(path: pathlib.Path, report: Report) -> None:
    """Rewrite a store as schema version 2 wrote it: no attribution columns (parameter, role,
    which came with version 3) and no trace."""
    con = sqlite3.connect(path)
    _drop_trace(con)
    _drop_columns(con, "liveness", report.liveness, ("ipu",))
    _drop_columns(con, "tiles", report.tiles, TILE_REGION_COLUMNS)
    _drop_columns(con, "execution", report.execution, ("bytes_moved",))
    _drop_columns(con, "variables", report.variables, _ATTRIBUTION)
    _drop_columns(con, "remote_buffers", report.remote_buffers, _ATTRIBUTION)
    rows = con.execute("SELECT table_name, position, column_name, storage, dtype, categories_dtype, ordered "
                       "FROM columns ORDER BY table_name, position").fetchall()
    con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = 'columns'",
                (len(rows), store._catalogue_checksum(rows)))
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    items = con.execute("SELECT key, value FROM meta").fetchall()
    con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = 'meta'", (store._meta_checksum(items),))
    others = [r for r in con.execute("SELECT table_name, rows, crc32 FROM checksums") if r[0] != "checksums"]
    con.execute("UPDATE checksums SET rows = ?, crc32 = ? WHERE table_name = 'checksums'",
                (len(others), store._checksums_checksum(others)))
    con.execute("PRAGMA user_version = 2")
    con.commit()
    con.close()


def _downgrade_to_version_1(path: pathlib.Path, report: Report) -> None:
    """Rewrite a store as schema version 1 wrote it: no catalogue or self checksum rows, no
    execution intervals (cycles_from / cycles_to came with version 2), no attribution, no trace."""
    con = sqlite3.connect(path)
    _drop_trace(con)
    _drop_columns(con, "liveness", report.liveness, ("ipu",))
    _drop_columns(con, "tiles", report.tiles, TILE_REGION_COLUMNS)
    _drop_columns(con, "execution", report.execution, ("cycles_from", "cycles_to", "bytes_moved"))
    _drop_columns(con, "variables", report.variables, _ATTRIBUTION)
    _drop_columns(con, "remote_buffers", report.remote_buffers, _ATTRIBUTION)
    con.execute("DELETE FROM checksums WHERE table_name IN ('columns', 'checksums')")
    con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    items = con.execute("SELECT key, value FROM meta").fetchall()
    con.execute("UPDATE checksums SET crc32 = ? WHERE table_name = 'meta'", (store._meta_checksum(items),))
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()


def _as_written_by_version_6(report: Report) -> Report:
    """``report`` as a version 6 writer saw it: the capabilities of its time (no ``programs`` nor
    ``operations``)."""
    return report.with_meta(report.meta.replace(capabilities=report.meta.capabilities - {"programs", "operations"}))


def test_version_6_stores_open_with_an_empty_program_tree(report: Report, tmp_path: pathlib.Path) -> None:
    assert store.TABLES_SINCE["programs"] == 7
    old = _as_written_by_version_6(report.with_meta(report.meta.replace(
        capabilities=report.meta.capabilities | {"programs"})))
    path = store.write_report(old, tmp_path / "profile.sqlite")
    _downgrade_to_version_without(path, 6, ("programs", "operations"), old)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 6
    assert not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'programs'").fetchone()
    con.close()
    back = store.read_report(path)
    assert len(report.programs) == 6  # the fixture has a program tree; the old file has none
    assert back.programs.empty and list(back.programs.columns) == ["id", "parent", "depth", "kind", "name", "op", "ipu"]
    assert "programs" not in back.meta.capabilities  # so the outputs say it is not recorded
    assert_table_equal("trace", back.trace, report.trace)
    pd.testing.assert_frame_equal(back.variables, report.variables)


def test_version_7_stores_open_with_no_operations(report: Report, tmp_path: pathlib.Path) -> None:
    assert store.SCHEMA_VERSION == 9 and store.TABLES_SINCE["operations"] == 8
    old = report.with_meta(report.meta.replace(capabilities=report.meta.capabilities | {"programs"}))
    path = store.write_report(old, tmp_path / "profile.sqlite")
    _downgrade_to_version_without(path, 7, ("operations",), old)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 7
    assert not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'operations'").fetchone()
    con.close()
    back = store.read_report(path)
    assert len(report.operations) == 3  # the fixture has operations; the old file has none
    assert back.operations.empty
    assert list(back.operations.columns) == ["name", "debug_name", "type", "layer", "ipu", "code_bytes",
                                             "vertex_state_bytes", "exchange_code_bytes", "cycles", "flops",
                                             "tiles", "source", "parameter", "role"]
    assert "operations" not in back.meta.capabilities  # so the outputs say it is not recorded
    pd.testing.assert_frame_equal(back.programs, report.programs)


def test_version_8_stores_open_with_no_vertices_compute_sets_nor_exchanges(report: Report,
                                                                          tmp_path: pathlib.Path) -> None:
    assert store.SCHEMA_VERSION == 9 and all(store.TABLES_SINCE[t] == 9 for t in VERSION_9_TABLES)
    old = report.with_meta(report.meta.replace(capabilities=report.meta.capabilities | {"operations"}))
    path = store.write_report(old, tmp_path / "profile.sqlite")
    _downgrade_to_version_without(path, 8, (), old)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 8
    assert not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'vertices'").fetchone()
    con.close()
    back = store.read_report(path)
    assert (len(report.vertices), len(report.compute_sets), len(report.exchanges)) == (3, 2, 2)
    assert back.vertices.empty and back.compute_sets.empty and back.exchanges.empty
    assert list(back.vertices.columns) == ["name", "instances", "vertex_state_bytes", "code_bytes", "tiles",
                                           "compute_sets"]
    assert "vertices" not in back.meta.capabilities  # so the outputs say it is not recorded
    # a version-8 store has no attribution of its ops (version 9 added it)
    pd.testing.assert_frame_equal(back.operations.drop(columns=["parameter", "role"]),
                                  report.operations.drop(columns=["parameter", "role"]))


def test_the_vertices_compute_sets_and_exchanges_round_trip(report: Report, path: pathlib.Path) -> None:
    back = store.read_report(path)
    for table in VERSION_9_TABLES:
        assert_table_equal(table, getattr(back, table), getattr(report, table))
    assert back.vertices["name"].tolist()[2] == "(not attributed to a vertex type)"
    assert back.compute_sets["cycles"].tolist() == [900, pd.NA]


def test_version_8_stores_open_with_operations_of_unknown_parameter(report: Report, tmp_path: pathlib.Path) -> None:
    assert store.COLUMNS_SINCE[("operations", "parameter")] == 9 == store.COLUMNS_SINCE[("operations", "role")]
    path = store.write_report(report, tmp_path / "profile.sqlite")
    _downgrade_to_version_without(path, 8, (), report)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 8
    stored = [row[1] for row in con.execute("PRAGMA table_info(operations)")]
    con.close()
    assert "parameter" not in stored and "role" not in stored
    back = store.read_report(path)
    assert report.operations["parameter"].tolist() == ["fc1.weight", "", ""]  # what version 9 keeps
    assert back.operations["parameter"].tolist() == ["", "", ""]
    assert back.operations["role"].tolist() == ["", "", ""]  # unknown: the ledger's "(parameter not recorded)"
    pd.testing.assert_frame_equal(back.operations.drop(columns=["parameter", "role"]),
                                  report.operations.drop(columns=["parameter", "role"]))


def test_operation_attribution_round_trips(report: Report, path: pathlib.Path) -> None:
    back = store.read_report(path)
    assert back.operations["parameter"].tolist() == ["fc1.weight", "", ""]
    assert back.operations["role"].tolist() == ["weight", "activation", ""]


def test_an_operations_table_in_a_version_7_store_is_refused(report: Report, path: pathlib.Path) -> None:
    _downgrade_to_version_without(path, 7, (), report)  # the operations kept
    with pytest.raises(ReportFormatError, match="table operations in a version 7 store"):
        store.read_report(path)


def test_the_operations_round_trip(report: Report, path: pathlib.Path) -> None:
    back = store.read_report(path)
    pd.testing.assert_frame_equal(back.operations, report.operations)
    assert back.operations["name"].tolist() == ["matmul/1", "x</script><b>y</b>", "(not attributed to an op)"]
    assert back.operations["cycles"].tolist() == [5000, pd.NA, 77]
    assert back.operations["source"].tolist()[0] == "model.py:12"


def _with_regions(report: Report) -> Report:
    """``report`` with every tile's memory by region known: 1,000 B non-interleaved, 200 B
    interleaved, no overflow and 24 B of gaps."""
    tiles = report.tiles.copy()
    for column, value in zip(TILE_REGION_COLUMNS, (1_000, 200, 0, 24), strict=True):
        tiles[column] = pd.array([value] * len(tiles), dtype="Int64")
    return dataclasses.replace(report, tiles=tiles)


def test_version_8_stores_open_with_replica_liveness_and_run_0(report: Report, tmp_path: pathlib.Path) -> None:
    assert store.COLUMNS_SINCE[("liveness", "ipu")] == 9 == store.COLUMNS_SINCE[("trace", "run")]
    path = store.write_report(report, tmp_path / "profile.sqlite")
    _downgrade_to_version_without(path, 8, (), report)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 8
    assert "ipu" not in [row[1] for row in con.execute("PRAGMA table_info(liveness)")]
    assert "run" not in [row[1] for row in con.execute("PRAGMA table_info(trace)")]
    con.close()
    back = store.read_report(path)
    assert back.liveness["ipu"].dtype == "Int64" and back.liveness["ipu"].isna().all()
    assert back.trace["run"].dtype == "int64" and back.trace["run"].tolist() == [0] * len(report.trace)
    assert_table_equal("liveness", back.liveness, report.liveness)
    assert_table_equal("trace", back.trace, report.trace)


def test_tile_regions_round_trip(report: Report, tmp_path: pathlib.Path) -> None:
    assert store.COLUMNS_SINCE[("tiles", "gap_bytes")] == 8 <= store.SCHEMA_VERSION
    with_regions = _with_regions(report)
    back = store.read_report(store.write_report(with_regions, tmp_path / "profile.sqlite"))
    pd.testing.assert_frame_equal(back.tiles, with_regions.tiles)
    assert back.tiles["interleaved_bytes"].tolist()[0] == 200


def test_version_7_stores_open_with_unknown_tile_regions(report: Report, tmp_path: pathlib.Path) -> None:
    with_regions = _with_regions(report)
    path = store.write_report(with_regions, tmp_path / "profile.sqlite")
    _downgrade_to_version_without(path, 7, ("operations",), with_regions)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 7
    stored = [row[1] for row in con.execute("PRAGMA table_info(tiles)")]
    con.close()
    assert "gap_bytes" not in stored and "non_interleaved_bytes" not in stored
    back = store.read_report(path)
    assert list(back.tiles.columns) == list(with_regions.tiles.columns)
    for column in TILE_REGION_COLUMNS:
        assert back.tiles[column].dtype == "Int64" and back.tiles[column].isna().all(), column
    pd.testing.assert_frame_equal(back.tiles.drop(columns=list(TILE_REGION_COLUMNS)),
                                  report.tiles.drop(columns=list(TILE_REGION_COLUMNS)))
    pd.testing.assert_frame_equal(back.programs, report.programs)


def test_a_programs_table_in_a_version_6_store_is_refused(report: Report, path: pathlib.Path) -> None:
    _downgrade_to_version_without(path, 6, ("operations",), report)  # the programs kept
    with pytest.raises(ReportFormatError, match="table programs in a version 6 store"):
        store.read_report(path)


def test_the_program_tree_round_trips(report: Report, path: pathlib.Path) -> None:
    back = store.read_report(path)
    pd.testing.assert_frame_equal(back.programs, report.programs)
    assert back.programs["parent"].tolist()[:3] == [pd.NA, 0, pd.NA]
    assert back.programs["name"].tolist()[5] == "x</script><b>y</b>"


def test_version_3_stores_open_with_an_empty_trace(report: Report, path: pathlib.Path) -> None:
    assert len(report.trace)  # the fixture has a trace
    _downgrade_to_version_3(path, report)
    back = store.read_report(path)
    assert back.trace.empty and list(back.trace.columns) == list(report.trace.columns)
    assert_table_equal("execution", back.execution, report.execution)


def test_a_trace_table_in_a_version_3_store_is_refused(report: Report, path: pathlib.Path) -> None:
    _downgrade_to_version_without(path, 3, (), report)  # every table kept
    with pytest.raises(ReportFormatError, match="table trace in a version 3 store"):
        store.read_report(path)


def test_version_2_stores_open_unattributed(report: Report, path: pathlib.Path) -> None:
    assert report.variables["parameter"].ne("").any()  # the fixture is attributed
    _downgrade_to_version_2(path, report)
    back = store.read_report(path)
    assert back.variables["name"].tolist() == report.variables["name"].tolist()
    for table in ("variables", "remote_buffers"):
        frame = getattr(back, table)
        assert (frame["parameter"] == "").all() and (frame["role"].astype(str) == "other").all()
        assert (frame["which"].astype(str) == "").all()
    ledger = back.ledger()
    assert set(ledger["parameter"]) <= {""} and set(ledger["role"]) <= {"other"}


def test_version_1_stores_still_open(report: Report, path: pathlib.Path) -> None:
    _downgrade_to_version_1(path, report)
    back = store.read_report(path)
    assert back.variables["name"].tolist() == report.variables["name"].tolist()
    # execution intervals did not exist then: unknown, and the run time falls back to the sum
    assert len(back.execution) == len(report.execution) and back.execution["cycles_from"].isna().all()
    per_run = report.execution.groupby("run")["cycles"].sum().mean()
    assert back.summary()["cycles_per_step"] == per_run


def test_version_1_stores_still_check_row_counts(report: Report, path: pathlib.Path) -> None:
    _downgrade_to_version_1(path, report)
    _edit(path, "UPDATE checksums SET rows = 1000000000 WHERE table_name = 'variables'")
    with pytest.raises(ReportFormatError, match="variables has .* rows, expected 1000000000"):
        store.read_report(path)


def test_header_and_meta_versions_must_agree(path: pathlib.Path) -> None:
    _edit(path, "PRAGMA user_version = 1")
    with pytest.raises(ReportFormatError, match=f"schema version {store.SCHEMA_VERSION} in meta, 1 in header"):
        store.read_report(path)


def test_the_writer_refuses_a_report_built_around_validation(report: Report, tmp_path: pathlib.Path) -> None:
    import dataclasses

    tiles = report.tiles.copy()
    tiles.loc[0, "bytes_excluding_gaps"] = -1
    forged = object.__new__(Report)
    for f in dataclasses.fields(Report):
        object.__setattr__(forged, f.name, tiles if f.name == "tiles" else getattr(report, f.name))
    from profcompare.errors import ReportValidationError

    with pytest.raises(ReportValidationError, match=r"tiles\.bytes_excluding_gaps: row 0 has -1"):
        store.write_report(forged, tmp_path / "profile.sqlite")
    assert list(tmp_path.iterdir()) == []


def _with_placement(report: Report) -> Report:
    """``report`` with its first variable placed on tiles 0-1 (100 B each) and 2 (60 B)."""
    name = str(report.variables["name"].iloc[0])
    placed = make_frame("variable_tiles", {"variable": [name, name], "ipu": [0, 0], "first_tile": [0, 2],
                                           "last_tile": [1, 2], "bytes_per_tile": [100, 60]})
    return dataclasses.replace(report, variable_tiles=placed)


def test_variable_placement_round_trips(report: Report, tmp_path: pathlib.Path) -> None:
    assert store.TABLES_SINCE["variable_tiles"] == 9 == store.SCHEMA_VERSION
    placed = _with_placement(report)
    back = store.read_report(store.write_report(placed, tmp_path / "profile.sqlite"))
    pd.testing.assert_frame_equal(back.variable_tiles, placed.variable_tiles)
    assert back.variable_tiles["bytes_per_tile"].tolist() == [100, 60]


def test_version_8_stores_open_without_variable_placement(report: Report, tmp_path: pathlib.Path) -> None:
    placed = _with_placement(report)
    path = store.write_report(placed, tmp_path / "profile.sqlite")
    _downgrade_to_version_without(path, 8, (), placed)
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA user_version").fetchone()[0] == 8
    assert not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'variable_tiles'").fetchone()
    con.close()
    back = store.read_report(path)
    assert back.variable_tiles.empty
    assert list(back.variable_tiles.columns) == ["variable", "ipu", "first_tile", "last_tile", "bytes_per_tile"]
    pd.testing.assert_frame_equal(back.variables, report.variables)
    # a version-8 store has no attribution of its ops (version 9 added it)
    pd.testing.assert_frame_equal(back.operations.drop(columns=["parameter", "role"]),
                                  report.operations.drop(columns=["parameter", "role"]))


def test_version_8_stores_open_with_the_bytes_moved_unrecorded(report: Report, tmp_path: pathlib.Path) -> None:
    assert store.COLUMNS_SINCE[("execution", "bytes_moved")] == 9
    moved = pd.array([128] + [None] * (len(report.execution) - 1), dtype="Int64")
    recorded = dataclasses.replace(report, execution=report.execution.assign(bytes_moved=moved))
    path = store.write_report(recorded, tmp_path / "profile.sqlite")
    assert store.read_report(path).execution["bytes_moved"].tolist()[0] == 128  # what version 9 keeps
    _downgrade_to_version_without(path, 8, (), recorded)
    back = store.read_report(path)
    assert str(back.execution["bytes_moved"].dtype) == "Int64" and back.execution["bytes_moved"].isna().all()
    assert_table_equal("execution", back.execution.drop(columns=["bytes_moved"]),
                       report.execution.drop(columns=["bytes_moved"]))
