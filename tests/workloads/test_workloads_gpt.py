"""The GPT workload at a tiny size (2 layers, hidden 64, 4 heads, seq 16, vocab 128, tp 2, dp 2):
every variant's losses and its first Adam step match a float64 numpy model of the whole
(unsharded) transformer with a hand-written backward pass."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from profcompare.errors import WorkloadError
from workloads import find_variant, parse_knobs
from workloads._gpt_numpy import adam_step, loss_and_grads
from workloads.gpt import VARIANTS, layout_of, samples_per_step, shape_of, synthetic_tokens

TINY = {"layers": 2, "hidden": 64, "heads": 4, "seq": 16, "vocab": 128, "tp": 2, "dp": 2, "micro_batch": 2,
        "grad_accum": 2, "steps": 1, "lr": 1e-3}


@pytest.fixture(autouse=True)
def _sim_without_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_BACKEND", "sim")
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)
    monkeypatch.delenv("PROFCOMPARE_SIM_EXECUTION", raising=False)


def _whole(key: str, value: np.ndarray, tp: int) -> dict[str, np.ndarray]:
    """The unsharded tensor(s) of a program tensor: per-rank shards (leading tp axis) joined
    along the axis tensor parallelism splits, the fused QKV split into q, k and v."""
    if key.endswith("attention.qkv.weight"):
        per_rank = [np.split(value[r] if tp > 1 else value, 3, axis=1) for r in range(tp)]
        base = key[: -len("qkv.weight")]
        return {base + name: np.concatenate([p[i] for p in per_rank], axis=1) for i, name in enumerate("qkv")}
    name = key[: -len(".weight")] if key.endswith(("out.weight", "intermediate.weight", "output.weight")) else key
    if tp > 1 and key.endswith(("attention.out.weight", "feed_forward.output.weight")):
        return {name: np.concatenate(list(value), axis=0)}
    if tp > 1 and key.endswith("feed_forward.intermediate.weight"):
        return {name: np.concatenate(list(value), axis=1)}
    if tp > 1 and key == "embeddings.word":  # vocabulary rows
        return {name: np.concatenate(list(value), axis=0)}
    if tp > 1 and key == "head.lm_head":  # vocabulary columns
        return {name: np.concatenate(list(value), axis=1)}
    return {name: value}


_TP_SHARDED = ("qkv.weight", "attention.out.weight", "intermediate.weight", "feed_forward.output.weight",
               "embeddings.word", "head.lm_head")


def _read(session: Any, variables: dict[str, Any], tp: int, suffix: str = "") -> dict[str, np.ndarray]:
    """Whole tensors from the session. Adam state (``suffix`` given) has one value per
    tensor-parallel rank for every tensor: the two ranks' values of an unsharded one agree."""
    found: dict[str, np.ndarray] = {}
    for key, var in variables.items():
        if not key.endswith(suffix):
            continue
        key = key[: len(key) - len(suffix)]
        value = np.asarray(session.get_tensor_data(var), dtype=np.float64)
        if suffix and not key.endswith(_TP_SHARDED):
            np.testing.assert_array_equal(value[0], value[1])
            value = value[0]
        found.update(_whole(key, value, tp))
    return found


