"""popxl.ops.collectives beyond the core four: replicated_slice, all_reduce (and its identical-
inputs variants) across the IPUs of a replica, CommGroup; gradients of all-gather, local
reduce-scatter, replicated_slice and all_reduce as PopART defines them; the lowering's records."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops

R = 4
DATA = np.arange(R * 4 * 6, dtype=np.float32).reshape(R, 4, 6)  # per replica (4, 6)


def run_replicated(build, data: np.ndarray, replicas: int = R) -> list[np.ndarray]:
    """Build ``build(x)`` over a host-loaded (per-replica) input; every returned output, per replica."""
    ir = popxl.Ir()
    ir.replication_factor = replicas
    with ir.main_graph, popxl.in_sequence(True):
        stream = popxl.h2d_stream(data.shape[1:], popxl.float32, "x")
        ys = build(ops.host_load(stream))
        ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
        outs = []
        for y in ys:
            s = popxl.d2h_stream(y.shape, y.dtype, "y")
            ops.host_store(s, y)
            outs.append(s)
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run({stream: data})
    return [result[s] for s in outs]


def test_replicated_slice_takes_each_replicas_part() -> None:
    (a0,) = run_replicated(lambda x: ops.collectives.replicated_slice(x, 0), DATA)
    assert a0.shape == (R, 6)
    # axis 0 of length 4 over 4 replicas: one row each, the axis dropped
    np.testing.assert_array_equal(a0, np.stack([DATA[r, r] for r in range(R)]))
    # axis 1 of length 6 does not divide by 4
    ir = popxl.Ir()
    ir.replication_factor = R
    with ir.main_graph:
        v = popxl.variable(np.zeros((4, 6), np.float32))
        with pytest.raises(ValueError, match="Replicated slice must equally divide axis"):
            ops.collectives.replicated_slice(v, 1)


def test_replicated_slice_with_a_group_and_inner_axis() -> None:
    data = np.arange(4 * 3 * 4, dtype=np.float32).reshape(4, 3, 4)

    def build(x: popxl.Tensor) -> popxl.Tensor:
        group = popxl.gcg().ir.replica_grouping(group_size=2)
        return ops.collectives.replicated_slice(x, axis=-1, group=group)

    (y,) = run_replicated(build, data)
    assert y.shape == (4, 3, 2)
    for r in range(4):
        rank = r % 2
        np.testing.assert_array_equal(y[r], data[r][:, 2 * rank:2 * rank + 2])


def test_all_gather_and_replicated_slice_gradients_follow_popart() -> None:
    """The gradient of an all-gather is this replica's own part of the gradient (a local
    reduce-scatter, as PopART makes it), and that of replicated_slice is an all-gather."""
    ir = popxl.Ir()
    ir.replication_factor = R
    with ir.main_graph, popxl.in_sequence(True):
        g1 = ir.create_graph(lambda t: ops.collectives.replicated_all_gather(t, axis=1, output_shape="concat"),
                             popxl.TensorSpec((2, 3), popxl.float32))
        g2 = ir.create_graph(lambda t: ops.collectives.replicated_slice(t, 1),
                             popxl.TensorSpec((2, 8), popxl.float32))
        outs = []
        for graph, dshape in ((g1, (2, 12)), (g2, (2, 2))):
            info = popxl.transforms.autodiff(graph)
            s_in = popxl.h2d_stream(dshape, popxl.float32, "dy")
            dy = ops.host_load(s_in)
            (dx,) = ops.call(info.graph, dy)
            s = popxl.d2h_stream(dx.shape, dx.dtype, "dx")
            ops.host_store(s, dx)
            outs.append((s_in, s))
    up1 = np.arange(R * 24, dtype=np.float32).reshape(R, 2, 12)
    up2 = np.arange(R * 4, dtype=np.float32).reshape(R, 2, 2)
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run({outs[0][0]: up1, outs[1][0]: up2})
    d1, d2 = result[outs[0][1]], result[outs[1][1]]
    for r in range(R):
        np.testing.assert_array_equal(d1[r], up1[r][:, 3 * r:3 * r + 3])
        np.testing.assert_array_equal(d2[r], np.concatenate(list(up2), axis=1))


def test_reduce_scatter_gradient_only_for_the_local_slice() -> None:
    ir = popxl.Ir()
    ir.replication_factor = R
    with ir.main_graph:
        g = ir.create_graph(lambda t: ops.collectives.replicated_reduce_scatter(t, "add"),
                            popxl.TensorSpec((10,), popxl.float32))
        with pytest.raises(NotImplementedError, match="replicated_reduce_scatter\\(op='add'\\)"):
            popxl.transforms.autodiff(g)
        g2 = ir.create_graph(lambda t: ops.collectives.replica_sharded_slice(t),
                             popxl.TensorSpec((2, 5), popxl.float32))
        info = popxl.transforms.autodiff(g2)
        assert info.graph.outputs[0].shape == (2, 5)


def test_all_reduce_across_ipus_and_identical_variants() -> None:
    a = np.array([1.0, 2.0, 3.0], np.float32)
    b = np.array([10.0, 20.0, 30.0], np.float32)
    ir = popxl.Ir()
    with ir.main_graph:
        with popxl.ipu(0):
            x = popxl.variable(a)
        with popxl.ipu(1):
            y = popxl.variable(b)
        plain = ops.collectives.all_reduce([x, y], ipus=[0, 1])
        ident = ops.collectives.all_reduce_identical_inputs([x, y], ipus=[0, 1])
        grad_ident = ops.collectives.all_reduce_identical_grad_inputs([x, y], [0, 1], "max")
        outs = []
        for t in (*plain, *ident, *grad_ident):
            s = popxl.d2h_stream(t.shape, t.dtype, "o")
            ops.host_store(s, t)
            outs.append(s)
        with pytest.raises(ValueError, match="does not equal number of specified IPUs"):
            ops.collectives.all_reduce([x, y], ipus=[0])
        with pytest.raises(ValueError, match="Not a valid op"):
            ops.collectives.all_reduce([x, y], [0, 1], "median")
    with popxl.Session(ir, "ipu_model") as session:
        result = session.run()
    got = [result[s] for s in outs]
    for v in got[:2]:
        np.testing.assert_array_equal(v, a + b)
    np.testing.assert_array_equal(got[2], a)
    np.testing.assert_array_equal(got[3], b)
    for v in got[4:]:
        np.testing.assert_array_equal(v, np.maximum(a, b))


@pytest.mark.parametrize("variant,expected", [
    ("all_reduce", "sum"), ("all_reduce_identical_inputs", "sum"), ("all_reduce_identical_grad_inputs", "own")])
def test_all_reduce_gradients(variant: str, expected: str) -> None:
    fn = getattr(ops.collectives, variant)
    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        spec = popxl.TensorSpec((3,), popxl.float32)
        graph = ir.create_graph(lambda p, q: fn([p, q], [0, 1])[1], spec, spec)  # only output 1 is used
        info = popxl.transforms.autodiff(graph)
        dy = popxl.constant(np.array([1.0, 2.0, 3.0], np.float32))
        grads = ops.call(info.graph, dy)
        outs = []
        for g in grads:
            s = popxl.d2h_stream(g.shape, g.dtype, "g")
            ops.host_store(s, g)
            outs.append(s)
    with popxl.Session(ir, "cpu") as session:
        result = session.run()
    dp, dq = (result[s] for s in outs)
    # only output 1 has a gradient: an all-reduce of the gradients gives it to both inputs,
    # an identity gradient only to input 1
    np.testing.assert_array_equal(dq, [1, 2, 3])
    np.testing.assert_array_equal(dp, [1, 2, 3] if expected == "sum" else [0, 0, 0])


def test_comm_group() -> None:
    g = ops.collectives.CommGroup()
    assert g.type is ops.collectives.CommGroupType.All and g.replicaGroupSize == 0
    assert ops.collectives.CommGroup(ops.collectives.CommGroupType.Consecutive, 2).replicaGroupSize == 2
    with pytest.raises(TypeError):
        ops.collectives.CommGroup("All", 2)  # type: ignore[arg-type]


def test_lowering_of_replicated_slice_and_all_reduce() -> None:
    ir = popxl.Ir()
    ir.replication_factor = R
    with ir.main_graph:
        v = popxl.variable(np.ones((8, 2), np.float32), name="w")
        s = ops.collectives.replicated_slice(v, 0)
        outs = ops.collectives.all_reduce([v, v], [0, 0])
    program = lower(ir)
    rs = [op for op in program.ops.values() if op.type == "ReplicatedReduceScatter"]
    assert len(rs) == 1 and rs[0].attrs["op"] == "local" and rs[0].attrs["rts"] is False
    assert rs[0].attrs["group_size"] == R
    assert program.tensors[s.id].shape == (2, 2)
    ar = next(op for op in program.ops.values() if op.type == "AllReduce")
    assert ar.flops == 16 and ar.attrs["group_size"] == 2
    assert program.tensors[outs[0].id].kind == "collective_buffer"
