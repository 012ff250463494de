"""popxl-addons' tensor-parallel cross-entropy (``popxl_addons.ops.cross_entropy_sharded_loss``,
the C++ op ``CrossEntropySharded`` and its grad op; 3.0 and 3.4).

The logits ``(n_samples, classes / n_shards)`` are sharded over the replicas of a group, the
indices ``(n_samples,)`` are the same on every replica but already shifted by each shard's first
class (so they may be negative or past the shard). The Opx computes, in the logits' dtype:

- ``m = allreduce_max(max(logits, 1))``; ``t = logits - m``; ``d = allreduce_add(sum(exp(t), 1))``;
  ``nls = -(t - log(d))`` (the shard of the negative log-softmax, the op's second output);
- ``loss = allreduce_add(nls[n, index[n]] if 0 <= index[n] < shard classes else 0)``.

The grad op (GradOut, the nls output, the indices) gives
``exp(-nls) * dL[:, None]`` minus ``dL`` at each in-range true class. Here the same arithmetic is
built from popxl ops (the true-class pick and update as a one-hot mask of the shard's classes
instead of popops' grouped multi-slice/update: the same values). The wrapper's ignore_index
masking and reduction are popxl ops in popxl-addons too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from profcompare.emulator.popxl_addons._compat import ops, popxl
from profcompare.emulator.popxl_addons._generation import current
from profcompare.emulator.popxl_addons.ops._custom_grad import Fwd, with_gradient

__all__ = ["cross_entropy_sharded_loss"]

_REDUCTIONS = ("mean", "sum", "none")


def true_class_mask(indices: popxl.Tensor, n_classes: int) -> popxl.Tensor:
    """Return a bool ``(n_samples, n_classes)`` tensor, true where the class is ``indices[n]``
    (all false for an index outside ``[0, n_classes)``)."""
    classes = popxl.constant(np.arange(n_classes, dtype=np.int32).reshape(1, n_classes), popxl.int32,
                             name="shard_classes")
    idx = indices if indices.dtype == popxl.int32 else ops.cast(indices, popxl.int32)
    return ops.equal(ops.reshape(idx, (idx.shape[0], 1)), classes)


def _neg_log_softmax(logits: popxl.Tensor, group: Any) -> popxl.Tensor:
    rar = ops.collectives.replicated_all_reduce
    max_logits = rar(ops.max(logits, 1), op="max", group=group)
    translated = logits - ops.reshape(max_logits, (logits.shape[0], 1))
    denominator = rar(ops.sum(ops.exp(translated), 1), op="add", group=group)
    log_softmax = translated - ops.reshape(ops.log(denominator), (logits.shape[0], 1))
    return ops.negate(log_softmax)


def _grad(neg_log_softmax: popxl.Tensor, indices: popxl.Tensor
          ) -> Any:
    def grad(out_grads: Sequence[popxl.Tensor | None], fwd: Fwd) -> list[popxl.Tensor | None]:
        dloss = out_grads[0]
        nls = fwd(neg_log_softmax)
        n, c = nls.shape
        scale = ops.reshape(dloss, (n, 1))
        softmax_scaled = ops.exp(ops.negate(nls)) * scale
        zero = popxl.constant(0, nls.dtype, name="zero")
        at_true = ops.where(true_class_mask(fwd(indices), c), scale, zero)
        return [softmax_scaled - at_true]
    return grad


def cross_entropy_sharded_loss(logits: popxl.Tensor, indices: popxl.Tensor, ignore_index: popxl.Tensor | None = None,
                               replica_grouping: Any = None, reduction: str = "mean",
                               available_memory_proportion: float = 0.4) -> popxl.Tensor:
    """Return the cross-entropy of class-sharded ``logits`` (see the module docstring): the loss
    per sample ``(n_samples,)`` for reduction ``none``, else its sum or mean (over the samples
    whose index is not ``ignore_index`` when given). Identical on every replica of the group.
    popxl-addons 3.0 refuses a group with a stride other than 1 (ValueError)."""
    if logits.rank != 2:
        raise RuntimeError("CrossEntropyShardedOp::setup logits must be of rank 2. e.g. (n_samples, sharded_n_classes)")
    if indices.rank != 1:
        raise RuntimeError("CrossEntropyShardedOp::setup indices must be of rank 1. e.g. (n_samples,)")
    if logits.shape[0] != indices.shape[0]:
        raise RuntimeError("CrossEntropyShardedOp::setup indices and logits must have the same number of samples. "
                           "shapes should be logits=(n_samples, sharded_n_classes); indices=(n_samples,)")
    group = replica_grouping if replica_grouping is not None else popxl.gcg().ir.replica_grouping()
    if current() == "3.0" and group.stride != 1:
        # the 3.0 op takes a group size only (consecutive replicas)
        raise ValueError("Cross entropy sharded loss only supported for consecutive ipus. "
                         "Expected replica grouping stride = 1.")
    nls = _neg_log_softmax(logits, group)
    zero = popxl.constant(0, nls.dtype, name="zero")
    picked = ops.sum(ops.where(true_class_mask(indices, logits.shape[1]), nls, zero), 1)
    loss_value = ops.collectives.replicated_all_reduce(picked, op="add", group=group)
    (loss,) = with_gradient("CrossEntropySharded", "cross_entropy_sharded", [logits], [loss_value],
                            _grad(nls, indices), {"available_memory_proportion": float(available_memory_proportion)},
                            out_names=["cross_entropy_sharded_out"])
    mask = None
    if ignore_index is not None:
        mask = ops.cast(ops.logical_not(ops.equal(indices, ignore_index)), loss.dtype)
        loss = loss * mask
    if reduction == "mean" and mask is not None:
        return ops.sum(loss) / ops.sum(mask)
    if reduction == "mean":
        return ops.mean(loss)
    if reduction == "sum":
        return ops.sum(loss)
    if reduction != "none":
        raise ValueError(f"`reduction` should be one of `mean`, `sum` and `none`. Passed: {reduction}")
    return loss
