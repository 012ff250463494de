"""The GPT training programs, written as popxl / popxl-addons code (the 3.4 replica-grouping API).

A decoder-only transformer (pre-layer-norm, learned positions, GELU feed-forward, untied LM
head), trained with Adam (fp32 moments, bias correction, no weight decay) and gradient
accumulation. Replicas are ``tp * dp``: replica ``r`` is tensor-parallel rank ``r % tp`` of
data-parallel rank ``r // tp``.

- Tensor parallelism (Megatron style) over the group of ``tp`` consecutive replicas: the QKV and
  first feed-forward projections are split by columns (attention heads and hidden units), the
  attention output and second feed-forward projections by rows; each block's input passes
  through ``replicated_all_reduce_identical_inputs`` (identity forward, all-reduce of the
  gradient) and its output through ``replicated_all_reduce_identical_grad_inputs`` (all-reduce
  forward, identity gradient). Sharded weights are variables of replica grouping
  ``(stride=tp, group_size=dp)``: one value per tensor-parallel rank, shared by its data-parallel
  replicas. The word embedding and the LM head are split over the vocabulary like the
  projections (rank ``t`` holds vocabulary rows ``[t * vocab / tp, (t + 1) * vocab / tp)``):
  the host shifts each rank's token ids and labels by its first row, the embedding gathers with
  ``zero_OOR`` (ids outside the shard give zero rows) and all-reduces the rows, and the loss is a
  vocabulary-sharded softmax cross-entropy (max and sum of exponentials all-reduced over the
  tensor-parallel group), so each rank holds and updates only ``vocab / tp`` rows of both
  tables and ``tokens x vocab / tp`` logits. Position embeddings and layer norms are whole on
  every replica.
- Data parallelism over the group ``(stride=tp, group_size=dp)``: accumulated gradients are
  mean-all-reduced, or, with RTS, mean-reduce-scattered so that each replica updates its shard
  of every weight with its shard of the Adam state, then all-gathers the updated weight.
- Phased execution: each phase's weights (embeddings, every decoder layer, the head) and
  gradient accumulators live in Streaming Memory (one remote buffer per named tensor, one entry
  per layer: ``named_variable_buffers``) and are loaded for the phase that uses them
  (``load_remote_graph``) and stored after (``store_remote_graph``). The forward graph of a
  decoder layer is built once and called per layer; so is its gradient graph.
- Adam state on chip (one variable per tensor and layer) or in Streaming Memory, loaded and
  stored per phase; with RTS it is sharded over the data-parallel group.
- Recompute: the decoder layer's gradient graph recomputes its forward activations from the
  layer input (``recompute_graph``), so only layer inputs stay live between forward and
  backward.

It deliberately does not use ``from __future__ import annotations``: popxl decides which graph
inputs are passed by reference from the *object* ``popxl.TensorByRef`` in ``build``'s signature.
"""

import importlib
import math
from dataclasses import dataclass
from functools import partial
from typing import Any, Dict, List, Tuple

import numpy as np

from profcompare.sdk import addons, ops, popxl

_tp_ops = importlib.import_module(addons.__name__ + ".ops.replicated_all_reduce_TP")
_named_groups = importlib.import_module(addons.__name__ + ".named_replica_grouping")

#: layer norm epsilon (GPT-2 and GPT-J use 1e-5)
LAYER_NORM_EPS = 1e-5
#: added to attention scores of future positions before the softmax (exp underflows to 0 in fp32)
MASKED_SCORE = -1e4
#: standard deviation of the normal initialisation of every weight matrix (GPT-2's)
INIT_STD = 0.02
ADAM_BETA1 = 0.9
ADAM_BETA2 = 0.999
ADAM_EPS = 1e-5


@dataclass(frozen=True)
class Layout:
    """How one variant lays the model out."""

    phased: bool  # weights and accumulators in Streaming Memory, loaded per phase
    state_offchip: bool  # Adam state in Streaming Memory
    rts: bool  # Adam state (and the update) sharded over the data-parallel group
    recompute: bool  # decoder layers recompute their activations in the backward pass


