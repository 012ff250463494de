"""popxl behaviour the documentation states: modified call inputs, autodiff of a graph that is
already called, nested Session contexts, CallOp's meta_shape check, replica_sharded_variable."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops
from profcompare.emulator.popxl.execution import gelu_tanh, gelu_tanh_grad


@pytest.fixture(autouse=True)
def _no_autoreport(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POPLAR_ENGINE_OPTIONS", raising=False)


def _increment_program(mark_modified: bool) -> tuple[popxl.Ir, popxl.DeviceToHostStream]:
    """The popxl user guide's call_with_info example: a graph adds 1 to its input in place."""
    ir = popxl.Ir()

    def increment_fn(x: popxl.Tensor) -> None:
        value = popxl.graph_input(x.shape, x.dtype, "value")
        ops.var_updates.copy_var_update_(x, x + value)

    with ir.main_graph, popxl.in_sequence():
        x = popxl.variable(1)
        value1 = popxl.constant(1)
        increment_graph = ir.create_graph(increment_fn, x)
        info = ops.call_with_info(increment_graph, x, value1)
        if mark_modified:
            info.set_parent_input_modified(x)
        stream = popxl.d2h_stream(x.shape, x.dtype, name="output_stream")
        ops.host_store(stream, x)
    return ir, stream


def test_set_parent_input_modified_lets_the_update_reach_the_parent() -> None:
    ir, stream = _increment_program(mark_modified=True)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    assert int(outputs[stream]) == 2  # the user guide: "the value of the variable tensor x is changed to 2"


def test_without_set_parent_input_modified_the_call_works_on_a_copy() -> None:
    ir, stream = _increment_program(mark_modified=False)
    with popxl.Session(ir, "ipu_model") as session:
        outputs = session.run()
    assert int(outputs[stream]) == 1


def test_autodiff_of_a_graph_that_already_has_a_call_site() -> None:
    ir = popxl.Ir()
    host_x = np.array([0.5, 1.0, -2.0, 3.0], np.float32)

    def f(x: popxl.Tensor) -> popxl.Tensor:
        return ops.gelu(ops.gelu(x))

    with ir.main_graph, popxl.in_sequence():
        g = ir.create_graph(f, popxl.TensorSpec((4,), popxl.float32))
        x = popxl.variable(host_x, popxl.float32)
        fwd_info = ops.call_with_info(g, x)  # called before it is differentiated
        grad_info = popxl.transforms.autodiff(g)
        assert len(fwd_info.outputs) == len(g.outputs) == 2  # the call site gained the activation
        (dx,) = ops.call(grad_info.graph, popxl.constant(np.ones(4, np.float32)),
                         inputs_dict=grad_info.inputs_dict(fwd_info))
        stream = popxl.d2h_stream((4,), popxl.float32, "dx")
        ops.host_store(stream, dx)
    with popxl.Session(ir, "ipu_model") as session:
        out = session.run()[stream]
    np.testing.assert_allclose(out, gelu_tanh_grad(gelu_tanh(host_x)) * gelu_tanh_grad(host_x), rtol=1e-6)


def test_a_nested_with_session_is_a_no_op() -> None:
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence():
        v = popxl.variable(np.zeros(3, np.float32), name="v")
        ops.var_updates.accumulate_(v, popxl.constant(np.ones(3, np.float32)))
    session = popxl.Session(ir, "ipu_model")
    with session:
        session.run()
        with session:  # already attached: no weights_from_host (the device value survives)
            assert session.is_attached
            session.run()
        assert session.is_attached  # the inner exit does not detach
        session.run()
    assert not session.is_attached
    np.testing.assert_array_equal(session.get_tensor_data(v), np.full(3, 3.0, np.float32))


def test_an_exception_leaves_the_host_weights_unchanged() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        v = popxl.variable(np.zeros(2, np.float32), name="v")
        ops.var_updates.accumulate_(v, popxl.constant(np.ones(2, np.float32)))
    session = popxl.Session(ir, "ipu_model")
    with pytest.raises(RuntimeError, match="boom"), session:
        session.run()
        raise RuntimeError("boom")
    assert not session.is_attached
    np.testing.assert_array_equal(session.get_tensor_data(v), np.zeros(2, np.float32))  # no weights_to_host


def test_call_refuses_a_full_tensor_for_a_sharded_input() -> None:
    ir = popxl.Ir(replication=2)

    def f(t: popxl.Tensor) -> popxl.Tensor:
        return t + t

    with ir.main_graph:
        full = popxl.variable(np.zeros(4, np.float32))
        shard_spec = popxl.TensorSpec((2,), popxl.float32, meta_shape=(4,))
        g = ir.create_graph(f, shard_spec)
        same_shape = popxl.variable(np.zeros(2, np.float32))
        with pytest.raises(ValueError, match=r"CallOp input \(@0\) does not match callee input tensor \(@0\)"):
            ops.call(g, same_shape)  # the shapes agree, the meta_shapes do not (popart CallOp::setup)
        with pytest.raises(ValueError, match="does not match"):
            ops.call(g, full)
        (out,) = ops.call(g, ops.collectives.replica_sharded_slice(full))
        assert out.shape == (2,)


def test_replica_sharded_variable_holds_one_shard_per_replica() -> None:
    replicas = 2
    data = np.arange(6, dtype=np.float32).reshape(2, 3)
    ir = popxl.Ir(replication=replicas)
    with ir.main_graph, popxl.in_sequence():
        full, shard = popxl.replica_sharded_variable(data, popxl.float32, "w")
        assert shard.shape == (3,) and shard.meta_shape == (2, 3) and full.shape == (2, 3)
        assert not isinstance(shard, popxl.Variable)
        ops.scaled_add_(shard, popxl.constant(np.ones(3, np.float32)), b=10.0)
        gathered = ops.collectives.replicated_all_gather(shard)
        stream = popxl.d2h_stream(gathered.shape, gathered.dtype, "gathered")
        ops.host_store(stream, gathered)
    session = popxl.Session(ir, "ipu_model")
    with session:
        out = session.run()[stream]
        np.testing.assert_array_equal(out[0], data + 10.0)  # every replica updated its own shard
        with pytest.raises(TypeError):
            session.get_tensor_data(shard)  # the shard is not a Variable
        session.write_variable_data(full, np.zeros((2, 3), np.float32))  # WeightsFromHost reloads it
        np.testing.assert_array_equal(session.run()[stream][1], np.full((2, 3), 10.0, np.float32))
    np.testing.assert_array_equal(session.get_tensor_data(full), np.full((2, 3), 10.0, np.float32))
    # lowered: the shard is on-chip state (storage "variable", shard shape, meta_shape full);
    # the full variable lives in its buffer: one shard per replica in Streaming Memory
    program = lower(ir, "ipu_hw")
    records = {t.name: t for t in program.tensors.values()}
    assert (records["w_rts"].storage, records["w_rts"].shape, records["w_rts"].meta_shape) == ("variable", (3,), (2, 3))
    assert records["w"].storage == "remote"
    (buffer,) = program.remote_buffers
    assert buffer.shape == (3,) and buffer.meta_shape == (2, 3) and buffer.entries == 1
