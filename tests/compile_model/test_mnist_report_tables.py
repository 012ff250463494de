"""The variables / code tables of the MNIST programs read the way a PopVision user expects:
unique meaningful names, right kinds, no code for WriteUndef placeholders."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.targets import MK2
from workloads import mnist
from workloads._mnist_program import build_program

SMALL = {"replicas": 4, "grad_accum": 2, "micro_batch": 4, "hidden": 64, "layers": 1, "sharded_threshold": 64}


def _report(variant: str):
    config = {k.name: k.default for k in mnist.KNOBS}
    config.update(SMALL)
    return compile_program(lower(build_program(variant, config).ir, "ipu_hw")).report


@pytest.fixture(scope="module")
def reports():
    return {v: _report(v) for v in ("onchip", "onchip-sharded", "offchip", "offchip-sharded")}


@pytest.mark.parametrize("variant", ["onchip", "onchip-sharded", "offchip", "offchip-sharded"])
def test_variable_names_are_unique_and_temporaries_carry_their_graph(reports, variant):
    v = reports[variant].variables
    assert not v["name"].duplicated().any()
    # a tensor of a graph called several times has one row per call: name@1, name@2, ...
    stems = v["name"].str.replace(r"@\d+$", "", regex=True)
    temps = v[stems.str.endswith(("/operand_copies", "/partials"))]
    assert len(temps) and temps["name"].str.startswith("Net_subgraph(0)").all()
    assert temps["name"].str.contains("_bwd/").any()
    assert set(temps["role"].astype(str)) == {"partials"}


@pytest.mark.parametrize("variant", ["offchip", "offchip-sharded", "onchip-sharded"])
def test_replica_reduce_outputs_are_gradients(reports, variant):
    v = reports[variant].variables.set_index("name")
    reduced = v[v.index.str.contains(r"_(?:all_reduce|reduce_scattered)$")]
    assert len(reduced) == 2 * 4  # in the reduce graph and at its call site, for 4 parameters
    assert set(reduced["kind"].astype(str)) == {"gradient"}
    # bytes = shape x 4 (fp32) of the reduced gradient: the shard [n / 4] where the variant shards
    # (threshold 64 elements: fc1.weight, fc1.bias, fc2.weight), the whole tensor otherwise
    sharded = variant.endswith("sharded")
    expected = ({"fc1.weight": 12544 * 4, "fc1.bias": 16 * 4, "fc2.weight": 160 * 4, "fc2.bias": 10 * 4} if sharded
                else {"fc1.weight": 784 * 64 * 4, "fc1.bias": 64 * 4, "fc2.weight": 64 * 10 * 4, "fc2.bias": 10 * 4})
    for param, nbytes in expected.items():
        rows = reduced[reduced.index.str.contains(param + "_", regex=False)]
        assert rows["bytes"].tolist() == [nbytes, nbytes], param
    assert int(reduced["bytes"].sum()) == (101_840 if sharded else 407_120)
    # the reduce graph is called once: its inputs alias the accumulators (zero-copy), so they have
    # no rows of their own and the call copies nothing in; its 4 outputs are copied out
    assert not v.index.str.match(r"replica_reduce_subgraph\(\d+\)/fc\d\.(weight|bias)$").any()
    accum = v[v.index.str.match(r"accum\.fc\d\.(weight|bias)$")]
    assert len(accum) == 4 and set(accum["kind"].astype(str)) == {"accumulator"}
    assert not accum["always_live"].any()
    programs = reports[variant].liveness["program"].astype(str)
    reduce_call = programs[programs.str.startswith("--call--replica_reduce_subgraph(")]
    assert not reduce_call.str.contains("/copy_in/").any()
    assert reduce_call.str.contains("/copy_out/").sum() == 4


def test_sharded_weight_slices_and_gathers_are_weights(reports):
    v = reports["offchip-sharded"].variables.set_index("name")
    sliced = v[v.index.str.endswith(("_sharded_slice", "_all_gathered"))]
    assert len(sliced) and set(sliced["kind"].astype(str)) == {"weight"}
    assert sliced["bytes"].to_dict() == {
        "fc1.bias_sharded_slice": 16 * 4, "fc1.weight_sharded_slice": 12544 * 4, "fc2.weight_sharded_slice": 160 * 4,
        "fc1.bias_sharded_slice_all_gathered": 64 * 4, "fc1.weight_sharded_slice_all_gathered": 784 * 64 * 4,
        "fc2.weight_sharded_slice_all_gathered": 64 * 10 * 4}
    # one Adam graph per parameter, each called once: var and grad alias the caller's shard
    # (zero-copy), no rows and no copy-in; the graph's only temporary is its fp16 Updater on the shard
    assert not v.index.str.match(r"Adam_subgraph\(\d+\)/(var|grad)$").any()
    programs = reports["offchip-sharded"].liveness["program"].astype(str)
    assert not programs[programs.str.startswith("--call--Adam_subgraph(")].str.contains("/copy_in/").any()
    updater = v[v.index.str.match(r"Adam_subgraph\(\d+\)/Updater$")]
    assert sorted(updater["bytes"].tolist()) == [10 * 2, 16 * 2, 160 * 2, 12544 * 2]
    assert set(updater["dtype"].astype(str)) == {"float16"} and not updater["always_live"].any()


@pytest.mark.parametrize("variant", ["offchip", "offchip-sharded"])
def test_loaded_state_is_remote_staging_and_not_always_live(reports, variant):
    v = reports[variant].variables
    loaded = v[v["name"].str.contains("_remote_load")]
    assert len(loaded) == 2 * 4 * 3  # placeholder in each load graph + output at the call site
    assert set(loaded["kind"].astype(str)) == {"remote_staging"}
    assert not loaded["always_live"].any()


@pytest.mark.parametrize("variant,total", [("onchip", 305_356), ("onchip-sharded", 76_396)])
def test_onchip_adam_state_is_optimizer_state_written_from_host(reports, variant, total):
    # v2: popxl variables are written by WeightsFromHost and not always live: each state row is
    # live from its StreamCopyMid to the last step of the run
    report = reports[variant]
    v = report.variables
    state = v[v["name"].str.match(r"adam\.fc\d\.(weight|bias)\.(first_order|second_order|step)(_rts)?$")]
    assert len(state) == 4 * 3
    assert set(state["kind"].astype(str)) == {"optimizer_state"} and not state["always_live"].any()
    lv = report.liveness
    program_at = lv.set_index("step")["program"].astype(str)
    for name, first in zip(state["name"], state["first_step"]):
        assert program_at[int(first)] == f"WeightsFromHost/{name}/Mid"
    assert (state["last_step"] == len(lv) - 1).all()
    # bytes = elements x dtype: fp16 first moment, fp32 second moment, fp32 step, per parameter
    # ([784, 64], [64], [64, 10], [10]; sharded over 4: [12544], [16], [160], [10] kept whole)
    elements = [50176, 64, 640, 10] if variant == "onchip" else [12544, 16, 160, 10]
    assert int(state["bytes"].sum()) == sum(n * (2 + 4) + 4 for n in elements) == total
    assert not v[v["kind"].astype(str) == "optimizer_state"]["always_live"].any()


def _load_program():
    ir = popxl.Ir()
    with ir.main_graph:
        s = popxl.h2d_stream((64, 64), popxl.float32, "x")
        out = popxl.d2h_stream((64, 64), popxl.float32, "y")
        w = popxl.variable(np.ones((64, 64), np.float32), name="w")
        with popxl.in_sequence(True):
            x = ops.host_load(s, "x")
            ops.host_store(out, x + w)
    return lower(ir)


def test_load_placeholder_is_write_undef_without_code_or_cycles():
    compiled = compile_program(_load_program())
    report = compiled.report
    lv = report.liveness
    undef = lv[lv["program_type"].astype(str) == "WriteUndef"]
    assert len(undef) == 1
    # the placeholder is live from the StreamCopy that writes it, not from the WriteUndef: at the
    # WriteUndef only w (64 x 64 fp32, written by WeightsFromHost before the run) is live
    assert int(undef["step"].iloc[0]) == 3  # after WeightsFromHost/w Begin, Mid, End
    assert int(undef["not_always_live_bytes"].iloc[0]) == 64 * 64 * 4
    assert int(lv["not_always_live_bytes"].iloc[int(undef["step"].iloc[0]) + 1]) == 2 * 64 * 64 * 4
    row = report.variables.set_index("name").loc["x_init"]
    assert row["first_step"] == int(undef["step"].iloc[0]) + 1 and row["kind"] == "activation"
    assert not (report.code["type"].astype(str) == "WriteUndef").any()
    execution = compiled.execution_frame(1)
    assert len(execution) and not (execution["type"].astype(str) == "WriteUndef").any()
    assert int(execution.loc[execution["type"].astype(str) != "Host", "cycles"].sum()) == compiled.cycles_per_step
    # every tile's per-step control code counts the eleven steps that have code, not the WriteUndef:
    # WeightsFromHost/w (3), host load (Begin, Mid, End), add (OnTileExecute, Sync), host store (3)
    seq = report.code[report.code["type"].astype(str) == "Sequence"]["code_bytes"].sum()
    tiles = report.meta.target.tiles_per_replica
    assert seq == tiles * (MK2.control_code_base_bytes + 11 * MK2.control_code_bytes_per_step)
