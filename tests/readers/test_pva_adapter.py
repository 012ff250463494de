"""The pva adapter, driven by a stand-in object tree with the documented attribute names."""

from __future__ import annotations

import pathlib
import sqlite3
import sys
from types import SimpleNamespace as NS

import pandas as pd
import pytest
from fake_pva import FakePva, build_report_tree, enum
from readers_builders import assert_reports_equal

from profcompare.errors import OutputExistsError, ReportFormatError, SdkUnavailableError
from profcompare.model import Target, make_frame, programs_from_rows
from profcompare.readers import open_report, store
from profcompare.readers.pva import export_pva, read_pva, report_from_pva


@pytest.fixture
def profile(tmp_path: pathlib.Path) -> pathlib.Path:
    """An SQLite file standing in for profile.pop (its content is only sniffed)."""
    path = tmp_path / "profile.pop"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE programs (id INTEGER, name TEXT)")
    con.commit()
    con.close()
    return path


def test_reads_every_table_from_the_object_tree(profile: pathlib.Path) -> None:
    report = read_pva(profile, pva_module=FakePva())
    meta = report.meta
    assert meta.format == "pva" and meta.simulated is False
    assert meta.producer == "Poplar 3.3.0 (abc)"
    assert meta.source == str(profile)
    assert meta.target == Target("Mk2", num_ipus=4, tiles_per_ipu=2, bytes_per_tile=638976, clock_hz=1.33e9,
                                 num_replicas=2, ipus_per_replica=2)
    assert meta.oom is True  # tile 3 overflowed
    # "vertices": the exchange programs' codeBytesByTile fill the exchanges table
    assert meta.capabilities == {"tiles", "categories", "variables", "liveness", "code", "execution", "trace",
                                 "programs", "vertices"}

    pd.testing.assert_frame_equal(report.tiles, make_frame("tiles", {
        "tile": [0, 1, 2, 3], "ipu": [0, 0, 1, 1],
        "bytes_including_gaps": [1000, 1100, 700, 640000], "bytes_excluding_gaps": [900, 950, 690, 700],
        "always_live_bytes": [600, 650, 500, 500], "not_always_live_peak_bytes": [300, 300, 190, 200],
        "overflow_bytes": [0, 0, 0, 1], "gap_bytes": [100, 150, 10, 639_300],
        "vertexCode": [100, 110, 90, 90], "controlCode": [20, 20, 20, 20], "constant": [5, 5, 0, 0],
        "stack": [64, 64, 64, 64],
        # bytes excluding gaps no category claims: 900 - (100 + 20 + 5 + 64) = 711, ...
        "unattributed": [711, 751, 516, 526],
    }))
    pd.testing.assert_frame_equal(report.categories, make_frame("categories", {
        "category": ["vertexCode", "controlCode", "constant", "stack", "unattributed"],
        "group": ["code", "code", "variables", "other", "other"], "bytes": [390, 80, 10, 256, 2504],
    }))
    pd.testing.assert_frame_equal(report.liveness, make_frame("liveness", {
        "step": [0, 1, 2, 3], "program": ["host/copy", "fwd/matmul", "fwd/exchange", "fwd/matmul"],
        "program_type": ["StreamCopyMid", "OnTileExecute", "DoExchange", "OnTileExecute"],
        "not_always_live_bytes": [40, 300, 250, 150],
    }))
    pd.testing.assert_frame_equal(report.variables, make_frame("variables", {
        "name": ["layer0.weight", "Adam/first_order/layer0.weight", "accum/layer0.weight", "</script><b>x</b>",
                 "act/x", "act/y", "Gradient___w"],
        "bytes": [4096, 2048, 4096, 8, 200, 100, 150],
        "always_live": [True, True, True, True, False, False, False],
        "kind": ["weight", "optimizer_state", "accumulator", "other", "activation", "activation", "gradient"],
        "dtype": [""] * 7, "shape": [""] * 7, "tiles": [0] * 7,
        "first_step": [None, None, None, None, 1, 1, 2], "last_step": [None, None, None, None, 1, 2, 3],
        # attribution from the names (docs/pva-adapter.md); Gradient___w: w is no known parameter
        "parameter": ["layer0.weight"] * 3 + [""] * 4,
        "role": ["weight", "optimizer_state", "accumulator", "other", "other", "other", "other"],
        "which": ["", "first_order", "", "", "", "", ""],
    }))
    pd.testing.assert_frame_equal(report.code, make_frame("code", {
        "name": ["fwd/matmul", "fwd/exchange", "fwd/exchange", "host/copy", "host/copy"],
        "type": ["OnTileExecute", "DoExchange", "DoExchange", "StreamCopyMid", "StreamCopyMid"],
        "category": ["controlCode", "controlCode", "internalExchangeCode", "controlCode", "hostExchangeCode"],
        "code_bytes": [40, 4, 300, 4, 14],
    }))
    pd.testing.assert_frame_equal(report.execution, make_frame("execution", {
        "run": [0, 0, 0, 0, 1, 1], "step": [0, 1, 2, 3, 0, 1],
        "program": ["fwd/matmul", "fwd/exchange", "host/copy", "SyncAns", "fwd/matmul", "fwd/exchange"],
        "type": ["OnTileExecute", "DoExchange", "StreamCopyMid", "SyncAns", "OnTileExecute", "DoExchange"],
        "phase": ["compute", "exchange", "host_io", "sync", "compute", "exchange"],
        "cycles": [700, 80, 30, 810, 690, 90],
        # earliest start and latest end over the replica's IPUs
        "cycles_from": [0, 700, 780, 0, 1000, 1690], "cycles_to": [700, 780, 810, 810, 1690, 1780],
    }))
    # the trace of every run, run 0's shown here: one block per (step, IPU taking part), Graph
    # Analyser's names (the StreamCopyMid is a StreamCopy block; the copy took no cycles on IPU 1,
    # so no block there)
    assert report.trace["run"].tolist() == [0] * 7 + [1] * (len(report.trace) - 7)
    run0 = report.trace[report.trace["run"] == 0].reset_index(drop=True)
    pd.testing.assert_frame_equal(run0, make_frame("trace", {
        "ipu": [0, 0, 0, 0, 1, 1, 1],
        "cycles_from": [0, 0, 700, 780, 0, 0, 700], "cycles_to": [500, 810, 780, 810, 700, 810, 760],
        "type": ["OnTileExecute", "SyncAns", "DoExchange", "StreamCopy", "OnTileExecute", "SyncAns", "DoExchange"],
        "name": ["fwd/matmul", "SyncAns", "fwd/exchange", "host/copy", "fwd/matmul", "SyncAns", "fwd/exchange"],
        "program": ["fwd/matmul", "SyncAns", "fwd/exchange", "host/copy", "fwd/matmul", "SyncAns", "fwd/exchange"],
        "parent": [""] * 7, "depth": [0] * 7,
    }))
    assert report.remote_buffers.empty
    summary = report.summary()
    assert summary["peak_liveness_bytes"] == 600 + 650 + 500 + 500 + 300
    # a run is its span (810 and 780 cycles), not the sum of its rows (1620 and 780)
    assert summary["cycles_per_step"] == (810 + 780) / 2


