"""popxl-addons layers on the simulator (Linear, LayerNorm, GroupNorm, Embedding, Conv2D) and
utils (WeightsDict, OrderedDict, timer), against numpy."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl_addons import layers

RNG = np.random.default_rng(11)


def _run(build: object, x: np.ndarray, dtype: object = popxl.float32,
         weights: dict[str, np.ndarray] | None = None) -> tuple[np.ndarray, addons.NamedTensors]:
    ir = popxl.Ir()
    with ir.main_graph:
        xt = popxl.variable(x, dtype)
        facts, graph = build.create_graph(xt)  # type: ignore[attr-defined]
        variables = facts.init()
        (y,) = graph.bind(variables).call(xt)
        stream = addons.host_store(y)
    session = popxl.Session(ir, "ipu_model")
    for key, value in (weights or {}).items():
        session.write_variable_data(variables.get(key), value)
    with session:
        out = session.run()[stream]
    return out, variables


def test_linear_initialises_and_computes() -> None:
    np.random.seed(0)
    x = RNG.normal(size=(4, 3)).astype(np.float32)
    w = RNG.normal(size=(3, 5)).astype(np.float32)
    b = RNG.normal(size=(5,)).astype(np.float32)
    out, variables = _run(layers.Linear(5), x, weights={"weight": w, "bias": b})
    np.testing.assert_allclose(out, x @ w + b, rtol=1e-5)
    assert sorted(variables.keys()) == ["bias", "weight"]
    ir = popxl.Ir()
    with ir.main_graph:
        facts, _ = layers.Linear(5, bias=False).create_graph(popxl.variable(x))
        init = facts.to_dict()["weight"].next_data()
    assert init.shape == (3, 5) and np.abs(init).max() <= 0.04 and init.std() > 0.005


def test_layer_norm_and_group_norm_match_numpy() -> None:
    x = RNG.normal(size=(3, 8)).astype(np.float32)
    out, _ = _run(layers.LayerNorm(), x)
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="N x C"):
        _run(layers.LayerNorm(), x.reshape(3, 2, 4))

    x4 = RNG.normal(size=(2, 4, 3, 3)).astype(np.float32)
    gamma = RNG.normal(size=(4,)).astype(np.float32)
    out, _ = _run(layers.GroupNorm(2), x4, weights={"weight": gamma})
    grouped = x4.reshape(2, 2, -1)
    norm = ((grouped - grouped.mean(-1, keepdims=True)) / np.sqrt(grouped.var(-1, keepdims=True) + 1e-5))
    np.testing.assert_allclose(out, norm.reshape(x4.shape) * gamma[None, :, None, None], rtol=1e-4, atol=1e-5)


def test_embedding_looks_up_rows_and_shards_round_to_16() -> None:
    assert layers.Embedding.get_vocab_shard_size(100, 1) == 112
    assert layers.Embedding.get_vocab_shard_size(100, 4) == 32
    np.testing.assert_array_equal(layers.Embedding.get_offsets(100, 4), [0, 32, 64, 96])
    table = RNG.normal(size=(16, 4)).astype(np.float32)
    idx = np.array([[3, 0], [15, 3]], np.int32)
    ir = popxl.Ir()
    with ir.main_graph:
        it = popxl.variable(idx, popxl.int32)
        facts, graph = layers.Embedding(popxl.float32, 10, 4).create_graph(it)
        variables = facts.init()
        (y,) = graph.bind(variables).call(it)
        stream = addons.host_store(y)
    session = popxl.Session(ir, "ipu_model")
    session.write_variable_data(variables.weight, table)
    with session:
        out = session.run()[stream]
    np.testing.assert_allclose(out, table[idx])


def test_conv2d_matches_a_direct_convolution() -> None:
    x = RNG.normal(size=(1, 2, 5, 5)).astype(np.float32)
    w = RNG.normal(size=(3, 2, 3, 3)).astype(np.float32)
    b = RNG.normal(size=(1, 3, 1, 1)).astype(np.float32)
    out, variables = _run(layers.Conv2D(3, 3, paddings=(1, 1, 1, 1)), x, weights={"weight": w, "bias": b})
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    ref = np.zeros((1, 3, 5, 5), np.float32)
    for o in range(3):
        for i in range(5):
            for j in range(5):
                ref[0, o, i, j] = (padded[0, :, i:i + 3, j:j + 3] * w[o]).sum()
    np.testing.assert_allclose(out, ref + b, rtol=1e-4, atol=1e-5)
    assert variables.bias.shape == (1, 3, 1, 1)


def test_weights_dict_checks_and_ordered_dict_index(caplog: pytest.LogCaptureFixture) -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.zeros((2, 3), np.float32))
    weights = addons.WeightsDict({v: np.ones((2, 3), np.float32)})
    assert len(weights) == 1 and weights[v].sum() == 6
    with pytest.raises(ValueError, match="shapes"):
        weights[v] = np.ones((3, 2), np.float32)
    with pytest.raises(ValueError, match="dtypes"):
        weights[v] = np.ones((2, 3), np.int32)
    ordered = addons.OrderedDict(a=1, b=2)
    assert ordered.idx(1) == 2 and repr(ordered) == "{\na: 1,\nb: 2,\n}" and repr(addons.OrderedDict()) == "{}"
    with caplog.at_level(logging.INFO), addons.timer("Build step", log_to_wandb=False):
        pass
    assert "Build step duration" in caplog.text
