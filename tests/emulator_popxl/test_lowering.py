"""lowering.lower: the LoweredProgram the compile model walks."""

from __future__ import annotations

from functools import partial

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.lowering import MAIN_GRAPH_ID, lower
from profcompare.emulator.popxl import ops
from profcompare.model import VARIABLE_KINDS


def _adam_like(var: popxl.TensorByRef, grad: popxl.Tensor, m: popxl.TensorByRef, v: popxl.TensorByRef,
               step: popxl.TensorByRef) -> None:
    ops.var_updates.accumulate_moving_average_(m, grad, f=0.9)
    ops.var_updates.accumulate_moving_average_square_(v, grad, f=0.999)
    upd = ops.var_updates.adam_updater(m, v, time_step=step, beta1=0.9, beta2=0.999)
    ops.scaled_add_(var, upd, b=-1e-3)


def _linear(x: popxl.Tensor, w: popxl.Tensor, b: popxl.Tensor) -> popxl.Tensor:
    return ops.gelu(x @ w + b)


def build(remote: bool) -> popxl.Ir:
    ir = popxl.Ir()
    ir.replication_factor = 2
    with ir.main_graph, popxl.in_sequence(True):
        img = popxl.h2d_stream((4, 3), popxl.float32, "image")
        w = popxl.variable(np.ones((3, 5), np.float32), name="fc.weight")
        b = popxl.variable(np.zeros(5, np.float32), name="fc.bias")
        acc = popxl.variable(np.zeros((3, 5), np.float32), name="accum.fc.weight")
        fwd = ir.create_graph(_linear, popxl.TensorSpec((4, 3), popxl.float32), w.spec, b.spec)
        info = popxl.transforms.autodiff(fwd, grads_required=[fwd.inputs[1]])
        x = ops.host_load(img)
        call = ops.call_with_info(fwd, x, w, b)
        (gw,) = ops.call(info.graph, call.outputs[0], inputs_dict=info.inputs_dict(call))
        ops.var_updates.accumulate_(acc, gw)
        ops.collectives.replicated_all_reduce_(acc, "mean")
        spec = w.spec
        opt = ir.create_graph(_adam_like, spec, spec, popxl.TensorSpec((3, 5), popxl.float16), spec,
                              popxl.TensorSpec((), popxl.float32))
        if remote:
            bufs = [popxl.remote_buffer((3, 5), popxl.float16), popxl.remote_buffer((3, 5), popxl.float32),
                    popxl.remote_buffer((), popxl.float32)]
            popxl.remote_variable(np.zeros((3, 5), np.float16), bufs[0], name="first_order")
            popxl.remote_variable(np.zeros((3, 5), np.float32), bufs[1], name="second_order")
            popxl.remote_variable(np.zeros((), np.float32), bufs[2], name="step")
            m, v, step = (ops.remote_load(bf, 0) for bf in bufs)
        else:
            m = popxl.variable(np.zeros((3, 5), np.float16), name="first_order")
            v = popxl.variable(np.zeros((3, 5), np.float32), name="second_order")
            step = popxl.variable(np.zeros((), np.float32), name="step")
        ops.call(opt, w, acc, m, v, step)
        if remote:
            for bf, t in zip(bufs, (m, v, step)):
                ops.remote_store(bf, 0, t)
        ops.var_updates.accumulator_zero_(acc)
    return ir


def test_kinds_storage_and_shapes_onchip() -> None:
    prog = lower(build(remote=False), "ipu_hw")
    t = prog.tensors
    assert prog.main_graph == MAIN_GRAPH_ID and prog.replicas == 2 and prog.device == "ipu_hw"
    assert {i.kind for i in t.values()} <= set(VARIABLE_KINDS)
    assert (t["fc.weight"].kind, t["fc.weight"].storage) == ("weight", "variable")
    assert t["fc.bias"].kind == "weight"
    assert t["accum.fc.weight"].kind == "accumulator"
    assert {t[n].kind for n in ("first_order", "second_order", "step")} == {"optimizer_state"}
    assert t["image"].storage == "stream" and t["image"].kind == "stream"
    bwd_outputs = [i for i in t.values() if i.name.startswith("Gradient___")]
    assert bwd_outputs and all(i.kind == "gradient" for i in bwd_outputs)
    # the in-place all-reduce's output is the accumulator itself
    collective = [i for i in t.values() if i.id.endswith("_all_reduce")]
    assert collective and collective[0].kind == "accumulator"
    assert t["image_hostload"].kind == "activation"


def test_kinds_and_buffers_offchip() -> None:
    prog = lower(build(remote=True))
    t = prog.tensors
    for name in ("first_order", "second_order", "step"):
        assert (t[name].kind, t[name].storage) == ("optimizer_state", "remote")
        assert t[name].remote_buffer is not None
    staged = [i for i in t.values() if i.id.endswith("_remote_loaded")]
    assert len(staged) == 3 and {i.kind for i in staged} == {"remote_staging"}
    assert [(b.id, b.name, b.entries, b.dtype) for b in prog.remote_buffers] == [
        (1, "first_order", 1, "float16"), (2, "second_order", 1, "float32"), (3, "step", 1, "float32")]
    assert prog.remote_buffers[0].nbytes == 15 * 2


def test_rts_remote_variable_is_lowered_with_its_shard_shape() -> None:
    ir = popxl.Ir()
    ir.replication_factor = 4
    with ir.main_graph:
        buf = popxl.replica_sharded_buffer((10,), popxl.float32)
        popxl.remote_replica_sharded_variable(np.zeros(10, np.float32), buf, name="state")
        ops.remote_load(buf, 0)
    prog = lower(ir)
    info = prog.tensors["state"]
    assert info.shape == (3,) and info.meta_shape == (10,) and info.storage == "remote"
    assert prog.remote_buffers[0].sharded and prog.remote_buffers[0].shape == (3,)


def test_schedule_expands_calls_with_enter_and_exit_and_ops_exist_once() -> None:
    ir = build(remote=False)
    prog = lower(ir)
    calls = [s for s in prog.schedule if prog.ops[s.op].type == "Call"]
    assert [s.phase for s in calls] == ["enter", "exit"] * 3
    enter = calls[0]
    inner = [s for s in prog.schedule if s.call_path == (enter.op,)]
    callee = prog.ops[enter.op].attrs["called_graph"]
    assert [s.op for s in inner] == list(prog.graphs[callee].ops)
    assert [s.index for s in prog.schedule] == list(range(len(prog.schedule)))
    call_attrs = prog.ops[enter.op].attrs
    assert list(call_attrs["inputs"].values()) == ["image_hostload", "fc.weight", "fc.bias"]
    matmul = next(o for o in prog.ops.values() if o.type == "MatMul" and o.graph == callee)
    assert matmul.flops == 2 * 4 * 3 * 5
    load = next(o for o in prog.ops.values() if o.type == "HostLoad")
    assert load.attrs["stream"] == "image" and load.attrs["aliases"] == {"image_hostload": "image_init"}
    opt_graph = prog.graphs[prog.ops[calls[-1].op].attrs["called_graph"]]
    assert len(opt_graph.by_ref_inputs) == 4
    assert [s.name for s in prog.streams] == ["image"] and prog.streams[0].direction == "h2d"


def test_create_graph_rejects_callables_without_a_qualname_like_popxl() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        with pytest.raises(TypeError, match="function or a class that extends popxl.Module"):
            ir.create_graph(partial(_linear), popxl.TensorSpec((1, 2), popxl.float32),
                            popxl.TensorSpec((2, 2), popxl.float32), popxl.TensorSpec((2,), popxl.float32))
