"""Ledger attribution by the data's lineage, worked out by hand on a tiny phased program.

Two layers, weights ``layer.{0,1}.weight`` [3, 3] float32 (36 B) in one remote buffer with an
entry per layer, their momentum ``layer.{0,1}.momentum`` in another, and a gradient buffer of
no variable (popxl-addons' gradient buffers hold no variable either). A repeat runs the layers,
its loop counter ``n`` (``n + 1`` each iteration) choosing the entry:

- layer(n): w = load(weights, n); dW (autodiff) accumulated into ``ops.init`` zeros (an
  accumulator that is no variable), a norm of dW (a scalar) streamed to the host, the
  accumulator mean-all-reduced over the replicas and stored into the gradient buffer at n;
- optimizer(n): w, m, g loaded at n; m <- moving average of g; w <- w - 0.1 m; w, m stored at n.

What each tensor is follows from where its data comes from and goes to, never from its name:
the momentum of layer i updates only layer i's weight (the loop counter is followed through
the repeat), the gradient and its accumulator go only to the gradient buffer, whose entries
feed the updates of the weights; the norm is a summary (a scalar), not a destination of dW.
A staged weight or momentum holds one layer per iteration, so each iteration's row is that
layer's; what the repeat body computes (the gradient, the accumulator) is one tensor of the
body's graph for every layer, so its rows belong to the layers' family ``layer.*.weight``.
"""

from __future__ import annotations

import numpy as np
import pytest

from profcompare.emulator import popxl
from profcompare.emulator.compile import compile_program
from profcompare.emulator.compile.attribution import family, trace
from profcompare.emulator.lowering import lower
from profcompare.emulator.popxl import ops

from .compile_stages import compile_stages


def _fwd(x, w):  # type: ignore[no-untyped-def]
    return x @ w


def _build(norm_to_host: bool = True) -> popxl.Ir:
    ir = popxl.Ir()
    ir.replication_factor = 2
    with ir.main_graph, popxl.in_sequence(True):
        img = popxl.h2d_stream((4, 3), popxl.float32, "image")
        norm_stream = popxl.d2h_stream((), popxl.float32, "norm")
        wbuf = popxl.remote_buffer((3, 3), popxl.float32, 2)
        mbuf = popxl.remote_buffer((3, 3), popxl.float32, 2)
        gbuf = popxl.remote_buffer((3, 3), popxl.float32, 2)
        for i in range(2):
            popxl.remote_variable(np.zeros((3, 3), np.float32), wbuf, i, name=f"layer.{i}.weight")
            popxl.remote_variable(np.zeros((3, 3), np.float32), mbuf, i, name=f"layer.{i}.momentum")
        fwd = ir.create_graph(_fwd, popxl.TensorSpec((4, 3), popxl.float32), popxl.TensorSpec((3, 3), popxl.float32))
        info = popxl.transforms.autodiff(fwd, grads_required=[fwd.inputs[1]])

        def layer(n, x):  # type: ignore[no-untyped-def]
            w = ops.remote_load(wbuf, n)
            call = ops.call_with_info(fwd, x, w)
            (dw,) = ops.call(info.graph, call.outputs[0], inputs_dict=info.inputs_dict(call))
            acc = ops.init((3, 3), popxl.float32, "accum", "zero")
            ops.var_updates.accumulate_(acc, dw)
            norm = ops.sum(dw * dw)
            if norm_to_host:
                ops.host_store(norm_stream, norm)
            ops.remote_store(gbuf, n, ops.collectives.replicated_all_reduce(acc, "mean"))
            return n + 1

        def optimizer(n):  # type: ignore[no-untyped-def]
            w, m, g = (ops.remote_load(buf, n) for buf in (wbuf, mbuf, gbuf))
            ops.var_updates.accumulate_moving_average_(m, g, f=0.9)
            ops.scaled_add_(w, m, b=-0.1)
            ops.remote_store(wbuf, n, w)
            ops.remote_store(mbuf, n, m)
            return n + 1

        x = ops.host_load(img)
        n0 = popxl.constant(0, popxl.int32, name="layer_index")
        ops.repeat(ir.create_graph(layer, n0, x), 2, n0, x)
        n1 = popxl.constant(0, popxl.int32, name="layer_index")
        ops.repeat(ir.create_graph(optimizer, n1), 2, n1)
    return ir


@pytest.fixture(scope="module")
def program():  # type: ignore[no-untyped-def]
    return lower(_build(), "ipu_hw")


@pytest.fixture(scope="module")
def report(program):  # type: ignore[no-untyped-def]
    return compile_program(program).report


def test_the_loop_counter_gives_each_layers_state_its_own_weight(program) -> None:  # type: ignore[no-untyped-def]
    steps, _storage, _inst = compile_stages(program)
    provenance = trace(program, steps)
    by_name = {program.tensors[v].name: p for v, p in provenance.parameter_of_variable.items()}
    # iteration i loads entry i of both buffers: the momentum updates its own layer's weight only
    assert by_name == {"layer.0.weight": "layer.0.weight", "layer.1.weight": "layer.1.weight",
                       "layer.0.momentum": "layer.0.weight", "layer.1.momentum": "layer.1.weight"}


