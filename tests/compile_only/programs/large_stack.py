"""A stack of LAYERS linear layers of SIZE x SIZE float32 weights on REPLICAS replicas, written as
popxl-addons programs are: weights from init partials, momenta in a remote buffer created with
``init_remote(empty=True)``, a training-style update, ``weights_to_host`` on exit.

Usage: python large_stack.py LAYERS SIZE REPLICAS (run through ``profcompare.sim``)."""

import sys
from functools import partial

import numpy as np
import popxl
import popxl_addons as addons
from popxl import ops


class Linear(addons.Module):
    def build(self, x):
        w = self.add_variable_input("weight", partial(np.random.normal, 0, 0.02, (x.shape[-1], x.shape[-1])), x.dtype)
        return ops.matmul(x, w)


def main(layers: int, size: int, replicas: int) -> None:
    ir = popxl.Ir()
    ir.replication_factor = replicas
    with ir.main_graph:
        x_stream = popxl.h2d_stream((8, size), popxl.float32, "x")
        y_stream = popxl.d2h_stream((8, size), popxl.float32, "y")
        facts, graph = Linear().create_graph(popxl.TensorSpec((8, size), popxl.float32))
        weights = [facts.init(f"layer{i}") for i in range(layers)]
        buffers = addons.named_variable_buffers(facts, entries=layers, shard_over_dict=False)
        for i in range(layers):
            facts.init_remote(buffers, i, f"momentum{i}", empty=True)
        load, names = addons.load_remote_graph(buffers, entries=layers)
        store = addons.store_remote_graph(buffers, entries=layers)
        with popxl.in_sequence(True):
            h = ops.host_load(x_stream, "x")
            for layer in weights:
                (h,) = graph.bind(layer).call(h)
            ops.host_store(y_stream, h)
            for i, layer in enumerate(weights):
                momentum = addons.NamedTensors.pack(names, load.call(i))
                ops.scaled_add_(momentum.weight, layer.weight, a=0.9)
                ops.scaled_add_(layer.weight, momentum.weight, b=-0.01)
                store.bind(momentum).call(i)
    session = popxl.Session(ir, "ipu_hw")
    with session:
        for _ in range(2):
            out = session.run({x_stream: np.ones((replicas, 8, size), np.float32)})
    print("output", out[y_stream].shape, out[y_stream].dtype, float(np.abs(out[y_stream]).sum()))


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:4]))
