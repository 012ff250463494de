"""The MNIST training programs, written as popxl / popxl-addons code.

This module reads like code for the Poplar SDK: apart from the import of ``profcompare.sdk``
it is meant to run unchanged on real popxl with either popxl-addons generation (unverified on
hardware; see docs/sdk-path.md). It speaks the generation it finds (``sdk.addons_generation()``:
the installed popxl-addons on the SDK, the emulated one on the simulator):

- ``3.0`` (popxl-addons up to sdk-release-3.0, the tutorial's threshold API):
  ``rts.replica_sharded_spec(t, threshold=)``, ``rts.reduce_replica_sharded_graph(ts, "mean",
  threshold=)``, ``named_variable_buffers(facts, entries, sharded_threshold=)``;
- ``3.4`` (sdk-release-3.1 to 3.4, replica groupings): the threshold rule becomes one
  ReplicaGrouping per variable (all replicas when sharded, ``group_size=1`` when not):
  ``replica_sharded_spec(t, shard_over=)``, ``reduce_replica_sharded_graph(ts, "mean",
  shard_groups=NamedReplicaGrouping, replica_group=)``, ``named_variable_buffers(facts, entries,
  shard_over_dict=False)``.

Both give the same layout. It deliberately does not use ``from __future__ import annotations``:
popxl decides which graph inputs are passed by reference from the *object* ``popxl.TensorByRef``
in the signature of ``build``.

Variants (see ``workloads.mnist``):
- ``onchip``: gradients all-reduced (mean) in place, Adam state as on-chip variables.
- ``onchip-sharded``: gradients reduce-scattered, weights sliced, sharded Adam state held on chip
  as the shards of ``popxl.replica_sharded_variable`` (each also has a Streaming Memory buffer,
  used only by WeightsFromHost / WeightsToHost), updated shards all-gathered into the weights.
- ``offchip``: Adam state in remote buffers (unsharded), loaded, updated and stored per variable.
- ``offchip-sharded``: as ``offchip`` with replicated tensor sharding of state, grads and weights.
Tensors are sharded when ``nelms >= sharded_threshold`` and ``nelms % replicas == 0``.
"""

import importlib
from dataclasses import dataclass
from functools import partial
from typing import Any, Dict, List, Tuple

import numpy as np

from profcompare.sdk import addons, addons_generation, ops, popxl

# the rts helpers are not exported at popxl_addons' top level (in either generation)
rts = importlib.import_module(addons.__name__ + ".rts")

IMAGE_SHAPE = (28, 28)
NUM_CLASSES = 10
#: a threshold no tensor reaches: nothing is sharded
NEVER_SHARD = 2**62


class Linear(addons.Module):
    """y = x @ weight + bias; weight drawn from N(0, 0.02), bias zero."""

    def __init__(self, out_features: int, rng: np.random.Generator, bias: bool = True):
        super().__init__()
        self.out_features = out_features
        self.rng = rng
        self.bias = bias

    def build(self, x: popxl.Tensor) -> popxl.Tensor:
        w = self.add_variable_input(
            "weight", partial(self.rng.normal, 0, 0.02, (x.shape[-1], self.out_features)), x.dtype
        )
        y = x @ w
        if self.bias:
            b = self.add_variable_input("bias", partial(np.zeros, y.shape[-1]), x.dtype)
            y = y + b
        return y


class Net(addons.Module):
    """The MLP 784-(hidden x layers)-10 with GELU between layers; submodules fc1..fc{layers+1}."""

    def __init__(self, hidden: int, layers: int, rng: np.random.Generator):
        super().__init__()
        self.num_layers = layers + 1
        for i in range(layers):
            setattr(self, f"fc{i + 1}", Linear(hidden, rng))
        setattr(self, f"fc{layers + 1}", Linear(NUM_CLASSES, rng))

    def build(self, x: popxl.Tensor):
        x = x.reshape((-1, IMAGE_SHAPE[0] * IMAGE_SHAPE[1]))
        for i in range(1, self.num_layers):
            x = ops.gelu(getattr(self, f"fc{i}")(x))
        return getattr(self, f"fc{self.num_layers}")(x)


class Adam(addons.Module):
    """Adam update of one variable: first moment fp16, second moment fp32, bias correction.
    Sharded variables (meta_shape set) get sharded state."""

    @popxl.in_sequence()
    def build(
        self,
        var: popxl.TensorByRef,
        grad: popxl.Tensor,
        *,
        lr: float,
        beta1: float = 0.9,
        beta2: float = 0.999,
        eps: float = 1e-5,
        weight_decay: float = 0.0,
        first_order_dtype: Any = popxl.float16,
        bias_correction: bool = True,
    ):
        full_shape = var.meta_shape if var.meta_shape else var.shape
        add_state = self.add_replica_sharded_variable_input if var.meta_shape else self.add_variable_input
        first_order = add_state("first_order", partial(np.zeros, full_shape), first_order_dtype, by_ref=True)
        second_order = add_state("second_order", partial(np.zeros, full_shape), popxl.float32, by_ref=True)
        ops.var_updates.accumulate_moving_average_(first_order, grad, f=beta1)
        ops.var_updates.accumulate_moving_average_square_(second_order, grad, f=beta2)
        step = None
        if bias_correction:
            step = self.add_variable_input("step", partial(np.zeros, ()), popxl.float32, by_ref=True)
        updater = ops.var_updates.adam_updater(
            first_order,
            second_order,
            weight=var,
            weight_decay=weight_decay,
            time_step=step,
            beta1=beta1,
            beta2=beta2,
            epsilon=eps,
        )
        ops.scaled_add_(var, updater, b=-lr)


