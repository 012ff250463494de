"""The two popxl-addons generations the emulator speaks (3.0: threshold API; 3.4: replica
groupings), each accepting what that release accepts and refusing what it refuses."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons import named_replica_grouping, rts


def _use(monkeypatch: pytest.MonkeyPatch, generation: str) -> None:
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", generation)


class _State(addons.Module):
    def build(self, x: popxl.Tensor) -> None:
        self.add_replica_sharded_variable_input("sharded", partial(np.zeros, (16, 64)), popxl.float16)
        self.add_variable_input("big", partial(np.zeros, (16, 64)), popxl.float32)
        self.add_variable_input("step", partial(np.zeros, ()), popxl.float32)


def test_default_generation_is_3_4(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROFCOMPARE_SIM_ADDONS", raising=False)
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        t = popxl.variable(np.zeros((8, 8), np.float32))
        assert rts.replica_sharded_spec(t, shard_over=ir.replica_grouping()).shape == (16,)


def test_the_threshold_keyword_under_3_4_is_its_type_error_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, "3.4")
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        t = popxl.variable(np.zeros((8, 8), np.float32))
        with pytest.raises(TypeError, match=r"^replica_sharded_spec\(\) got an unexpected keyword argument "
                                            r"'threshold' \(popxl-addons 3.4: replica_sharded_spec\(t, shard_over\)"):
            rts.replica_sharded_spec(t, threshold=512)
        with pytest.raises(TypeError, match=r"missing 1 required positional argument: 'shard_over'"):
            rts.replica_sharded_spec(t)
        grads = addons.NamedTensors.from_dict({"a": t})
        with pytest.raises(TypeError, match=r"unexpected keyword argument 'threshold'.*shard_groups="):
            rts.reduce_replica_sharded_graph(grads, "mean", threshold=512)
        facts, _ = _State().create_graph(popxl.TensorSpec((1,), popxl.float32))
        with pytest.raises(TypeError, match=r"unexpected keyword argument 'sharded_threshold'.*shard_over_dict=False"):
            addons.named_variable_buffers(facts, entries=1, sharded_threshold=512)


def test_the_replica_grouping_keywords_under_3_0_are_its_type_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, "3.0")
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        t = popxl.variable(np.zeros((8, 8), np.float32))
        with pytest.raises(TypeError, match=r"unexpected keyword argument 'shard_over' \(popxl-addons 3.0"):
            rts.replica_sharded_spec(t, shard_over=ir.replica_grouping())
        facts, _ = _State().create_graph(popxl.TensorSpec((1,), popxl.float32))
        with pytest.raises(TypeError, match="unexpected keyword argument 'shard_over'"):
            addons.Module().add_replica_sharded_variable_input("x", partial(np.zeros, 4), shard_over=2)
        assert rts.replica_sharded_spec(t, threshold=64).shape == (16,)
        assert rts.replica_sharded_spec(t, threshold=65) == t.spec


def test_3_4_shards_by_grouping_without_a_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, "3.4")
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        tiny = popxl.variable(np.zeros((4,), np.float32))
        odd = popxl.variable(np.zeros((10,), np.float32))
        assert rts.replica_sharded_spec(tiny, shard_over=ir.replica_grouping()) == popxl.TensorSpec(
            (1,), popxl.float32, (4,))  # 4 elements: no threshold in 3.4
        assert rts.replica_sharded_spec(tiny, shard_over=ir.replica_grouping(group_size=1)) == tiny.spec
        assert rts.replica_sharded_spec(odd, shard_over=ir.replica_grouping()) == odd.spec  # 10 % 4


def test_named_variable_buffers_shard_over_dict(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, "3.4")
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        facts, _ = _State().create_graph(popxl.TensorSpec((1,), popxl.float32))
        kept = addons.named_variable_buffers(facts, entries=1, shard_over_dict=False)
        # an already-sharded factory keeps its shard buffer; the others stay whole
        assert kept.sharded.tensor_shape == (256,) and kept.sharded.meta_shape == (16, 64)
        assert kept.big.tensor_shape == (16, 64) and not kept.big.meta_shape
        assert kept.step.tensor_shape == ()
        # the default (True) shards every unsharded factory: the scalar step cannot be
        with pytest.raises(ValueError, match="Can't shard tensor with 1 elements over 4 replicas"):
            addons.named_variable_buffers(facts, entries=1)
        per_name = addons.named_variable_buffers(facts, entries=1, shard_over_dict={"big": 4, "step": 1,
                                                                                   "sharded": 4})
        assert per_name.big.tensor_shape == (256,) and per_name.big.meta_shape == (16, 64)
        with pytest.raises(ValueError, match="Invalid shard_over_dict int value: 8"):
            addons.named_variable_buffers(facts, entries=1, shard_over_dict=8)


def test_3_0_named_variable_buffers_refuses_an_indivisible_tensor_over_the_threshold(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, "3.0")
    ir = popxl.Ir(replication=3)
    with ir.main_graph:
        facts, _ = _State().create_graph(popxl.TensorSpec((1,), popxl.float32))
        with pytest.raises(ValueError, match="Can't shard tensor with 1024 elements over 3 replicas"):
            addons.named_variable_buffers(facts, entries=1, sharded_threshold=512)


@pytest.mark.parametrize("generation", ["3.0", "3.4"])
def test_reduce_graph_scatters_sharded_groups_and_all_reduces_the_rest(
        monkeypatch: pytest.MonkeyPatch, generation: str) -> None:
    _use(monkeypatch, generation)
    replicas = 4
    rng = np.random.default_rng(0)
    big_host = rng.normal(size=(replicas, 8, 64)).astype(np.float32)
    small_host = rng.normal(size=(replicas, 12)).astype(np.float32)
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph:
        big_stream = popxl.h2d_stream((8, 64), popxl.float32, "big")
        small_stream = popxl.h2d_stream((12,), popxl.float32, "small")
        grads = addons.NamedTensors.from_dict(
            {"small": ops.host_load(small_stream, "small"), "big": ops.host_load(big_stream, "big")})
        if generation == "3.0":
            graph, names = rts.reduce_replica_sharded_graph(grads, "mean", threshold=512)
        else:
            groups = named_replica_grouping.NamedReplicaGrouping.from_dict(
                {"big": ir.replica_grouping(), "small": ir.replica_grouping(group_size=1)})
            graph, names = rts.reduce_replica_sharded_graph(grads, "mean", shard_groups=groups,
                                                            replica_group=ir.replica_grouping())
        outputs = graph.bind(grads).call()
        streams = [addons.host_store(t) for t in outputs]
    assert names == ["big", "small"]
    assert outputs[0].shape == (128,) and outputs[0].meta_shape == (8, 64)
    assert outputs[1].shape == (12,) and outputs[1].meta_shape == ()
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run({big_stream: big_host, small_stream: small_host})
    np.testing.assert_allclose(out[streams[0]], big_host.mean(axis=0).reshape(replicas, -1), rtol=1e-6)
    np.testing.assert_allclose(out[streams[1]], np.broadcast_to(small_host.mean(axis=0), (replicas, 12)), rtol=1e-6)


def test_autodiff_with_accumulation_takes_3_4s_positional_order(monkeypatch: pytest.MonkeyPatch) -> None:
    class Lin(addons.Module):
        def build(self, x: popxl.Tensor) -> popxl.Tensor:
            w = self.add_variable_input("w", partial(np.ones, (3, 3)), popxl.float32)
            return x @ w

    for generation in ("3.0", "3.4"):
        _use(monkeypatch, generation)
        ir = popxl.Ir()
        with ir.main_graph:
            facts, fwd = Lin().create_graph(popxl.TensorSpec((2, 3), popxl.float32))
            (x,) = [t for t in fwd.graph.inputs if t not in fwd.args.tensors]
            w = fwd.args.w
            # the third positional argument: 3.0 grads_required, 3.4 grads_provided
            _, bwd = addons.autodiff_with_accumulation(fwd, [w], [x])
            info = bwd.grad_graph_info
            if generation == "3.0":
                assert list(info.outputs) == [x, w]  # grads_required=[x], then the accumulated w
                assert len(bwd.graph.outputs) == 1  # w's gradient went into its accumulator
            else:
                assert list(info.outputs) == [w]  # x was given as grads_provided...
                assert info.expected_inputs[0].fwd_tensor is x  # ...so its gradient is an input
                assert len(bwd.graph.outputs) == 0


def test_build_groups_value_is_required_in_3_4(monkeypatch: pytest.MonkeyPatch) -> None:
    nrg = named_replica_grouping.NamedReplicaGrouping
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        _use(monkeypatch, "3.0")
        assert nrg.build_groups(["a"]).to_dict()["a"] == ir.replica_grouping()
        _use(monkeypatch, "3.4")
        with pytest.raises(TypeError, match="missing 1 required positional argument: 'value'"):
            nrg.build_groups(["a"])


def test_a_sharded_factorys_init_is_a_full_variable_that_the_sharded_input_refuses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, "3.4")

    class Sgd(addons.Module):
        def build(self, var: popxl.Tensor) -> None:
            m = self.add_replica_sharded_variable_input("m", partial(np.zeros, (8,)), popxl.float32, by_ref=True)
            ops.var_updates.accumulate_moving_average_(m, var, f=0.5)

    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        var = ops.collectives.replica_sharded_slice(popxl.variable(np.ones(8, np.float32)))
        facts, graph = Sgd().create_graph(var)
        state = facts.init()
        assert state.m.shape == (8,)  # popxl-addons creates the full variable
        with pytest.raises(ValueError, match=r"CallOp input \(@1\) does not match .*meta_shape \(8,\)"):
            graph.bind(state).call(var)
        _, shard = popxl.replica_sharded_variable(facts.m.next_data(), popxl.float32, "m")
        graph.bind(addons.NamedTensors.from_dict({"m": shard})).call(var)


def test_an_unknown_generation_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, "3.2")
    with pytest.raises(ValueError, match="unknown popxl-addons generation '3.2'"):
        rts.replica_sharded_spec  # noqa: B018


def test_addons_own_collectives_have_the_releases_signatures() -> None:
    import inspect

    from profcompare.emulator.popxl_addons.ops import replicated_strided_collectives as strided

    # both generations (popxl_addons/ops/replicated_strided_collectives, sdk-release-3.0 and 3.4)
    assert [p for p in inspect.signature(strided.replicated_all_reduce_strided).parameters] == ["t", "op", "group"]
    assert [p for p in inspect.signature(strided.replicated_reduce_scatter_strided).parameters] == [
        "t", "op", "group", "configure_output_for_replicated_tensor_sharding"]
    assert [p for p in inspect.signature(strided.replicated_all_gather_strided).parameters] == ["t", "group"]
    assert inspect.signature(strided.replicated_all_gather_strided).parameters["group"].default is None


def test_reduce_graph_takes_variable_factories_as_the_applications_pass_them(monkeypatch: pytest.MonkeyPatch) -> None:
    # BERT SQuAD training passes its gradient accumulators' factories (meta_shape None when not
    # sharded), not tensors: the graph's inputs take their shapes
    _use(monkeypatch, "3.4")
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        factories = addons.NamedVariableFactories.from_dict(
            {"w": addons.VariableFactory(partial(np.zeros, (4, 8), np.float32), name="w")})
        graph, names = rts.reduce_replica_sharded_graph(factories, "mean", replica_group=ir.replica_grouping())
    assert names == ["w"]
    assert [(t.shape, t.meta_shape) for t in graph.graph.inputs] == [((4, 8), ())]
