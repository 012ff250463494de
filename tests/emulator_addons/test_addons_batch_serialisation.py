"""popxl-addons batch serialisation on the simulator: the three io modes, buffer rows, and a
forward/gradient pair with gradient accumulation, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator import popxl_addons as addons
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl_addons.transforms.batch_serialisation import (
    RemoteHandle,
    batch_serial_buffer,
    batch_serialise,
    batch_serialise_fwd_and_grad,
)

MODES = ["compute", "io", "io_overlapped"]
RNG = np.random.default_rng(3)


class AffineScale(addons.Module):
    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        scale = self.add_variable_input("scale", lambda: np.full(x.shape, 3.0, np.float32), x.dtype)
        return x * scale + 1.0


class MatMul(addons.Module):
    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w = self.add_variable_input("w", lambda: np.zeros((3, 2), np.float32), x.dtype)
        return ops.gelu(x @ w)


def _ir() -> popxl.Ir:
    ir = popxl.Ir()
    ir._pb_ir.getSessionOptions().numIOTiles = 32
    return ir


@pytest.mark.parametrize("io_mode", MODES)
@pytest.mark.parametrize("steps", [2, 5])
def test_each_step_loads_computes_and_stores(io_mode: str, steps: int) -> None:
    ir = _ir()
    with ir.main_graph, popxl.in_sequence(True):
        h2d = popxl.h2d_stream((2, 3), popxl.float32, name="x")
        facts, graph = AffineScale().create_graph(h2d.spec)
        y = graph.graph.outputs[0]
        result = batch_serialise(graph, steps, load_handles={graph.graph.inputs[0]: h2d}, store_streams={},
                                 store_buffers={y: (batch_serial_buffer(y, steps=steps), 0)}, io_mode=io_mode)
        assert [t.name for t in result.graph.graph.inputs][:1] == ["batch_serial_loop_index"]
        result.graph.bind(facts.init()).call(0)
        buffer = result.stored_buffers[y].buffer
        d2h = popxl.d2h_stream((2, 3), popxl.float32)
        for i in range(steps):
            ops.host_store(d2h, ops.remote_load(buffer, i))
    data = RNG.normal(size=(steps, 2, 3)).astype(np.float32)
    ir.num_host_transfers = steps
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run({h2d: data})[d2h]
    np.testing.assert_allclose(out, data * 3 + 1, rtol=1e-6)


@pytest.mark.parametrize("io_mode", MODES)
def test_rows_address_their_own_entries(io_mode: str) -> None:
    steps, rows = 2, 3
    ir = _ir()
    with ir.main_graph, popxl.in_sequence(True):
        facts, graph = AffineScale().create_graph(popxl.TensorSpec((4,), popxl.float32))
        x, y = graph.graph.inputs[0], graph.graph.outputs[0]
        x_buf = batch_serial_buffer(x, steps=steps, rows=rows)
        y_buf = batch_serial_buffer(y, steps=steps, rows=rows)
        # the input is read from row 0 whatever the call's row; the output goes to the call's row
        result = batch_serialise(graph, steps, load_handles={x: RemoteHandle(x_buf, None)}, store_streams={},
                                 store_buffers={y: RemoteHandle(y_buf, 0)}, rows=rows, io_mode=io_mode)
        assert x_buf.entries == steps * rows and y_buf.entries == steps * rows
        for i in range(steps):
            ops.remote_store(x_buf, i, popxl.constant(np.full(4, i + 1.0, np.float32)))
        bound = result.graph.bind(facts.init())
        bound.call(2)  # row 2 only
        d2h = popxl.d2h_stream((4,), popxl.float32)
        for entry in range(steps * rows):
            ops.host_store(d2h, ops.remote_load(y_buf, entry))
    ir.num_host_transfers = steps * rows
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()[d2h]
    expected = np.zeros((steps * rows, 4), np.float32)
    expected[4] = 1 * 3 + 1  # row 2, step 0
    expected[5] = 2 * 3 + 1  # row 2, step 1
    np.testing.assert_allclose(out, expected)


@pytest.mark.parametrize("io_mode", MODES)
def test_forward_and_gradient_loops_accumulate_the_mean_gradient(io_mode: str) -> None:
    steps = 3
    xs = RNG.normal(size=(steps, 4, 3)).astype(np.float32)
    dys = RNG.normal(size=(steps, 4, 2)).astype(np.float32)
    w = RNG.normal(size=(3, 2)).astype(np.float32)
    ir = _ir()
    with ir.main_graph:
        x_h2d = popxl.h2d_stream((4, 3), popxl.float32, name="x")
        dx_d2h = popxl.d2h_stream((4, 3), popxl.float32, name="dx")
        facts, graph = MatMul().create_graph(x_h2d.spec)
        grad_facts, grad = addons.autodiff_with_accumulation(graph, graph.args.tensors,
                                                             grads_required=graph.graph.inputs[:1])
        dy_in = grad.graph.inputs[0]
        dy_buf = batch_serial_buffer(dy_in, steps=steps)
        fwd_bs, grad_bs = batch_serialise_fwd_and_grad(
            graph, grad, graph.args, steps,
            load_handles={graph.graph.inputs[0]: x_h2d, dy_in: (dy_buf, 0)},
            store_streams={grad.graph.outputs[0]: dx_d2h}, store_buffers={}, io_mode=io_mode)
        assert grad_bs.graph.grad_graph_info.forward_graph is graph.graph
        weights = facts.init()
        grad_vars = grad_facts.init()
        grad_vars.update(weights)
        with popxl.in_sequence():
            for i in range(steps):
                ops.remote_store(dy_buf, i, popxl.constant(dys[i]))
            fwd_bs.graph.bind(weights).call(0)
            grad_bs.graph.bind(grad_vars).call(0)
    ir.num_host_transfers = steps
    session = popxl.Session(ir, "ipu_model")
    session.write_variable_data(weights.w, w)
    with session:
        dx = session.run({x_h2d: xs})[dx_d2h]
        dw = session.get_tensor_data(grad_vars.get("accum.w"))

    def gelu_grad(z: np.ndarray) -> np.ndarray:
        c = np.sqrt(2 / np.pi)
        t = np.tanh(c * (z + 0.044715 * z ** 3))
        return 0.5 * (1 + t) + 0.5 * z * (1 - t ** 2) * c * (1 + 3 * 0.044715 * z ** 2)

    dz = dys * gelu_grad(xs @ w)
    np.testing.assert_allclose(dx, dz @ w.T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dw, np.mean([xs[i].T @ dz[i] for i in range(steps)], axis=0), rtol=1e-4, atol=1e-5)


def test_bad_arguments_are_refused() -> None:
    ir = popxl.Ir()  # no I/O tiles
    with ir.main_graph:
        h2d = popxl.h2d_stream((2, 3), popxl.float32)
        _, graph = AffineScale().create_graph(h2d.spec)
        loads = {graph.graph.inputs[0]: h2d}
        with pytest.raises(ValueError, match="IO tiles"):
            batch_serialise(graph, 2, loads, {}, {}, io_mode="io")
        with pytest.raises(ValueError, match="io_mode"):
            batch_serialise(graph, 2, loads, {}, {}, io_mode="fast")
        with pytest.raises(ValueError, match="rows"):
            batch_serialise(graph, 2, loads, {}, {}, rows=0, io_mode="compute")


def test_row_offset_function_maps_the_call_row() -> None:
    steps, rows = 2, 3
    ir = _ir()
    with ir.main_graph, popxl.in_sequence(True):
        facts, graph = AffineScale().create_graph(popxl.TensorSpec((2,), popxl.float32))
        x, y = graph.graph.inputs[0], graph.graph.outputs[0]
        x_buf = batch_serial_buffer(x, steps=steps, rows=rows)
        y_buf = batch_serial_buffer(y, steps=steps, rows=rows)
        # read the call's row, write the next one
        result = batch_serialise(graph, steps, load_handles={x: RemoteHandle(x_buf, 0)}, store_streams={},
                                 store_buffers={y: RemoteHandle(y_buf, lambda row: row + 1)}, rows=rows,
                                 io_mode="compute")
        for entry in range(steps * rows):
            ops.remote_store(x_buf, entry, popxl.constant(np.full(2, entry, np.float32)))
        result.graph.bind(facts.init()).call(1)
        d2h = popxl.d2h_stream((2,), popxl.float32)
        for entry in range(steps * rows):
            ops.host_store(d2h, ops.remote_load(y_buf, entry))
    ir.num_host_transfers = steps * rows
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()[d2h][:, 0]
    # row 1 (entries 2, 3) computed, written to row 2 (entries 4, 5)
    np.testing.assert_allclose(out, [0, 0, 0, 0, 2 * 3 + 1, 3 * 3 + 1])
