"""popxl-addons ``pipelined_execution``: ops annotated with pipeline stages run ``steps`` times as a pipeline.

Semantics (popxl-addons ``transforms.pipelining``):

- ``with pipelined_execution(steps) as p:`` collects the ops created inside; every op must be
  created inside ``with p.stage(i):`` (RuntimeError otherwise). Stages are usually combined with
  ``popxl.ipu(n)`` and connected by ``Tensor.copy_to_ipu``.
- The stages run ``steps`` times (one micro-batch each), so ``ir.num_host_transfers`` is usually
  ``steps``. ``steps`` must be at least twice the number of stages (ValueError).
- On device the program is ramp-up (S-1 pipeline cycles running stages 0..k-1), a main cycle
  repeated ``steps - S + 1`` times running every stage, and ramp-down (S-1 cycles running stages
  k..S-1); inter-IPU copies run after each cycle but the last.
- ``p.stash_and_restore_tensor(t)`` / ``p.stash_and_restore_activations(call_info, grad_info)``
  keep a tensor produced in an earlier stage for a later stage in a stash of ``to - from + 1``
  entries (a variable written at a rotating counter and read back in the same order).

The simulator executes the stages of one micro-batch in creation order, ``steps`` times: a
pipeline only reorders independent work of different micro-batches, and the stash returns each
micro-batch its own tensor, so the values are those of the pipelined program. The op records
carry ``attrs["pipeline"]`` and ``attrs["pipeline_stage"]``; a final ``PipelineRepeat`` record
(no inputs or outputs) holds ``steps`` and re-runs the block, and the compile model turns the
stages into the ramp-up / main / ramp-down schedule (docs/ipu-model.md "Pipelining").
"""

from __future__ import annotations

import contextlib
import itertools
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import numpy as np

from profcompare.emulator import popxl
from profcompare.emulator.popxl.execution import CompiledGraph, Executor, Kernel, _kernel
from profcompare.emulator.popxl.graph import Op, add_op

__all__ = ["pipelined_execution"]

_PIPELINE_IDS = itertools.count()


class StageContext:
    """The object ``pipelined_execution`` yields: ``stage(i)`` and the stash helpers."""

    def __init__(self, pipeline: int) -> None:
        self._stage: int | None = None
        self._pipeline = pipeline
        self.ops: dict[int, list[Op]] = defaultdict(list)

    def hook(self, op: Op) -> None:
        """Record a new op in the current stage (RuntimeError outside any stage)."""
        if self._stage is None:
            raise RuntimeError("Operation must be created in a stage context.")
        op.attrs["pipeline"] = self._pipeline
        op.attrs["pipeline_stage"] = self._stage
        self.ops[self._stage].append(op)

    @contextlib.contextmanager
    def stage(self, i: int) -> Iterator[None]:
        """Put the ops created inside on pipeline stage ``i``."""
        prev = self._stage
        self._stage = int(i)
        try:
            yield
        finally:
            self._stage = prev

    def _stage_of(self, t: popxl.Tensor) -> int | None:
        prod = t._producer
        if prod is None or prod.attrs.get("pipeline") != self._pipeline:
            return None
        return int(prod.attrs["pipeline_stage"])

    def stash_and_restore_tensor(self, t: popxl.Tensor, from_stage: int | None = None) -> popxl.Tensor:
        """Keep ``t`` from ``from_stage`` (default: its producer's stage) for the current stage;
        returns the restored tensor. The stash holds ``current - from_stage + 1`` entries."""
        if from_stage is None:
            if t._producer is None:
                raise RuntimeError("If the tensor to be stash does not have a producer `from_stage` must be "
                                   "specified to `stash_and_restore_tensor`")
            from_stage = self._stage_of(t)
        to_stage = self._stage
        if to_stage is None:
            raise RuntimeError("`stash_and_restore_tensor` must be called in a stage context.")
        if from_stage is None:
            raise RuntimeError(f"{t.id} is not produced by a stage of this pipeline; pass `from_stage`")
        size = to_stage - from_stage + 1
        if size <= 1:
            raise TypeError(f"Stash must be larger than 1. size={size}, t={t}")
        shape = t.shape if t.shape else (1,)
        stash = popxl.variable(np.zeros((size, *shape), t.dtype.as_numpy()), t.dtype, name=f"stash/{t.name}")
        put_counter = popxl.variable(np.zeros((1,), np.uint32), popxl.uint32, name=f"stash/{t.name}/counter")
        get_counter = popxl.variable(np.zeros((1,), np.uint32), popxl.uint32, name=f"restore/{t.name}/counter")
        with self.stage(from_stage), popxl.ipu(t.ipu):
            add_op("PipelineStash", "stash", [stash, put_counter, t], [], modified=[stash, put_counter])
        op = add_op("PipelineRestore", "restore", [stash, get_counter], [(t.name + "_restored", t.shape, t.dtype, ())],
                    modified=[get_counter])
        return op.outputs[0]

    def stash_and_restore_activations(self, call_info: Any, grad_info: Any) -> dict[popxl.Tensor, popxl.Tensor]:
        """The gradient graph's activations (``grad_info.inputs_dict(call_info)``), each produced in
        another stage stashed and restored into the current one."""
        activations = grad_info.inputs_dict(call_info)
        call_op = call_info._op
        from_stage = (int(call_op.attrs["pipeline_stage"]) if call_op.attrs.get("pipeline") == self._pipeline
                      else None)
        if from_stage is not None and from_stage != self._stage:
            for sg_tensor, act in list(activations.items()):
                if self._stage_of(act) is not None:
                    activations[sg_tensor] = self.stash_and_restore_tensor(act, from_stage=from_stage)
        return activations