def test_tile_regions_are_the_overflow_and_gaps_pva_records(profile: pathlib.Path) -> None:
    tiles = read_pva(profile, pva_module=FakePva()).tiles
    # gaps = total.includingGaps - total.excludingGaps; overflow = memory.overflowed.excludingGaps
    assert tiles["gap_bytes"].tolist() == [100, 150, 10, 639_300]
    assert tiles["overflow_bytes"].tolist() == [0, 0, 0, 1]
    # pva documents no attribute for the non-interleaved / interleaved split: unknown
    assert tiles["non_interleaved_bytes"].isna().all() and tiles["interleaved_bytes"].isna().all()


def test_debug_file_is_passed_to_pva(profile: pathlib.Path) -> None:
    debug = profile.with_name("debug.cbor")
    debug.write_bytes(b"\xa0")
    fake = FakePva()
    read_pva(profile, debug, pva_module=fake)
    assert fake.calls == [(str(profile), str(debug))]


def test_profile_without_execution_declares_no_execution(profile: pathlib.Path) -> None:
    report = read_pva(profile, pva_module=FakePva(build_report_tree(with_execution=False)))
    assert report.execution.empty
    assert "execution" not in report.meta.capabilities
    assert pd.isna(report.summary()["cycles_per_step"])  # no cycles without an execution profile


