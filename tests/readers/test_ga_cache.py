"""Graph Analyser's cache of a real profile opened as a report: the facts shared/data/README.md
measured on it (popxl-addons' pipelined MNIST on 2 Mk2 IPUs)."""

from __future__ import annotations

import pathlib
import re
import shutil
import sqlite3

import pytest
from click.testing import CliRunner
from trace_pva import TRACE_FILE, shared_data_file

import profcompare as pc
from profcompare.analysis import trace as trace_analysis
from profcompare.cli import cli, main
from profcompare.errors import ReportFormatError
from profcompare.model import Target
from profcompare.readers.ga_cache import read_ga_cache, trace_frame


@pytest.fixture(scope="module")
def cache() -> pathlib.Path:
    return shared_data_file(TRACE_FILE)


@pytest.fixture(scope="module")
def report(cache: pathlib.Path) -> pc.Report:
    return pc.open_report(cache)


def test_opens_as_a_measured_execution_only_report(report: pc.Report) -> None:
    meta = report.meta
    assert meta.format == "ga_cache" and not meta.simulated
    assert "measured, execution only" in meta.producer
    assert meta.capabilities == {"trace", "execution"}
    assert meta.target.ipus_per_replica == 2 and meta.target.num_ipus == 2
    assert report.tiles.empty and report.variables.empty and report.liveness.empty


def test_both_ipus_span_the_same_cycles(report: pc.Report) -> None:
    spans = trace_analysis.trace_spans(report.trace)
    assert spans[["ipu", "cycles_from", "cycles_to"]].values.tolist() == [[0, 0, 2_540_750], [1, 0, 2_540_750]]
    # every block but Graph Analyser's 590 grouping nodes: 5,194 rows - 590
    assert len(report.trace) == 5194 - 590
    assert report.summary()["cycles_per_step"] == 2_540_750


def test_block_sums_with_and_without_syncans(report: pc.Report) -> None:
    ipu0 = report.trace[report.trace["ipu"] == 0]
    lengths = ipu0["cycles_to"] - ipu0["cycles_from"]
    assert int(lengths.sum()) == 6_226_672  # 2.45x the span: SyncAns blocks overlap what they wait for
    assert int(lengths[ipu0["type"].astype(str) != "SyncAns"].sum()) == 2_560_295


@pytest.mark.parametrize(("block_type", "median"), [
    ("InternalSync", 94), ("ExternalSync", 131), ("DoExchange", 117), ("OnTileExecute", 346),
    ("GlobalExchange", 826), ("StreamCopy", 1_105), ("StreamCopyBegin", 5_687), ("StreamCopyEnd", 4_010),
])
def test_median_block_lengths(report: pc.Report, block_type: str, median: int) -> None:
    totals = trace_analysis.type_totals(report.trace, by_ipu=False).set_index("type")
    # the README rounds to whole cycles (StreamCopyEnd's median is 4,009.5 over 152 blocks)
    assert totals.loc[block_type, "median_cycles"] == pytest.approx(median, abs=0.5)


def test_nested_blocks_name_their_group(report: pc.Report) -> None:
    trace = report.trace
    # StreamCopy blocks sit under Graph Analyser's "StreamCopy" node: Begin, Mid, End
    mids = trace[trace["type"].astype(str) == "StreamCopy"]
    assert set(mids["name"]) == {"Mid"} and set(mids["parent"]) == {"StreamCopy"} and (mids["depth"] >= 1).all()
    top = trace[trace["depth"] == 0]
    assert (top["parent"] == "").all() and (top["program"] == top["name"]).all()


def test_show_prints_it_labelled_measured(cache: pathlib.Path) -> None:
    result = CliRunner().invoke(cli, ["show", str(cache)])
    assert result.exit_code == 0, result.output
    assert "measured, execution only" in result.output
    # the trace section: per IPU its span and, per type, blocks and the sum of their cycles
    trace = result.output[result.output.index("Execution trace"):]
    lines = [line.split() for line in trace.splitlines() if line.strip()[:1].isdigit()]
    assert [line[:2] for line in lines if "2,540,750" in line] == [["0", "2,540,750"], ["1", "2,540,750"]]
    rows = {tuple(line[:2]): line[2:] for line in lines if "2,540,750" not in line}
    assert rows[("0", "SyncAns")][:2] == ["402", "3,666,377"]
    assert rows[("1", "DoExchange")][:2] == ["78", "9,080"]


