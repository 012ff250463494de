"""popxl.transforms.io_tile_exchange and decompose_sum on the simulator, and the Tensor operators
popxl maps onto ops (T_, transpose_, &, |, ~, %, **)."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops

from .run_program import run


def _io_program(body) -> tuple[popxl.Ir, list]:
    ir = popxl.Ir()
    ir.num_io_tiles = 32
    with ir.main_graph:
        buf = popxl.remote_buffer((2, 3), popxl.float32, 1)
        x = popxl.variable(np.arange(6, dtype=np.float32).reshape(2, 3))
        created: list = []
        handle = ir.main_graph.register_op_created_hook(created.append)
        body(buf, x)
        ir.main_graph.remove_op_created_hook(handle)
    return ir, created


def test_independent_transfers_merge_and_run_on_the_io_tiles() -> None:
    def body(buf, x):
        stream = popxl.h2d_stream((2, 3), popxl.float32, "in")
        with popxl.transforms.io_tile_exchange():
            loaded = ops.host_load(stream)
            ops.remote_store(buf, 0, x)
        return loaded

    ir, created = _io_program(body)
    kinds = [op.type for op in created]
    assert kinds == ["Init", "HostLoad", "RemoteStore"]
    assert all(op.attrs.get("tile_set") == "io" for op in created)
    assert len({op.attrs["merge_exchange"] for op in created}) == 1


def test_a_transfer_reading_another_leaves_two_ops() -> None:
    def body(buf, x):
        stream = popxl.h2d_stream((2, 3), popxl.float32, "in")
        with popxl.transforms.io_tile_exchange():
            loaded = ops.host_load(stream)
            ops.remote_store(buf, 0, loaded)

    with pytest.raises(RuntimeError, match=r"More than one Op remained after `io_tile_exchange`(.|\n)*HostLoad"):
        _io_program(body)


def test_compute_in_the_block_leaves_it_next_to_the_merged_transfer() -> None:
    def body(buf, x):
        with popxl.transforms.io_tile_exchange():
            ops.remote_store(buf, 0, x + 1.0)

    with pytest.raises(RuntimeError, match=r"Add \(add\)(.|\n)*MultiExchange of 1"):
        _io_program(body)


def test_verify_overlap_false_keeps_whatever_remains() -> None:
    def body(buf, x):
        with popxl.transforms.io_tile_exchange(verify_overlap=False):
            ops.remote_store(buf, 0, x + 1.0)

    _, created = _io_program(body)
    assert [op.type for op in created] == ["Add", "RemoteStore"]


def test_a_single_compute_op_passes() -> None:
    (y,) = run(lambda x: _in_io_exchange(lambda: x * 3.0), np.array([1.0, -2.0], np.float32))
    np.testing.assert_array_equal(y, np.array([3.0, -6.0], np.float32))


def _in_io_exchange(fn):
    with popxl.transforms.io_tile_exchange():
        return fn()


def test_decompose_sum_returns_the_graph_and_keeps_the_gradient_sum() -> None:
    def fwd(x: popxl.Tensor) -> popxl.Tensor:
        return x * x + x * 2.0 + ops.sin(x)  # x used three times: three gradient partials

    x0 = np.array([0.5, -1.25, 2.0], np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        graph = ir.create_graph(fwd, popxl.TensorSpec((3,), popxl.float32))
        info = popxl.transforms.autodiff(graph)
        assert popxl.transforms.decompose_sum(info.graph) is info.graph
        x = popxl.variable(x0)
        call = ops.call_with_info(graph, x)
        (dx,) = ops.call(info.graph, popxl.constant(np.ones(3, np.float32)), inputs_dict=info.inputs_dict(call))
        s = popxl.d2h_stream((3,), popxl.float32, "dx")
        ops.host_store(s, dx)
    with popxl.Session(ir, "cpu") as session:
        got = session.run()[s]
    np.testing.assert_allclose(got, 2 * x0 + 2.0 + np.cos(x0), rtol=1e-6)
    with pytest.raises(TypeError, match="needs a popxl.Graph"):
        popxl.transforms.decompose_sum("graph")


def test_transpose_in_place_aliases_the_tensor() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)

    def body(x):
        t = x.T_
        assert t.shape == (3, 2)
        u = x.transpose_((1, 0))
        ops.add_(u, popxl.constant(np.ones((3, 2), np.float32)))  # writes through to x
        return x

    (y,) = run(body, a)
    np.testing.assert_array_equal(y, a + 1)


def test_logical_and_arithmetic_operators() -> None:
    p = np.array([True, False, True, False])
    q = np.array([True, True, False, False])
    got = run(lambda a, b: (a & b, a | b, ~a, a & True, False | b), p, q)
    for value, want in zip(got, (p & q, p | q, ~p, p & True, False | q)):
        np.testing.assert_array_equal(value, want)
    x = np.array([5.5, -5.5, 2.0], np.float32)
    got = run(lambda t: (t % 2.0, 7.0 % t, t ** 2.0, 2.0 ** t), x)
    np.testing.assert_allclose(got[0], np.fmod(x, 2.0))  # sign of the dividend, as C fmod
    np.testing.assert_allclose(got[1], np.fmod(7.0, x))
    np.testing.assert_allclose(got[2], x ** 2)
    np.testing.assert_allclose(got[3], 2.0 ** x, rtol=1e-6)