@contextlib.contextmanager
def pipelined_execution(steps: int) -> Iterator[StageContext]:
    """Run the ops created inside as a pipeline over ``steps`` micro-batches (module docstring)."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"pipelined_execution needs a positive int number of steps, got {steps!r}")
    graph = popxl.gcg()
    pid = next(_PIPELINE_IDS)
    stages = StageContext(pid)
    handle = graph.register_op_created_hook(stages.hook)
    try:
        yield stages
    finally:
        graph.remove_op_created_hook(handle)
    compute_stages = {s for s, ops in stages.ops.items()
                      if any(op.type not in ("HostLoad", "HostStore", "IpuCopy") and not _feeds_only_load(op)
                             for op in ops)}
    if steps < 2 * len(compute_stages):
        raise ValueError("Pipelining requires the steps at least 2x the number of stages in the pipeline. "
                         f"steps={steps} stages={len(compute_stages)}")
    ordered = [op.id for op in graph._ops if op.attrs.get("pipeline") == pid]
    add_op("PipelineRepeat", "pipeline", [], [], attrs={"pipeline": pid, "steps": steps, "ops": tuple(ordered),
                                                         "num_stages": len(compute_stages)})


def _feeds_only_load(op: Op) -> bool:
    """An Init whose output only feeds a HostLoad (the placeholder of a load)."""
    if op.type != "Init" or not op.outputs:
        return False
    t = op.outputs[0]
    cons = [c for c in t._graph._ops if any(i is t for i in c.inputs)]
    return bool(cons) and all(c.type == "HostLoad" for c in cons)


# --- numeric kernels ----------------------------------------------------------------------------
@_kernel("PipelineRepeat")
def _repeat(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel | None:
    ids = set(op.attrs["ops"])
    block = [o for o in cg.graph._ops if o.id in ids]
    kernels = [k for k in (ex.kernel(o, cg) for o in block) if k is not None]
    extra = int(op.attrs["steps"]) - 1

    def run(env: list) -> None:
        # the block's ops already ran once (their own kernels precede this one)
        for _ in range(extra):
            for k in kernels:
                k(env)
    return run


@_kernel("PipelineStash")
def _stash(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    s_stash, s_counter, s_t = (cg.slot[t] for t in op.inputs)
    size = op.inputs[0].shape[0]
    shape = op.inputs[0].shape[1:]

    def run(env: list) -> None:
        stash, counter, t = env[s_stash], env[s_counter], env[s_t]
        for r in range(stash.shape[0]):  # per replica
            c = int(counter[r].reshape(-1)[0])
            stash[r, c] = np.reshape(t[r], shape)
            counter[r][...] = (c + 1) % size
    return run


@_kernel("PipelineRestore")
def _restore(op: Op, cg: CompiledGraph, ex: Executor) -> Kernel:
    s_stash, s_counter = (cg.slot[t] for t in op.inputs)
    o = cg.slot[op.outputs[0]]
    size = op.inputs[0].shape[0]
    out_shape = op.outputs[0].shape

    def run(env: list) -> None:
        stash, counter = env[s_stash], env[s_counter]
        rows = []
        for r in range(stash.shape[0]):
            c = int(counter[r].reshape(-1)[0])
            rows.append(np.array(stash[r, c]).reshape(out_shape))
            counter[r][...] = (c + 1) % size
        env[o] = np.stack(rows)
    return run