def _reference(weights: dict[str, np.ndarray], tokens: np.ndarray, labels: np.ndarray, config: dict) -> tuple:
    """Per-micro-batch losses (grad_accum, dp) and the gradient averaged over them."""
    losses = np.zeros(tokens.shape[:2])
    total: dict[str, np.ndarray] = {}
    for a in range(tokens.shape[0]):
        for d in range(tokens.shape[1]):
            losses[a, d], grads = loss_and_grads(weights, tokens[a, d], labels[a, d], config["layers"],
                                                 config["heads"])
            for key, g in grads.items():
                total[key] = total.get(key, 0.0) + g
    count = tokens.shape[0] * tokens.shape[1]
    return losses, {key: g / count for key, g in total.items()}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_variant_matches_numpy_loss_and_adam_step(variant: str) -> None:
    from workloads import _gpt_program as gp

    config = parse_knobs(find_variant(variant), TINY)
    program = gp.build_program(layout_of(variant, config), shape_of(config), config["lr"], config["seed"], 0)
    tokens, labels = synthetic_tokens(config)
    session = gp.popxl.Session(program.ir, "ipu_hw")
    weight_vars = gp.weight_variables(program)
    with session:
        before = _read(session, weight_vars, 2)
        outputs = session.run(gp.host_inputs(program, tokens[0], labels[0]))
        after = _read(session, weight_vars, 2)
        state = gp.adam_variables(program)
        first = _read(session, state, 2, ".first_order")
        second = _read(session, state, 2, ".second_order")

    assert len(before) == 2 + 2 * 10 + 2 + 1  # embeddings, 10 tensors per layer, ln_f, lm_head
    losses, grads = _reference(before, tokens[0], labels[0], config)
    # one loss per micro-batch and replica; both tensor-parallel ranks of a data-parallel
    # replica compute the same loss
    program_losses = np.asarray(outputs[program.loss_stream]).reshape(2, 2, 2)
    np.testing.assert_allclose(program_losses, np.repeat(losses[:, :, None], 2, axis=2), rtol=1e-5)
    assert abs(float(losses.mean()) - np.log(128)) < 0.1  # near-uniform predictions at init

    assert sorted(first) == sorted(before)
    for key, g in grads.items():
        scale = float(np.abs(g).max())
        new_w, m, v = adam_step(before[key], g, config["lr"])
        np.testing.assert_allclose(first[key], m, rtol=0, atol=2e-4 * scale, err_msg=key)
        np.testing.assert_allclose(second[key], v, rtol=0, atol=2e-4 * (1 - 0.999) * scale**2, err_msg=key)
        np.testing.assert_allclose(after[key], new_w, rtol=0, atol=2e-5, err_msg=key)
    # the step moved every weight that has a gradient by about lr
    moved = np.abs(after["layers.1.attention.q"] - before["layers.1.attention.q"])
    assert 0.5e-3 < float(np.median(moved)) <= 1.0e-3 + 1e-7


