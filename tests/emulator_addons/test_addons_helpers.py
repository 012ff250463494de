"""popxl-addons helpers: InputStreams / OutputStreams, array_munging and seed_variable."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons import array_munging as am


def test_streams_by_name_position_and_iteration() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        inputs = addons.InputStreams(a=((2, 3), popxl.float32), b=((3,), popxl.int32))
        outputs = addons.OutputStreams(c=((2, 3), popxl.float32))
        a = ops.host_load(inputs.a)
        ops.host_store(outputs[0], a * 2.0)
    assert [s.tensor_id for s in inputs] == ["a", "b"]
    assert inputs[1] is inputs["b"] is inputs.b and inputs[:1] == [inputs.a]
    assert isinstance(outputs.c, popxl.DeviceToHostStream) and inputs.b.shape == (3,)
    with pytest.raises(AttributeError, match="Available keys: a, b"):
        inputs.z  # noqa: B018
    with pytest.raises(KeyError, match="Available keys"):
        inputs["z"]
    again = addons.OutputStreams.from_streams([outputs.c])
    assert list(again.keys()) == ["c"] and again.c is outputs.c
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run({inputs.a: data})
    np.testing.assert_array_equal(out[outputs.c], data * 2)


def test_shard_unshard_round_trip_and_layout() -> None:
    x = np.arange(24).reshape(4, 6)
    s = am.shard(x, 3, -1)
    assert s.shape == (3, 4, 2)
    np.testing.assert_array_equal(s[1], x[:, 2:4])
    np.testing.assert_array_equal(am.unshard(s, 1), x)
    np.testing.assert_array_equal(am.unshard(s, -1), x)
    s2 = am.shard2D(x, 2, 3, 0, 1)
    assert s2.shape == (6, 2, 2)
    np.testing.assert_array_equal(s2[4], x[2:4, 2:4])  # outer piece 1, inner piece 1
    np.testing.assert_array_equal(am.unshard2D(s2, 2, 3, 0, 1), x)
    with pytest.raises(ValueError):
        am.unshard2D(s2, 2, 2, 0, 1)


def test_repeats_pads_and_squeeze() -> None:
    x = np.array([[1, 2], [3, 4]])
    np.testing.assert_array_equal(am.repeat(x, 2, 1), [[[1, 2], [1, 2]], [[3, 4], [3, 4]]])
    np.testing.assert_array_equal(am.repeat_axis(x, 2, 1), [[1, 2, 1, 2], [3, 4, 3, 4]])
    v = np.arange(6)
    np.testing.assert_array_equal(am.repeat_shard(v, 2, 3, 0, "contiguous"),
                                  [[0, 1], [2, 3], [4, 5], [0, 1], [2, 3], [4, 5]])
    np.testing.assert_array_equal(am.repeat_shard(v, 2, 3, 0, "strided"),
                                  [[0, 1], [0, 1], [2, 3], [2, 3], [4, 5], [4, 5]])
    with pytest.raises(ValueError, match="contiguous"):
        am.repeat_shard(v, 2, 3, 0, "diagonal")  # type: ignore[arg-type]
    np.testing.assert_array_equal(am.pad_axis(x, 3, 0, value=9), [[1, 2], [3, 4], [9, 9]])
    assert am.squeeze_safe(np.zeros((1, 3, 1)), [0, 1, -1]).shape == (3,)
    assert am.squeeze_safe(np.zeros((1, 3, 1)), 1).shape == (1, 3, 1)
    assert am.handle_negative_axis(np.zeros((2, 2, 2)), -1) == 2
    with pytest.raises(IndexError):
        am.handle_negative_axis(np.zeros((2, 2)), 2)


def test_tensor_parallel_input_and_output_are_inverse() -> None:
    samples = np.arange(8).reshape(8, 1)
    laid = am.tensor_parallel_input(samples, tp=2, rf=4)
    assert laid.shape == (4, 4, 1)
    np.testing.assert_array_equal(laid[0, :, 0], [0, 0, 1, 1])
    shifted = am.tensor_parallel_input(samples, 2, 4, repeat_fn=lambda a, i: a + 100 * i)
    np.testing.assert_array_equal(shifted[0, :, 0], [0, 100, 1, 101])
    back = am.tensor_parallel_output(laid, 4, tp=2, rf=4, data_shape=(1,))
    np.testing.assert_array_equal(back, samples)
    with pytest.raises(ValueError, match="divide"):
        am.tensor_parallel_input(samples, 3, 4)


def test_seed_variable_one_seed_per_group_loaded_on_chip() -> None:
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        var, seed = addons.seed_variable(11, ir.replica_grouping(group_size=2))
        assert var.shape == (2,) and seed.shape == (2,) and seed.dtype == popxl.uint32
        stream = popxl.d2h_stream(seed.shape, seed.dtype)
        ops.host_store(stream, seed)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()[stream]
        stored = session.get_tensor_data(var)
    expected = popxl.create_seeds(11, replicas=2)
    assert out.shape == (4, 2)
    # replicas 0,1 form group 0 and replicas 2,3 group 1
    np.testing.assert_array_equal(out, expected[[0, 0, 1, 1]])
    np.testing.assert_array_equal(stored, expected)


def test_named_replica_grouping_helpers(monkeypatch: pytest.MonkeyPatch) -> None:
    from profcompare.emulator.popxl_addons import named_replica_grouping as nrg

    ir = popxl.Ir(replication=8)
    with ir.main_graph:
        wide = ir.replica_grouping(stride=2, group_size=4)
        assert nrg.fill_none_group(None, wide) is wide and nrg.fill_none_group(wide, None) is wide
        assert not nrg.is_cross_instance(wide)  # one instance holds all 8 replicas
        assert nrg.get_instance_replica_grouping(wide) is wide
        monkeypatch.setenv("POPLAR_TARGET_OPTIONS", '{"ipuLinkDomainSize": "4"}')
        assert nrg.get_ild_size_from_popdist() == 4 and nrg.is_cross_ild(wide)
        local = nrg.get_ild_replica_grouping(wide)
        assert (local.stride, local.group_size) == (2, 2)
        # popxl stores stride 1 for groups of one replica, so a wide stride needs groups of two.
        monkeypatch.setenv("POPLAR_TARGET_OPTIONS", '{"ipuLinkDomainSize": "2"}')
        with pytest.raises(ValueError, match="Link Domain"):
            nrg.get_ild_replica_grouping(ir.replica_grouping(stride=4, group_size=2))
        monkeypatch.delenv("POPLAR_TARGET_OPTIONS")
        assert nrg.get_ild_size_from_popdist() == 8
        groups = nrg.NamedReplicaGrouping.build_groups(["a.w", "b"], wide)
        assert groups.a.w is wide and groups.b is wide
    monkeypatch.setenv("PROFCOMPARE_SIM_ADDONS", "3.0")
    assert not hasattr(nrg, "get_ild_replica_grouping")


def test_all_gather_replica_sharded_graph_restores_the_full_tensor() -> None:
    from profcompare.emulator.popxl_addons import rts

    data = np.arange(6, dtype=np.float32)
    ir = popxl.Ir(replication=2)
    with ir.main_graph:
        full = popxl.variable(data, name="full")
        shard = ops.collectives.replica_sharded_slice(full)
        plain = popxl.variable(np.ones(2, np.float32), name="plain")
        tensors = addons.NamedTensors.from_dict({"b.shard": shard, "a": plain})
        graph, names = rts.all_gather_replica_sharded_graph(tensors)
        assert names == ["a", "b.shard"]
        gathered = addons.NamedTensors.pack(names, graph.bind(tensors).call())
        stream = popxl.d2h_stream((6,), popxl.float32)
        ops.host_store(stream, gathered.b.shard)
        assert gathered.a.shape == (2,)  # unsharded inputs pass through
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()[stream]
    np.testing.assert_array_equal(out, np.stack([data, data]))


def test_named_variable_factories_replica_groupings() -> None:
    ir = popxl.Ir(replication=4)
    with ir.main_graph:
        pairs = ir.replica_grouping(group_size=2)
        _, f_w = addons.variable_factory.add_variable_input("w", lambda: np.zeros(2, np.float32),
                                                            replica_grouping=pairs)
        _, f_b = addons.variable_factory.add_variable_input("b", lambda: np.zeros(2, np.float32))
        groups = addons.NamedVariableFactories.from_dict({"l.w": f_w, "l.b": f_b}).replica_groupings
    assert groups.l.w is pairs and groups.l.b.group_size == 4


def test_function_outlines_once_per_compatible_arguments() -> None:
    @addons.function
    def scaled_sum(a: popxl.Tensor, b: popxl.Tensor) -> popxl.Tensor:
        return a * 2.0 + b

    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.array([1.0, 2.0], np.float32))
        b = popxl.variable(np.array([10.0, 20.0], np.float32))
        (first,) = scaled_sum(a, b)
        (second,) = scaled_sum(first, b)
        (other,) = scaled_sum(popxl.variable(np.ones(3, np.float32)), popxl.variable(np.ones(3, np.float32)))
        stream = addons.host_store(second)
    calls = [op.attrs["called_graph"] for op in ir.main_graph._ops if op.type == "Call"]
    assert len(calls) == 3 and calls[0] is calls[1] and calls[2] is not calls[0]
    assert addons.argument_hash([a, b]) == addons.argument_hash([b, a])  # same specs
    assert addons.bound_arguments(lambda x, y=3: None, 1) == {"x": 1, "y": 3}
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()[stream]
    np.testing.assert_allclose(out, [(1 * 2 + 10) * 2 + 10, (2 * 2 + 20) * 2 + 20])
    assert other.shape == (3,)