def test_a_cache_with_a_damaged_blocks_table_is_refused(cache: pathlib.Path, tmp_path: pathlib.Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "profile.pop_cache"
    shutil.copy(cache, broken)
    con = sqlite3.connect(broken)
    con.execute("ALTER TABLE execution_trace_blocks_v3_101111 DROP COLUMN name")
    con.commit()
    con.close()
    with pytest.raises(ReportFormatError, match="lacks column"):
        pc.open_report(broken)
    assert main(["show", str(broken)]) != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "execution_trace_blocks_v3_101111 lacks column(s) name" in err


def test_time_per_step_uses_the_assumed_mk2_clock(report: pc.Report) -> None:
    # the cache records no target: a Mk2's 1,472 tiles of 624 KiB at 1.33 GHz, as many IPUs as blocks name
    assert report.meta.target == Target("Mk2", num_ipus=2, tiles_per_ipu=1472, bytes_per_tile=638_976,
                                        clock_hz=1.33e9, num_replicas=1, ipus_per_replica=2)
    # 2,540,750 cycles at 1.33 GHz are 1.910 ms
    assert report.summary()["seconds_per_step"] == pytest.approx(2_540_750 / 1.33e9)
    assert round(report.summary()["seconds_per_step"] * 1e3, 3) == 1.910


def test_execution_rows_carry_pva_program_types_and_phases(report: pc.Report) -> None:
    execution = report.execution
    types = execution["type"].astype(str).value_counts().to_dict()
    # ExternalSync + InternalSync are pva's Sync; StreamCopy (Mid) is StreamCopyMid; no SyncAns
    assert types == {"OnTileExecute": 1986, "Sync": 1262, "StreamCopyBegin": 152, "StreamCopyEnd": 152,
                     "DoExchange": 130, "StreamCopyMid": 76, "GlobalExchange": 32}
    phases = execution["phase"].astype(str).value_counts().to_dict()
    assert phases == {"compute": 1986, "sync": 1262, "host_io": 380, "exchange": 130, "collective": 32}
    cycles = execution.groupby(execution["type"].astype(str))["cycles"].sum().to_dict()
    assert cycles["OnTileExecute"] == 918_231 and cycles["StreamCopyMid"] == 162_154


def test_block_depth_counts_the_enclosing_groups(report: pc.Report) -> None:
    depths = report.trace["depth"].value_counts().sort_index().to_dict()
    assert depths == {0: 2266, 1: 1902, 2: 436}
    top = report.trace[report.trace["depth"] == 0]
    assert top["type"].astype(str).value_counts().to_dict() == {
        "SyncAns": 814, "OnTileExecute": 726, "InternalSync": 556, "DoExchange": 106, "ExternalSync": 32,
        "GlobalExchange": 32}


def test_a_cache_with_a_block_ending_before_it_starts_is_refused(cache: pathlib.Path, tmp_path: pathlib.Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "profile.pop_cache"
    shutil.copy(cache, broken)
    con = sqlite3.connect(broken)
    # block 10, the first OnTileExecute, made to end 5 cycles before it starts
    assert con.execute("SELECT tag, cycles_from, cycles_to FROM execution_trace_blocks_v3_101111 WHERE id = 10"
                       ).fetchall() == [("OnTileExecute", 486_652, 486_839)]
    con.execute("UPDATE execution_trace_blocks_v3_101111 SET cycles_to = cycles_from - 5 WHERE id = 10")
    con.commit()
    con.close()
    with pytest.raises(ReportFormatError, match=r"profile\.pop_cache: execution\.cycles: row 10 has -5"):
        pc.open_report(broken)
    assert main(["show", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "execution.cycles: row 10 has -5 (must be >= 0)" in err


def _altered(cache: pathlib.Path, tmp_path: pathlib.Path, *statements: str) -> pathlib.Path:
    copy = tmp_path / "profile.pop_cache"
    shutil.copy(cache, copy)
    con = sqlite3.connect(copy)
    for statement in statements:
        con.execute(statement)
    con.commit()
    con.close()
    return copy


@pytest.mark.parametrize(("statement", "message"), [
    ("DROP TABLE execution_trace_blocks_v3_101111", "not a Graph Analyser cache with an execution trace"),
    ("UPDATE execution_trace_blocks_v3_101111 SET cycles_from = 'soon' WHERE id = 10",
     "malformed execution trace (invalid literal for int() with base 10: 'soon')"),
])
def test_a_cache_without_a_readable_trace_is_refused(cache: pathlib.Path, tmp_path: pathlib.Path, statement: str,
                                                     message: str) -> None:
    broken = _altered(cache, tmp_path, statement)
    with pytest.raises(ReportFormatError) as refused:
        read_ga_cache(broken)
    assert str(refused.value) == f"{broken}: {message}"


@pytest.mark.parametrize("content", [b"not an SQLite file " * 100, None])
def test_a_file_that_is_no_database_is_refused(cache: pathlib.Path, tmp_path: pathlib.Path,
                                               content: bytes | None) -> None:
    broken = tmp_path / "profile.pop_cache"
    broken.write_bytes(content if content is not None else cache.read_bytes()[:5000])  # text, or truncated
    with pytest.raises(ReportFormatError, match=r"profile\.pop_cache: corrupt SQLite database \("):
        read_ga_cache(broken)


def test_a_cache_of_groups_only_opens_as_an_empty_one_ipu_trace(cache: pathlib.Path, tmp_path: pathlib.Path) -> None:
    groups = _altered(cache, tmp_path, "DELETE FROM execution_trace_blocks_v3_101111 WHERE tag != 'FlameGraphNode'")
    report = read_ga_cache(groups)
    assert report.trace.empty and report.execution.empty
    assert (report.meta.target.num_ipus, report.meta.target.ipus_per_replica) == (1, 1)


def test_trace_rows_are_ordered_by_ipu_start_and_id_and_groups_may_loop() -> None:
    # (id, parent_id, tag, ipu, name, cycles_from, cycles_to) as the blocks table holds them;
    # groups 8 and 9 name each other as parent (a damaged tree must not hang the reader)
    rows = [(5, None, "OnTileExecute", 1, "e", 0, 9), (3, None, "DoExchange", 0, "c", 10, 30),
            (2, None, "OnTileExecute", 0, "b", 10, 20), (1, None, "SyncAns", 0, "a", 20, 25),
            (7, 8, "OnTileExecute", 0, "inner", 40, 50), (8, 9, "FlameGraphNode", 0, "g8", 0, 0),
            (9, 8, "FlameGraphNode", 0, "g9", 0, 0)]
    trace = trace_frame(rows)
    assert trace["name"].tolist() == ["b", "c", "a", "inner", "e"]
    assert trace["ipu"].tolist() == [0, 0, 0, 0, 1]
    inner = trace.iloc[3]
    assert (inner["parent"], inner["program"], inner["depth"]) == ("g8", "g8", 2)


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_show_prints_what_the_cache_records_and_one_line_for_the_rest(cache: pathlib.Path, fmt: str) -> None:
    result = CliRunner().invoke(cli, ["show", str(cache), "--format", fmt])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    # the summary holds the two figures the cache records, nothing read as n/a
    assert "Device cycles per step" in text and "1.910 ms" in text
    assert "n/a" not in text and "Peak liveness" not in text and "Total memory" not in text
    assert text.count("This report does not record") == 1
    assert ("This report does not record per-tile memory, memory categories, variables, liveness (program steps), "
            "code, remote buffers (Streaming Memory), a program tree, operations or vertex types, compute sets "
            "and exchanges: the figures and sections that need them are left out.") in text
    for title in ("Memory per IPU", "Memory ledger", "Memory by category", "Variables", "Code by program"):
        assert title not in text
    assert re.search(r"^(### )?Execution$", result.output, re.MULTILINE) and "Execution trace" in text


def test_the_cache_records_no_program_tree_and_the_outputs_say_so(report: pc.Report) -> None:
    # its FlameGraphNode groups are the trace's (one per executed group, 590 of 40 names), not
    # the program tree: the table stays empty and is not among the capabilities
    from profcompare.render.sections.document import unrecorded_note, unrecorded_tables

    assert report.programs.empty and "programs" not in report.meta.capabilities
    assert "programs" in unrecorded_tables(report)
    assert "a program tree" in unrecorded_note(report)