def test_samples_per_step_and_host_inputs_replicate_tokens_over_tensor_parallel_ranks() -> None:
    from workloads import _gpt_program as gp

    config = parse_knobs(find_variant("phased"), TINY)
    assert samples_per_step(config) == 2 * 2 * 2  # micro_batch * grad_accum * dp sequences
    program = gp.build_program(layout_of("phased", config), shape_of(config), 1e-3, 42, 0)
    tokens, labels = synthetic_tokens(config)
    assert tokens.shape == (1, 2, 2, 2, 16)
    np.testing.assert_array_equal(tokens[0, 0, 0, 0, 1:], labels[0, 0, 0, 0, :-1])
    inputs = gp.host_inputs(program, tokens[0], labels[0])
    fed = inputs[program.token_stream]
    assert fed.shape == (2, 4, 2, 16)  # grad_accum, replicas = dp * tp, micro_batch, seq
    # each tensor-parallel rank reads its data-parallel replica's ids shifted by its first
    # vocabulary row (vocab 128 / tp 2 = 64 rows per rank)
    for replica in range(4):
        np.testing.assert_array_equal(fed[:, replica], tokens[0][:, replica // 2] - 64 * (replica % 2))
        np.testing.assert_array_equal(inputs[program.label_stream][:, replica],
                                      labels[0][:, replica // 2] - 64 * (replica % 2))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"heads": 6}, "bad value 6 for knob 'heads': valid values are multiples of tp (4)"),
        ({"hidden": 66, "heads": 4, "tp": 2}, "bad value 66 for knob 'hidden': valid values are multiples of heads (4)"),
        ({"dp": 3}, "bad value 3 for knob 'dp': valid values are powers of two from 1 to 256"),
        ({"vocab": 129}, "bad value 129 for knob 'vocab': valid values are multiples of tp (2)"),
        ({"amp": 0.0}, "bad value 0.0 for knob 'amp': valid values are numbers in (0, 1]"),
        ({"state": "remote"}, "bad value 'remote' for knob 'state': valid values are variant, onchip, offchip"),
        ({"recompute": "yes"}, "bad value 'yes' for knob 'recompute': valid values are variant, on, off"),
        ({"tp": 64, "dp": 8, "heads": 64}, "bad value 8 for knob 'dp': valid values are powers of two with tp * dp <= 256"),
    ],
)
def test_bad_sizes_are_one_line_errors(overrides: dict, message: str) -> None:
    base = {"tp": 4} if "heads" in overrides and overrides["heads"] == 6 else {}
    with pytest.raises(WorkloadError) as caught:
        parse_knobs(find_variant("resident"), {**base, **overrides})
    assert str(caught.value) == message


def test_rts_needs_offchip_state() -> None:
    config = parse_knobs(find_variant("phased-rts"), {"state": "onchip"})
    with pytest.raises(WorkloadError, match="needs state=offchip"):
        layout_of("phased-rts", config)
    assert layout_of("phased", {**config, "state": "onchip"}).state_offchip is False
    assert layout_of("phased-rts", {**config, "state": "variant", "recompute": "on"}).recompute is True


def _report(tmp_path: Any, monkeypatch: pytest.MonkeyPatch, variant: str, compile_only: bool) -> Any:
    import json

    import profcompare

    out = tmp_path / f"{variant}-{compile_only}"
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps({"autoReport.all": "true",
                                                            "autoReport.directory": str(out)}))
    if compile_only:
        monkeypatch.setenv("PROFCOMPARE_SIM_EXECUTION", "compile-only")
    else:
        monkeypatch.delenv("PROFCOMPARE_SIM_EXECUTION", raising=False)
    workload = find_variant(variant)
    workload.run(variant, parse_knobs(workload, {**TINY, "steps": 1}))
    (store,) = out.rglob("*.sqlite")
    return profcompare.open_report(store.parent)


def test_streaming_memory_of_phased_layouts_by_hand(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # parameters per replica (one tensor-parallel shard, tp 2): word embedding 64*64 (vocab 128 / tp
    # rows), positions 16*64; per layer 2 layer norms 4*64, qkv 64*96, out 32*64, feed-forward
    # 64*128 + 128*64; ln_f 2*64, LM head 64*64 (vocab / tp columns)
    params = (64 * 64 + 16 * 64) + 2 * (4 * 64 + 64 * 96 + 32 * 64 + 64 * 128 + 128 * 64) + (2 * 64 + 64 * 64)
    assert params == 59_008
    phased = _report(tmp_path, monkeypatch, "phased", True)
    rts = _report(tmp_path, monkeypatch, "phased-rts", True)
    for report, state_bytes in ((phased, 2 * 4 * params), (rts, 2 * 4 * params // 2)):
        buffers = report.remote_buffers
        moments = buffers[buffers["name"].str.endswith(("first_order", "second_order"))]
        assert int(moments["bytes"].sum()) == state_bytes  # fp32 first and second moments
        assert bool(moments["sharded"].all()) is (report is rts)
        weights = buffers[buffers["role"] == "weight"]
        assert int(weights["bytes"].sum()) == 4 * params  # whole (per-shard) fp32 weights, every layout
    # every layer's weight loads from the one shared load graph, called with the layer's entry,
    # are attributed to that layer's parameter; the layers' update is one graph repeated with a
    # run-time layer counter, followed iteration by iteration, so each iteration's loads are
    # that layer's too
    variables = rts.variables
    loaded = variables[variables["name"].str.contains("weight_remote_loaded")]
    by_counter = loaded["name"].str.contains("update_layer_subgraph")
    by_entry = loaded[~by_counter & ~loaded["name"].str.contains("/accum.")]
    assert len(by_entry) and (by_entry["parameter"] != "").all()
    assert by_counter.any() and (loaded[by_counter]["parameter"].str.startswith("layers.")).all()
    counted = loaded[by_counter]
    for layer in (0, 1):  # both layers' update iterations load their own weights
        assert counted["parameter"].str.startswith(f"layers.{layer}.").any()
    rts_buffers = rts.remote_buffers.set_index("name")
    for moment in ("first_order", "second_order"):  # both layers' fp32 QKV shards, halved by RTS
        qkv = rts_buffers.loc[f"adam.layers.0.attention.qkv.weight.{moment}"]
        assert (int(qkv["entries"]), int(qkv["bytes"]), bool(qkv["sharded"])) == (2, 2 * 64 * 96 * 4 // 2, True)
    # the word embedding and the LM head hold vocab / tp rows of fp32 per replica, and so do their
    # accumulators and Adam moments
    by_name = buffers.set_index("name")["bytes"]
    for name in ("embeddings.word", "head.lm_head", "accum.embeddings.accum.word", "accum.head.accum.lm_head"):
        assert int(by_name[name]) == 128 // 2 * 64 * 4, name
    resident = _report(tmp_path, monkeypatch, "resident", True)
    assert int(resident.remote_buffers["bytes"].sum()) == 0  # nothing in Streaming Memory
    on_chip = resident.variables.set_index("name")["bytes"]
    for name in ("embeddings.word", "head.lm_head"):
        assert int(on_chip[name]) == 128 // 2 * 64 * 4, name
    assert resident.summary()["not_always_live_peak_bytes"] > phased.summary()["not_always_live_peak_bytes"]


def test_compile_only_gives_the_numeric_report_tables(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas.testing as pdt

    numeric = _report(tmp_path, monkeypatch, "phased-rts-recompute", False)
    abstract = _report(tmp_path, monkeypatch, "phased-rts-recompute", True)
    for table in ("tiles", "categories", "variables", "liveness", "code", "remote_buffers"):
        pdt.assert_frame_equal(getattr(numeric, table), getattr(abstract, table), check_exact=True, obj=table)


def _compile_only_summary(tmp_path: Any, monkeypatch: pytest.MonkeyPatch, variant: str, **overrides: Any) -> dict:
    import json

    import profcompare

    out = tmp_path / "-".join(f"{k}{v}" for k, v in sorted({"variant": variant, **overrides}.items()))
    monkeypatch.setenv("POPLAR_ENGINE_OPTIONS", json.dumps({"autoReport.all": "true", "autoReport.directory": str(out)}))
    monkeypatch.setenv("PROFCOMPARE_SIM_EXECUTION", "compile-only")
    workload = find_variant(variant)
    workload.run(variant, parse_knobs(workload, {**TINY, "steps": 1, **overrides}))
    (store,) = out.rglob("*.sqlite")
    report = profcompare.open_report(store.parent)
    return {"code": int(report.categories.set_index("category").loc["controlCode", "bytes"]),
            "vertices": int(report.categories.set_index("category").loc["vertexInstanceState", "bytes"])}


def test_phased_recompute_program_does_not_grow_with_layers_or_micro_batches(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # phased-rts-recompute: the micro-batch, the decoder stack and the layers' update are each one
    # repeated graph, so its control code and vertex state are the same at 2 or 6 layers and 2 or
    # 8 micro-batches; phased (no recompute) calls the layer graph once per layer and grows
    base = _compile_only_summary(tmp_path, monkeypatch, "phased-rts-recompute")
    assert _compile_only_summary(tmp_path, monkeypatch, "phased-rts-recompute", layers=6, grad_accum=8) == base
    unrolled = _compile_only_summary(tmp_path, monkeypatch, "phased")
    deeper = _compile_only_summary(tmp_path, monkeypatch, "phased", layers=6)
    assert deeper["code"] > unrolled["code"] and deeper["vertices"] > unrolled["vertices"]
