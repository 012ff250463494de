"""Run time from a real trace: the span of the intervals, never the sum of the step rows."""

from __future__ import annotations

import pathlib
import sys
from types import SimpleNamespace as NS

import numpy as np
import pytest
from fake_pva import FakePva, build_report_tree
from trace_pva import TRACE_FILE, shared_data_file, trace_blocks, trace_execution

from profcompare.analysis import views as analysis
from profcompare.model import DEVICE_PHASES
from profcompare.readers.pva import phase_of, read_pva, sync_label

SPAN = 2_540_750  # both IPUs run from cycle 0 to 2,540,750 (shared/data README)


@pytest.fixture(scope="module")
def trace() -> pathlib.Path:
    return shared_data_file(TRACE_FILE)


@pytest.fixture
def profile(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "profile.pop"
    path.write_bytes(b"SQLite format 3\x00 stand-in")
    return path


def _trace_tree(trace: pathlib.Path) -> NS:
    tree = build_report_tree()
    tree.execution = trace_execution(trace)
    return tree


def test_the_trace_facts_hold(trace: pathlib.Path) -> None:
    blocks = trace_blocks(trace)
    on_ipu0 = [end - start for tag, ipu, _, start, end in blocks if ipu == 0]
    assert sum(on_ipu0) == 6_226_672  # 2.45x the span: SyncAns blocks overlap what they wait for
    assert sum(on_ipu0) / SPAN == pytest.approx(2.45, abs=0.01)
    assert min(b[3] for b in blocks) == 0 and max(b[4] for b in blocks) == SPAN


def test_run_time_is_the_span_not_the_sum(trace: pathlib.Path, profile: pathlib.Path) -> None:
    report = read_pva(profile, pva_module=FakePva(_trace_tree(trace)))
    execution = report.execution
    assert report.summary()["cycles_per_step"] == SPAN
    assert execution["cycles"].sum() > 2 * SPAN  # what a sum of step rows would claim
    assert execution["cycles_from"].min() == 0 and execution["cycles_to"].max() == SPAN
    assert report.summary()["samples_per_second"] != report.summary()["samples_per_second"]  # NaN: no samples known


def test_syncs_are_classified_by_type_and_name(trace: pathlib.Path, profile: pathlib.Path) -> None:
    report = read_pva(profile, pva_module=FakePva(_trace_tree(trace)))
    execution = report.execution
    syncs = execution[execution["type"].astype(str) == "Sync"]
    assert set(syncs["program"]) == {"External", "Internal"}
    assert (syncs["phase"].astype(str) == "sync").all()
    assert len(syncs) == 32 * 1 + 1230  # ExternalSync + InternalSync blocks of the trace
    assert sync_label("Sync", "External") == "ExternalSync" and sync_label("Sync", "Internal Sync") == "InternalSync"
    assert sync_label("OnTileExecute", "External") is None and phase_of("OnTileExecute", "External") == "compute"
    assert phase_of("StreamCopyMid") == "host_io" and phase_of("SyncAns") == "sync"


def test_phase_shares_count_each_cycle_once_and_sync_is_waiting(trace: pathlib.Path, profile: pathlib.Path) -> None:
    report = read_pva(profile, pva_module=FakePva(_trace_tree(trace)))
    phases = analysis.execution_by_phase(report).set_index("phase")
    # the same shares worked out cycle by cycle: a boolean timeline per phase; a cycle where
    # several phases run counts under the first in DEVICE_PHASES order, sync takes what is left
    ex = report.execution
    covered = {}
    for phase, rows in ex.groupby(ex["phase"].astype(str)):
        line = np.zeros(SPAN, dtype=bool)
        for a, b in zip(rows["cycles_from"].astype(int), rows["cycles_to"].astype(int)):
            line[a:b] = True
        covered[phase] = line
    taken = np.zeros(SPAN, dtype=bool)
    for phase in (p for p in DEVICE_PHASES if p in covered and p != "sync"):
        assert phases.loc[phase, "cycles"] == (covered[phase] & ~taken).sum(), phase
        taken |= covered[phase]
    assert phases.loc["sync", "cycles"] == (~taken).sum()  # waiting: a sync, or no block at all
    # Graph Analyser's cache of this profile: compute 584,030, exchange 6,782 (of 12,654 with the
    # cycles compute covers), host I/O 1,918,376 (of 2,036,462), collective 12,528 (of 12,670),
    # sync 19,034 (18,086 waiting in syncs + 948 cycles no block covers)
    assert phases["cycles"].to_dict() == {"compute": 584_030, "exchange": 6_782, "sync": 19_034,
                                          "host_io": 1_918_376, "collective": 12_528}
    assert phases["cycles"].sum() == SPAN
    assert phases["pct"].sum() == pytest.approx(100.0)


def test_union_length_counts_overlaps_once() -> None:
    union = analysis._union_length
    assert union(np.array([0.0, 5, 20]), np.array([10.0, 15, 25])) == 20.0  # [0,15) + [20,25)
    assert union(np.array([0.0, 2]), np.array([10.0, 3])) == 10.0  # nested
    assert union(np.array([]), np.array([])) == 0.0


def test_show_prints_the_span_as_the_run_time(trace: pathlib.Path, profile: pathlib.Path,
                                              monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from profcompare.cli import main

    monkeypatch.setitem(sys.modules, "pva", FakePva(_trace_tree(trace)))
    assert main(["show", str(profile), "--format", "json"]) == 0
    import json

    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["cycles_per_step"] == {"value": SPAN, "unit": "cycles", "confidence": "measured"}
    assert main(["show", str(profile)]) == 0
    assert "2,540,750" in capsys.readouterr().out
