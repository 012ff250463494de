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
    # the reduce graph's inputs are copies of the accumulators
    assert set(v.loc[v.index.str.match(r"replica_reduce_subgraph\(\d+\)/fc\d\.(weight|bias)$"), "kind"]) == {
        "accumulator"}


def test_sharded_weight_slices_and_gathers_are_weights(reports):
    v = reports["offchip-sharded"].variables.set_index("name")
    sliced = v[v.index.str.endswith(("_sharded_slice", "_all_gathered"))]
    assert len(sliced) and set(sliced["kind"].astype(str)) == {"weight"}
    adam_var = v[v.index.str.match(r"Adam_subgraph\(\d+\)/var$")]
    assert set(adam_var["kind"].astype(str)) == {"weight"}
    adam_grad = v[v.index.str.match(r"Adam_subgraph\(\d+\)/grad$")]
    assert set(adam_grad["kind"].astype(str)) == {"gradient"}


@pytest.mark.parametrize("variant", ["offchip", "offchip-sharded"])
def test_loaded_state_is_remote_staging_and_not_always_live(reports, variant):
    v = reports[variant].variables
    loaded = v[v["name"].str.contains("_remote_load")]
    assert len(loaded) == 2 * 4 * 3  # placeholder in each load graph + output at the call site
    assert set(loaded["kind"].astype(str)) == {"remote_staging"}
    assert not loaded["always_live"].any()


def test_onchip_adam_state_is_always_live_optimizer_state(reports):
    v = reports["onchip"].variables
    state = v[v["name"].str.match(r"adam\.fc\d\.(weight|bias)\.(first_order|second_order|step)$")]
    assert len(state) == 4 * 3
    assert set(state["kind"].astype(str)) == {"optimizer_state"} and state["always_live"].all()


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
    # the placeholder is live from the StreamCopy that writes it, not from the WriteUndef
    assert int(undef["not_always_live_bytes"].iloc[0]) == 0
    row = report.variables.set_index("name").loc["x_init"]
    assert row["first_step"] == int(undef["step"].iloc[0]) + 1 and row["kind"] == "activation"
    assert not (report.code["type"].astype(str) == "WriteUndef").any()
    assert not (report.execution["type"].astype(str) == "WriteUndef").any()
    # every tile's per-step control code counts the three steps that run, not the WriteUndef
    seq = report.code[report.code["type"].astype(str) == "Sequence"]["code_bytes"].sum()
    tiles = report.meta.target.tiles_per_replica
    assert seq == tiles * (MK2.control_code_base_bytes + 3 * MK2.control_code_bytes_per_step)
