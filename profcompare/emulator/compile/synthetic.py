"""Hand-built LoweredPrograms: a small builder and a synthetic MLP training program.

Used by the tests and benchmarks of the compile model, independent of the popxl emulator.
The MLP mirrors the structure of the MNIST tutorial programs (shared/reference/popxl.md 3):
per micro-batch a host load, an outlined forward graph, a loss, an outlined backward graph
accumulating gradients; then gradient all-reduce (or reduce-scatter with replica-sharded
state), one outlined Adam graph per parameter shape, optionally with the optimiser state in
Streaming Memory (remote buffers, loaded and stored one variable at a time), all-gather of
updated shards and zeroing of the accumulators.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from profcompare.emulator.program import (
    ExecStep,
    GraphInfo,
    LoweredProgram,
    OpInfo,
    RemoteBufferInfo,
    StreamInfo,
    TensorInfo,
)


@dataclass
class _Graph:
    id: str
    name: str
    ops: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    by_ref: list[str] = field(default_factory=list)


class ProgramBuilder:
    """Builds a LoweredProgram op by op; ``build()`` derives the call-expanded schedule."""

    def __init__(self, replicas: int = 1, num_host_transfers: int = 1) -> None:
        self.replicas = replicas
        self.num_host_transfers = num_host_transfers
        self.tensors: dict[str, TensorInfo] = {}
        self.ops: dict[str, OpInfo] = {}
        self.graphs: dict[str, _Graph] = {"main": _Graph("main", "main")}
        self.remote_buffers: list[RemoteBufferInfo] = []
        self.streams: list[StreamInfo] = []
        self._n = 0

    def _uid(self, stem: str) -> str:
        self._n += 1
        return f"{stem}__{self._n}"

    def graph(self, name: str) -> str:
        """Create a subgraph; returns its id."""
        gid = self._uid(name)
        self.graphs[gid] = _Graph(gid, name)
        return gid

    def tensor(self, name: str, shape: Sequence[int], dtype: str = "float32", *, kind: str = "activation",
               storage: str = "intermediate", graph: str = "main", meta_shape: Sequence[int] = (),
               remote_buffer: int | None = None) -> str:
        """Add a tensor; returns its id."""
        tid = self._uid(f"{graph}/{name}")
        self.tensors[tid] = TensorInfo(tid, name, graph, tuple(int(d) for d in shape), dtype, kind, storage,
                                       tuple(meta_shape), remote_buffer)
        return tid

    def variable(self, name: str, shape: Sequence[int], dtype: str = "float32", *, kind: str = "weight",
                 meta_shape: Sequence[int] = ()) -> str:
        """Add an on-chip variable of the main graph (always live)."""
        return self.tensor(name, shape, dtype, kind=kind, storage="variable", meta_shape=meta_shape)

    def graph_input(self, graph: str, name: str, shape: Sequence[int], dtype: str = "float32", *,
                    kind: str = "activation", by_ref: bool = False) -> str:
        """Add an input tensor to a subgraph."""
        tid = self.tensor(name, shape, dtype, kind=kind, graph=graph)
        self.graphs[graph].inputs.append(tid)
        if by_ref:
            self.graphs[graph].by_ref.append(tid)
        return tid

    def graph_output(self, graph: str, tid: str) -> None:
        """Mark ``tid`` as an output of ``graph``."""
        self.graphs[graph].outputs.append(tid)

    def op(self, type_: str, inputs: Sequence[str], outputs: Sequence[tuple[str, Sequence[int], str]] = (), *,
           modified: Sequence[str] = (), flops: int = 0, attrs: Mapping[str, Any] | None = None,
           graph: str = "main", name: str | None = None, kind: str = "activation") -> tuple[str, ...]:
        """Add an op creating ``outputs`` (name, shape, dtype); returns the new output ids."""
        out_ids = tuple(self.tensor(n, s, d, kind=kind, graph=graph) for n, s, d in outputs)
        oid = self._uid(f"{graph}/{type_}")
        self.ops[oid] = OpInfo(oid, graph, type_, name or f"{self.graphs[graph].name}/{type_}_{self._n}",
                               tuple(inputs), out_ids, tuple(modified), int(flops), dict(attrs or {}))
        self.graphs[graph].ops.append(oid)
        return out_ids

    def call(self, called: str, inputs: Sequence[str], *, graph: str = "main",
             output_kinds: Sequence[str] | None = None) -> tuple[str, ...]:
        """Call ``called`` with parent tensors ``inputs`` (positional); returns new parent outputs.

        By-ref graph inputs mark their parent tensors modified at the call site.
        """
        g = self.graphs[called]
        if len(inputs) != len(g.inputs):
            raise ValueError(f"graph {g.name} takes {len(g.inputs)} inputs, got {len(inputs)}")
        in_map = dict(zip(g.inputs, inputs))
        kinds = list(output_kinds or [])
        outs = []
        for i, gout in enumerate(g.outputs):
            info = self.tensors[gout]
            k = kinds[i] if i < len(kinds) else info.kind
            outs.append((info.name, info.shape, info.dtype, k))
        out_ids = tuple(self.tensor(n, s, d, kind=k, graph=graph) for n, s, d, k in outs)
        modified = tuple(p for gi, p in in_map.items() if gi in g.by_ref)
        oid = self._uid(f"{graph}/Call")
        self.ops[oid] = OpInfo(oid, graph, "Call", f"{self.graphs[graph].name}/call({g.name})_{self._n}",
                               tuple(inputs), out_ids, modified, 0,
                               {"called_graph": called, "inputs": in_map, "outputs": dict(zip(g.outputs, out_ids))})
        self.graphs[graph].ops.append(oid)
        return out_ids

    def repeat(self, called: str, count: int, inputs: Sequence[str], *, graph: str = "main") -> tuple[str, ...]:
        """Repeat ``called`` ``count`` times (a lowered ``ops.repeat``: a Call with program "Repeat");
        output i is carried to input i between iterations. Returns the new parent outputs."""
        out_ids = self.call(called, inputs, graph=graph)
        oid = next(o for o in reversed(self.graphs[graph].ops) if self.ops[o].type == "Call")
        g = self.graphs[called]
        op = self.ops[oid]
        attrs = {**op.attrs, "program": "Repeat", "repeat_count": int(count),
                 "loop_carried": tuple(zip(g.outputs, g.inputs))}
        self.ops[oid] = OpInfo(op.id, op.graph, op.type, op.name, op.inputs, op.outputs, op.modified, op.flops, attrs)
        return out_ids

    def remote_buffer(self, name: str, shape: Sequence[int], dtype: str, entries: int = 1,
                      meta_shape: Sequence[int] = ()) -> int:
        """Add a remote buffer; returns its id."""
        bid = len(self.remote_buffers) + 1
        self.remote_buffers.append(RemoteBufferInfo(bid, name, tuple(shape), dtype, entries, tuple(meta_shape)))
        return bid

    def stream(self, name: str, direction: str, shape: Sequence[int], dtype: str = "float32") -> str:
        """Add a host stream; returns its name."""
        self.streams.append(StreamInfo(name, direction, tuple(shape), dtype))
        return name

    def _expand(self, graph: str, path: tuple[str, ...], out: list[ExecStep]) -> None:
        for oid in self.graphs[graph].ops:
            op = self.ops[oid]
            if op.type == "Call":
                out.append(ExecStep(len(out), oid, path, "enter"))
                for it in range(int(op.attrs.get("repeat_count", 1))):
                    if it:
                        out.append(ExecStep(len(out), oid, path, "iterate"))
                    self._expand(op.attrs["called_graph"], path + (oid,), out)
                out.append(ExecStep(len(out), oid, path, "exit"))
            else:
                out.append(ExecStep(len(out), oid, path, ""))

    def build(self) -> LoweredProgram:
        """The LoweredProgram with the schedule of one run of the main graph."""
        schedule: list[ExecStep] = []
        self._expand("main", (), schedule)
        graphs = {g.id: GraphInfo(g.id, g.name, tuple(g.ops), tuple(g.inputs), tuple(g.outputs), tuple(g.by_ref))
                  for g in self.graphs.values()}
        return LoweredProgram(self.replicas, self.num_host_transfers, "main", dict(self.tensors), dict(self.ops),
                              graphs, tuple(schedule), tuple(self.remote_buffers), tuple(self.streams))


def _nelms(shape: Sequence[int]) -> int:
    return int(np.prod(shape, dtype=np.int64)) if shape else 1


def mlp_inference_program(layers: int = 4, *, hidden: int = 512, in_features: int = 784, out_features: int = 10,
                          batch: int = 80, replicas: int = 1) -> LoweredProgram:
    """A synthetic MLP inference program: the tutorials' test session (shared/reference tutorial,
    ``test_program``): one host load of ``batch`` images, an outlined forward graph (Linear +
    GELU layers) on the variables, one host store of the logits."""
    b = ProgramBuilder(replicas=replicas, num_host_transfers=1)
    dims = [in_features] + [hidden] * (layers - 1) + [out_features]
    params: list[str] = []
    for i in range(layers):
        params.append(b.variable(f"fc{i + 1}.weight", (dims[i], dims[i + 1])))
        params.append(b.variable(f"fc{i + 1}.bias", (dims[i + 1],)))
    b.stream("image", "h2d", (batch, in_features))
    b.stream("outputs", "d2h", (batch, out_features))
    fwd = b.graph("fwd")
    x_in = b.graph_input(fwd, "x", (batch, in_features))
    p_in = [b.graph_input(fwd, b.tensors[p].name, b.tensors[p].shape, kind="weight") for p in params]
    h = x_in
    for i in range(layers):
        (mm,) = b.op("MatMul", [h, p_in[2 * i]], [(f"fc{i + 1}/matmul", (batch, dims[i + 1]), "float32")],
                     flops=2 * batch * dims[i] * dims[i + 1], graph=fwd, name=f"fwd/fc{i + 1}/matmul")
        (h,) = b.op("Add", [mm, p_in[2 * i + 1]], [(f"fc{i + 1}/add", (batch, dims[i + 1]), "float32")],
                    flops=batch * dims[i + 1], graph=fwd, name=f"fwd/fc{i + 1}/add")
        if i < layers - 1:
            (h,) = b.op("Gelu", [h], [(f"fc{i + 1}/gelu", (batch, dims[i + 1]), "float32")],
                        flops=8 * batch * dims[i + 1], graph=fwd, name=f"fwd/fc{i + 1}/gelu")
    b.graph_output(fwd, h)
    (img,) = b.op("Init", [], [("image_init", (batch, in_features), "float32")], attrs={"init_type": "undef"})
    (img_l,) = b.op("HostLoad", [img], [("image", (batch, in_features), "float32")], attrs={"stream": "image",
                                                                                            "aliases": {}})
    (logits,) = b.call(fwd, [img_l] + params)
    b.op("HostStore", [logits], attrs={"stream": "outputs"})
    return b.build()


def mlp_program(layers: int = 4, *, hidden: int = 512, in_features: int = 784, out_features: int = 10,
                micro_batch: int = 8, grad_accum: int = 1, replicas: int = 1, remote: bool = False,
                sharded: bool = False, threshold: int = 512, first_order_dtype: str = "float16",
                shard_divisible_only: bool = True) -> LoweredProgram:
    """A synthetic MLP training program (see module docstring).

    ``layers`` Linear layers (in_features -> hidden ... -> out_features) with GELU between;
    ``remote`` puts Adam state in remote buffers; ``sharded`` replica-shards every parameter
    with at least ``threshold`` elements that divides by ``replicas`` (as the tutorial does;
    ``shard_divisible_only=False`` shards the others too, zero-padded to ceil(n / replicas)).
    """
    b = ProgramBuilder(replicas=replicas, num_host_transfers=grad_accum)
    dims = [in_features] + [hidden] * (layers - 1) + [out_features]
    weights: list[str] = []
    biases: list[str] = []
    for i in range(layers):
        weights.append(b.variable(f"fc{i + 1}.weight", (dims[i], dims[i + 1])))
        biases.append(b.variable(f"fc{i + 1}.bias", (dims[i + 1],)))
    params = [p for pair in zip(weights, biases) for p in pair]
    img_stream = b.stream("image", "h2d", (micro_batch, in_features))
    lbl_stream = b.stream("labels", "h2d", (micro_batch,), "int32")
    loss_stream = b.stream("loss", "d2h", ())

    # forward graph: x, weights, biases -> logits + saved activations
    fwd = b.graph("fwd")
    x_in = b.graph_input(fwd, "x", (micro_batch, in_features))
    w_in = [b.graph_input(fwd, f"fc{i + 1}.weight", (dims[i], dims[i + 1]), kind="weight") for i in range(layers)]
    bi_in = [b.graph_input(fwd, f"fc{i + 1}.bias", (dims[i + 1],), kind="weight") for i in range(layers)]
    h = x_in
    saved: list[str] = []
    for i in range(layers):
        saved.append(h)
        (mm,) = b.op("MatMul", [h, w_in[i]], [(f"fc{i + 1}/matmul", (micro_batch, dims[i + 1]), "float32")],
                     flops=2 * micro_batch * dims[i] * dims[i + 1], graph=fwd, name=f"fwd/fc{i + 1}/matmul")
        (a,) = b.op("Add", [mm, bi_in[i]], [(f"fc{i + 1}/add", (micro_batch, dims[i + 1]), "float32")],
                    flops=micro_batch * dims[i + 1], graph=fwd, name=f"fwd/fc{i + 1}/add")
        if i < layers - 1:
            saved.append(a)
            (h,) = b.op("Gelu", [a], [(f"fc{i + 1}/gelu", (micro_batch, dims[i + 1]), "float32")],
                        flops=8 * micro_batch * dims[i + 1], graph=fwd, name=f"fwd/fc{i + 1}/gelu")
        else:
            h = a
    b.graph_output(fwd, h)
    for t in saved:
        b.graph_output(fwd, t)

    # backward graph: dlogits, saved activations, weights, accumulators (by ref)
    bwd = b.graph("bwd")
    d_in = b.graph_input(bwd, "dlogits", (micro_batch, out_features))
    saved_in = [b.graph_input(bwd, b.tensors[t].name, b.tensors[t].shape) for t in saved]
    wb_in = [b.graph_input(bwd, f"fc{i + 1}.weight", (dims[i], dims[i + 1]), kind="weight") for i in range(layers)]
    acc_w_in = [b.graph_input(bwd, f"accum.fc{i + 1}.weight", (dims[i], dims[i + 1]), kind="accumulator",
                              by_ref=True) for i in range(layers)]
    acc_b_in = [b.graph_input(bwd, f"accum.fc{i + 1}.bias", (dims[i + 1],), kind="accumulator", by_ref=True)
                for i in range(layers)]
    d = d_in
    k = len(saved_in)
    for i in reversed(range(layers)):
        if i < layers - 1:
            k -= 1
            pre = saved_in[k]
            (d,) = b.op("GeluGrad", [d, pre], [(f"fc{i + 1}/gelu_grad", (micro_batch, dims[i + 1]), "float32")],
                        flops=10 * micro_batch * dims[i + 1], graph=bwd, name=f"bwd/fc{i + 1}/gelu_grad",
                        kind="gradient")
        k -= 1
        h_i = saved_in[k]
        (db,) = b.op("ReduceSum", [d], [(f"fc{i + 1}.bias/grad", (dims[i + 1],), "float32")],
                     flops=micro_batch * dims[i + 1], graph=bwd, name=f"bwd/fc{i + 1}/bias_grad", kind="gradient")
        (h_t,) = b.op("TransposeInplace", [h_i], [(f"fc{i + 1}/input_T", (dims[i], micro_batch), "float32")],
                      graph=bwd, name=f"bwd/fc{i + 1}/transpose")
        (dw,) = b.op("MatMul", [h_t, d], [(f"fc{i + 1}.weight/grad", (dims[i], dims[i + 1]), "float32")],
                     flops=2 * micro_batch * dims[i] * dims[i + 1], graph=bwd, name=f"bwd/fc{i + 1}/weight_grad",
                     kind="gradient")
        b.op("Accumulate", [acc_w_in[i], dw], [(f"accum.fc{i + 1}.weight/alias", (dims[i], dims[i + 1]), "float32")],
             modified=[acc_w_in[i]], flops=dims[i] * dims[i + 1], graph=bwd, name=f"bwd/fc{i + 1}/accumulate_weight")
        b.op("Accumulate", [acc_b_in[i], db], [(f"accum.fc{i + 1}.bias/alias", (dims[i + 1],), "float32")],
             modified=[acc_b_in[i]], flops=dims[i + 1], graph=bwd, name=f"bwd/fc{i + 1}/accumulate_bias")
        if i > 0:
            (w_t,) = b.op("TransposeInplace", [wb_in[i]], [(f"fc{i + 1}.weight_T", (dims[i + 1], dims[i]), "float32")],
                          graph=bwd, name=f"bwd/fc{i + 1}/weight_transpose")
            (d,) = b.op("MatMul", [d, w_t], [(f"fc{i + 1}/input_grad", (micro_batch, dims[i]), "float32")],
                        flops=2 * micro_batch * dims[i] * dims[i + 1], graph=bwd, name=f"bwd/fc{i + 1}/input_grad",
                        kind="gradient")

    accums_w = [b.variable(f"accum.fc{i + 1}.weight", (dims[i], dims[i + 1]), kind="accumulator")
                for i in range(layers)]
    accums_b = [b.variable(f"accum.fc{i + 1}.bias", (dims[i + 1],), kind="accumulator") for i in range(layers)]
    accums = [a for pair in zip(accums_w, accums_b) for a in pair]

    # training loop body, unrolled over gradient accumulation
    for _ in range(grad_accum):
        (x,) = b.op("HostLoad", [], [("image", (micro_batch, in_features), "float32")], attrs={"stream": img_stream},
                    name="host_load/image", kind="stream")
        (lbl,) = b.op("HostLoad", [], [("labels", (micro_batch,), "int32")], attrs={"stream": lbl_stream},
                      name="host_load/labels", kind="stream")
        outs = b.call(fwd, [x, *weights, *biases])
        logits, acts = outs[0], outs[1:]
        loss, dlogits = b.op("NllLossWithSoftmaxGrad", [logits, lbl],
                             [("loss", (), "float32"), ("dlogits", (micro_batch, out_features), "float32")],
                             flops=10 * micro_batch * out_features, name="loss/nll_softmax_grad", kind="gradient")
        b.op("HostStore", [loss], attrs={"stream": loss_stream}, name="host_store/loss")
        b.call(bwd, [dlogits, *acts, *weights, *accums_w, *accums_b])

    def is_sharded(n: int) -> bool:
        return sharded and replicas > 1 and n >= threshold and (n % replicas == 0 or not shard_divisible_only)

    adam_graphs: dict[tuple[tuple[int, ...], bool], str] = {}

    def adam_graph(shape: tuple[int, ...], var_full: bool) -> str:
        key = (shape, var_full)
        if key in adam_graphs:
            return adam_graphs[key]
        g = b.graph(f"adam{list(shape)}")
        var = b.graph_input(g, "var", shape, kind="weight", by_ref=True)
        grad = b.graph_input(g, "grad", shape, kind="gradient")
        m = b.graph_input(g, "first_order", shape, first_order_dtype, kind="optimizer_state", by_ref=True)
        v = b.graph_input(g, "second_order", shape, kind="optimizer_state", by_ref=True)
        step = b.graph_input(g, "step", (), kind="optimizer_state", by_ref=True)
        n = _nelms(shape)
        b.op("AccumulateMovingAverage", [m, grad], [("first_order/alias", shape, first_order_dtype)], modified=[m],
             flops=3 * n, graph=g, name=f"adam{list(shape)}/first_order")
        b.op("AccumulateMovingAverageSquare", [v, grad], [("second_order/alias", shape, "float32")], modified=[v],
             flops=4 * n, graph=g, name=f"adam{list(shape)}/second_order")
        (upd,) = b.op("AdamUpdater", [m, v, step], [("updater", shape, first_order_dtype)], modified=[step],
                      flops=6 * n, graph=g, name=f"adam{list(shape)}/updater", kind="gradient")
        b.op("ScaledAddLhsInplace", [var, upd], [("var/alias", shape, "float32")], modified=[var], flops=2 * n,
             graph=g, name=f"adam{list(shape)}/scaled_add")
        adam_graphs[key] = g
        return g

    def remote_graphs(shape: tuple[int, ...], bufs: list[int], name: str) -> tuple[str, str]:
        load = b.graph(f"load_remote.{name}")
        outs = []
        for bid, (nm, dt, shp) in zip(bufs, [("first_order", first_order_dtype, shape),
                                              ("second_order", "float32", shape), ("step", "float32", ())]):
            (t,) = b.op("RemoteLoad", [], [(nm, shp, dt)], attrs={"remote_buffer": bid}, graph=load,
                        name=f"load_remote.{name}/{nm}", kind="remote_staging")
            outs.append(t)
            b.graph_output(load, t)
        store = b.graph(f"store_remote.{name}")
        for bid, (nm, dt, shp) in zip(bufs, [("first_order", first_order_dtype, shape),
                                              ("second_order", "float32", shape), ("step", "float32", ())]):
            t = b.graph_input(store, nm, shp, dt, kind="remote_staging")
            b.op("RemoteStore", [t], attrs={"remote_buffer": bid}, graph=store, name=f"store_remote.{name}/{nm}")
        return load, store

    gathers: list[tuple[str, str]] = []
    for p, acc in zip(params, accums):
        pinfo = b.tensors[p]
        n = pinfo.nelms
        full_shape = pinfo.shape
        if is_sharded(n):
            shard: tuple[int, ...] = (math.ceil(n / replicas),)
            (var_s,) = b.op("ReplicaShardedSlice", [p], [(f"{pinfo.name}/shard", shard, "float32")],
                            attrs={"op": "local", "group_size": replicas}, name=f"rts/{pinfo.name}/slice",
                            kind="weight")
            (grad,) = b.op("ReplicatedReduceScatter", [acc], [(f"{pinfo.name}/grad_shard", shard, "float32")],
                           attrs={"op": "mean", "group_size": replicas}, name=f"rts/{pinfo.name}/reduce_scatter",
                           kind="gradient")
            shape = shard
            var_arg = var_s
            meta = full_shape
        else:
            if replicas > 1:
                b.op("ReplicatedAllReduceInplace", [acc], [(f"{pinfo.name}/grad_reduced", full_shape, "float32")],
                     modified=[acc], attrs={"op": "mean", "group_size": replicas},
                     name=f"grad_reduce/{pinfo.name}")
            shape = full_shape
            var_arg = p
            grad = acc
            meta = ()
        g = adam_graph(tuple(shape), not is_sharded(n))
        if remote:
            bufs = [b.remote_buffer(f"{pinfo.name}.first_order", shape, first_order_dtype, 1, meta),
                    b.remote_buffer(f"{pinfo.name}.second_order", shape, "float32", 1, meta),
                    b.remote_buffer(f"{pinfo.name}.step", (), "float32", 1)]
            for bid, nm, dt, shp in zip(bufs, ("first_order", "second_order", "step"),
                                        (first_order_dtype, "float32", "float32"), (shape, shape, ())):
                b.tensor(f"{pinfo.name}.{nm}", shp, dt, kind="optimizer_state", storage="remote",
                         meta_shape=meta if shp else (), remote_buffer=bid)
            load, store = remote_graphs(tuple(shape), bufs, pinfo.name)
            m, v, step = b.call(load, [])
            b.call(g, [var_arg, grad, m, v, step])
            b.call(store, [m, v, step])
        else:
            m = b.variable(f"{pinfo.name}.first_order", shape, first_order_dtype, kind="optimizer_state",
                           meta_shape=meta)
            v = b.variable(f"{pinfo.name}.second_order", shape, "float32", kind="optimizer_state", meta_shape=meta)
            step = b.variable(f"{pinfo.name}.step", (), "float32", kind="optimizer_state")
            b.call(g, [var_arg, grad, m, v, step])
        if is_sharded(n):
            gathers.append((p, var_arg))
    for p, shard_t in gathers:
        pinfo = b.tensors[p]
        (full,) = b.op("ReplicatedAllGather", [shard_t], [(f"{pinfo.name}/gathered", pinfo.shape, "float32")],
                       attrs={"group_size": replicas}, name=f"rts/{pinfo.name}/all_gather", kind="weight")
        b.op("CopyVarUpdate", [p, full], [(f"{pinfo.name}/copy_alias", pinfo.shape, "float32")], modified=[p],
             flops=pinfo.nelms, name=f"rts/{pinfo.name}/copy_var_update")
    for acc in accums:
        ainfo = b.tensors[acc]
        b.op("AccumulatorScale", [acc], [(f"{ainfo.name}/zeroed", ainfo.shape, "float32")], modified=[acc],
             flops=ainfo.nelms, name=f"zero/{ainfo.name}")
    return b.build()
