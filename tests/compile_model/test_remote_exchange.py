"""Merged remote exchanges (compile/remote_exchange.py), worked by hand: the transfers of one
``merge_exchange()`` block share one Begin (one fixed cost) and one End, and keep their bytes."""

from __future__ import annotations

import math

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.calibration import remote_exchanges_per_run
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.emulator.targets import MK2

#: a fixed cost of 10 us: 13,300 cycles at Mk2's 1.33 GHz (rounded up as the model rounds)
DEVICE = MK2.replace(remote_transfer_seconds=1e-5)
FIXED = math.ceil(1e-5 * 1.33e9)
#: one 1,024-element fp32 state: 4,096 B over the 15.75 GB/s gateway at 1.33 GHz, one replica
MID = math.ceil(4096 / 15.75e9 * 1.33e9)


def _three_loads(group: int | None, buffers: int = 3):
    b = ProgramBuilder()
    ids = [b.remote_buffer(f"s{i}", (1024,), "float32") for i in range(buffers)]
    for i in range(3):
        attrs = {"remote_buffer": ids[i % buffers]}
        if group is not None:
            attrs["merge_exchange"] = group
        b.op("RemoteLoad", [], [(f"s{i}_loaded", (1024,), "float32")], attrs=attrs, name=f"load{i}")
    return b.build()


def _run(program):
    ex = compile_program(program, DEVICE).with_execution(1).execution
    return ex[(ex["run"] == ex["run"].min()) & (ex["type"].astype(str) != "Host")]


def _phase(rows, phase: str) -> int:
    return int(rows.loc[rows["phase"].astype(str) == phase, "cycles"].sum())


def test_three_transfers_in_one_merge_group_pay_one_fixed_cost_and_all_their_bytes() -> None:
    assert MID == 346 and FIXED in (13_300, 13_301)
    merged, separate = _run(_three_loads(1)), _run(_three_loads(None))
    # merged: one Begin (13,300), three data steps (346 each), one End (external sync, 131)
    assert _phase(merged, "streaming_memory") == FIXED + 3 * MID
    assert _phase(merged, "sync") == MK2.global_sync_cycles == 131
    # separate: three of each
    assert _phase(separate, "streaming_memory") == 3 * FIXED + 3 * MID
    assert _phase(separate, "sync") == 3 * 131
    types = merged["type"].astype(str).tolist()
    assert types == ["StreamCopyBegin", "RemoteLoad", "RemoteLoad", "RemoteLoad", "StreamCopyEnd"]
    assert merged["bytes_moved"].dropna().tolist() == [4096, 4096, 4096]
    assert remote_exchanges_per_run(_three_loads(1)) == 1
    assert remote_exchanges_per_run(_three_loads(None)) == 3


def test_a_second_use_of_one_buffer_starts_a_new_segment() -> None:
    # buffers s0, s1, s0: the third load needs s0's landing pad again (MultiExchangeOpx::getSegments)
    rows = _run(_three_loads(1, buffers=2))
    assert rows["type"].astype(str).tolist() == ["StreamCopyBegin", "RemoteLoad", "RemoteLoad", "StreamCopyEnd",
                                                 "StreamCopyBegin", "RemoteLoad", "StreamCopyEnd"]
    assert _phase(rows, "streaming_memory") == 2 * FIXED + 3 * MID
    assert remote_exchanges_per_run(_three_loads(1, buffers=2)) == 2


def test_a_store_of_a_loaded_tensor_is_not_merged_with_its_load() -> None:
    b = ProgramBuilder()
    s = b.remote_buffer("s", (1024,), "float32")
    t = b.remote_buffer("t", (1024,), "float32")
    loaded = b.op("RemoteLoad", [], [("s_loaded", (1024,), "float32")],
                  attrs={"remote_buffer": s, "merge_exchange": 1}, name="load")
    b.op("RemoteStore", [loaded[0]], [], attrs={"remote_buffer": t, "merge_exchange": 1}, name="store")
    program = b.build()
    rows = _run(program)
    # the store reads what the load produced: two exchanges (PopART's data-dependency rule)
    assert (rows["type"].astype(str) == "StreamCopyBegin").sum() == 2
    assert remote_exchanges_per_run(program) == 2


def test_popxl_addons_remote_graphs_merge_their_transfers() -> None:
    import numpy as np

    from profcompare.emulator import popxl
    from profcompare.emulator.lowering import lower
    from profcompare.emulator.popxl import ops
    from profcompare.emulator.popxl_addons.named_tensors import NamedTensors
    from profcompare.emulator.popxl_addons.remote import NamedRemoteBuffers, load_remote_graph, store_remote_graph

    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        buffers = NamedRemoteBuffers.from_dict({n: popxl.remote_buffer((64,), popxl.float32, 1) for n in "abc"})
        load, names = load_remote_graph(buffers)
        store = store_remote_graph(buffers)
        loaded = NamedTensors.pack(names, load.call(0))
        doubled = NamedTensors.from_dict({k: ops.mul(v, popxl.constant(np.float32(2.0)))
                                          for k, v in loaded.to_dict().items()})
        store.bind(doubled).call(0)
    # as popxl-addons makes them: the load graph's three loads are one exchange, the store
    # graph's three stores another
    assert remote_exchanges_per_run(lower(ir)) == 2