@dataclass
class TrainingProgram:
    """A built training program: one run of ``ir`` is one weight update."""

    ir: Any
    image_stream: Any
    label_stream: Any
    loss_stream: Any
    variables: Any  # NamedTensors of the (full) weights
    replicas: int
    grad_accum: int
    micro_batch: int


def _is_sharded(t: Any, threshold: int, replicas: int) -> bool:
    return replicas > 1 and t.nelms >= threshold and t.nelms % replicas == 0


def _shard_grouping(sharded: bool) -> Any:
    """The 3.4 spelling of the threshold rule for one tensor: shard over all replicas, or not."""
    ir = popxl.gcg().ir
    return ir.replica_grouping() if sharded else ir.replica_grouping(group_size=1)


def _state_prefix(key: str) -> str:
    # names each variable's Adam state after it ("adam.fc1.weight.first_order") rather than
    # leaving popxl's suffixed "first_order__t127", so reports of different layouts line up
    return f"adam.{key}"


def _onchip_state(facts: Any, prefix: str) -> Any:
    """On-chip variables for ``facts`` (sorted by key, named ``prefix.key``). A sharded factory's
    state is held as the shard of ``popxl.replica_sharded_variable`` (popxl-addons' ``init()``
    would make a full-shape variable, which a sharded graph input refuses)."""
    state = {}
    for key, factory in sorted(facts.to_dict().items()):
        name = f"{prefix}.{key}"
        if factory.meta_shape:
            _, state[key] = popxl.replica_sharded_variable(factory.next_data(), factory.dtype, name)
        else:
            state[key] = factory.create_tensor(name)
    return addons.NamedTensors.from_dict(state)


def _onchip_step(key: str, var: Any, grad: Any, optimizer: Adam, lr: float) -> None:
    facts, graph = optimizer.create_graph(var, grad.spec, lr=lr, weight_decay=0.0, bias_correction=True)
    graph.bind(_onchip_state(facts, _state_prefix(key))).call(var, grad)


def _offchip_step(key: str, var: Any, grad: Any, optimizer: Adam, lr: float, threshold: int, sharded: bool,
                  generation: str) -> None:
    if generation == "3.0":
        var_spec = rts.replica_sharded_spec(var, threshold=threshold)
        grad_spec = rts.replica_sharded_spec(grad, threshold=threshold)
    else:
        var_spec = rts.replica_sharded_spec(var, shard_over=_shard_grouping(sharded))
        grad_spec = rts.replica_sharded_spec(grad, shard_over=_shard_grouping(sharded))
    facts, graph = optimizer.create_graph(var_spec, grad_spec, lr=lr, weight_decay=0.0, bias_correction=True)
    # every factory keeps its own sharding (sharded ones carry meta_shape and get shard buffers):
    # 3.4 says so with shard_over_dict=False, 3.0 with a threshold no factory reaches
    if generation == "3.0":
        buffers = addons.named_variable_buffers(facts, entries=1, sharded_threshold=NEVER_SHARD)
    else:
        buffers = addons.named_variable_buffers(facts, entries=1, shard_over_dict=False)
    load_graph, names = addons.load_remote_graph(buffers, entries=1)
    store_graph = addons.store_remote_graph(buffers, entries=1)
    facts.init_remote(buffers, 0, _state_prefix(key))
    state = addons.NamedTensors.pack(names, load_graph.call(0))
    graph.bind(state).call(var, grad)
    store_graph.bind(state).call(0)


def _reduce_graph(grads: Any, sharded_keys: Any, threshold: int, generation: str) -> Any:
    """The tutorial's gradient reduction: sharded tensors become mean-reduced shards, the rest are
    mean-all-reduced."""
    if generation == "3.0":
        return rts.reduce_replica_sharded_graph(grads, "mean", threshold=threshold)
    named_replica_grouping = importlib.import_module(addons.__name__ + ".named_replica_grouping")
    groups = named_replica_grouping.NamedReplicaGrouping.from_dict(
        {key: _shard_grouping(key in sharded_keys) for key in grads.named_tensors})
    return rts.reduce_replica_sharded_graph(grads, "mean", shard_groups=groups,
                                            replica_group=popxl.gcg().ir.replica_grouping())


