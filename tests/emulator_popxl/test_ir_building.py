"""Building IRs: ids, names, scopes, shapes, dtypes, graphs, calls, ordering, unsupported API."""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.popxl import ops


def test_tensor_ids_names_scopes_and_t_suffix() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.zeros((2, 3)), name="w")
        b = popxl.variable(np.zeros((2, 3)), name="w")
        with popxl.name_scope("fc1"), popxl.name_scope("inner"):
            c = popxl.constant(1.0, name="k")
        d = popxl.constant(2.0)
    assert a.id == "w" and a.name == "w"
    assert b.id.startswith("w__t") and b.id != a.id
    assert c.id == "fc1/inner/k"
    assert d.id == "t"
    # float64 data is downcast to float32, python ints to int32
    assert a.dtype == popxl.float32 and a.shape == (2, 3) and a.rank == 2 and a.nelms == 6
    assert a.meta_shape == () and not a.meta_shape
    assert a.spec == popxl.TensorSpec((2, 3), popxl.float32)


def test_subgraph_ids_are_graph_scoped_and_graph_inputs_follow_signature() -> None:
    ir = popxl.Ir()

    def body(x: popxl.Tensor, w: popxl.TensorByRef, scale: float, ys: list[popxl.Tensor]) -> popxl.Tensor:
        extra = popxl.graph_input((3,), popxl.float32, "extra")
        w += extra
        return x * scale + ys[0] + ys[1]

    with ir.main_graph:
        spec = popxl.TensorSpec((3,), popxl.float32, meta_shape=(12,))
        g = ir.create_graph(body, spec, spec, 2.0, [spec, spec])
        g2 = ir.create_graph(body, spec, spec, 3.0, [spec, spec])
    qualname = body.__qualname__.replace(".<locals>", "")
    assert qualname.endswith(".body")
    assert g.id == f"{qualname}_subgraph(0)" and g2.id == f"{qualname}_subgraph(1)"
    assert [t.name for t in g.inputs] == ["x", "w", "ys_0", "ys_1", "extra"]
    assert g.inputs[0].id == f"{qualname}_subgraph(0)/x"
    assert g.inputs[0].meta_shape == (12,)
    assert list(g._by_ref_inputs) == [g.inputs[1]]
    assert len(g.outputs) == 1 and g.outputs[0] in g


def test_variable_only_in_main_graph_and_streams_always_in_main_graph() -> None:
    ir = popxl.Ir()
    made = {}

    def body(x: popxl.Tensor) -> popxl.Tensor:
        with pytest.raises(ValueError, match="main graph"):
            popxl.variable(np.zeros(3))
        made["stream"] = popxl.h2d_stream((3,), popxl.float32, "in")
        return x + 1.0

    with ir.main_graph:
        g = ir.create_graph(body, popxl.TensorSpec((3,), popxl.float32))
    assert made["stream"].tensor_id == "in"
    assert ir.main_graph.get_tensor("in").graph is ir.main_graph
    # the python scalar became a constant of x's dtype inside the subgraph
    consts = g.constants
    assert len(consts) == 1 and consts[0].dtype == popxl.float32 and consts[0].id.startswith(g.id + "/")


def test_operators_shapes_and_dtypes() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        x = popxl.variable(np.zeros((4, 3), np.float16), name="x")
        w = popxl.variable(np.zeros((3, 5), np.float16), name="w")
        y = x @ w
        assert y.shape == (4, 5) and y.dtype == popxl.float16 and y.id == "matmul_out"
        z = y + popxl.constant(np.zeros(5, np.float16))
        assert z.shape == (4, 5)
        assert (x * 2).dtype == popxl.float16
        assert (-x).shape == (4, 3)
        assert (x - 1).shape == (4, 3) and (x / 2).shape == (4, 3) and (1 - x).shape == (4, 3)
        assert x.T.shape == (3, 4) and x.transpose((1, 0)).shape == (3, 4)
        r = x.reshape((-1,))
        assert r.shape == (12,) and r.id == "x_reshaped"
        assert x.flatten().shape == (12,)
        assert x.detach().shape == (4, 3)
        before = x
        x += popxl.constant(np.ones((4, 3), np.float16))
        assert x is before
        assert ops.cast(x, popxl.float32).id == "x_float32"
        with pytest.raises(ValueError, match="at most one -1"):
            x.reshape((-1, -1))
        with pytest.raises(ValueError, match="cannot reshape"):
            x.reshape((5, 3))
        with pytest.raises(TypeError, match="same dtype"):
            ops.add(x, popxl.constant(np.zeros(3, np.float32)))
        with pytest.raises(ValueError, match="inner dimensions"):
            ops.matmul(x, x)


