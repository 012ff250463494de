"""autodiff and autodiff_with_accumulation: structure, running mean and counter reset."""

from __future__ import annotations

from functools import partial

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops


class Affine(addons.Module):
    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w = self.add_variable_input("weight", partial(np.random.default_rng(1).normal, 0, 1, (3, 2)), x.dtype)
        b = self.add_variable_input("bias", partial(np.zeros, 2), x.dtype)
        return x @ w + b


def test_accumulation_graph_structure() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        _, fwd = Affine().create_graph(popxl.TensorSpec((4, 3), popxl.float32))
        facts, bwd = addons.autodiff_with_accumulation(fwd, fwd.args.tensors)
        accumulators = facts.init()
    assert list(facts.to_dict()) == ["mean_accum_counter", "accum.bias", "accum.weight"]
    assert facts.mean_accum_counter.shape == () and facts.accum.weight.shape == (3, 2)
    assert bwd.graph.outputs == ()  # every accumulated gradient output is removed
    assert set(bwd.args.to_dict()) == set(facts.to_dict())
    assert [t.name for t in accumulators.tensors] == ["accum.bias", "accum.weight", "mean_accum_counter"]
    assert bwd.grad_graph_info.graph == bwd.graph


def test_plain_autodiff_outputs_gradients_in_required_order() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        _, fwd = Affine().create_graph(popxl.TensorSpec((4, 3), popxl.float32))
        bwd = addons.autodiff(fwd, grads_required=[fwd.args.weight, fwd.args.bias])
    assert [t.shape for t in bwd.graph.outputs] == [(3, 2), (2,)]
    assert bwd.args.to_dict() == {}


def test_running_mean_and_counter_reset() -> None:
    rng = np.random.default_rng(3)
    xs = [rng.normal(size=(4, 3)).astype(np.float32) for _ in range(4)]
    dy = rng.normal(size=(4, 2)).astype(np.float32)
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        fwd_facts, fwd = Affine().create_graph(popxl.TensorSpec((4, 3), popxl.float32))
        facts, bwd = addons.autodiff_with_accumulation(fwd, fwd.args.tensors)
        variables = fwd_facts.init()
        accum = facts.init()
        bound_fwd, bound_bwd = fwd.bind(variables), bwd.bind(accum)
        dy_t = popxl.constant(dy)
        for x in xs[:3]:
            info = bound_fwd.call_with_info(popxl.constant(x))
            bound_bwd.call(dy_t, args=bwd.grad_graph_info.inputs_dict(info))
        after_three = addons.host_store(accum.accum.weight + 0.0)
        counter_three = addons.host_store(accum.mean_accum_counter + 0.0)
        ops.var_updates.accumulator_scale_(accum.mean_accum_counter, 0.0)
        info = bound_fwd.call_with_info(popxl.constant(xs[3]))
        bound_bwd.call(dy_t, args=bwd.grad_graph_info.inputs_dict(info))
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()
        bias_after_reset = session.get_tensors_data([accum.accum.bias])[accum.accum.bias]
    expected_mean = np.mean([x.T @ dy for x in xs[:3]], axis=0)
    np.testing.assert_allclose(out[after_three], expected_mean, rtol=1e-5, atol=1e-6)
    assert float(out[counter_three]) == 3.0
    # counter reset to 0: the next call overwrites the accumulator with the new gradient
    np.testing.assert_allclose(bias_after_reset, dy.sum(axis=0), rtol=1e-5, atol=1e-6)