def test_buffers_by_their_entries(report) -> None:  # type: ignore[no-untyped-def]
    buffers = report.remote_buffers
    rows = list(zip(buffers["name"], buffers["entries"], buffers["bytes"], buffers["parameter"],
                    buffers["role"].astype(str), buffers["which"]))
    assert rows == [
        ("layer.0.weight", 2, 72, "layer.*.weight", "weight", ""),
        # the moving average's accumulated input: the first moment
        ("layer.0.momentum", 2, 72, "layer.*.weight", "optimizer_state", "first_order"),
        # no variable: its entries feed the weights' updates, what is stored is a reduced accumulator
        ("remote_buffer_3", 2, 72, "layer.*.weight", "gradient", ""),
    ]


def test_gradient_accumulator_and_staging_rows(report) -> None:  # type: ignore[no-untyped-def]
    v = report.variables
    names = v["name"].astype(str).str.replace(r"@\d+$", "", regex=True)
    got = {n: set(zip(g["parameter"], g["role"].astype(str))) for n, g in v.groupby(names.to_numpy())}
    layer = next(n.split("/")[0] for n in got if n.endswith("/accum"))
    opt = next(n.split("/")[0] for n in got if "optimizer" in n and n.endswith("_remote_load"))
    # the gradient autodiff makes, inside the gradient graph and as the call's output
    assert got["_fwd_subgraph(0)_bwd/Gradient___w"] == {("layer.*.weight", "gradient")}
    assert got[f"{layer}/Gradient___w"] == {("layer.*.weight", "gradient")}
    # ops.init zeros accumulating it: an accumulator, and its mean over the replicas a gradient
    assert got[f"{layer}/accum"] == {("layer.*.weight", "accumulator")}
    assert got[f"{layer}/accum_all_reduce"] == {("layer.*.weight", "gradient")}
    # staged weights and momenta: each iteration's row holds its own layer's (the loop counter),
    # the staged gradient (a buffer of no variable) the layers' family
    rows = dict(zip(v["name"].astype(str), zip(v["parameter"], v["role"].astype(str))))
    for i in (1, 2):
        assert rows[f"{layer}/id_1_offset_n_remote_load@{i}"] == (f"layer.{i - 1}.weight", "remote_staging")
        assert rows[f"{opt}/id_1_offset_n_remote_load@{i}"] == (f"layer.{i - 1}.weight", "remote_staging")
        assert rows[f"{opt}/id_2_offset_n_remote_load@{i}"] == (f"layer.{i - 1}.weight", "remote_staging")
        assert rows[f"{opt}/id_3_offset_n_remote_load@{i}"] == ("layer.*.weight", "remote_staging")
    # activations stay activations of no parameter: the layer's output, dW * dW, the norm
    for name in (f"{layer}/matmul_out", f"{layer}/mul_out", f"{layer}/sum_out", "_fwd_subgraph(0)/matmul_out"):
        assert got[name] == {("", "activation")}, name
    # nothing of the ledger is unattributed but the loop counters and constants
    unattributed = v[(v["parameter"] == "") & (v["role"].astype(str) == "other")]
    assert set(unattributed["kind"].astype(str)) == {"constant"}


def test_a_gradient_streamed_to_the_host_is_nobodys() -> None:
    """Destinations decide: with dW itself streamed to the host as well as accumulated, its
    data goes to P and to the host, so it is no parameter's (the accumulator still is)."""

    ir = popxl.Ir()
    with ir.main_graph, popxl.in_sequence(True):
        img = popxl.h2d_stream((4, 3), popxl.float32, "image")
        out = popxl.d2h_stream((3, 3), popxl.float32, "dw")
        w = popxl.variable(np.zeros((3, 3), np.float32), name="fc.weight")
        fwd = ir.create_graph(_fwd, popxl.TensorSpec((4, 3), popxl.float32), w.spec)
        info = popxl.transforms.autodiff(fwd, grads_required=[fwd.inputs[1]])
        call = ops.call_with_info(fwd, ops.host_load(img), w)
        (dw,) = ops.call(info.graph, call.outputs[0], inputs_dict=info.inputs_dict(call))
        acc = ops.init((3, 3), popxl.float32, "accum", "zero")
        ops.var_updates.accumulate_(acc, dw)
        ops.host_store(out, dw)
        ops.scaled_add_(w, acc, b=-0.1)
    v = compile_program(lower(ir, "ipu_hw")).report.variables
    rows = dict(zip(v["name"].astype(str), zip(v["parameter"], v["role"].astype(str))))
    assert rows["Gradient___w"] == ("", "gradient")
    assert rows["accum"] == ("fc.weight", "accumulator")


@pytest.mark.parametrize(("names", "expected"), [
    (["decoder.0.attention.qkv.weight"], "decoder.0.attention.qkv.weight"),
    (["decoder.0.attention.qkv.weight", "decoder.1.attention.qkv.weight",
      "decoder.27.attention.qkv.weight"], "decoder.*.attention.qkv.weight"),
    (["stage.0.layer.1.w", "stage.1.layer.0.w"], "stage.*.layer.*.w"),
    (["layer.0.weight", "layer.0.bias"], ""),  # differing in a name, not an index
    (["layer.0.weight", "layer.0.weight.extra"], ""),
    (["layer.0.weight", ""], ""),
    ([], ""),
])
def test_family(names: list[str], expected: str) -> None:
    assert family(names) == expected