def test_skipping_the_liveness_variable_walk(profile: pathlib.Path) -> None:
    report = read_pva(profile, pva_module=FakePva(), not_always_live_variables=False)
    assert report.variables["always_live"].all()
    assert len(report.variables) == 4
    assert len(report.liveness) == 4


def test_minimal_tree_uses_defaults_for_unconfirmed_attributes(profile: pathlib.Path) -> None:
    """Only [C]-tagged attributes present: architecture, replicas, overflow, categories,
    children, execution and program lists missing."""
    prog = NS(name="p", type=enum("OnTileExecute"))
    bare_tile = NS(memory=NS(total=NS(includingGaps=10, excludingGaps=8), alwaysLiveBytes=6, notAlwaysLiveBytes=2))
    tree = NS(
        compilation=NS(
            target=NS(numIPUs=1, tilesPerIpu=1, bytesPerTile=100, clockFrequency=1.0e9),
            tiles=[bare_tile],
            livenessProgramSteps=[NS(program=prog, notAlwaysLiveMemory=NS(bytes=2))],
        ),
    )
    report = read_pva(profile, pva_module=FakePva(tree))
    assert report.meta.target == Target("unknown", 1, 1, 100, 1.0e9, 1, 1)
    assert report.meta.producer == "Poplar unknown"
    assert report.meta.capabilities == {"tiles", "liveness"}
    assert list(report.tiles.columns) == ["tile", "ipu", "bytes_including_gaps", "bytes_excluding_gaps",
                                          "always_live_bytes", "not_always_live_peak_bytes",
                                          "non_interleaved_bytes", "interleaved_bytes", "overflow_bytes", "gap_bytes"]
    # a tile without memory.overflowed: its overflow is unknown, its gaps follow from the totals
    assert report.tiles["overflow_bytes"].isna().all() and report.tiles["gap_bytes"].notna().all()
    assert report.variables.empty and report.code.empty and report.categories.empty
    assert report.meta.oom is False


def test_pva_that_cannot_open_the_file_is_a_format_error(profile: pathlib.Path) -> None:
    with pytest.raises(ReportFormatError, match=r"profile\.pop: pva cannot open it: bad magic"):
        read_pva(profile, pva_module=FakePva(error=RuntimeError("bad magic")))


def test_unexpected_tree_is_a_format_error(profile: pathlib.Path) -> None:
    tree = build_report_tree()
    tree.compilation.tiles = [NS(memory=NS())]
    with pytest.raises(ReportFormatError, match="unexpected profile content"):
        read_pva(profile, pva_module=FakePva(tree))


def test_a_tree_that_fails_validation_is_refused_naming_the_file(profile: pathlib.Path) -> None:
    tree = build_report_tree()
    tree.compilation.tiles[0].memory.total.includingGaps = -5
    with pytest.raises(ReportFormatError, match=r"profile\.pop: unexpected profile content: "
                                                r"tiles\.bytes_including_gaps: row 0 has -5 \(must be >= 0\)"):
        read_pva(profile, pva_module=FakePva(tree))


def test_a_direct_build_from_the_tree_has_the_code_table() -> None:
    report = report_from_pva(build_report_tree(), source="profile.pop")
    assert "code" in report.meta.capabilities
    assert report.code["code_bytes"].tolist() == [40, 4, 300, 4, 14]
    assert report_from_pva(build_report_tree(), source="profile.pop", code=False).code.empty


