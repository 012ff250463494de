"""popxl-addons 3.4's layer norm over a hidden axis sharded across replicas
(``popxl_addons.ops.layer_norm_distributed``, the C++ op ``LayerNormDistributed``; not in 3.0).

``t`` is ``(N, H / group_size)`` on each replica of ``group``; ``w`` and ``b`` are this
replica's ``(H / group_size,)`` shard. The Opx (poplin's distributed norm statistics, float32
partials, PopART's default non-stable algorithm) computes, with ``H`` the full hidden size:

- ``mean = allreduce(sum(t, 1)) / H``, ``var = allreduce(sum(t * t, 1)) / H - mean^2``,
  ``inv_std = 1 / sqrt(var + epsilon)`` (float32);
- ``y = cast((t - mean) * inv_std) * w + b`` in ``t``'s dtype.

The grad op, with ``xw`` the whitened input and ``dy`` the output gradient:
``dt = inv_std * (dy - (xw * allreduce(sum(dy * xw, 1)) + allreduce(sum(dy, 1))) / H)``,
``dw = sum(xw * dy, 0)``, ``db = sum(dy, 0)``. As in popxl-addons, ``dt`` is computed from
``dy`` itself, not from ``dy * w`` (the Opx hands poplin the output gradient as the whitened
input's gradient), so ``dt`` is the layer-norm gradient only when ``w`` is all ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from profcompare.emulator.popxl_addons._compat import ops, popxl
from profcompare.emulator.popxl_addons.ops._custom_grad import Fwd, GradFn, with_gradient
from profcompare.emulator.popxl_addons.ops._generation_gate import require_34

require_34("popxl_addons.ops.layer_norm_distributed")

__all__ = ["layer_norm_distributed"]


def _column(t: popxl.Tensor) -> popxl.Tensor:
    return ops.reshape(t, (t.shape[0], 1))


def _grad(t: popxl.Tensor, mean: popxl.Tensor, inv_std: popxl.Tensor, group: Any, hidden: int) -> GradFn:
    def grad(out_grads: Sequence[popxl.Tensor | None], fwd: Fwd) -> list[popxl.Tensor | None]:
        dy = out_grads[0]
        x = fwd(t)
        m, s = _column(fwd(mean)), _column(fwd(inv_std))
        dy32 = ops.cast(dy, popxl.float32)
        whitened = ops.cast((ops.cast(x, popxl.float32) - m) * s, x.dtype)
        w32 = ops.cast(whitened, popxl.float32)
        rar = ops.collectives.replicated_all_reduce
        var_delta = rar(ops.sum(dy32 * w32, 1), op="add", group=group)
        mean_delta = rar(ops.sum(dy32, 1), op="add", group=group)
        scale = popxl.constant(1.0 / hidden, popxl.float32, name="inv_hidden")
        dx = (dy32 - (w32 * _column(var_delta) + _column(mean_delta)) * scale) * s
        dw = ops.sum(w32 * dy32, 0)
        db = ops.sum(dy32, 0)
        return [ops.cast(dx, x.dtype), ops.cast(dw, x.dtype), ops.cast(db, x.dtype)]
    return grad


def layer_norm_distributed(t: popxl.Tensor, w: popxl.Tensor, b: popxl.Tensor, epsilon: float = 1e-5,
                           group: Any = None) -> popxl.Tensor:
    """Return ``t`` (``(N, H / group_size)``) normalised over the hidden axis sharded across the
    replicas of ``group`` (default: all), scaled by ``w`` and shifted by ``b``; same shape and
    dtype (see the module docstring)."""
    group = popxl.gcg().ir.replica_grouping() if group is None else group
    if t.rank != 2 or w.rank != 1 or b.rank != 1:
        raise AssertionError("layer_norm_distributed: t must be of rank 2, w and b of rank 1")
    hidden = t.shape[1] * group.group_size
    rar = ops.collectives.replicated_all_reduce
    x32 = ops.cast(t, popxl.float32)
    inv_h = popxl.constant(1.0 / hidden, popxl.float32, name="inv_hidden")
    mean = rar(ops.sum(x32, 1), op="add", group=group) * inv_h
    mean_sq = rar(ops.sum(x32 * x32, 1), op="add", group=group) * inv_h
    var = mean_sq - mean * mean
    eps = popxl.constant(epsilon, popxl.float32, name="epsilon")
    one = popxl.constant(1.0, popxl.float32, name="one")
    inv_std = one / ops.sqrt(var + eps)
    whitened = ops.cast((x32 - _column(mean)) * _column(inv_std), t.dtype)
    y = whitened * w + b
    (out,) = with_gradient("LayerNormDistributed", "layer_norm_distributed", [t, w, b], [y],
                           _grad(t, mean, inv_std, group, hidden), {"epsilon": float(epsilon)},
                           out_names=["outputs"])
    return out