def build_program(variant: str, config: Dict[str, Any]) -> TrainingProgram:
    """Return the training program of ``variant`` built with the knobs of ``config``."""
    replicas = int(config["replicas"])
    grad_accum = int(config["grad_accum"])
    micro_batch = int(config["micro_batch"])
    lr = float(config["lr"])
    remote = variant.startswith("offchip")
    sharded = variant.endswith("-sharded")
    threshold = int(config["sharded_threshold"]) if sharded else NEVER_SHARD
    rng = np.random.default_rng(int(config["seed"]))
    generation = addons_generation()

    ir = popxl.Ir()
    ir.replication_factor = replicas
    with ir.main_graph:
        img_spec = popxl.TensorSpec((micro_batch,) + IMAGE_SHAPE, popxl.float32)
        img_stream = popxl.h2d_stream(img_spec.shape, popxl.float32, "image")
        label_stream = popxl.h2d_stream((micro_batch,), popxl.int32, "labels")
        loss_stream = popxl.d2h_stream((), popxl.float32, "loss")

        facts, fwd_graph = Net(int(config["hidden"]), int(config["layers"]), rng).create_graph(img_spec)
        variables = facts.init()
        bound_fwd = fwd_graph.bind(variables)
        arg_key = {t: key for key, t in fwd_graph.args.named_tensors.items()}
        required = fwd_graph.args.tensors
        keys = [arg_key[t] for t in required]

        counter = None
        if grad_accum > 1:
            bwd_facts, bwd_graph = addons.autodiff_with_accumulation(fwd_graph, required)
            accumulated = bwd_facts.init()
            counter = accumulated.mean_accum_counter
            bound_bwd = bwd_graph.bind(accumulated)
            grads_by_key = {key: accumulated.get("accum." + key) for key in keys}
        else:
            bwd_graph = addons.autodiff(fwd_graph, grads_required=required)

        with popxl.in_sequence(True):
            for _ in range(grad_accum):
                images = ops.host_load(img_stream, "image")
                labels = ops.host_load(label_stream, "labels")
                fwd_info = bound_fwd.call_with_info(images)
                logits = fwd_info.outputs[0]
                loss, dlogits = addons.ops.cross_entropy_with_grad(logits, labels)
                ops.host_store(loss_stream, loss)
                activations = bwd_graph.grad_graph_info.inputs_dict(fwd_info)
                if grad_accum > 1:
                    bound_bwd.call(dlogits, args=activations)
                else:
                    grads_by_key = dict(zip(keys, bwd_graph.call(dlogits, args=activations)))

            full_vars = variables.named_tensors
            if replicas == 1:
                opt_vars = dict(full_vars)
            elif variant == "onchip":
                for key in keys:
                    ops.collectives.replicated_all_reduce_(grads_by_key[key], op="mean")
                opt_vars = dict(full_vars)
            else:
                # the tutorial's off-chip path (also used for onchip-sharded): tensors at or
                # above the threshold become mean-reduced shards, the rest mean-all-reduced
                grads = addons.NamedTensors.from_dict(grads_by_key)
                sharded_keys = {key for key, var in full_vars.items() if _is_sharded(var, threshold, replicas)}
                reduce_graph, names = _reduce_graph(grads, sharded_keys, threshold, generation)
                grads_by_key = dict(zip(names, reduce_graph.bind(grads).call()))
                opt_vars = {}
                for key, var in full_vars.items():
                    opt_vars[key] = ops.collectives.replica_sharded_slice(var) if key in sharded_keys else var

            optimizer = Adam(cache=True)
            for key in sorted(opt_vars):
                if remote:
                    _offchip_step(key, opt_vars[key], grads_by_key[key], optimizer, lr, threshold,
                                  bool(opt_vars[key].meta_shape), generation)
                else:
                    _onchip_step(key, opt_vars[key], grads_by_key[key], optimizer, lr)
            if counter is not None:
                ops.var_updates.accumulator_scale_(counter, 0.0)

            for key in sorted(opt_vars):
                shard = opt_vars[key]
                if shard.meta_shape:
                    gathered = ops.collectives.replicated_all_gather(shard)
                    ops.var_updates.copy_var_update_(full_vars[key], gathered)

    ir.num_host_transfers = grad_accum
    return TrainingProgram(ir, img_stream, label_stream, loss_stream, variables, replicas, grad_accum, micro_batch)


def host_inputs(program: TrainingProgram, images: np.ndarray, labels: np.ndarray) -> Dict[Any, np.ndarray]:
    """Return the ``session.run`` inputs for one weight update from ``images`` (N, 28, 28) and
    ``labels`` (N,), N = grad_accum * replicas * micro_batch, shaped
    ``(grad_accum?, replicas?, micro_batch, ...)`` (a dimension only when it is > 1)."""
    lead: List[int] = []
    if program.grad_accum > 1:
        lead.append(program.grad_accum)
    if program.replicas > 1:
        lead.append(program.replicas)
    shape = tuple(lead) + (program.micro_batch,)
    return {
        program.image_stream: np.ascontiguousarray(images, dtype=np.float32).reshape(shape + IMAGE_SHAPE),
        program.label_stream: np.ascontiguousarray(labels, dtype=np.int32).reshape(shape),
    }


def weight_names(layers: int) -> Tuple[str, ...]:
    """Return the sorted named-arg keys of the weights (fc1.bias, fc1.weight, ...)."""
    return tuple(sorted(f"fc{i + 1}.{p}" for i in range(layers + 1) for p in ("weight", "bias")))
