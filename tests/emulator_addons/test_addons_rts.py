"""Replicated tensor sharding helpers and remote buffers with the threshold rule (popxl-addons 3.0)."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons import rts


@pytest.fixture(autouse=True)
def _threshold_api(monkeypatch: pytest.MonkeyPatch) -> None:
    # these tests are written in the 3.0 (threshold) API; tests/emulator_addons/test_addons_generations.py
    # covers 3.4
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")


def test_replica_sharded_spec_threshold_rule() -> None:
    ir = popxl.Ir()
    ir.replication_factor = 4
    with ir.main_graph:
        big = popxl.variable(np.zeros((32, 32), np.float32))
        small = popxl.variable(np.zeros((10,), np.float32))
        odd = popxl.variable(np.zeros((1026,), np.float32))
        shard = ops.collectives.replica_sharded_slice(big)
        assert rts.replica_sharded_spec(big, threshold=512) == popxl.TensorSpec((256,), popxl.float32, (32, 32))
        assert rts.replica_sharded_spec(big, threshold=1025) == big.spec
        assert rts.replica_sharded_spec(small, threshold=4) == small.spec  # 10 % 4 != 0
        assert rts.replica_sharded_spec(odd, threshold=512) == odd.spec
        assert rts.replica_sharded_spec(shard, threshold=1) == shard.spec  # already sharded
    single = popxl.Ir()
    with single.main_graph:
        t = popxl.variable(np.zeros((32, 32), np.float32))
        assert rts.replica_sharded_spec(t, threshold=1) == t.spec


def test_named_variable_buffers_rules() -> None:
    ir = popxl.Ir()
    ir.replication_factor = 4

    class State(addons.Module):
        def build(self, x: popxl.Tensor) -> None:
            self.add_replica_sharded_variable_input("sharded", partial(np.zeros, (16, 64)), popxl.float16)
            self.add_variable_input("big", partial(np.zeros, (16, 64)), popxl.float32)
            self.add_variable_input("small", partial(np.zeros, (10,)), popxl.float32)

    with ir.main_graph:
        facts, _ = State().create_graph(popxl.TensorSpec((1,), popxl.float32))
        buffers = addons.named_variable_buffers(facts, entries=1, sharded_threshold=512)
        remote = facts.init_remote(buffers)
    assert tuple(buffers.sharded.tensor_shape) == (256,) and tuple(buffers.sharded.meta_shape) == (16, 64)
    assert buffers.sharded.tensor_dtype == popxl.float16
    assert tuple(buffers.big.tensor_shape) == (256,) and tuple(buffers.big.meta_shape) == (16, 64)
    assert tuple(buffers.small.tensor_shape) == (10,) and not buffers.small.meta_shape
    # remote RTS variables keep the full (host) shape; each replica's buffer holds one shard
    assert remote.big.shape == (16, 64) and remote.small.shape == (10,)


def test_reduce_replica_sharded_graph_scatters_large_and_all_reduces_small() -> None:
    replicas = 4
    rng = np.random.default_rng(0)
    big_host = rng.normal(size=(replicas, 8, 64)).astype(np.float32)
    small_host = rng.normal(size=(replicas, 10)).astype(np.float32)
    ir = popxl.Ir()
    ir.replication_factor = replicas
    with ir.main_graph:
        big_stream = popxl.h2d_stream((8, 64), popxl.float32, "big")
        small_stream = popxl.h2d_stream((10,), popxl.float32, "small")
        grads = addons.NamedTensors.from_dict(
            {"small": ops.host_load(small_stream, "small"), "big": ops.host_load(big_stream, "big")}
        )
        graph, names = rts.reduce_replica_sharded_graph(grads, "mean", threshold=512)
        outputs = graph.bind(grads).call()
        streams = [addons.host_store(t) for t in outputs]
    assert names == ["big", "small"]
    assert outputs[0].shape == (128,) and outputs[0].meta_shape == (8, 64)
    assert outputs[1].shape == (10,) and outputs[1].meta_shape == ()
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run({big_stream: big_host, small_stream: small_host})
    mean_big = big_host.mean(axis=0).reshape(replicas, -1)  # replica r holds slice r
    np.testing.assert_allclose(out[streams[0]], mean_big, rtol=1e-6)
    np.testing.assert_allclose(out[streams[1]], np.broadcast_to(small_host.mean(axis=0), (replicas, 10)), rtol=1e-6)


def test_strided_all_gather_of_an_unsharded_tensor_is_flat_in_replica_order() -> None:
    """popxl-addons' ReplicatedAllGatherStridedOp gives ``(group_size * nelms,)`` for a tensor
    without a meta_shape: replica i of a stride-4 group of 4 among 16 gets the (2, 3) inputs of
    replicas i mod 4, i mod 4 + 4, ... one after the other."""
    from profcompare.emulator.popxl_addons.ops.replicated_strided_collectives import replicated_all_gather_strided

    inputs = np.arange(16 * 2 * 3, dtype=np.float32).reshape(16, 2, 3)
    ir = popxl.Ir()
    ir.replication_factor = 16
    with ir.main_graph:
        h2d = popxl.h2d_stream((2, 3), popxl.float32)
        y = replicated_all_gather_strided(ops.host_load(h2d), ir.replica_grouping(stride=4, group_size=4))
        d2h = popxl.d2h_stream(y.shape, y.dtype)
        ops.host_store(d2h, y)
    assert y.shape == (24,)
    with popxl.Session(ir, "ipu_hw") as session:
        out = session.run({h2d: inputs})[d2h]
    for i in range(16):
        np.testing.assert_array_equal(out[i], inputs[i % 4::4].reshape(-1))


def test_strided_all_reduce_has_a_gradient_the_same_all_reduce() -> None:
    """popxl's replicated_all_reduce has no gradient (PopART's ReplicatedAllReduceOp defines
    none); popxl-addons' strided one does: its custom op's grad op all-reduces the gradient over
    the same grouping."""
    from profcompare.emulator.popxl_addons.ops.replicated_strided_collectives import replicated_all_reduce_strided

    ir = popxl.Ir()
    ir.replication_factor = 4
    with ir.main_graph:
        h2d = popxl.h2d_stream((3,), popxl.float32)
        x = ops.host_load(h2d)
        group = ir.replica_grouping(stride=2, group_size=2)
        graph = ir.create_graph(lambda t: replicated_all_reduce_strided(t, group=group), x)
        grad = popxl.transforms.autodiff(graph).graph
        (dx,) = ops.call(grad, x)
        d2h = popxl.d2h_stream(dx.shape, dx.dtype)
        ops.host_store(d2h, dx)
        plain = ir.create_graph(lambda t: ops.collectives.replicated_all_reduce(t, group=group), x)
        with pytest.raises(RuntimeError, match="replicated_all_reduce has no gradient"):
            popxl.transforms.autodiff(plain)
    data = np.arange(12, dtype=np.float32).reshape(4, 3)
    with popxl.Session(ir, "ipu_hw") as session:
        out = session.run({h2d: data})[d2h]
    for r in range(4):  # groups {0, 2} and {1, 3}
        np.testing.assert_array_equal(out[r], data[r % 2] + data[r % 2 + 2])
