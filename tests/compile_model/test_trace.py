"""The simulated execution trace (Report.trace), worked out by hand from the program's steps."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from profcompare.analysis import trace as trace_analysis
from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower

from .test_multi_ipu import MK2, _copy_program, _pipelined


def _cycles_of(execution: pd.DataFrame) -> dict[str, int]:
    """Cycles of each program of run 0, its phase rows summed (each step runs once here; the first
    host transfer's Begin step also holds the run's opening, booked by phase)."""
    one = execution[(execution["run"] == 0) & (execution["phase"].astype(str) != "runtime")]
    return {str(k): int(v) for k, v in one.groupby("program", sort=False, observed=True)["cycles"].sum().items()}


def _host_begin_blocks(at: int, ipu: int, *, opening: bool) -> list[tuple[int, int, int, str, str]]:
    """(ipu, from, to, type, name) of a host transfer's Begin step from cycle ``at``, by hand:
    the run's two opening control copies (the second waits 464,832 cycles for the host) when
    ``opening``, the control copy (Begin 269, Mid 1,109 on IPU 0, End 140; on another IPU the End
    covers the Mid) and the data copy's Begin (7,903). After the opening copies the program
    Switch's control broadcast over the 2 IPUs: on IPU 0 the on-tile copy of its 4 bytes (4 / 8 +
    242, rounded up: 243) and an External Sync (131); on IPU 1 an External Sync covering both
    (374); then on each a GlobalExchange (4 B over the links, 0.17 cycles, + 117: 118), two
    Internal Syncs (94 each) and the DoExchange to every tile (exchange_cost.py: the latency 88 +
    the reach to every tile 39 + 4 / 4 = 128, the real trace's): 808 cycles.
    targets.py sources each constant."""
    out = []
    copies = [("run start/", 269), ("run start/", 464_832 + 269)] if opening else []
    switch = ([(243, "OnTileExecute", "GlobalPre/Copy/OnTileCopy"), (131, "ExternalSync", "External Sync")]
              if ipu == 0 else [(374, "ExternalSync", "External Sync")])
    switch += [(118, "GlobalExchange", "GlobalPre/GlobalExchange"), (94, "InternalSync", "Internal Sync"),
               (94, "InternalSync", "Internal Sync"), (128, "DoExchange", "ExchangePre")]
    for k, (prefix, begin) in enumerate(copies + [("host sync/", 269)]):
        if opening and k == 2:
            for cycles, kind, label in switch:
                out.append((ipu, at, at + cycles, kind, "switchControlBroadcast/" + label))
                at += cycles
        out.append((ipu, at, at + begin, "StreamCopyBegin", prefix + "Begin"))
        at += begin
        if ipu == 0:
            out += [(ipu, at, at + 1109, "StreamCopy", prefix + "Mid"), (ipu, at + 1109, at + 1249, "StreamCopyEnd", prefix + "End")]
        else:
            out.append((ipu, at, at + 1249, "StreamCopyEnd", prefix + "End"))
        at += 1249
    out.append((ipu, at, at + 7903, "StreamCopyBegin", "Begin"))
    return out


def test_a_two_ipu_program_gives_one_block_per_step_and_ipu():
    # IPU 0: y = a * 2 (OnTileExecute, its Internal Sync), then the copy to IPU 1 (its on-chip
    # move to the sending tiles on IPU 0, External Sync and GlobalExchange on both ends, its move
    # from the receiving tiles on IPU 1); IPU 1: host_store. A host stream copy synchronises every
    # IPU: its Begin and End are blocks on both IPUs, the Mid on IPU 1 (the data's); the Begin step
    # is drawn as the run's opening control copies, the store's control copy and the data copy's
    # Begin (_host_begin_blocks). The WeightsFromHost steps run before the main program.
    report = compile_program(lower(_copy_program()), MK2).with_execution(2)
    assert {"trace", "execution"} <= report.meta.capabilities
    cyc = _cycles_of(report.execution)
    mul, isync = cyc["mul"], cyc["mul/Internal Sync"]
    xsync, copy = cyc["ipucopy/External Sync"], cyc["ipucopy/IpuCopy"]
    pre, post = cyc["ipucopy/ExchangePre"], cyc["ipucopy/ExchangePost"]
    # the worst tile of a*2 and of its copy (4,096 B over 32 tiles of 128 B) at 4 B per cycle, after
    # the latency 88 and the reach over 32 of the 1,472 tiles (39 x 31 / 1,471 = 0.82; exchange_cost.py)
    assert pre == post == math.ceil(88 + 39 * 31 / 1471 + 128 // 4) == 121
    begin, mid, end = cyc["host_store/Begin"], cyc["host_store/Mid"], cyc["host_store/End"]
    # the Begin step: 2 opening copies (269 + 1,109 + 140 each) + the host's wait 464,832, the
    # Switch's control broadcast 808 (_host_begin_blocks), the store's control copy 1,518 and the
    # data copy's Begin 7,903
    assert begin == 2 * 1518 + 464_832 + 808 + 1518 + 7903 == 478_097
    # Mid: the fixed 1,109 + 4,096 B at 5.5 GB/s x 1.33 GHz (990.5 cycles), rounded up once
    assert mid == 2100 and end == 9870
    a, b = mul, mul + isync
    c = b + pre + xsync
    d, e = c + copy, c + copy + post
    rows = [(0, 0, a, "OnTileExecute", "mul"), (0, a, b, "InternalSync", "Internal Sync"),
            (0, b, b + pre, "DoExchange", "ExchangePre"),
            (0, b + pre, c, "ExternalSync", "External Sync"), (0, c, d, "GlobalExchange", "IpuCopy")]
    rows += _host_begin_blocks(e, 0, opening=True)
    rows.append((0, e + begin, e + begin + mid + end, "StreamCopyEnd", "End"))  # no data on IPU 0
    rows += [(1, b + pre, c, "ExternalSync", "External Sync"), (1, c, d, "GlobalExchange", "IpuCopy"),
             (1, d, e, "DoExchange", "ExchangePost")]
    rows += _host_begin_blocks(e, 1, opening=True)
    rows += [(1, e + begin, e + begin + mid, "StreamCopy", "Mid"),
             (1, e + begin + mid, e + begin + mid + end, "StreamCopyEnd", "End")]
    parents = ["mul", "mul"] + ["ipucopy"] * 3 + ["host_store"] * 17 + ["ipucopy"] * 3 + ["host_store"] * 14
    expected = pd.DataFrame({
        "ipu": [r[0] for r in rows], "cycles_from": [r[1] for r in rows], "cycles_to": [r[2] for r in rows],
        "type": [r[3] for r in rows], "name": [r[4] for r in rows], "parent": parents, "depth": [1] * len(rows),
    })
    # both profiled runs are in the trace: run 1 is run 0's blocks moved to its start
    assert trace_analysis.trace_runs(report.trace) == (0, 1)
    runs = report.trace["run"].to_numpy()
    run0 = report.trace[runs == 0].reset_index(drop=True)
    run1 = report.trace[runs == 1].reset_index(drop=True)
    got = run0[["ipu", "cycles_from", "cycles_to", "type", "name", "parent", "depth"]].copy()
    got["type"] = got["type"].astype(str)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    run1_start = int(report.execution.loc[report.execution["run"] == 1, "cycles_from"].min())
    assert (run1["cycles_from"] - run0["cycles_from"]).unique().tolist() == [run1_start]
    assert run1["name"].tolist() == run0["name"].tolist()
    assert report.trace["program"].tolist()[:2] == ["mul", "mul/Internal Sync"]
    # the views draw the first steady-state run: run 1 of two
    choice = trace_analysis.choose_run(report.trace)
    assert (choice.run, choice.runs) == (1, (0, 1))
    assert choice.sentence() == "Run 1 of runs 0–1 (the first steady-state run; --run N picks another)."
    report = report.with_trace_subset(run0)
    # block counts per type and spans per IPU
    counts = trace_analysis.type_totals(report.trace).set_index(["ipu", "type"])["blocks"].to_dict()
    assert counts == {(0, "OnTileExecute"): 2, (0, "InternalSync"): 3, (0, "DoExchange"): 2, (0, "ExternalSync"): 2,
                      (0, "GlobalExchange"): 2, (0, "StreamCopyBegin"): 4, (0, "StreamCopy"): 3,
                      (0, "StreamCopyEnd"): 4, (1, "ExternalSync"): 2, (1, "GlobalExchange"): 2, (1, "DoExchange"): 2,
                      (1, "InternalSync"): 2, (1, "StreamCopyBegin"): 4, (1, "StreamCopy"): 1,
                      (1, "StreamCopyEnd"): 4}
    spans = trace_analysis.trace_spans(report.trace).set_index("ipu")["span_cycles"].to_dict()
    assert spans == {0: e + begin + mid + end, 1: e + begin + mid + end - (b + pre)}
    # the device part of the run is the trace's span (the host/runtime row is not a block)
    assert trace_analysis.run_span(report.trace) == report.summary()["cycles_per_step"]


def test_a_graph_profile_has_no_trace():
    compiled = compile_program(lower(_copy_program()), MK2)
    assert compiled.report.trace.empty and "trace" not in compiled.report.meta.capabilities


def test_a_pipeline_stage_run_again_is_a_new_block():
    steps = 4
    compiled = compile_program(lower(_pipelined(steps)), MK2)
    report = compiled.with_execution(1)
    trace = report.trace
    # stage 0 loads from the host on IPU 0 in each of the 4 pipeline cycles it runs in; stage 1
    # stores to the host on IPU 1 in its 4: one StreamCopy (Mid) block per load or store on the
    # data's IPU, and on IPU 0 the Mid of each transfer's control copy (8) and of the run's two
    # opening control copies
    mids = trace[trace["type"].astype(str) == "StreamCopy"]
    assert mids.groupby("ipu").size().to_dict() == {0: steps + 2 * steps + 2, 1: steps}
    begins = trace[trace["type"].astype(str) == "StreamCopyBegin"]
    assert begins.groupby("ipu").size().to_dict() == {0: 2 * (2 * steps) + 2, 1: 2 * (2 * steps) + 2}
    # the sim's blocks of one IPU never overlap (no SyncAns modelled: an IPU that waits for the
    # others does so inside the synchronising step's block)
    for _ipu, lane in trace.groupby("ipu"):
        starts, ends = lane["cycles_from"].to_numpy(), lane["cycles_to"].to_numpy()
        assert (starts[1:] >= ends[:-1]).all()
        assert int((lane["cycles_to"] - lane["cycles_from"]).sum()) <= compiled.cycles_per_step
    assert int(trace["cycles_to"].max() - trace["cycles_from"].min()) == compiled.cycles_per_step
    assert np.isin(trace["type"].astype(str).unique(), ["SyncAns"]).sum() == 0


def test_a_begin_step_shorter_than_its_modelled_parts_is_drawn_whole():
    from profcompare.emulator.compile.trace import HostCopyShape, _host_begin_parts

    shape = HostCopyShape.of(MK2)
    # the control copy: Begin 269 + Mid 1,109 + End 140; then the data copy's Begin 7,903
    assert shape.sync == 1518 and shape.data_begin == 7903
    assert _host_begin_parts(0, 1518 + 7903 - 1, 0, shape, 0) is None
    assert _host_begin_parts(0, 1518 + 7903 - 1, 1, shape, 0) is None
    # exactly long enough: the parts tile [0, 9,421) end to end, the first starting at 0
    parts = _host_begin_parts(0, 1518 + 7903, 0, shape, 0)
    assert [(a, b, kind) for a, b, kind, _ in parts] == [
        (0, 269, "StreamCopyBegin"), (269, 1378, "StreamCopy"), (1378, 1518, "StreamCopyEnd"),
        (1518, 9421, "StreamCopyBegin")]


def test_a_step_s_label_is_its_name_under_its_parent():
    from profcompare.emulator.compile.trace import _label

    assert _label("fwd/mm", "fwd") == "mm"
    assert _label("fwd/", "fwd") == "fwd/"  # nothing under the parent: the whole name
    assert _label("fwdmm", "fwd") == "fwdmm" and _label("fwd/mm", "") == "fwd/mm"