def test_without_pva_the_error_says_what_to_do(profile: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pva", None)  # makes `import pva` fail
    with pytest.raises(SdkUnavailableError) as info:
        read_pva(profile)
    message = str(info.value)
    assert "Poplar SDK" in message and "enable script" in message
    assert f"profcompare export {profile} -o" in message
    with pytest.raises(SdkUnavailableError):
        open_report(profile.parent)


def test_real_module_name_is_used_when_importable(profile: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakePva()
    monkeypatch.setitem(sys.modules, "pva", fake)
    assert read_pva(profile).meta.format == "pva"
    assert fake.calls == [(str(profile),)]


def test_export_writes_a_store_file_equal_to_the_pva_read(profile: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = export_pva(profile, tmp_path / "out.sqlite", pva_module=FakePva())
    direct = read_pva(profile, pva_module=FakePva())
    back = store.read_report(out)
    assert back.meta.format == "store" and back.meta.producer == "Poplar 3.3.0 (abc)"
    assert_reports_equal(direct, back, ignore_meta=("source", "format"))


def test_export_refuses_to_overwrite_before_reading(profile: pathlib.Path, tmp_path: pathlib.Path) -> None:
    out = tmp_path / "out.sqlite"
    out.write_text("keep")
    fake = FakePva()
    with pytest.raises(OutputExistsError):
        export_pva(profile, out, pva_module=fake)
    assert fake.calls == [] and out.read_text() == "keep"
    export_pva(profile, out, overwrite=True, pva_module=fake)
    assert store.read_report(out).meta.producer.startswith("Poplar")


def test_open_report_finds_engine_subdirectory_and_top_level_debug(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PopTorch layout: <dir>/training/profile.pop with <dir>/debug.cbor."""
    (tmp_path / "training").mkdir()
    pop = tmp_path / "training" / "profile.pop"
    sqlite3.connect(pop).execute("CREATE TABLE steps (id INTEGER)").connection.close()
    (tmp_path / "debug.cbor").write_bytes(b"\xa0")
    fake = FakePva()
    monkeypatch.setitem(sys.modules, "pva", fake)
    report = open_report(tmp_path)
    assert report.meta.source == str(pop)
    assert fake.calls == [(str(pop), str((tmp_path / "debug.cbor").resolve()))]


def test_poplar_sqlite_without_pop_extension_is_sniffed(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "renamed.db"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE vars_info (size_bytes INTEGER, category INTEGER, tile INTEGER)")
    con.commit()
    con.close()
    fake = FakePva()
    monkeypatch.setitem(sys.modules, "pva", fake)
    assert open_report(path).meta.format == "pva"



def test_the_program_tree_comes_from_the_programs_children(profile: pathlib.Path) -> None:
    # pva lists every program, children too: "main" (children fwd/matmul, fwd/exchange) and
    # host/copy are the roots; ids are pva's _id; pva names no op and no IPU
    report = read_pva(profile, pva_module=FakePva())
    pd.testing.assert_frame_equal(report.programs, programs_from_rows([
        (10, None, 0, "Sequence", "main", "", None),
        (11, 10, 1, "OnTileExecute", "fwd/matmul", "", None),
        (12, 10, 1, "DoExchange", "fwd/exchange", "", None),
        (13, None, 0, "StreamCopyMid", "host/copy", "", None),
    ]))


def test_a_program_under_two_parents_is_one_row_and_ids_fall_back_to_rows(profile: pathlib.Path) -> None:
    from fake_pva import program

    # a shared body (a function called from two Call programs), no _id anywhere, and a cycle
    body = program("body", "Sequence", children=[program("body/compute", "OnTileExecute")])
    first, second = program("call/1", "Call", children=[body]), program("call/2", "Call", children=[body])
    loop = program("loop", "Repeat")
    loop.children = [loop]
    main = program("main", "Sequence", children=[first, second, loop])
    tree = build_report_tree()
    tree.compilation.programs = [main, first, second, body, body.children[0], loop]
    report = read_pva(profile, pva_module=FakePva(tree))
    pd.testing.assert_frame_equal(report.programs, programs_from_rows([
        (0, None, 0, "Sequence", "main", "", None),
        (1, 0, 1, "Call", "call/1", "", None),
        (2, 1, 2, "Sequence", "body", "", None),
        (3, 2, 3, "OnTileExecute", "body/compute", "", None),
        (4, 0, 1, "Call", "call/2", "", None),
        (5, 0, 1, "Repeat", "loop", "", None),
    ]))


def test_a_profile_without_programs_does_not_record_a_tree(profile: pathlib.Path) -> None:
    tree = build_report_tree()
    del tree.compilation.programs
    report = read_pva(profile, pva_module=FakePva(tree))
    assert report.programs.empty and "programs" not in report.meta.capabilities
