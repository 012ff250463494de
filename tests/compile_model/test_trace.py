"""The simulated execution trace (Report.trace), worked out by hand from the program's steps."""

from __future__ import annotations

import numpy as np
import pandas as pd
from profcompare import trace_analysis
from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower

from .test_multi_ipu import MK2, _copy_program, _pipelined


def _cycles_of(execution: pd.DataFrame) -> dict[str, int]:
    """Cycles of each program of run 0 (the model's steps each take one execution row here)."""
    one = execution[(execution["run"] == 0) & (execution["phase"].astype(str) != "runtime")]
    return dict(zip(one["program"], one["cycles"].astype(int), strict=True))


def test_a_two_ipu_program_gives_one_block_per_step_and_ipu():
    # IPU 0: y = a * 2 (OnTileExecute, its Internal Sync), then the copy to IPU 1 (External Sync
    # and GlobalExchange on both ends); IPU 1: host_store (StreamCopy Begin, Mid, End). The
    # WeightsFromHost steps run before the main program and are not part of a run.
    report = compile_program(lower(_copy_program()), MK2).with_execution(2)
    assert {"trace", "execution"} <= report.meta.capabilities
    cyc = _cycles_of(report.execution)
    mul, isync = cyc["mul"], cyc["mul/Internal Sync"]
    xsync, copy = cyc["ipucopy/External Sync"], cyc["ipucopy/IpuCopy"]
    begin, mid, end = cyc["host_store/Begin"], cyc["host_store/Mid"], cyc["host_store/End"]
    a, b, c, d = mul, mul + isync, mul + isync + xsync, mul + isync + xsync + copy
    expected = pd.DataFrame({
        "ipu": [0, 0, 0, 0, 1, 1, 1, 1, 1],
        "cycles_from": [0, a, b, c, b, c, d, d + begin, d + begin + mid],
        "cycles_to": [a, b, c, d, c, d, d + begin, d + begin + mid, d + begin + mid + end],
        "type": ["OnTileExecute", "InternalSync", "ExternalSync", "GlobalExchange",
                 "ExternalSync", "GlobalExchange", "StreamCopyBegin", "StreamCopy", "StreamCopyEnd"],
        "name": ["mul", "Internal Sync", "External Sync", "IpuCopy", "External Sync", "IpuCopy", "Begin", "Mid", "End"],
        "parent": ["mul", "mul", "ipucopy", "ipucopy", "ipucopy", "ipucopy", "host_store", "host_store", "host_store"],
        "depth": [1] * 9,
    })
    got = report.trace[["ipu", "cycles_from", "cycles_to", "type", "name", "parent", "depth"]].copy()
    got["type"] = got["type"].astype(str)
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    assert report.trace["program"].tolist()[:2] == ["mul", "mul/Internal Sync"]
    # block counts per type and spans per IPU
    counts = trace_analysis.type_totals(report.trace).set_index(["ipu", "type"])["blocks"].to_dict()
    assert counts == {(0, "OnTileExecute"): 1, (0, "InternalSync"): 1, (0, "ExternalSync"): 1,
                      (0, "GlobalExchange"): 1, (1, "ExternalSync"): 1, (1, "GlobalExchange"): 1,
                      (1, "StreamCopyBegin"): 1, (1, "StreamCopy"): 1, (1, "StreamCopyEnd"): 1}
    spans = trace_analysis.trace_spans(report.trace).set_index("ipu")["span_cycles"].to_dict()
    assert spans == {0: d, 1: d + begin + mid + end - b}
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
    # stores to the host on IPU 1 in its 4: one StreamCopy (Mid) block per load or store
    mids = trace[trace["type"].astype(str) == "StreamCopy"]
    assert mids.groupby("ipu").size().to_dict() == {0: steps, 1: steps}
    # the sim's blocks of one IPU never overlap (no SyncAns modelled), and they cover exactly the
    # cycles of the execution rows of the steps they run
    for _ipu, lane in trace.groupby("ipu"):
        starts, ends = lane["cycles_from"].to_numpy(), lane["cycles_to"].to_numpy()
        assert (starts[1:] >= ends[:-1]).all()
    ex = report.execution[report.execution["phase"].astype(str) != "runtime"]
    once = trace.drop_duplicates(["cycles_from", "cycles_to", "program"])
    assert int((once["cycles_to"] - once["cycles_from"]).sum()) == int(ex["cycles"].sum())
    assert int(trace["cycles_to"].max() - trace["cycles_from"].min()) == compiled.cycles_per_step
    assert np.isin(trace["type"].astype(str).unique(), ["SyncAns"]).sum() == 0
