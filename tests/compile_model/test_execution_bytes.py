"""The bytes the simulator's execution steps move (``execution.bytes_moved``), worked by hand."""

from __future__ import annotations

import pandas as pd

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.synthetic import ProgramBuilder


def _moved(program, runs: int = 2) -> dict[str, list[object]]:
    """Per program name: the bytes moved of its rows in run order (None where unrecorded)."""
    execution = compile_program(program).with_execution(runs).execution
    out: dict[str, list[object]] = {}
    for name, value in zip(execution["program"], execution["bytes_moved"]):
        out.setdefault(str(name), []).append(None if pd.isna(value) else int(value))
    return out


def test_a_remote_load_of_a_512_by_512_fp32_state_moves_its_bytes_per_run() -> None:
    b = ProgramBuilder()
    bid = b.remote_buffer("state", (512, 512), "float32")
    b.op("RemoteLoad", [], [("state_loaded", (512, 512), "float32")], attrs={"remote_buffer": bid}, name="load")
    moved = _moved(b.build())
    # 512 x 512 elements x 4 bytes = 1,048,576 bytes, on the RemoteLoad step of each run
    assert moved["load"] == [1_048_576, 1_048_576]
    assert moved["load/Begin"] == [None, None] and all(v is None for v in moved["load/End"])


def test_a_host_load_moves_its_tensor_on_the_stream_copy_mid_only() -> None:
    b = ProgramBuilder(replicas=4)
    b.op("HostLoad", [], [("x", (250_000,), "float32")], attrs={"stream": "x"}, name="load_x")
    moved = _moved(b.build(), runs=1)
    # per replica: 250,000 x 4 bytes, whatever the replicas sharing the link
    assert moved["load_x/Mid"] == [1_000_000]
    # the Begin step's rows (its host_io, and the run's opening Switch broadcast's sync and
    # exchange rows, all on the run's first transfer) move none of it
    assert all(v is None for v in moved["load_x/Begin"]) and moved["load_x/End"] == [None]


def test_an_all_reduce_ring_step_moves_each_ipus_share_in_and_out() -> None:
    b = ProgramBuilder(replicas=4)
    g = b.variable("g", (1_000_000,), kind="accumulator")
    b.op("ReplicatedAllReduceInplace", [g], [("g_red", (1_000_000,), "float32")], modified=[g],
         attrs={"op": "mean"}, name="c")
    moved = _moved(b.build(), runs=1)
    exchanges = {k: v for k, v in moved.items() if k.endswith("/GlobalExchange")}
    # 4 replicas: 2 x 3 ring steps; each IPU sends 2 x 3 x 4,000,000 / 4 = 6,000,000 bytes over
    # the links, 1,000,000 a step, and receives as much: 2,000,000 a step, 12,000,000 in all
    assert len(exchanges) == 6 and all(v == [2_000_000] for v in exchanges.values())
    assert all(x is None for k, v in moved.items() if not k.endswith("/GlobalExchange") for x in v)