def test_in_sequence_records_ordering_constraints() -> None:
    ir = popxl.Ir()
    with ir.main_graph:
        a = popxl.variable(np.zeros(2), name="a")
        with popxl.in_sequence(True):
            o1 = ops.negate(a)
            with popxl.in_sequence(False):
                o2 = ops.negate(a)
                o3 = ops.negate(a)
            o4 = ops.negate(a)
        with popxl.in_sequence("pass"):
            ops.negate(a)
    ids = [t._producer.id for t in (o1, o2, o3, o4)]
    cons = set(ir.main_graph._topo_constraints)
    # the False block comes after o1 as a unit, o4 after both block ops, no order inside the block
    assert {(ids[0], ids[1]), (ids[0], ids[2]), (ids[1], ids[3]), (ids[2], ids[3])} <= cons
    assert (ids[1], ids[2]) not in cons and len(cons) == 4
    with pytest.raises(TypeError):
        with popxl.in_sequence(None):  # type: ignore[arg-type]
            pass


def test_in_sequence_works_as_a_decorator() -> None:
    ir = popxl.Ir()

    @popxl.in_sequence()
    def body(x: popxl.Tensor) -> popxl.Tensor:
        return ops.negate(ops.negate(x))

    with ir.main_graph:
        g = ir.create_graph(body, popxl.TensorSpec((2,), popxl.float32))
    first, second = g.ops
    assert g._topo_constraints == [(first.id, second.id)]


def test_call_with_info_maps_tensors_and_validates_inputs() -> None:
    ir = popxl.Ir()

    def body(x: popxl.Tensor, w: popxl.TensorByRef) -> popxl.Tensor:
        return x + w

    with ir.main_graph:
        g = ir.create_graph(body, popxl.TensorSpec((2,), popxl.float32), popxl.TensorSpec((2,), popxl.float32))
        x = popxl.variable(np.zeros(2), name="x")
        w = popxl.variable(np.zeros(2), name="w")
        info = ops.call_with_info(g, x, inputs_dict={g.inputs[1]: w})
        assert info.called_graph == g
        assert info.inputs == (x, w) and info.parent_input(1) == w
        assert info.graph_to_parent(g.inputs[0]) == x
        assert info.graph_to_parent(g.outputs[0]) == info.outputs[0] == info.parent_output(0)
        assert info.parent_to_graph(w) == g.inputs[1]
        assert info.outputs[0].id == "add_out"
        assert w in info.op.modified and x not in info.op.modified
        with pytest.raises(ValueError, match="Not enough inputs"):
            ops.call(g, x)
        with pytest.raises(ValueError, match="specified twice"):
            ops.call(g, x, w, inputs_dict={g.inputs[0]: x})
        with pytest.raises(ValueError, match="Too many inputs"):
            ops.call(g, x, w, x)


def test_tensor_spec_is_a_hashable_mapping() -> None:
    spec = popxl.TensorSpec((2, 3), popxl.float16, meta_shape=(24,))
    assert dict(spec) == {"shape": (2, 3), "dtype": popxl.float16, "meta_shape": (24,)}
    assert hash(spec) == hash(popxl.TensorSpec((2, 3), popxl.float16, (24,)))
    assert {spec: 1}[popxl.TensorSpec((2, 3), popxl.float16, (24,))] == 1


def test_ir_replication_and_host_transfers() -> None:
    ir = popxl.Ir(replication=2)
    assert ir.replication_factor == 2 and ir.instance_replication_factor == 2
    ir.replication_factor = 4
    ir.num_host_transfers = 8
    assert ir.num_host_transfers == 8
    rg = ir.replica_grouping()
    assert rg.group_size == 4 and rg.num_groups == 1
    assert ir.replica_grouping(group_size=2).assignment == [0, 0, 1, 1]
    assert ir.replica_grouping(stride=2, group_size=2).assignment == [0, 1, 0, 1]
    with pytest.raises(ValueError):
        ir.replication_factor = 0


def test_dtypes_convert_to_numpy() -> None:
    assert popxl.float16.as_numpy() == np.float16
    assert popxl.uint32.as_numpy() == np.uint32
    assert popxl.dtype.as_dtype(np.int32) == popxl.int32
    assert popxl.half is popxl.float16 and popxl.float32.is_floating_point and popxl.int32.is_int


def test_apis_outside_the_subset_raise_not_implemented_naming_them() -> None:
    with pytest.raises(NotImplementedError, match=r"popxl\.TileSet is not implemented by the profcompare simulator"):
        popxl.TileSet  # noqa: B018
    assert not hasattr(popxl, "TileSet")
    with pytest.raises(NotImplementedError, match=r"popxl\.ops\.collectives\.all_to_all"):
        ops.collectives.all_to_all  # noqa: B018
    with pytest.raises(NotImplementedError, match=r"popxl\.fp8_utils\.host_fp8_mse_scale_pb"):
        popxl.fp8_utils.host_fp8_mse_scale_pb(np.ones(2, np.float32), popxl.float8_143)
    with pytest.raises(NotImplementedError, match=r"popxl\.TensorLocation"):
        popxl.TensorLocation  # noqa: B018
