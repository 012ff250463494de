"""A 2-IPU pipelined MLP training program for the simulator, shaped as the program behind the real
Graph Analyser trace in shared/data (its README: popxl-addons' pipelined MNIST on 2 Mk2 IPUs).

What the trace shows of that program, and this one has: layers of 784 -> 512 -> 512 -> 512 -> 10
(GELU after the first three), micro-batch 5, 6 micro-batches per run (6 image loads per run),
3 pipeline stages -- stage 0 on IPU 0 (layers 1-2 forward, the image load), stage 1 on IPU 1
(layers 3-4 forward, the loss and its gradient, layers 4-3 backward, the label load and the loss
store), stage 2 on IPU 0 (layers 2-1 backward from stashed activations) --, recomputation in the
backward graphs, gradients accumulated over the micro-batches, then an Adam step per parameter
(one called optimizer graph per parameter) on the IPU of its layer.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops

MICRO_BATCH = 5
STEPS = 6
WIDTHS = (512, 512, 512, 10)


class Dense(addons.Module):
    """x @ w + b, then GELU unless ``last``."""

    def __init__(self, width: int, last: bool = False):
        super().__init__()
        self.width, self.last = width, last

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w = self.add_variable_input("w", partial(np.random.normal, 0.0, 0.02, (x.shape[-1], self.width)), x.dtype)
        b = self.add_variable_input("b", partial(np.zeros, (self.width,)), x.dtype)
        y = x @ w + b
        return y if self.last else ops.gelu(y)


class AdamStep(addons.Module):
    """One parameter's Adam update (moments, bias-corrected step, in-place update)."""

    @popxl.in_sequence()
    def build(self, param: popxl.TensorByRef, grad: popxl.Tensor, *, lr: float):
        m = self.add_variable_input("m", partial(np.zeros, param.shape), popxl.float16, by_ref=True)
        v = self.add_variable_input("v", partial(np.zeros, param.shape), popxl.float32, by_ref=True)
        t = self.add_variable_input("t", partial(np.zeros, ()), popxl.float32, by_ref=True)
        ops.var_updates.accumulate_moving_average_(m, grad, f=0.9)
        ops.var_updates.accumulate_moving_average_square_(v, grad, f=0.999)
        step = ops.var_updates.adam_updater(m, v, weight=param, weight_decay=0.0, time_step=t, beta1=0.9,
                                            beta2=0.999, epsilon=1e-5)
        ops.scaled_add_(param, step, b=-lr)


class Layer:
    """A layer's forward and accumulating backward graphs and their variables."""

    def __init__(self, name: str, module: addons.Module, spec: popxl.TensorSpec, input_grad: bool):
        self.name = name
        self.fwd_facts, self.fwd = module.create_graph(spec)
        wanted = (self.fwd.graph.inputs[0],) if input_grad else ()
        self.bwd_facts, self.bwd = addons.transforms.autodiff_with_accumulation(
            self.fwd, tensors_to_accumulate_grads=self.fwd.args.tensors, grads_required=wanted)
        self.bwd = addons.transforms.recompute_graph(self.bwd)
        self.params = None
        self.accum = None

    def forward(self, x: popxl.Tensor):
        self.params = self.fwd_facts.init(self.name)
        return self.fwd.bind(self.params).call_with_info(x)

    def backward(self, dy: popxl.Tensor, activations) -> tuple[popxl.Tensor, ...]:
        self.accum = self.bwd_facts.init(self.name)
        return self.bwd.bind(self.accum).call(dy, args=activations)

    def update(self, optimizer: AdamStep, lr: float) -> None:
        grads = self.accum.accum.to_dict()
        for key, param in self.params.named_tensors.items():
            facts, graph = optimizer.create_graph(param, param.spec, lr=lr)
            graph.bind(facts.init()).call(param, grads[key])
        ops.var_updates.accumulator_scale_(self.accum.mean_accum_counter, 0.0)


def pipelined_mlp_ir(micro_batch: int = MICRO_BATCH, steps: int = STEPS, lr: float = 1e-3) -> popxl.Ir:
    """The training program (see the module docstring); one run = one weight update."""
    np.random.seed(0)
    ir = popxl.Ir()
    with ir.main_graph:
        images = popxl.h2d_stream((micro_batch, 28 * 28), popxl.float32, "images")
        labels = popxl.h2d_stream((micro_batch,), popxl.int32, "labels")
        losses = popxl.d2h_stream((), popxl.float32, "losses")
        optimizer = AdamStep(cache=True)
        image_spec = popxl.TensorSpec((micro_batch, 28 * 28), popxl.float32)
        hidden_spec = popxl.TensorSpec((micro_batch, WIDTHS[0]), popxl.float32)
        with popxl.ipu(0):
            l1 = Layer("l1", Dense(WIDTHS[0]), image_spec, input_grad=False)
            l2 = Layer("l2", Dense(WIDTHS[1]), hidden_spec, input_grad=True)
        with popxl.ipu(1):
            l3 = Layer("l3", Dense(WIDTHS[2]), hidden_spec, input_grad=True)
            l4 = Layer("l4", Dense(WIDTHS[3], last=True), hidden_spec, input_grad=True)
        with popxl.in_sequence(True):
            with addons.pipelined_execution(steps) as pipe:
                with pipe.stage(0), popxl.ipu(0):
                    a1 = l1.forward(ops.host_load(images))
                    a2 = l2.forward(a1.outputs[0])
                    h = a2.outputs[0].copy_to_ipu(1)
                with pipe.stage(1), popxl.ipu(1):
                    y = ops.host_load(labels, "labels")
                    a3 = l3.forward(h)
                    a4 = l4.forward(a3.outputs[0])
                    loss, dlogits = addons.ops.cross_entropy_with_grad(a4.outputs[0], y)
                    ops.host_store(losses, loss)
                    d3, = l4.backward(dlogits, l4.bwd.grad_graph_info.inputs_dict(a4))
                    d2, = l3.backward(d3, l3.bwd.grad_graph_info.inputs_dict(a3))
                    d2 = d2.copy_to_ipu(0)
                with pipe.stage(2), popxl.ipu(0):
                    d1, = l2.backward(d2, pipe.stash_and_restore_activations(a2, l2.bwd.grad_graph_info))
                    l1.backward(d1, pipe.stash_and_restore_activations(a1, l1.bwd.grad_graph_info))
            with popxl.ipu(0):
                l1.update(optimizer, lr)
                l2.update(optimizer, lr)
            with popxl.ipu(1):
                l3.update(optimizer, lr)
                l4.update(optimizer, lr)
    ir.num_host_transfers = steps
    return ir