@dataclass(frozen=True)
class Shape:
    """Model and parallelism sizes."""

    layers: int
    hidden: int
    heads: int
    seq: int
    vocab: int
    micro_batch: int
    grad_accum: int
    tp: int
    dp: int

    @property
    def replicas(self) -> int:
        return self.tp * self.dp

    @property
    def tokens(self) -> int:
        return self.micro_batch * self.seq

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def ff(self) -> int:
        return 4 * self.hidden

    @property
    def vocab_shard(self) -> int:
        """Vocabulary rows of the word embedding and LM head on one tensor-parallel rank."""
        return self.vocab // self.tp


class Groups:
    """The replica groupings of a tp x dp program."""

    def __init__(self, ir: Any, shape: Shape):
        self.tp = shape.tp
        self.dp = shape.dp
        #: tensor-parallel collectives: tp consecutive replicas
        self.tp_group = ir.replica_grouping(stride=1, group_size=shape.tp)
        #: data-parallel collectives, and the grouping of tensor-parallel shards (one value per tp rank)
        self.dp_group = ir.replica_grouping(stride=shape.tp, group_size=shape.dp)


def _tp_in(x: Any, groups: Groups) -> Any:
    if groups.tp == 1:
        return x
    return _tp_ops.replicated_all_reduce_identical_inputs(x, group=groups.tp_group)


def _tp_out(x: Any, groups: Groups) -> Any:
    if groups.tp == 1:
        return x
    return _tp_ops.replicated_all_reduce_identical_grad_inputs(x, group=groups.tp_group)


class LayerNorm(addons.Module):
    """Layer norm over the last axis: ``weight`` (ones) and ``bias`` (zeros)."""

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        hidden = x.shape[-1]
        gamma = self.add_variable_input("weight", partial(np.ones, (hidden,)), x.dtype)
        beta = self.add_variable_input("bias", partial(np.zeros, (hidden,)), x.dtype)
        return ops.layer_norm(x, gamma, beta, eps=LAYER_NORM_EPS)


class ShardedLinear(addons.Module):
    """``x @ weight`` where ``weight`` (in_features, out_features) is this tensor-parallel rank's
    shard: one value per rank (replica grouping ``(stride=tp, group_size=dp)``)."""

    def __init__(self, out_features: int, groups: "Groups", rng: np.random.Generator):
        super().__init__()
        self.out_features = out_features
        self.groups = groups
        self.rng = rng

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        # the factory draws one value per replica group: each rank's shard independently
        shape = (x.shape[-1], self.out_features)
        w = self.add_variable_input("weight", partial(self.rng.normal, 0, INIT_STD, shape), popxl.float32,
                                    replica_grouping=self.groups.dp_group if self.groups.tp > 1 else None)
        return x @ w


class Embeddings(addons.Module):
    """Token and position embeddings: ``word[tokens] + position`` as (tokens, hidden). ``word``
    is this tensor-parallel rank's ``vocab / tp`` rows (token ids arrive shifted by the rank's
    first row: ids outside the shard gather zeros), all-reduced over the group."""

    def __init__(self, shape: Shape, groups: Groups, rng: np.random.Generator):
        super().__init__()
        self.shape_ = shape
        self.groups = groups
        self.rng = rng

    def build(self, tokens: popxl.Tensor) -> popxl.Tensor:
        s, g = self.shape_, self.groups
        word = self.add_variable_input("word", partial(self.rng.normal, 0, INIT_STD, (s.vocab_shard, s.hidden)),
                                       popxl.float32, replica_grouping=g.dp_group if g.tp > 1 else None)
        position = self.add_variable_input("position",
                                           partial(self.rng.normal, 0, INIT_STD, (s.seq, s.hidden)), popxl.float32)
        x = _tp_out(ops.gather(word, tokens, zero_OOR=g.tp > 1), g).reshape((s.micro_batch, s.seq, s.hidden))
        return (x + position).reshape((s.tokens, s.hidden))


