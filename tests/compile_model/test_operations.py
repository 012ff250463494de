"""The simulated operations table (Report.operations): one op counted by hand from the code and
cycle rules (code.py, cycles.py), and the columns reconciling with the report's totals."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.operations import totals
from profcompare.emulator.compile.synthetic import ProgramBuilder
from profcompare.emulator.lowering import lower
from profcompare.emulator.targets import MK2
from profcompare.model import CATEGORY_GROUPS, operations_from_rows
from workloads import mnist
from workloads._mnist_program import build_program

TINY = MK2.replace(tiles_per_ipu=4)


def _gelu_program():
    """x = host_load; y = gelu(x) (8 x 64 float32: 512 B on each of the 4 tiles); host_store(y)."""
    b = ProgramBuilder()
    (x,) = b.op("HostLoad", [], [("x", (8, 64), "float32")], attrs={"stream": "x"}, name="load_x")
    (y,) = b.op("Gelu", [x], [("y", (8, 64), "float32")], flops=8 * 64 * 6, name="gelu")
    b.op("HostStore", [y], attrs={"stream": "y"}, name="store_y")
    return b.build()


def test_one_op_counted_by_hand():
    cp = compile_program(_gelu_program(), TINY)
    assert (TINY.control_code_bytes_per_participating_step, TINY.vertex_state_bytes,
            TINY.host_exchange_code_bytes, TINY.worker_contexts) == (24, 16, 96, 6)
    # gelu: one OnTileExecute on the 4 tiles: 24 B of control code each = 96 B; 512 B per tile
    # gives min(512 / 8, 6) = 6 vertices of 16 B on each tile = 384 B; its Sync adds no code.
    # Cycles: the compute set 626 (242 launch + the worst tile's elementwise work) + the internal
    # sync 94 = 720. A host load or store: Begin, Mid and End, 24 B of control code on each of
    # the 4 tiles = 96 B per step, 288 B, plus the Mid's 96 B of host exchange code per tile = 384 B.
    expected = operations_from_rows([
        # no op of this program moves a parameter's data: each is an "activation" op
        ("load_x", "load_x", "HostLoad", "", 0, 288 + 384, 0, 384, 9421 + 1605 + 9870, 0, 4, "", "", "activation"),
        ("gelu", "gelu", "Gelu", "", 0, 96, 384, 0, 626 + 94, 3072, 4, "", "", "activation"),
        ("store_y", "store_y", "HostStore", "", 0, 288 + 384, 0, 384, 9421 + 1605 + 9870, 0, 4, "", "",
         "activation"),
        # the base control code (1,856 B: base + one branch per step on every tile) and the
        # nonlinearity codelet (1,280 B) are no op's; nor the run's opening copies and wait
        ("(not attributed to an op)", "", "", "", None, 1856 + 1280, 0, 0, cp.opening[1], None, None, ""),
    ])
    pd.testing.assert_frame_equal(cp.report.operations, expected)
    # the opening copies and the host's wait 467,868, the Switch's control broadcast on TINY's one
    # IPU: an internal sync and the 4 bytes' exchange to every tile (targets' internal_sync_cycles;
    # exchange_cost.py: exchange_latency_cycles + exchange_reach_cycles + 4 B at exchange_bytes_per_cycle)
    assert cp.opening[1] == 467868 + TINY.internal_sync_cycles + math.ceil(
        TINY.exchange_latency_cycles + TINY.exchange_reach_cycles + 4 / TINY.exchange_bytes_per_cycle)
    assert cp.opening[1] == 467868 + 94 + 128
    assert "operations" in cp.report.meta.capabilities


def _category_sum(report, names) -> int:
    categories = report.categories.set_index("category")["bytes"]
    return int(sum(int(categories.get(name, 0)) for name in names))


@pytest.mark.parametrize("variant", ["onchip", "offchip-sharded"])
def test_the_mnist_operations_reconcile_with_the_report(variant):
    config = {k.name: k.default for k in mnist.KNOBS}
    config.update({"replicas": 4, "grad_accum": 2, "micro_batch": 4, "hidden": 64, "layers": 1,
                   "sharded_threshold": 64})
    cp = compile_program(lower(build_program(variant, config).ir, "ipu_hw"))
    report = cp.with_execution(2)
    ops = report.operations
    sums = totals(ops)
    summary = report.summary()
    assert sums["code_bytes"] == summary["code_bytes"] == _category_sum(
        report, [c for c, g in CATEGORY_GROUPS.items() if g == "code"])
    assert sums["vertex_state_bytes"] == _category_sum(report, ["vertexInstanceState", "copyDescriptor"])
    assert sums["exchange_code_bytes"] == _category_sum(
        report, ["internalExchangeCode", "hostExchangeCode", "globalExchangeCode"])
    assert sums["cycles"] == summary["cycles_per_step"] == cp.cycles_per_step
    # one row per op that has steps, each name distinct, the remainder last
    assert not ops["name"].duplicated().any()
    assert ops["name"].iloc[-1] == "(not attributed to an op)"
    assert ops["cycles"].iloc[-1] == cp.opening[1]
    matmul = ops.set_index("name").loc["Net_subgraph(0)/fc1/matmul"]
    # 4 x 784 @ 784 x 64 per micro-batch, run twice (gradient accumulation 2)
    assert (matmul["type"], int(matmul["flops"])) == ("MatMul", 2 * 2 * 4 * 784 * 64)
    # the forward matmul reads fc1's weight: its code and cycles are fc1.weight's, as weight
    assert (matmul["parameter"], matmul["role"]) == ("fc1.weight", "weight")


def test_the_offchip_sharded_ops_serve_their_parameter_by_the_rule():
    """op_attribution.py on MNIST offchip-sharded: the type of each op and the (parameter, role)
    it serves -- the Adam state's remote transfers and moment updates are optimizer_state, the
    update of the weight itself weight, the gradient's reduce-scatter gradient, the gather of the
    sharded weight weight, the gradient accumulation accumulator."""
    config = {k.name: k.default for k in mnist.KNOBS}
    config.update({"replicas": 4, "grad_accum": 2, "micro_batch": 4, "hidden": 64, "layers": 1,
                   "sharded_threshold": 64})
    ops = compile_program(lower(build_program("offchip-sharded", config).ir, "ipu_hw")).report.operations
    fc1 = ops[ops["parameter"] == "fc1.weight"]
    served = {(str(t), r) for t, r in zip(fc1["type"], fc1["role"])}
    assert {("RemoteLoad", "optimizer_state"), ("RemoteStore", "optimizer_state"),
            ("AccumulateMovingAverage", "optimizer_state"), ("AdamUpdater", "optimizer_state"),
            ("ScaledAddLhsInplace", "weight"), ("MatMul", "weight"), ("MatMul", "gradient"),
            ("ReplicatedAllGather", "weight"), ("AccumulateMean", "accumulator")} <= served, served
    assert any(t.startswith("ReplicatedReduceScatter") and r == "gradient" for t, r in served), served
    assert set(ops["role"]) <= {"weight", "gradient", "accumulator", "optimizer_state", "other", "activation",
                                "shared", ""}
    # an op of no parameter's data: the loss
    loss = ops[ops["type"].astype(str).str.contains("Nll")]
    assert len(loss) and set(loss["role"]) == {"activation"} and set(loss["parameter"]) == {""}
