"""popxl-addons' C++ custom ops on the simulator, against numpy references: the tensor-parallel
cross-entropy, the distributed layer norm, the tensor-parallel all-reduce and the linear
layout copy; lowering of the custom op types; 3.4-only modules under 3.0."""

from __future__ import annotations

import importlib
import sys

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.compile.programs import classify
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons.ops.cross_entropy_sharded_loss import cross_entropy_sharded_loss
from profcompare.emulator.popxl_addons.ops.layer_norm_distributed import layer_norm_distributed
from profcompare.emulator.popxl_addons.ops.linear_layout import linear_layout
from profcompare.emulator.popxl_addons.ops.replicated_all_reduce_TP import replicated_all_reduce_TP as tp

RNG = np.random.default_rng(5)


def _fwd_and_grad(n_replicas: int, build: object, inputs: list[np.ndarray], dy: np.ndarray,
                  dtypes: list[object]) -> tuple[np.ndarray, list[np.ndarray]]:
    """Run ``build`` (a function of the inputs) and its gradient for the output gradient ``dy``;
    every input is given per replica, ``(R, *shape)``. Returns (output, input gradients)."""
    ir = popxl.Ir(replication=n_replicas)
    per_replica = ir.replica_grouping(group_size=1)
    with ir.main_graph:
        ts = [popxl.variable(x, dt, replica_grouping=per_replica) for x, dt in zip(inputs, dtypes)]
        d = popxl.variable(dy, dtypes[0], replica_grouping=per_replica)
        graph = ir.create_graph(build, *ts)
        info = popxl.transforms.autodiff(graph, grads_required=[graph.inputs[0]])
        call = ops.call_with_info(graph, *ts)
        y = call.outputs[0]  # autodiff made the activations the gradient needs extra outputs
        grads = ops.call(info.graph, d, inputs_dict=info.inputs_dict(call))
        streams = [addons.host_store(t) for t in (y, *grads)]
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()
    return out[streams[0]], [out[s] for s in streams[1:]]


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_cross_entropy_sharded_of_equal_logits_is_log_of_the_class_count() -> None:
    # 2 samples, 4 classes split over 2 replicas; labels 1 and 3, shifted by each shard's first class
    logits = np.zeros((2, 2, 2), np.float32)
    labels = np.array([1, 3], np.int32)
    shifted = np.stack([labels - 0, labels - 2])
    loss, (dlogits,) = _fwd_and_grad(
        2, lambda x, i: cross_entropy_sharded_loss(x, i, reduction="none"), [logits, shifted],
        np.ones((2, 2), np.float32), [popxl.float32, popxl.int32])
    np.testing.assert_allclose(loss, [[1.3862944, 1.3862944]] * 2, rtol=1e-6)
    # d loss / d logits = softmax - onehot(label), each replica holding its classes
    np.testing.assert_allclose(dlogits[0], [[0.25, -0.75], [0.25, 0.25]], rtol=1e-6)
    np.testing.assert_allclose(dlogits[1], [[0.25, 0.25], [0.25, -0.75]], rtol=1e-6)


def test_cross_entropy_sharded_mean_with_ignore_index_matches_numpy() -> None:
    n, classes, shards = 5, 6, 3
    full = RNG.normal(size=(n, classes)).astype(np.float32)
    labels = np.array([0, 4, 2, 5, 0], np.int32)  # label 0 is ignored
    width = classes // shards
    logits = np.stack([full[:, k * width:(k + 1) * width] for k in range(shards)])
    shifted = np.stack([labels - k * width for k in range(shards)])
    ignore = np.stack([np.array(-k * width, np.int32) for k in range(shards)])

    def build(x: popxl.Tensor, i: popxl.Tensor, ig: popxl.Tensor) -> popxl.Tensor:
        return cross_entropy_sharded_loss(x, i, ignore_index=ig, reduction="mean")

    loss, (dlogits,) = _fwd_and_grad(shards, build, [logits, shifted, ignore], np.ones(shards, np.float32),
                                     [popxl.float32, popxl.int32, popxl.int32])
    keep = labels != 0
    p = _softmax(full.astype(np.float64))
    per_sample = -np.log(p[np.arange(n), labels])
    expected = per_sample[keep].mean()
    np.testing.assert_allclose(loss, [expected] * shards, rtol=1e-5)
    onehot = np.eye(classes)[labels]
    expected_grad = (p - onehot) * keep[:, None] / keep.sum()
    got = np.concatenate(list(dlogits), axis=1)
    np.testing.assert_allclose(got, expected_grad, atol=1e-6)