class Attention(addons.Module):
    """Causal self-attention of this tensor-parallel rank's heads; its output is the rank's
    partial sum (the caller all-reduces it over the tensor-parallel group)."""

    def __init__(self, shape: Shape, groups: Groups, rng: np.random.Generator):
        super().__init__()
        self.shape_ = shape
        self.heads = shape.heads // shape.tp
        width = self.heads * shape.head_dim
        self.qkv = ShardedLinear(3 * width, groups, rng)
        self.out = ShardedLinear(shape.hidden, groups, rng)

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        s, heads = self.shape_, self.heads
        q, k, v = ops.split(self.qkv(x), 3, axis=1)
        q = q.reshape((s.micro_batch, s.seq, heads, s.head_dim)).transpose((0, 2, 1, 3))
        k = k.reshape((s.micro_batch, s.seq, heads, s.head_dim)).transpose((0, 2, 3, 1))
        v = v.reshape((s.micro_batch, s.seq, heads, s.head_dim)).transpose((0, 2, 1, 3))
        scores = (q @ k) * popxl.constant(np.float32(1.0 / math.sqrt(s.head_dim)), popxl.float32, "scale")
        future = np.triu(np.ones((s.seq, s.seq), dtype=bool), k=1)
        mask = popxl.constant(np.where(future, MASKED_SCORE, 0.0).astype(np.float32), popxl.float32, "causal_mask")
        probs = ops.softmax(scores + mask, axis=-1)
        context = (probs @ v).transpose((0, 2, 1, 3)).reshape((s.tokens, heads * s.head_dim))
        return self.out(context)


