"""Module, variable factories, graph cache and print_schedule."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops


class Linear(addons.Module):
    def __init__(self, out_features: int) -> None:
        super().__init__()
        self.out_features = out_features

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w = self.add_variable_input(
            "weight", partial(np.random.normal, 0, 0.02, (x.shape[-1], self.out_features)), x.dtype
        )
        b = self.add_variable_input("bias", partial(np.zeros, self.out_features), x.dtype)
        return x @ w + b


class TwoLayer(addons.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = Linear(6)
        self.fc2 = Linear(3)

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        return self.fc2(ops.gelu(self.fc1(x)))


class Scale(addons.Module):
    @popxl.in_sequence()
    def build(self, var: popxl.TensorByRef, grad: popxl.Tensor, *, lr: float) -> None:
        state = self.add_variable_input("state", partial(np.zeros, var.shape), popxl.float32, by_ref=True)
        ops.var_updates.accumulate_(state, grad)
        ops.scaled_add_(var, state, b=-lr)


def test_submodule_names_scopes_and_orders() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        facts, graph = TwoLayer().create_graph(popxl.TensorSpec((2, 4), popxl.float32))
        variables = facts.init()
    assert list(facts.to_dict()) == ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"]
    assert [t.name for t in graph.args.tensors] == ["fc1/bias", "fc1/weight", "fc2/bias", "fc2/weight"]
    assert graph.args.fc1.weight.shape == (4, 6) and graph.args.fc2.bias.shape == (3,)
    # graph inputs: the data input first, then the variable inputs in build order
    assert [t.name for t in graph.graph.inputs] == ["x", "fc1/weight", "fc1/bias", "fc2/weight", "fc2/bias"]
    assert [t.name for t in variables.tensors] == ["fc1.bias", "fc1.weight", "fc2.bias", "fc2.weight"]
    assert all(t.dtype == popxl.float32 for t in variables.tensors)


def test_random_init_draws_twice_per_weight_in_build_order() -> None:
    np.random.seed(42)
    ir = popxl.Ir()
    with ir.main_graph:
        facts, _ = TwoLayer().create_graph(popxl.TensorSpec((2, 4), popxl.float32))
        variables = facts.init()
        w1, w2 = variables.fc1.weight, variables.fc2.weight
    np.random.seed(42)
    np.random.normal(0, 0.02, (4, 6))  # the factory's test call
    expected_w1 = np.random.normal(0, 0.02, (4, 6))  # the peeked value = first init
    np.random.normal(0, 0.02, (6, 3))
    expected_w2 = np.random.normal(0, 0.02, (6, 3))
    with popxl.Session(ir, "ipu_model") as session:
        data = session.get_tensors_data([w1, w2])
    np.testing.assert_array_equal(data[w1], expected_w1.astype(np.float32))
    np.testing.assert_array_equal(data[w2], expected_w2.astype(np.float32))


def test_create_graph_twice_gives_fresh_inputs_and_same_keys() -> None:
    ir = popxl.Ir()
    net = TwoLayer()
    with ir.main_graph:
        facts_a, graph_a = net.create_graph(popxl.TensorSpec((2, 4), popxl.float32))
        facts_b, graph_b = net.create_graph(popxl.TensorSpec((5, 4), popxl.float32))
    assert graph_a.graph != graph_b.graph
    assert list(facts_a.to_dict()) == list(facts_b.to_dict())
    assert graph_b.args.fc1.weight in graph_b.graph.inputs
    assert graph_a.args.fc1.weight not in graph_b.graph.inputs


def test_cache_reuses_graphs_per_spec_and_value() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.zeros((3, 2), np.float32), name="a")
        b = popxl.variable(np.zeros((3, 2), np.float32), name="b")
        c = popxl.variable(np.zeros((5,), np.float32), name="c")
        opt = Scale(cache=True)
        _, ga = opt.create_graph(a, a.spec, lr=0.1)
        _, gb = opt.create_graph(b, b.spec, lr=0.1)
        _, gc = opt.create_graph(c, c.spec, lr=0.1)
        _, gd = opt.create_graph(a, a.spec, lr=0.2)
        uncached = Scale()
        _, ge = uncached.create_graph(a, a.spec, lr=0.1)
        _, gf = uncached.create_graph(a, a.spec, lr=0.1)
    assert ga.graph == gb.graph
    assert len({ga.graph, gc.graph, gd.graph}) == 3
    assert ge.graph != gf.graph


def test_cached_graph_updates_every_bound_variable() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.ones((3,), np.float32), name="a")
        b = popxl.variable(np.full((3,), 5.0, np.float32), name="b")
        grad = popxl.constant(np.full((3,), 2.0, np.float32))
        opt = Scale(cache=True)
        for var in (a, b):
            facts, graph = opt.create_graph(var, grad.spec, lr=0.5)
            graph.bind(facts.init()).call(var, grad)
    with popxl.Session(ir, "ipu_model") as session:
        session.run()
        data = session.get_tensors_data([a, b])
    np.testing.assert_allclose(data[a], np.zeros(3))
    np.testing.assert_allclose(data[b], np.full(3, 4.0))


def test_replica_sharded_variable_input_has_shard_shape_and_full_factory() -> None:
    ir = popxl.Ir()
    ir.replication_factor = 4

    class Sharded(addons.Module):
        def build(self, x: popxl.Tensor) -> popxl.Tensor:
            return self.add_replica_sharded_variable_input("m", partial(np.arange, 24.0), popxl.float32)

    with ir.main_graph:
        facts, graph = Sharded().create_graph(popxl.TensorSpec((1,), popxl.float32))
    factory = facts.m
    assert graph.args.m.shape == (6,) and graph.args.m.meta_shape == (24,)
    assert factory.shape == (6,) and factory.meta_shape == (24,)
    assert factory.next_data().shape == (24,)


def test_print_schedule_is_readable() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        _, graph = TwoLayer().create_graph(popxl.TensorSpec((2, 4), popxl.float32))
    text = graph.print_schedule()
    lines = text.splitlines()
    assert lines[0] == f"Graph : {graph.graph.name}"
    assert lines[1].startswith("  (%1 [(2, 4) float32], fc1.weight=%2 [(4, 6) float32], fc1.bias=%3 [(6,) float32]")
    assert lines[1].endswith(") {") and lines[-1] == "  }"
    op_lines = lines[2:-1]
    assert len(op_lines) == len(graph.graph.ops)
    assert any(line.strip().startswith("MatMul.") and "[(4, 6) float32]" in line for line in op_lines)
    assert any(line.strip().startswith("Gelu.") for line in op_lines)


def test_outside_the_subset_names_the_api() -> None:
    with pytest.raises(NotImplementedError, match="popxl_addons.phased_execution"):
        addons.phased_execution  # noqa: B018