def _ln(x: np.ndarray, eps: float = 1e-5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean = x.mean(-1, keepdims=True)
    inv_std = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    return (x - mean) * inv_std, mean, inv_std


def test_layer_norm_distributed_normalises_over_the_whole_hidden_axis() -> None:
    # hidden [1, 2, 3, 4] split over 2 replicas: mean 2.5, variance 1.25
    x = np.array([[[1.0, 2.0]], [[3.0, 4.0]]], np.float32)
    w = np.array([[2.0, 2.0], [2.0, 2.0]], np.float32)
    b = np.array([[0.5, 0.5], [0.5, 0.5]], np.float32)
    dy = np.array([[[1.0, 0.0]], [[0.0, 0.0]]], np.float32)
    y, (dx,) = _fwd_and_grad(2, lambda t, ww, bb: layer_norm_distributed(t, ww, bb), [x, w, b], dy,
                             [popxl.float32] * 3)
    s = 1 / np.sqrt(1.25 + 1e-5)
    np.testing.assert_allclose(y.reshape(4), 2 * (np.array([1, 2, 3, 4]) - 2.5) * s + 0.5, rtol=1e-6)
    # the op's gradient takes dy as the whitened input's gradient: not scaled by w (= 2)
    xw, _, inv_std = _ln(np.array([[1.0, 2.0, 3.0, 4.0]]))
    g = np.array([[1.0, 0.0, 0.0, 0.0]])
    expected = inv_std * (g - (xw * (g * xw).sum() + g.sum()) / 4)
    np.testing.assert_allclose(dx.reshape(1, 4), expected, rtol=1e-5)


def test_layer_norm_distributed_matches_numpy_over_four_shards() -> None:
    x = RNG.normal(size=(3, 8)).astype(np.float32)
    shards = np.stack(np.split(x, 4, axis=1))
    ones = np.ones((4, 2), np.float32)
    zeros = np.zeros((4, 2), np.float32)
    y, _ = _fwd_and_grad(4, lambda t, ww, bb: layer_norm_distributed(t, ww, bb, epsilon=1e-3),
                         [shards, ones, zeros], np.zeros_like(shards), [popxl.float32] * 3)
    np.testing.assert_allclose(np.concatenate(list(y), axis=1), _ln(x, 1e-3)[0], atol=1e-5)


@pytest.mark.parametrize(("fn", "fwd", "bwd"), [
    (tp.replicated_all_reduce_identical_inputs, "identity", "sum"),
    (tp.replicated_all_reduce_identical_grad_inputs, "sum", "identity"),
    (tp._replicated_all_reduce, "sum", "sum"),
])
def test_replicated_all_reduce_tp_flags_choose_forward_and_gradient(fn: object, fwd: str, bwd: str) -> None:
    x = np.array([[1.0], [10.0], [100.0]], np.float32)
    dy = np.array([[2.0], [20.0], [200.0]], np.float32)
    y, (dx,) = _fwd_and_grad(3, fn, [x], dy, [popxl.float32])
    np.testing.assert_array_equal(y, x if fwd == "identity" else np.full_like(x, 111.0))
    np.testing.assert_array_equal(dx, dy if bwd == "identity" else np.full_like(dy, 222.0))


def test_replicated_all_reduce_tp_takes_add_only() -> None:
    ir = popxl.Ir(replication=2)
    with ir.main_graph, pytest.raises(RuntimeError, match="CollectiveOperator::Add is the only"):
        tp.replicated_all_reduce_identical_inputs(popxl.variable(np.zeros(2, np.float32)), op="max")


def test_custom_ops_lower_with_their_types_and_classes() -> None:
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        x = popxl.variable(np.ones((2, 4), np.float32))
        y = tp.replicated_all_reduce_identical_grad_inputs(linear_layout(x))
        addons.host_store(y)
    program = lower(ir)
    classes = {op.type: classify(op, program) for op in program.ops.values()}
    assert classes["ReplicatedAllReduceTP"] == "collective"
    assert classes["LinearLayout"] == "elementwise"


def test_linear_layout_copies_values() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.arange(6, dtype=np.float16).reshape(2, 3))
        stream = addons.host_store(linear_layout(x, 2))
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()[stream]
    np.testing.assert_array_equal(out, np.arange(6, dtype=np.float16).reshape(2, 3))


@pytest.mark.parametrize("module", [
    "profcompare.emulator.popxl_addons.ops.layer_norm_distributed",
    "profcompare.emulator.popxl_addons.ops.group_quantize_decompress",
    "profcompare.emulator.popxl_addons.ops.fp8_mse_scale",
    "profcompare.emulator.popxl_addons.layers.linear_gq",
    "profcompare.emulator.popxl_addons.ops.static_sparse_ops",
])
def test_3_4_custom_op_modules_do_not_import_under_3_0(module: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    saved = sys.modules.pop(module, None)
    try:
        with pytest.raises(ModuleNotFoundError, match="not in popxl-addons 3.0"):
            importlib.import_module(module)
    finally:
        if saved is not None:
            sys.modules[module] = saved


def test_replicated_all_reduce_is_3_4_only(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "replicated_all_reduce" in tp.__all__
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    assert not hasattr(tp, "replicated_all_reduce")
    assert tp.__all__ == ["replicated_all_reduce_identical_inputs", "replicated_all_reduce_identical_grad_inputs"]