class FeedForward(addons.Module):
    """``gelu(x @ intermediate) @ output`` with this rank's ``4 * hidden / tp`` hidden units."""

    def __init__(self, shape: Shape, groups: Groups, rng: np.random.Generator):
        super().__init__()
        self.intermediate = ShardedLinear(shape.ff // shape.tp, groups, rng)
        self.output = ShardedLinear(shape.hidden, groups, rng)

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        return self.output(ops.gelu(self.intermediate(x)))


class DecoderLayer(addons.Module):
    """Pre-layer-norm decoder block with tensor-parallel attention and feed-forward."""

    def __init__(self, shape: Shape, groups: Groups, rng: np.random.Generator):
        super().__init__()
        self.groups = groups
        self.ln_1 = LayerNorm()
        self.attention = Attention(shape, groups, rng)
        self.ln_2 = LayerNorm()
        self.feed_forward = FeedForward(shape, groups, rng)

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        g = self.groups
        x = x + _tp_out(self.attention(_tp_in(self.ln_1(x), g)), g)
        return x + _tp_out(self.feed_forward(_tp_in(self.ln_2(x), g)), g)


class Head(addons.Module):
    """Final layer norm and the LM head: this tensor-parallel rank's logits (tokens, vocab / tp)."""

    def __init__(self, shape: Shape, groups: Groups, rng: np.random.Generator):
        super().__init__()
        self.shape_ = shape
        self.groups = groups
        self.rng = rng
        self.ln_f = LayerNorm()

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        s, g = self.shape_, self.groups
        w = self.add_variable_input("lm_head", partial(self.rng.normal, 0, INIT_STD, (s.hidden, s.vocab_shard)),
                                    popxl.float32, replica_grouping=g.dp_group if g.tp > 1 else None)
        return _tp_in(self.ln_f(x), g) @ w


def sharded_cross_entropy_with_grad(logits: popxl.Tensor, labels: popxl.Tensor, groups: Groups) -> Tuple[Any, Any]:
    """Return (mean softmax cross-entropy, its gradient w.r.t. ``logits``) of this rank's logits
    (tokens, vocab / tp) against ``labels`` shifted by the rank's first vocabulary row (labels
    outside the shard pick nothing). The row max, the sum of exponentials and the true-class
    logit are all-reduced over the tensor-parallel group; the gradient stays sharded."""
    all_reduce = ops.collectives.replicated_all_reduce
    tokens, classes = logits.shape
    row_max = all_reduce(ops.max(logits, 1), op="max", group=groups.tp_group)
    shifted = logits - row_max.reshape((tokens, 1))
    exps = ops.exp(shifted)
    total = all_reduce(ops.sum(exps, 1), op="add", group=groups.tp_group)
    shard_classes = popxl.constant(np.arange(classes, dtype=np.int32).reshape(1, classes), popxl.int32,
                                   "shard_classes")
    is_label = ops.equal(labels.reshape((tokens, 1)), shard_classes)
    zero = popxl.constant(np.float32(0.0), popxl.float32, "zero")
    picked = all_reduce(ops.sum(ops.where(is_label, shifted, zero), 1), op="add", group=groups.tp_group)
    loss = ops.mean(ops.log(total) - picked)
    probs = exps / total.reshape((tokens, 1))
    inv_tokens = popxl.constant(np.float32(1.0 / tokens), popxl.float32, "inv_tokens")
    grad = (probs - ops.cast(is_label, popxl.float32)) * inv_tokens
    return loss, grad


class Adam(addons.Module):
    """Adam update of one tensor (fp32 moments, bias correction, no weight decay). The state has
    one value per tensor-parallel rank; a sharded tensor (meta_shape set) gets state sharded over
    the data-parallel group."""

    def __init__(self, groups: Groups, cache: bool = True):
        super().__init__(cache=cache)
        self.groups = groups

    @popxl.in_sequence()
    def build(self, var: popxl.TensorByRef, grad: popxl.Tensor, *, lr: float):
        g = self.groups
        full_shape = tuple(var.meta_shape) if var.meta_shape else tuple(var.shape)
        grouping = g.dp_group if g.tp > 1 else None
        if var.meta_shape:
            def add_state(name: str, dtype: Any) -> Any:
                return self.add_replica_sharded_variable_input(
                    name, partial(np.zeros, full_shape), dtype, by_ref=True,
                    replica_grouping=g.dp_group, shard_over=g.dp)
        else:
            def add_state(name: str, dtype: Any) -> Any:
                return self.add_variable_input(name, partial(np.zeros, full_shape), dtype, by_ref=True,
                                               replica_grouping=grouping)
        first = add_state("first_order", popxl.float32)
        second = add_state("second_order", popxl.float32)
        step = self.add_variable_input("step", partial(np.zeros, ()), popxl.float32, by_ref=True)
        ops.var_updates.accumulate_moving_average_(first, grad, f=ADAM_BETA1)
        ops.var_updates.accumulate_moving_average_square_(second, grad, f=ADAM_BETA2)
        updater = ops.var_updates.adam_updater(first, second, weight=var, weight_decay=0.0, time_step=step,
                                               beta1=ADAM_BETA1, beta2=ADAM_BETA2, epsilon=ADAM_EPS)
        ops.scaled_add_(var, updater, b=-lr)


class Store:
    """Where the tensors of one set of factories live, one instance per phase entry: on chip
    (variables) or in Streaming Memory (remote buffers, loaded and stored by graphs)."""

    def __init__(self, facts: Any, prefixes: List[str], offchip: bool):
        self.offchip = offchip
        self.prefixes = prefixes
        if offchip:
            buffers = addons.named_variable_buffers(facts, entries=len(prefixes), shard_over_dict=False)
            self.load_graph, self.names = addons.load_remote_graph(buffers, entries=len(prefixes))
            self.store_graph = addons.store_remote_graph(buffers, entries=len(prefixes))
            self.remote = [facts.init_remote(buffers, i, prefix) for i, prefix in enumerate(prefixes)]
        else:
            self.onchip = [_init_onchip(facts, prefix) for prefix in prefixes]

    def load(self, index: Any) -> Any:
        """The tensors of entry ``index`` (NamedTensors); off chip ``index`` may be an int32
        scalar tensor (a repeated graph's layer counter)."""
        if self.offchip:
            return addons.NamedTensors.pack(self.names, self.load_graph.call(index))
        return self.onchip[index]

    def store(self, index: Any, tensors: Any) -> None:
        """Store ``tensors`` back to entry ``index`` (on chip they were updated in place)."""
        if self.offchip:
            self.store_graph.bind(tensors).call(index)

    def variables(self, index: int) -> Any:
        """The variables holding entry ``index`` (remote or on chip), for the host to read."""
        return self.remote[index] if self.offchip else self.onchip[index]


def _init_onchip(facts: Any, prefix: str) -> Any:
    """On-chip variables of ``facts``; a sharded factory's variable is the shard of
    ``popxl.replica_sharded_variable`` (its full value lives in a buffer the host reads)."""
    state = {}
    for key, factory in sorted(facts.to_dict().items()):
        name = f"{prefix}.{key}"
        if factory.meta_shape:
            _, state[key] = popxl.replica_sharded_variable(
                factory.next_data(), factory.dtype, name, replica_grouping=factory.replica_grouping,
                shard_over=factory.replica_grouping.group_size)
        else:
            state[key] = factory.create_tensor(name)
    return addons.NamedTensors.from_dict(state)


@dataclass
class Phase:
    """One kind of phase: its forward and gradient graphs and where its tensors live."""

    name: str
    fwd: Any  # GraphWithNamedArgs
    bwd: Any  # GraphWithNamedArgs (accumulating gradient graph)
    weights: Store
    accums: Store
    keys: List[str]  # weight keys (named args of fwd)


@dataclass
class GptProgram:
    """A built GPT training program: one run of ``ir`` is one weight update."""

    ir: Any
    token_stream: Any
    label_stream: Any
    loss_stream: Any
    shape: Shape
    layout: Layout
    phases: Dict[str, Phase]
    adam_state: Dict[Tuple[str, str], Store]


def _grouping_of(facts: Any, key: str) -> Any:
    return facts.to_dict()[key].replica_grouping


def _make_phase(name: str, module: Any, spec: Any, prefixes: List[str], layout: Layout, recompute: bool) -> Phase:
    facts, fwd = module.create_graph(spec)
    keys = sorted(fwd.args.named_tensors)
    weight_tensors = [fwd.args.named_tensors[key] for key in keys]
    groupings = {key: _grouping_of(facts, key) for key in keys}
    required = [] if name == "embeddings" else [fwd.graph.inputs[0]]
    bwd_facts, bwd = addons.autodiff_with_accumulation(
        fwd, weight_tensors, grads_required=required,
        replica_groupings=_named_groups.NamedReplicaGrouping.from_dict(groupings))
    if recompute:
        bwd = addons.recompute_graph(bwd)
    weights = Store(facts, prefixes, layout.phased)
    accums = Store(bwd_facts, [f"accum.{p}" for p in prefixes], layout.phased)
    return Phase(name, fwd, bwd, weights, accums, keys)


def _backward_args(phase: Phase, info: Any, weights: Any) -> Dict[Any, Any]:
    """Activation arguments of ``phase.bwd`` for the forward call ``info``, with the weights
    taken from ``weights`` (reloaded in phased layouts) instead of the forward call's."""
    grad_info = phase.bwd.grad_graph_info
    by_fwd_weight = {phase.fwd.args.named_tensors[key]: weights.named_tensors[key] for key in phase.keys}
    args = {}
    for grad_input, expected in zip(phase.bwd.graph.inputs, grad_info.expected_inputs):
        if expected.connection_type.name != "Fwd":
            continue
        fwd_tensor = expected.fwd_tensor
        if fwd_tensor in by_fwd_weight:
            args[grad_input] = by_fwd_weight[fwd_tensor]
        else:
            args[grad_input] = info.graph_to_parent(fwd_tensor)
    return args


def _layer_index(value: int) -> Any:
    return popxl.constant(np.int32(value), popxl.int32, "layer_index")


def _stack_forward(phase: Phase, layer_inputs: Any, x: Any, layers: int) -> Any:
    """The forward pass of every layer as one repeated graph: load layer ``n``'s weights, store
    its input ``x`` in ``layer_inputs[n]``, run it. Returns the last layer's output."""

    def layer(x: popxl.Tensor, n: popxl.Tensor) -> Tuple[Any, Any]:
        weights = phase.weights.load(n)
        ops.remote_store(layer_inputs, n, x)
        y = phase.fwd.bind(weights).call(x)[0]
        return y, n + _layer_index(1)

    graph = popxl.gir().create_graph(layer, x.spec, popxl.TensorSpec((), popxl.int32))
    y, _ = ops.repeat(graph, layers, x, _layer_index(0))
    return y


def _stack_backward(phase: Phase, layer_inputs: Any, grad: Any, layers: int) -> Any:
    """The backward pass of every layer, last first, as one repeated graph: reload layer ``n``'s
    weights, accumulators and input, recompute and differentiate it (the gradient graph is a
    recompute graph: it needs only the layer's inputs), store the accumulators. Returns the
    gradient of the first layer's input."""

    def layer(dx: popxl.Tensor, n: popxl.Tensor) -> Tuple[Any, Any]:
        weights = phase.weights.load(n)
        accums = phase.accums.load(n)
        x = ops.remote_load(layer_inputs, n)
        dx_in = phase.bwd.bind(accums).call(dx, args=_recompute_args(phase, x, weights))[0]
        phase.accums.store(n, accums)
        return dx_in, n - _layer_index(1)

    graph = popxl.gir().create_graph(layer, grad.spec, popxl.TensorSpec((), popxl.int32))
    dx, _ = ops.repeat(graph, layers, grad, _layer_index(layers - 1))
    return dx


def _recompute_args(phase: Phase, x: Any, weights: Any) -> Dict[Any, Any]:
    """Arguments of a recomputing ``phase.bwd``: the forward graph's input ``x`` and weights."""
    by_fwd = {phase.fwd.args.named_tensors[key]: weights.named_tensors[key] for key in phase.keys}
    by_fwd[phase.fwd.graph.inputs[0]] = x
    args = {}
    for grad_input, expected in zip(phase.bwd.graph.inputs, phase.bwd.grad_graph_info.expected_inputs):
        if expected.connection_type.name != "Fwd":
            continue
        if expected.fwd_tensor not in by_fwd:
            raise ValueError(f"the recomputed gradient graph needs forward tensor {expected.fwd_tensor}")
        args[grad_input] = by_fwd[expected.fwd_tensor]
    return args


def build_program(variant_layout: Layout, shape: Shape, lr: float, seed: int, io_tiles: int,
                  amp: float = 0.6) -> GptProgram:
    """Return the training program of ``variant_layout`` at ``shape``; every matmul (forward
    and gradient) plans its temporaries within ``amp`` of each tile's memory."""
    s = shape
    rng = np.random.default_rng(seed)
    ir = popxl.Ir()
    ir.replication_factor = s.replicas
    if io_tiles:
        ir.num_io_tiles = io_tiles
    ir._pb_ir.getSessionOptions().matmulOptions = {"availableMemoryProportion": str(amp)}
    groups = Groups(ir, s)
    layout = variant_layout
    with ir.main_graph:
        token_stream = popxl.h2d_stream((s.micro_batch, s.seq), popxl.int32, "tokens")
        label_stream = popxl.h2d_stream((s.micro_batch, s.seq), popxl.int32, "labels")
        loss_stream = popxl.d2h_stream((), popxl.float32, "loss")
        hidden_spec = popxl.TensorSpec((s.tokens, s.hidden), popxl.float32)
        phases = {
            "embeddings": _make_phase("embeddings", Embeddings(s, groups, rng), popxl.TensorSpec((s.tokens,), popxl.int32),
                                      ["embeddings"], layout, False),
            "layers": _make_phase("layers", DecoderLayer(s, groups, rng), hidden_spec,
                                  [f"layers.{i}" for i in range(s.layers)], layout, layout.recompute),
            "head": _make_phase("head", Head(s, groups, rng), hidden_spec, ["head"], layout, False),
        }
        order = [("embeddings", 0)] + [("layers", i) for i in range(s.layers)] + [("head", 0)]

        # phased layouts recomputing their layers run the decoder stack as one repeated layer
        # (its program exists once), each layer's input stored in Streaming Memory for the
        # backward pass (one entry per layer); the others call the layer graph once per layer
        stacked = layout.phased and layout.recompute
        layer_inputs = popxl.remote_buffer((s.tokens, s.hidden), popxl.float32, s.layers) if stacked else None
        outer = [("embeddings", 0)] + ([] if stacked else [("layers", i) for i in range(s.layers)]) + [("head", 0)]

        def micro_batch() -> None:
            """One micro-batch: forward, loss, backward into the gradient accumulators."""
            with popxl.in_sequence(True):
                tokens = ops.host_load(token_stream, "tokens").reshape((s.tokens,))
                labels = ops.host_load(label_stream, "labels").reshape((s.tokens,))
                x = tokens
                saved = []
                for name, index in outer:
                    phase = phases[name]
                    weights = phase.weights.load(index)
                    info = phase.fwd.bind(weights).call_with_info(x)
                    saved.append((info, weights))
                    x = info.outputs[0]
                    if name == "embeddings" and stacked:
                        x = _stack_forward(phases["layers"], layer_inputs, x, s.layers)
                if s.tp > 1:
                    loss, grad = sharded_cross_entropy_with_grad(x, labels, groups)
                else:
                    loss, grad = addons.ops.cross_entropy_with_grad(x, labels)
                ops.host_store(loss_stream, loss)
                for (name, index), (info, fwd_weights) in zip(reversed(outer), reversed(saved)):
                    if name == "embeddings" and stacked:
                        grad = _stack_backward(phases["layers"], layer_inputs, grad, s.layers)
                    phase = phases[name]
                    weights = phase.weights.load(index) if layout.phased else fwd_weights
                    accums = phase.accums.load(index)
                    outputs = phase.bwd.bind(accums).call(grad, args=_backward_args(phase, info, weights))
                    phase.accums.store(index, accums)
                    if outputs:
                        grad = outputs[0]

        with popxl.in_sequence(True):
            if layout.phased:
                # every tensor of a phased micro-batch is loaded from Streaming Memory inside
                # it: the micro-batch is one graph, repeated (its program exists once)
                ops.repeat(ir.create_graph(micro_batch), s.grad_accum)
            else:
                for _ in range(s.grad_accum):
                    micro_batch()

            adam = Adam(groups)
            adam_state: Dict[Tuple[str, str], Store] = {}

            def update(phase: Phase, index: Any) -> None:
                weights = phase.weights.load(index)
                accums = phase.accums.load(index)
                for key in phase.keys:
                    _update(phase, index, key, weights, accums, adam, adam_state, groups, layout, lr)
                ops.var_updates.accumulator_scale_(accums.get("mean_accum_counter"), 0.0)
                phase.weights.store(index, weights)
                phase.accums.store(index, accums)

            # with weights, accumulators and Adam state all in Streaming Memory, the layers'
            # update is one graph repeated over the layers too
            stacked_update = layout.phased and layout.state_offchip
            for name, index in order:
                if name != "layers" or not stacked_update:
                    update(phases[name], index)
                elif index == 0:
                    def update_layer(n: popxl.Tensor) -> Any:
                        with popxl.in_sequence(True):
                            update(phases["layers"], n)
                            return n + _layer_index(1)

                    layer_graph = ir.create_graph(update_layer, popxl.TensorSpec((), popxl.int32))
                    ops.repeat(layer_graph, s.layers, _layer_index(0))

    ir.num_host_transfers = s.grad_accum
    return GptProgram(ir, token_stream, label_stream, loss_stream, s, layout, phases, adam_state)


def _update(phase: Phase, index: int, key: str, weights: Any, accums: Any, adam: Adam,
            adam_state: Dict[Tuple[str, str], Store], groups: Groups, layout: Layout, lr: float) -> None:
    """Reduce the accumulated gradient of ``key`` over the data-parallel group and apply Adam."""
    var = weights.get(key)
    grad = accums.get("accum." + key)
    sharded = layout.rts and groups.dp > 1 and var.nelms % groups.dp == 0
    if sharded:
        grad = ops.collectives.replicated_reduce_scatter(
            grad, op="mean", group=groups.dp_group, configure_output_for_replicated_tensor_sharding=True)
        target = ops.collectives.replica_sharded_slice(var, group=groups.dp_group)
    else:
        if groups.dp > 1:
            grad = ops.collectives.replicated_all_reduce(grad, op="mean", group=groups.dp_group)
        target = var
    facts, graph = adam.create_graph(target, grad.spec, lr=lr)
    store_key = (phase.name, key)
    if store_key not in adam_state:
        prefixes = [f"adam.{p}.{key}" for p in phase.weights.prefixes]
        with popxl.gir().main_graph:  # variables live in the main graph (this may be a layer's update graph)
            adam_state[store_key] = Store(facts, prefixes, layout.state_offchip)
    state_store = adam_state[store_key]
    state = state_store.load(index)
    graph.bind(state).call(target, grad)
    state_store.store(index, state)
    if sharded:
        gathered = ops.collectives.replicated_all_gather(target, group=groups.dp_group)
        ops.var_updates.copy_var_update_(var, gathered)


def host_inputs(program: GptProgram, tokens: np.ndarray, labels: np.ndarray) -> Dict[Any, np.ndarray]:
    """Return the ``session.run`` inputs of one weight update from ``tokens`` and ``labels`` of
    shape ``(grad_accum, dp, micro_batch, seq)``: every tensor-parallel rank of a data-parallel
    replica reads the same sequences, its token ids and labels shifted down by the rank's first
    vocabulary row (``rank * vocab / tp``; ids outside ``[0, vocab / tp)`` are another rank's).
    Arrays are shaped ``(grad_accum?, replicas?, micro_batch, seq)`` (a dimension only when it is
    > 1)."""
    s = program.shape
    # replica r = dp rank * tp + tp rank
    offsets = (np.arange(s.replicas) % s.tp * s.vocab_shard).reshape(1, s.replicas, 1, 1)
    per_replica_t = np.repeat(tokens, s.tp, axis=1) - offsets
    per_replica_l = np.repeat(labels, s.tp, axis=1) - offsets
    lead: List[int] = []
    if s.grad_accum > 1:
        lead.append(s.grad_accum)
    if s.replicas > 1:
        lead.append(s.replicas)
    shape = tuple(lead) + (s.micro_batch, s.seq)
    return {
        program.token_stream: np.ascontiguousarray(per_replica_t, dtype=np.int32).reshape(shape),
        program.label_stream: np.ascontiguousarray(per_replica_l, dtype=np.int32).reshape(shape),
    }


def weight_variables(program: GptProgram) -> Dict[str, Any]:
    """Return ``{"<phase entry>.<key>": variable}`` of every weight (remote or on chip)."""
    found = {}
    for phase in program.phases.values():
        for index, prefix in enumerate(phase.weights.prefixes):
            tensors = phase.weights.variables(index)
            for key in phase.keys:
                found[f"{prefix}.{key}"] = tensors.named_tensors[key]
    return found


def adam_variables(program: GptProgram) -> Dict[str, Any]:
    """Return ``{"<phase entry>.<key>.<first_order|second_order>": variable}``."""
    found = {}
    for (phase_name, key), store in program.adam_state.items():
        phase = program.phases[phase_name]
        for index, prefix in enumerate(phase.weights.prefixes):
            tensors = store.variables(index)
            for moment in ("first_order", "second_order"):
                found[f"{prefix}.{key}.{moment}"] = tensors.named_tensors[moment]
    return found
